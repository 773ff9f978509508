// docker-compose.yml, checked structurally (no Docker engine here): the services, their images and commands, what
// they are told and what the engine reads, secrets, ports, the UI and codec wiring, the search attributes.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Script } from 'node:vm';
import YAML from 'yaml';
import { CONFIG_ENV_VARS, loadCodecConfig, loadConfig, type Config } from '../../src/config';
import { sandboxConfigFromEnv } from '../../src/sandbox/config';
import { dataConverterOf } from '../../src/temporal';
import { SEARCH_ATTRIBUTE_KEYS } from '../../src/workflows/definitions';
import {
  InterpolationError,
  ROOT,
  envOf,
  loadCompose,
  mounts,
  parseCompose,
  parseDotenv,
  publishedPorts,
  read,
  readsOf,
  type ComposeFile,
  type Service,
} from './compose-file';

const text = read('docker-compose.yml');
const envExample = parseDotenv(read('deploy/.env.example'));
// What a user has after `sh deploy/init-secrets.sh`: the example with a password filled in.
const userEnv = { ...envExample.values, POSTGRES_PASSWORD: 'a-test-password-only' };
const { compose, used } = loadCompose(text, userEnv);
const raw = parseCompose(text);

const ENGINE = ['api', 'worker', 'codec'] as const;
const LONG_RUNNING = ['postgres', 'temporal', 'temporal-ui', 'api', 'worker', 'codec', 'sandbox'];
const ONE_SHOTS = ['temporal-schema', 'temporal-setup'];

const svc = (name: string): Service => {
  const s = compose.services[name];
  if (!s) throw new Error(`no service ${name}`);
  return s;
};
const env = (name: string) => envOf(svc(name));
const hostPort = (name: string, container: number) => {
  const p = publishedPorts(svc(name)).find((x) => x.container === container);
  if (!p) throw new Error(`${name} publishes no port for ${container}`);
  return p;
};

/** The variables the sandbox reads (SANDBOX_*). */
const SANDBOX_ENV_VARS = readsOf((e) => sandboxConfigFromEnv(e));

/** loadConfig on a service's environment, its /run/secrets files replaced by ones deploy/init-secrets.sh made. */
/** The environment the service's process gets, secrets resolved to the files init-secrets.sh makes. */
function serviceEnv(c: ComposeFile, name: string, secretsDir: string): Record<string, string> {
  const service = c.services[name]!;
  const e: Record<string, string> = {};
  for (const [k, v] of Object.entries(envOf(service))) {
    const secret = /^\/run\/secrets\/([a-z0-9_-]+)$/.exec(v)?.[1];
    if (!secret) {
      e[k] = v;
      continue;
    }
    expect(service.secrets).toContain(secret);
    const file = c.secrets[secret]?.file;
    expect(file).toBeDefined();
    e[k] = path.join(secretsDir, path.basename(file!));
  }
  return e;
}

/** What the API or the worker loads from it. */
function configOf(c: ComposeFile, name: string, secretsDir: string): Config {
  return loadConfig(serviceEnv(c, name, secretsDir));
}

describe('docker-compose.yml', () => {
  let secretsDir: string;
  let work: string;

  beforeAll(() => {
    work = mkdtempSync(path.join(tmpdir(), 'compose-test-'));
    secretsDir = path.join(work, 'secrets');
    execFileSync('sh', [path.join(ROOT, 'deploy/init-secrets.sh'), secretsDir, path.join(work, '.env')], {
      stdio: 'ignore',
    });
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  test('interpolates only variables deploy/.env.example documents, and needs POSTGRES_PASSWORD', () => {
    expect([...used].filter((v) => !envExample.documented.has(v))).toEqual([]);
    expect(envExample.values.POSTGRES_PASSWORD).toBe('');
    expect(() => loadCompose(text, envExample.values)).toThrow(InterpolationError);
    expect(() => loadCompose(text, envExample.values)).toThrow(/POSTGRES_PASSWORD/);
  });

  test('has the services, from pinned official images or the project Dockerfile', () => {
    expect(Object.keys(compose.services).sort()).toEqual([...LONG_RUNNING, ...ONE_SHOTS].sort());
    expect(svc('postgres').image).toMatch(/^postgres:16\.\d+$/);
    const server = /^temporalio\/server:(1\.29\.\d+)$/.exec(svc('temporal').image ?? '');
    expect(server).not.toBeNull();
    for (const s of ONE_SHOTS) expect(svc(s).image).toMatch(new RegExp(`^temporalio/admin-tools:${server![1]}-`));
    expect(svc('temporal-ui').image).toMatch(/^temporalio\/ui:2\.42\.\d+$/);

    const commands: Record<string, string> = {
      api: 'dist/api/server.js',
      worker: 'dist/worker.js',
      codec: 'dist/codec/main.js',
      sandbox: 'dist/sandbox/main.js',
    };
    const images = new Set<string | undefined>();
    for (const [name, entry] of Object.entries(commands)) {
      const s = svc(name);
      expect(s.build).toEqual({ context: '.', dockerfile: 'Dockerfile' });
      expect(s.command).toEqual(['node', entry]);
      images.add(s.image);
      // tsconfig.build.json compiles src/ into dist/: the entry point has its source.
      expect(existsSync(path.join(ROOT, entry.replace(/^dist\//, 'src/').replace(/\.js$/, '.ts')))).toBe(true);
    }
    expect(images.size).toBe(1);
    const build = JSON.parse(read('tsconfig.build.json')) as { compilerOptions: Record<string, unknown> };
    expect(build.compilerOptions).toMatchObject({ rootDir: 'src', outDir: 'dist', noEmit: false });
  });

  test('runs the sandbox only in the optional profile `sandbox`', () => {
    expect(svc('sandbox').profiles).toEqual(['sandbox']);
    for (const name of Object.keys(compose.services).filter((n) => n !== 'sandbox')) {
      expect(svc(name).profiles).toBeUndefined();
    }
  });

  test('publishes API 3000, UI 8080, codec 8888 and sandbox 4010 onto the ports the processes listen on', () => {
    const api = hostPort('api', Number(env('api').API_PORT));
    expect(api.host).toBe(3000);
    expect(env('api').API_HOST).toBe('0.0.0.0');
    const codec = hostPort('codec', Number(env('codec').CODEC_PORT));
    expect(codec.host).toBe(8888);
    expect(env('codec').CODEC_HOST).toBe('0.0.0.0');
    const sandbox = hostPort('sandbox', Number(env('sandbox').SANDBOX_PORT));
    expect(sandbox.host).toBe(4010);
    expect(env('sandbox').SANDBOX_HOST).toBe('0.0.0.0');
    expect(env('sandbox').SANDBOX_PUBLIC_URL).toBe('http://localhost:4010');
    // temporalio/ui listens on 8080 unless TEMPORAL_UI_PORT says otherwise.
    expect(env('temporal-ui').TEMPORAL_UI_PORT).toBeUndefined();
    expect(hostPort('temporal-ui', 8080).host).toBe(8080);
  });

  test('lets the worker scale out: no fixed name, no published port', () => {
    expect(svc('worker').ports).toBeUndefined();
    for (const [name, s] of Object.entries(compose.services)) {
      expect([name, s.container_name, s.hostname]).toEqual([name, undefined, undefined]);
    }
  });

  test('sets only variables the engine reads (CONFIG_ENV_VARS) or the sandbox reads (SANDBOX_*)', () => {
    for (const name of ENGINE) {
      expect(Object.keys(env(name)).filter((k) => !CONFIG_ENV_VARS.includes(k))).toEqual([]);
    }
    expect(SANDBOX_ENV_VARS.has('SANDBOX_PORT')).toBe(true);
    expect(Object.keys(env('sandbox')).filter((k) => !SANDBOX_ENV_VARS.has(k))).toEqual([]);

    // deploy/engine.env (optional env_file) documents engine settings the compose does not set itself: a value set
    // in `environment` would silently win over the file.
    const tuning = parseDotenv(read('deploy/engine.env.example')).documented;
    expect(tuning.size).toBeGreaterThan(10);
    const setByCompose = new Set(ENGINE.flatMap((n) => Object.keys(env(n))));
    for (const k of tuning) {
      expect([k, CONFIG_ENV_VARS.includes(k), setByCompose.has(k)]).toEqual([k, true, false]);
    }
    for (const name of ENGINE) {
      expect(svc(name).env_file).toEqual([{ path: './deploy/engine.env', required: false }]);
    }
  });

  test("documents the engine's defaults in deploy/engine.env.example as they are", () => {
    const base = { WEBHOOK_SECRET: 'x'.repeat(32), PAYLOAD_ENCRYPTION_DISABLED: 'true' };
    const lines = read('deploy/engine.env.example').split('\n');
    const examples = Object.fromEntries(
      lines.flatMap((l) => {
        const m = /^#\s*([A-Z][A-Z0-9_]*)=(.+)$/.exec(l);
        return m ? [[m[1]!, m[2]!]] : [];
      }),
    );
    expect(Object.keys(examples).length).toBeGreaterThan(10);
    expect(loadConfig({ ...base, ...examples })).toEqual(loadConfig(base));
  });

  test('gives each process the settings it needs: its configuration loads from what the compose provides', () => {
    const required: Record<(typeof ENGINE)[number], string[]> = {
      api: ['TEMPORAL_ADDRESS', 'WEBHOOK_SECRET', 'PAYLOAD_ENCRYPTION_KEYS', 'CLINICS_FILE', 'EXAM_SERVICE_BASE_URL'],
      worker: [
        'TEMPORAL_ADDRESS',
        'WEBHOOK_SECRET',
        'PAYLOAD_ENCRYPTION_KEYS',
        'CLINICS_FILE',
        'EXAM_SERVICE_BASE_URL',
        'PUBLIC_BASE_URL',
      ],
      codec: ['PAYLOAD_ENCRYPTION_KEYS'],
    };
    for (const name of ENGINE) {
      const e = env(name);
      for (const k of required[name]) expect([name, k, k in e || `${k}_FILE` in e]).toEqual([name, k, true]);
      // Secrets come from files only.
      for (const k of ['WEBHOOK_SECRET', 'PAYLOAD_ENCRYPTION_KEYS']) expect(e[k]).toBeUndefined();

      // The codec server reads its own section only (loadCodecConfig); the API and the worker read everything.
      if (name === 'codec') {
        const codec = loadCodecConfig(serviceEnv(compose, name, secretsDir));
        expect(codec.codec.keys.length).toBeGreaterThan(0);
        continue;
      }
      const config = configOf(compose, name, secretsDir);
      expect(config.codec.keys.length).toBeGreaterThan(0);
      expect(dataConverterOf(config)).toBeDefined();
      expect(config.temporal.address).toBe('temporal:7233');
      expect(config.clinics.length).toBeGreaterThan(0);
    }
    expect(configOf(compose, 'worker', secretsDir).examService.baseUrl).toBe('http://sandbox:4010');
    // The sandbox calls the webhook inside the network; docs/deploy.md says what the real service needs.
    expect(configOf(compose, 'worker', secretsDir).api.publicBaseUrl).toBe('http://api:3000');
    expect(svc('temporal').ports?.map(String)).toContain('127.0.0.1:7233:7233');
  });

  test('keeps secrets in files under deploy/secrets/ that git and the Docker build context ignore', () => {
    for (const [name, { file }] of Object.entries(compose.secrets)) {
      expect([name, file.startsWith('./deploy/secrets/')]).toEqual([name, true]);
      // deploy/init-secrets.sh makes every one of them.
      expect(existsSync(path.join(secretsDir, path.basename(file)))).toBe(true);
    }
    const ignored = ['.env', 'deploy/engine.env', ...Object.values(compose.secrets).map((s) => s.file)];
    for (const file of ignored) {
      expect(() => execFileSync('git', ['check-ignore', '-q', '--no-index', file], { cwd: ROOT })).not.toThrow();
    }
    const dockerignore = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    expect(dockerignore[0]).toBe('*');
    expect(dockerignore.filter((l) => l.startsWith('!') && /deploy|\.env|\.data/.test(l))).toEqual([]);
  });

  test('holds no literal secret', () => {
    const secretish = /(SECRET|PASSWORD|PWD|TOKEN|API_KEY|KEYS?)$/;
    for (const [name, s] of Object.entries(raw.services)) {
      for (const [k, v] of Object.entries(envOf(s))) {
        if (!secretish.test(k)) continue;
        // Either a file path or `${VAR:?...}` from .env, never a value.
        expect([name, k, /^\$\{[A-Z_]+:\?[^}]*\}$/.test(v)]).toEqual([name, k, true]);
      }
    }
    expect(text).not.toMatch(/whsec_|PRIVATE KEY/);
    // Nothing that looks like a generated key or token (paths and names here are lower case).
    const keyLike = (text.match(/[A-Za-z0-9+/_-]{24,}={0,2}/g) ?? []).filter((t) => /[A-Z]/.test(t) && /\d/.test(t));
    expect(keyLike).toEqual([]);
    for (const [k, v] of Object.entries(envExample.values)) {
      if (secretish.test(k)) expect([k, v]).toEqual([k, '']);
    }
  });

  test('points the UI at the codec server where the browser finds it, and lets the UI origin call it', () => {
    const ui = env('temporal-ui');
    const endpoint = new URL(ui.TEMPORAL_CODEC_ENDPOINT!);
    const codec = hostPort('codec', Number(env('codec').CODEC_PORT));
    expect(endpoint.protocol).toBe('http:');
    expect(['localhost', '127.0.0.1']).toContain(endpoint.hostname);
    expect(Number(endpoint.port)).toBe(codec.host);
    expect(['', '0.0.0.0', '127.0.0.1']).toContain(codec.hostIp);
    expect(endpoint.pathname).toBe('/');
    expect(ui.TEMPORAL_CODEC_ENDPOINT).toBe(endpoint.origin);

    const uiPort = hostPort('temporal-ui', 8080).host;
    const origins = env('codec')
      .CODEC_CORS_ORIGINS!.split(',')
      .map((o) => o.trim());
    expect(origins).toEqual(expect.arrayContaining([`http://localhost:${uiPort}`, `http://127.0.0.1:${uiPort}`]));

    expect(ui.TEMPORAL_ADDRESS).toBe('temporal:7233');
    expect(ui.TEMPORAL_DEFAULT_NAMESPACE).toBe(env('api').TEMPORAL_NAMESPACE);
  });

  test("registers exactly the journey's search attributes, after the server answers, idempotently", () => {
    const setup = svc('temporal-setup');
    expect(setup.entrypoint).toEqual(['/bin/sh', '-ec']);
    const script = setup.command!.join('\n');
    const created = [...script.matchAll(/search-attribute create\b[^\n]*--name (\S+) --type (\S+)/g)].map(
      (m) => `${m[1]}=${m[2]}`,
    );
    const cliType: Record<string, string> = {
      KEYWORD: 'Keyword',
      KEYWORD_LIST: 'KeywordList',
      BOOL: 'Bool',
      TEXT: 'Text',
      INT: 'Int',
      DOUBLE: 'Double',
      DATETIME: 'Datetime',
    };
    const expected = SEARCH_ATTRIBUTE_KEYS.map((k) => `${k.name}=${cliType[k.type]}`);
    expect(created.sort()).toEqual(expected.sort());
    expect(created).toContain('ExamStatus=KeywordList');

    // Every creation names the namespace, which is the engine's.
    expect(script.match(/search-attribute create --namespace "\$ns" /g)?.length).toBe(expected.length);
    expect(script).toContain('ns="$TEMPORAL_NAMESPACE"');
    expect(env('temporal-setup').TEMPORAL_NAMESPACE).toBe(env('worker').TEMPORAL_NAMESPACE);
    expect(env('temporal-setup').TEMPORAL_ADDRESS).toBe(env('worker').TEMPORAL_ADDRESS);
    // Waits for the server, creates the namespace only when it is missing.
    expect(script.indexOf('operator cluster health')).toBeGreaterThan(-1);
    expect(script.indexOf('operator cluster health')).toBeLessThan(script.indexOf('search-attribute create'));
    expect(script).toMatch(/namespace describe[^\n]*\|\|\s*\n?\s*retry temporal operator namespace create/);
    expect(setup.depends_on).toEqual({ temporal: { condition: 'service_healthy' } });
  });

  test('sets up the PostgreSQL schemas before the server starts, and configures the server', () => {
    const schema = svc('temporal-schema');
    const script = schema.command!.join('\n');
    expect(script).toContain('temporal-sql-tool --plugin postgres12 --ep postgres');
    for (const step of ['create', 'setup-schema -v 0.0', 'update-schema -d']) expect(script).toContain(step);
    expect(script).toMatch(/temporal:temporal temporal_visibility:visibility/);
    expect(schema.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });

    const server = svc('temporal');
    const e = env('temporal');
    expect(server.depends_on).toEqual({ 'temporal-schema': { condition: 'service_completed_successfully' } });
    expect(e).toMatchObject({ DB: 'postgres12', DB_PORT: '5432', POSTGRES_SEEDS: 'postgres' });
    expect(e.POSTGRES_USER).toBe(env('postgres').POSTGRES_USER);
    expect(e.POSTGRES_PWD).toBe(env('postgres').POSTGRES_PASSWORD);
    expect(env('temporal-schema').SQL_PASSWORD).toBe(env('postgres').POSTGRES_PASSWORD);

    const dynamic = mounts(server).find((m) => m.target === e.DYNAMIC_CONFIG_FILE_PATH);
    expect(dynamic).toBeDefined();
    expect(dynamic!.readOnly).toBe(true);
    const values = YAML.parse(readFileSync(path.join(ROOT, dynamic!.source), 'utf8')) as Record<string, unknown>;
    // The API acts on journeys through workflow updates.
    expect(values['frontend.enableUpdateWorkflowExecution']).toEqual([{ value: true }]);
  });

  test('checks the health of every long-running service that can tell', () => {
    for (const name of ['postgres', 'temporal', 'api', 'codec', 'sandbox']) {
      const t = svc(name).healthcheck?.test;
      expect([name, Array.isArray(t) && t.length > 1 && t.every((x) => typeof x === 'string')]).toEqual([name, true]);
    }
    const probes: [string, string][] = [
      ['api', `http://127.0.0.1:${env('api').API_PORT}/healthz`],
      ['codec', `http://127.0.0.1:${env('codec').CODEC_PORT}/healthz`],
      ['sandbox', `http://127.0.0.1:${env('sandbox').SANDBOX_PORT}/_sandbox/health`],
    ];
    for (const [name, url] of probes) {
      const [cmd, node, flag, code] = svc(name).healthcheck!.test as string[];
      expect([cmd, node, flag]).toEqual(['CMD', 'node', '-e']);
      expect(code).toContain(`fetch('${url}')`);
      expect(() => new Script(code!)).not.toThrow();
    }
    expect((svc('postgres').healthcheck!.test as string[]).join(' ')).toContain('pg_isready');
  });

  test('starts in order: conditions on every dependency', () => {
    for (const name of ['api', 'worker', 'temporal-ui']) {
      expect([name, svc(name).depends_on]).toEqual([
        name,
        { 'temporal-setup': { condition: 'service_completed_successfully' } },
      ]);
    }
    for (const [name, s] of Object.entries(compose.services)) {
      for (const [dep, d] of Object.entries(s.depends_on ?? {})) {
        expect([name, dep, dep in compose.services, typeof d.condition]).toEqual([name, dep, true, 'string']);
      }
    }
  });

  test('restarts long-running services, not the one-shots', () => {
    for (const name of LONG_RUNNING) expect([name, svc(name).restart]).toEqual([name, 'unless-stopped']);
    for (const name of ONE_SHOTS) expect([name, svc(name).restart]).toEqual([name, 'no']);
  });

  test('keeps state in named volumes; the API and the worker share the attachments', () => {
    const named = (name: string) => mounts(svc(name)).filter((m) => m.source in compose.volumes);
    expect(named('postgres').map((m) => m.target)).toEqual(['/var/lib/postgresql/data']);

    const api = configOf(compose, 'api', secretsDir);
    const worker = configOf(compose, 'worker', secretsDir);
    const volumeAt = (name: string, dir: string) =>
      named(name).find((m) => dir === m.target || dir.startsWith(`${m.target}/`))?.source;
    const inbox = api.inbox.store === 'files' ? api.inbox : undefined;
    for (const dir of [inbox?.dir ?? '', inbox?.deadLetterDir ?? '', api.attachmentsDir]) {
      expect([dir, volumeAt('api', dir)]).toEqual([dir, expect.any(String)]);
    }
    // The worker reads the claim checks the API stored.
    expect(worker.attachmentsDir).toBe(api.attachmentsDir);
    expect(volumeAt('worker', worker.attachmentsDir)).toBe(volumeAt('api', api.attachmentsDir));
    expect(volumeAt('api', inbox?.dir ?? '')).not.toBe(volumeAt('api', api.attachmentsDir));
  });
});

describe('deploy/compose.temporal-cloud.yml', () => {
  test('turns the API and the worker to Temporal Cloud with an API key from a secret file', () => {
    const override = parseCompose(read('deploy/compose.temporal-cloud.yml'));
    const cloudEnv = {
      ...userEnv,
      TEMPORAL_ADDRESS: 'us-east-1.aws.api.temporal.io:7233',
      TEMPORAL_NAMESPACE: 'ns.acct',
    };
    const { compose: base } = loadCompose(text, cloudEnv);
    const work = mkdtempSync(path.join(tmpdir(), 'compose-cloud-'));
    try {
      const secretsDir = path.join(work, 'secrets');
      execFileSync('sh', [path.join(ROOT, 'deploy/init-secrets.sh'), secretsDir, path.join(work, '.env')], {
        stdio: 'ignore',
      });
      writeFileSync(path.join(secretsDir, 'temporal_api_key'), 'an-api-key\n');
      // Compose's merge of an override: environment by key, secrets added.
      const merged: ComposeFile = { ...base, secrets: { ...base.secrets, ...override.secrets } };
      for (const [name, o] of Object.entries(override.services)) {
        const b = base.services[name]!;
        merged.services[name] = {
          ...b,
          environment: { ...b.environment, ...o.environment },
          secrets: [...new Set([...(b.secrets ?? []), ...(o.secrets ?? [])])],
        };
        expect(Object.keys(o.environment ?? {}).filter((k) => !CONFIG_ENV_VARS.includes(k))).toEqual([]);
      }
      for (const { file } of Object.values(override.secrets)) expect(file.startsWith('./deploy/secrets/')).toBe(true);
      for (const name of ['api', 'worker']) {
        const config = configOf(merged, name, secretsDir);
        expect(config.temporal).toMatchObject({ address: 'us-east-1.aws.api.temporal.io:7233', namespace: 'ns.acct' });
        expect(config.temporal.apiKey).toBe('an-api-key');
      }
      expect(loadCodecConfig(serviceEnv(merged, 'codec', secretsDir)).codec.corsOrigins).toEqual([
        'https://cloud.temporal.io',
      ]);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
});

describe('the image', () => {
  const dockerfile = read('Dockerfile');

  test('is built in stages by tsc from tsconfig.build.json, and runs as a non-root user on glibc', () => {
    const stages = dockerfile.match(/^FROM /gm) ?? [];
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(dockerfile).toContain('RUN npx tsc -p tsconfig.build.json');
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:20\.\d+\.\d+-bookworm-slim$/m);
    const final = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    expect(final).toMatch(/^USER node$/m);
    // node:*-slim has no root certificates; the worker's native Temporal connection needs them for TLS.
    expect(final).toMatch(/apt-get install -y --no-install-recommends ca-certificates/);
    expect(final).toMatch(/COPY --from=build \/app\/dist \.\/dist/);
    const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
    expect(pkg.scripts.build).toBe('tsc -p tsconfig.build.json');
  });

  test('finds in the build context what it copies from it', () => {
    const included = read('.dockerignore')
      .split('\n')
      .filter((l) => l.startsWith('!'))
      .map((l) => l.slice(1).replace(/\/$/, ''));
    const copied = [...dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((m) => m[1]!.split(/\s+/));
    expect(copied.length).toBeGreaterThan(3);
    for (const source of copied) expect([source, included.includes(source.replace(/\/$/, ''))]).toEqual([source, true]);
  });
});
