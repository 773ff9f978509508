// The settings table of docs/configuration.md and CONFIG_ENV_VARS name the same variables: a setting the
// configuration reads is documented there, and the table names nothing the configuration does not read.
import { CONFIG_ENV_VARS } from '../../src/config';
import { read } from './compose-file';

/**
 * Variables the configuration reads that the settings table leaves to another page (or to another cell), each with the page that documents
 * it (the test checks that page names it).
 */
const DOCUMENTED_ELSEWHERE: Record<string, string> = {
  // Where the Temporal CLI looks for temporal.toml when TEMPORAL_CONFIG_FILE is unset: the default of that row.
  XDG_CONFIG_HOME: 'docs/configuration.md',
  HOME: 'docs/configuration.md',
  // Earlier names, still read.
  TEMPORAL_TLS_CERT: 'docs/design-notes.md',
  TEMPORAL_TLS_KEY: 'docs/design-notes.md',
  SPOOL_MAX_BACKOFF_MS: 'docs/api.md',
  SPOOL_DIR: 'docs/api.md',
};

/** Variables the table names that src/config.ts does not read, each with the file that reads them. */
const READ_ELSEWHERE: Record<string, string> = {
  // Tracing: the OpenTelemetry SDK reads its own standard variables.
  OTEL_EXPORTER_OTLP_ENDPOINT: 'src/observability/tracing.ts',
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'src/observability/tracing.ts',
  OTEL_TRACES_EXPORTER: 'src/observability/tracing.ts',
};

/** The rows of the page's first table whose header is `| Variable | Default | Meaning |`. */
export function settingsRows(page: string): string[] {
  const lines = page.split('\n');
  const start = lines.findIndex((l) => /^\| Variable \| Default \| Meaning \|$/.test(l));
  if (start < 0) return [];
  const rows: string[] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(line);
  }
  return rows;
}

/** The variables a row names in its first cell: every `NAME` in backticks. */
export function namesOfRow(row: string): string[] {
  const cell = row.split('|')[1] ?? '';
  return [...cell.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1]!);
}

/** The secrets the page says may come from files (`NAME_FILE`). */
function secretsFromFiles(page: string): string[] {
  const sentence = /Secrets may also come from files[^:]*:([^.]*)\./.exec(page)?.[1] ?? '';
  return [...sentence.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1]!);
}

const page = read('docs/configuration.md');
const source = read('src/config.ts');
const table = new Set(settingsRows(page).flatMap(namesOfRow));
const secrets = [...source.matchAll(/\bsecret\(env, '([A-Z][A-Z0-9_]*)'\)/g)].map((m) => m[1]!);

describe('the settings table of docs/configuration.md', () => {
  test('is found, and its first cells name variables', () => {
    expect(settingsRows(page).length).toBeGreaterThan(30);
    expect(table.size).toBeGreaterThan(60);
  });

  test('names every variable the configuration reads (or the page that does)', () => {
    const documented = (name: string) =>
      table.has(name) ||
      name in DOCUMENTED_ELSEWHERE ||
      (name.endsWith('_FILE') && secrets.includes(name.slice(0, -'_FILE'.length)) && table.has(name.slice(0, -5)));
    expect(CONFIG_ENV_VARS.filter((name) => !documented(name))).toEqual([]);
  });

  test('names no variable the configuration does not read', () => {
    expect([...table].filter((name) => !CONFIG_ENV_VARS.includes(name) && !(name in READ_ELSEWHERE))).toEqual([]);
  });

  test.each(Object.entries(READ_ELSEWHERE))('%s is in the table, and read by %s', (name, file) => {
    expect(table.has(name)).toBe(true);
    expect(CONFIG_ENV_VARS).not.toContain(name);
    expect(read(file)).toContain(name);
  });

  test('says which secrets may come from files: every one the configuration reads so', () => {
    expect(secretsFromFiles(page).sort()).toEqual([...new Set(secrets)].sort());
  });

  test.each(Object.entries(DOCUMENTED_ELSEWHERE))('%s is read, and documented in %s', (name, page) => {
    expect(CONFIG_ENV_VARS).toContain(name);
    expect(table.has(name)).toBe(false);
    expect(read(page)).toMatch(new RegExp(`\`\\$?${name}\``));
  });

  test('the row scan sees each name of a first cell, and only there', () => {
    expect(namesOfRow('| `A_B` / `C` (or `C_FILE`) | `D_E` | `F` |')).toEqual(['A_B', 'C', 'C_FILE']);
  });
});
