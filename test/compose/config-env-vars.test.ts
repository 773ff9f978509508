// CONFIG_ENV_VARS must name every environment variable loadConfig reads, no more: the compose test trusts it.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CONFIG_ENV_VARS, loadConfig } from '../../src/config';
import { read, readsOf } from './compose-file';

const source = read('src/config.ts');

/** The variable names src/config.ts reads, by the forms its code uses. */
function namesInSource(code: string): Set<string> {
  const names = new Set<string>();
  for (const m of code.matchAll(/\benv\.([A-Z][A-Z0-9_]*)/g)) names.add(m[1]!);
  for (const m of code.matchAll(/\bsecret\(env, '([A-Z][A-Z0-9_]*)'\)/g)) {
    names.add(m[1]!);
    names.add(`${m[1]}_FILE`);
  }
  for (const m of code.matchAll(/\btiming\('([A-Z][A-Z0-9_]*)'/g)) names.add(m[1]!);
  return names;
}

describe('CONFIG_ENV_VARS', () => {
  test('lists each name once', () => {
    expect(new Set(CONFIG_ENV_VARS).size).toBe(CONFIG_ENV_VARS.length);
    for (const name of CONFIG_ENV_VARS) expect(name).toMatch(/^[A-Z][A-Z0-9_]*$/);
  });

  test('equals what the source of loadConfig reads', () => {
    // Indexed reads hide the name: only the two helpers that take it as an argument may use them.
    expect(source.match(/\benv\[[^\]]*\]/g)?.sort()).toEqual(['env[`${name}_FILE`]', 'env[name]', 'env[name]']);
    expect([...namesInSource(source)].sort()).toEqual([...CONFIG_ENV_VARS].sort());
  });

  test('the source scan sees a new variable, in each form', () => {
    expect(namesInSource('const a = env.NEW_SETTING;')).toEqual(new Set(['NEW_SETTING']));
    expect(namesInSource("secret(env, 'NEW_SECRET')")).toEqual(new Set(['NEW_SECRET', 'NEW_SECRET_FILE']));
    expect(namesInSource("timing('JOURNEY_NEW_MS', 5)")).toEqual(new Set(['JOURNEY_NEW_MS']));
  });

  describe('covers every read loadConfig makes at run time', () => {
    let dir: string;
    beforeAll(() => {
      dir = mkdtempSync(path.join(tmpdir(), 'config-env-'));
      writeFileSync(path.join(dir, 'secret'), 'x'.repeat(32));
      writeFileSync(path.join(dir, 'clinics.json'), '[]');
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    const runs: [string, (dir: string) => Record<string, string>][] = [
      ['nothing set', () => ({})],
      [
        'secrets and clinics from files, TLS and encryption switches set',
        (d) => ({
          WEBHOOK_SECRET_FILE: path.join(d, 'secret'),
          TEMPORAL_API_KEY_FILE: path.join(d, 'secret'),
          CODEC_SERVER_TOKEN_FILE: path.join(d, 'secret'),
          CLINICS_FILE: path.join(d, 'clinics.json'),
          TEMPORAL_TLS: 'true',
          PAYLOAD_ENCRYPTION_DISABLED: 'true',
        }),
      ],
      ['values inline', () => ({ CLINICS_JSON: '[]', WEBHOOK_SECRET: 'y'.repeat(32), JOURNEY_REMINDERS_MS: '1000,2' })],
    ];

    test.each(runs)('%s', (_label, envOf) => {
      const reads = readsOf((e) => loadConfig(e), envOf(dir));
      expect(reads.size).toBeGreaterThan(30);
      expect([...reads].filter((name) => !CONFIG_ENV_VARS.includes(name))).toEqual([]);
    });

    test('the recorder notices a read outside the list', () => {
      const reads = readsOf((e) => [e.SOMETHING_NEW, loadConfig(e)]);
      expect([...reads].filter((name) => !CONFIG_ENV_VARS.includes(name))).toEqual(['SOMETHING_NEW']);
    });
  });
});
