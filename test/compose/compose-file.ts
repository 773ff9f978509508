// Reading docker-compose.yml the way Docker Compose does, far enough for structural checks: YAML with merge keys,
// then `${VAR}` interpolation of every string value (`$$` is a literal `$`).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';

export const ROOT = path.resolve(__dirname, '../..');

export const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

export type Env = Record<string, string | undefined>;

export class InterpolationError extends Error {}

const VARIABLE = /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g;

/** Compose's interpolation of one value; `used` collects the variable names it refers to. */
export function interpolate(value: string, env: Env, used = new Set<string>()): string {
  return value.replace(VARIABLE, (whole, braced?: string, op?: string, arg = '', bare?: string) => {
    if (whole === '$$') return '$';
    const name = (braced ?? bare)!;
    used.add(name);
    const v = env[name];
    const set = v !== undefined;
    const nonEmpty = set && v !== '';
    switch (op) {
      case undefined:
        return v ?? '';
      case ':-':
        return nonEmpty ? v : arg;
      case '-':
        return set ? v : arg;
      case ':?':
        if (!nonEmpty) throw new InterpolationError(`${name}: ${arg}`);
        return v;
      case '?':
        if (!set) throw new InterpolationError(`${name}: ${arg}`);
        return v;
      case ':+':
        return nonEmpty ? arg : '';
      case '+':
        return set ? arg : '';
      default:
        throw new Error(`unexpected operator ${op}`);
    }
  });
}

function mapStrings(node: unknown, f: (s: string) => string): unknown {
  if (typeof node === 'string') return f(node);
  if (Array.isArray(node)) return node.map((n) => mapStrings(n, f));
  if (node && typeof node === 'object') {
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, mapStrings(v, f)]));
  }
  return node;
}

export interface Service {
  image?: string;
  build?: { context: string; dockerfile?: string };
  command?: string[];
  entrypoint?: string[];
  environment?: Record<string, string | number | boolean | null>;
  env_file?: { path: string; required?: boolean }[];
  ports?: string[];
  volumes?: string[];
  secrets?: string[];
  depends_on?: Record<string, { condition?: string }>;
  healthcheck?: { test?: unknown[] };
  profiles?: string[];
  restart?: string;
  container_name?: string;
  hostname?: string;
  init?: boolean;
  stop_grace_period?: string;
  deploy?: { replicas?: number };
  networks?: Record<string, { aliases?: string[] } | null>;
  group_add?: string[];
  network_mode?: string;
  configs?: { source: string; target: string }[];
}

export interface ComposeFile {
  services: Record<string, Service>;
  secrets: Record<string, { file: string }>;
  volumes: Record<string, unknown>;
  configs?: Record<string, { content: string }>;
}

// Compose's merge tags of an override file (`!override` replaces, `!reset` removes what the base file sets): read as
// the plain value they tag; the merge itself is the reader's.
const MERGE_TAGS: YAML.Tags = ['!override', '!reset'].flatMap((tag): YAML.CollectionTag[] => [
  { tag, collection: 'map', resolve: (map) => map },
  { tag, collection: 'seq', resolve: (seq) => seq },
]);

/** The file as written (merge keys resolved, nothing interpolated). */
export function parseCompose(text: string): ComposeFile {
  return YAML.parse(text, { merge: true, customTags: MERGE_TAGS }) as ComposeFile;
}

/** The file as Compose runs it with these interpolation variables (.env), and the variable names it refers to. */
export function loadCompose(text: string, env: Env): { compose: ComposeFile; used: Set<string> } {
  const used = new Set<string>();
  const compose = mapStrings(parseCompose(text), (s) => interpolate(s, env, used)) as ComposeFile;
  return { compose, used };
}

/** A service's environment as strings. */
export function envOf(service: Service): Record<string, string> {
  return Object.fromEntries(
    Object.entries(service.environment ?? {}).map(([k, v]) => [k, v === null ? '' : String(v)]),
  );
}

export interface PublishedPort {
  hostIp: string;
  host: number;
  container: number;
}

/** `[ip:]host:container[/tcp]` entries (the short syntax this file uses). */
export function publishedPorts(service: Service): PublishedPort[] {
  return (service.ports ?? []).map((entry) => {
    const m = /^(?:(\d+\.\d+\.\d+\.\d+):)?(\d+):(\d+)(?:\/tcp)?$/.exec(String(entry));
    if (!m) throw new Error(`port entry not understood: ${entry}`);
    return { hostIp: m[1] ?? '', host: Number(m[2]), container: Number(m[3]) };
  });
}

/** `source:target[:ro]` volume entries: named volumes and bind mounts. */
export function mounts(service: Service): { source: string; target: string; readOnly: boolean }[] {
  return (service.volumes ?? []).map((entry) => {
    const [source = '', target = '', mode] = String(entry).split(':');
    return { source, target, readOnly: mode === 'ro' };
  });
}

/** KEY=value lines of a dotenv file; `# KEY=value` lines count as documented (commented out). */
export function parseDotenv(text: string): { values: Record<string, string>; documented: Set<string> } {
  const values: Record<string, string> = {};
  const documented = new Set<string>();
  for (const line of text.split('\n')) {
    const set = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
    if (set) {
      values[set[1]!] = set[2]!;
      documented.add(set[1]!);
      continue;
    }
    const commented = /^#\s*([A-Z][A-Z0-9_]*)=/.exec(line);
    if (commented) documented.add(commented[1]!);
  }
  return { values, documented };
}

/** Names a function reads from an env object (a recording proxy). */
export function readsOf(run: (env: NodeJS.ProcessEnv) => unknown, base: Env = {}): Set<string> {
  const names = new Set<string>();
  const env = new Proxy(base, {
    get(target, prop) {
      if (typeof prop === 'string') names.add(prop);
      return typeof prop === 'string' ? target[prop] : undefined;
    },
  });
  try {
    run(env);
  } catch {
    // Only the reads matter here.
  }
  return names;
}
