// Secrets come from the environment or from files, never from the repository:
// - no tracked file (git ls-files) holds a private key, a Standard Webhooks secret, an AWS key, a bearer token, a
//   32-byte base64 key or another high-entropy string, beyond the demo values the documentation names and the test
//   values of test/ (and the benchmark harness in bench/); base64 that decodes to text (recorded payloads) is scanned
//   as that text; the scanner is shown to find each kind;
// - loadConfig reads WEBHOOK_SECRET, PAYLOAD_ENCRYPTION_KEYS, TEMPORAL_API_KEY and CODEC_SERVER_TOKEN from the
//   variable or from the file NAME_FILE names, has no built-in value for any of them, and names a refused one
//   without echoing it.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../src/config';
import { scanText, type AllowList, type Finding } from './secret-scan';

const ROOT = path.resolve(__dirname, '../..');

const ALLOW: AllowList = {
  // Documented in docs/local-stack.md, docs/operations.md and src/sandbox/README.md: the local stack's demo clinic and
  // operator tokens and the sandbox's seeded api_keys (one per onboarding situation). They open nothing outside a
  // developer's machine.
  values: new Set([
    'demo-clinic-token',
    'local-admin-token',
    'sandbox-demo-key',
    'sandbox-unsigned-agreements-key',
    'sandbox-no-rx-contract-key',
    'sandbox-no-providers-key',
  ]),
  testPaths: ['test/', 'bench/'],
  // A lock file's integrity hash, or a go.sum line (also as a patch's line: tools/temporal-cli/server.patch).
  checksumLine: /"integrity": "sha(?:1|256|384|512)-[A-Za-z0-9+/=]+"|^[-+ ]?\S+ v\S+ h1:[A-Za-z0-9+/]{43}=$/,
};

function trackedFiles(): string[] {
  return execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' }).split('\0').filter(Boolean);
}

function scanFile(file: string): Finding[] {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path.join(ROOT, file));
  } catch {
    return []; // deleted in the working tree, not yet in the index
  }
  if (bytes.subarray(0, 8000).includes(0)) return []; // binary (the UI screenshot)
  return scanText(file, bytes.toString('utf8'), ALLOW);
}

describe('no secret in the repository', () => {
  it('no tracked file holds a key or a token beyond the documented demo values and the test values', () => {
    const files = trackedFiles();
    expect(files).toEqual(expect.arrayContaining(['src/config.ts', 'package-lock.json', 'README.md']));
    const findings = files.flatMap(scanFile);
    expect(findings.map((f) => `${f.file}:${f.line} ${f.kind}: ${f.match}`)).toEqual([]);
  });

  it('the scanner finds every kind it looks for (so the scan above can fail)', () => {
    // Built at run time, so that this file itself holds none of them.
    const b64key = randomBytes(32).toString('base64');
    const samples: [string, string][] = [
      ['private key', `-----BEGIN ${'RSA '}PRIVATE KEY-----`],
      ['private key', `-----BEGIN ${'OPENSSH '}PRIVATE KEY-----`],
      ['Standard Webhooks secret', `notificationSecret: whsec_${randomBytes(24).toString('base64')}`],
      ['AWS access key id', `key = ${'AKIA'}${'Q3EGJ7TMSOW2XRZL'}`],
      ['AWS secret access key', `aws_secret_access_key = ${randomBytes(30).toString('base64')}`],
      ['bearer token', `curl -H "Authorization: Bearer ${randomBytes(18).toString('base64url')}"`],
      ['secret in an assignment', `const WEBHOOK_SECRET = '${'prod-webhook'}-${'secret-7f3a'}';`],
      [
        '32-byte base64 key',
        `PAYLOAD_ENCRYPTION_KEYS=prod:${b64key.endsWith('=') ? b64key : `${b64key.slice(0, 43)}=`}`,
      ],
      ['high-entropy string', `token: ${randomBytes(30).toString('base64url')}Aa1`],
      ['GitHub/Slack/Stripe-style token', `${'ghp'}_${'x'.repeat(6)}${randomBytes(24).toString('hex')}`],
      // A secret inside base64-encoded text (a recorded payload) is found by its decoded text.
      [
        'secret in an assignment',
        `"data": "${Buffer.from(JSON.stringify({ apiKey: `${'live'}-key-9d8c7b6a` })).toString('base64')}"`,
      ],
    ];
    for (const [kind, line] of samples) {
      const findings = scanText('src/example.ts', `before\n${line}\nafter`, ALLOW);
      expect({ line, kinds: findings.map((f) => f.kind) }).toEqual({ line, kinds: expect.arrayContaining([kind]) });
    }
    // What is allowed stays allowed: documented demo values, test values under test/, checksums, placeholders,
    // base64 of plain data, hex digests and identifiers.
    const quiet = [
      'examServiceApiKey: "sandbox-demo-key"',
      'curl -H "Authorization: Bearer demo-clinic-token"',
      '"integrity": "sha512-' + randomBytes(64).toString('base64') + '"',
      '"notificationSecret": "whsec_REPLACE-with-base64-of-24-random-bytes"',
      `"data": "${Buffer.from(JSON.stringify({ journeyId: 'j1', stage: 'completed' })).toString('base64')}"`,
      `sha256: ${randomBytes(32).toString('hex')}`,
      'maxConcurrentWorkflowTaskExecutions WORKER_MAX_CONCURRENT_WORKFLOW_TASKS',
    ];
    for (const line of quiet)
      expect({ line, findings: scanText('src/example.ts', line, ALLOW) }).toEqual({ line, findings: [] });
    expect(
      scanText('test/api/support.ts', "const WEBHOOK_SECRET = 'webhook-secret-for-tests-0123456789';", ALLOW),
    ).toEqual([]);
    // A real key pattern is flagged under test/ too.
    expect(scanText('test/x.ts', `-----BEGIN ${'EC '}PRIVATE KEY-----`, ALLOW)).toHaveLength(1);
  });
});

describe('configuration reads its secrets from the environment or from files', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'secrets-config-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const base = { DATA_DIR: '/tmp/not-used', CLINICS_JSON: '[]' };
  const fileWith = (name: string, content: string) => {
    const file = path.join(dir, name);
    writeFileSync(file, content, { mode: 0o600 });
    return file;
  };
  const secrets = () => ({
    webhook: `webhook-${randomBytes(16).toString('hex')}`,
    keys: `k1:${randomBytes(32).toString('base64')},k0:${randomBytes(32).toString('base64')}`,
    temporal: `temporal-${randomBytes(16).toString('hex')}`,
    codec: `codec-${randomBytes(16).toString('hex')}`,
  });

  function expectSecrets(config: ReturnType<typeof loadConfig>, s: ReturnType<typeof secrets>) {
    expect(config.api.webhookSecret).toBe(s.webhook);
    expect(config.codec.keys.map((k) => `${k.id}:${k.key.toString('base64')}`).join(',')).toBe(s.keys);
    expect(config.temporal.apiKey).toBe(s.temporal);
    expect(config.codec.serverToken).toBe(s.codec);
  }

  it('reads each from NAME_FILE (a mounted secret; a trailing newline is not part of it)', () => {
    const s = secrets();
    const config = loadConfig({
      ...base,
      WEBHOOK_SECRET_FILE: fileWith('webhook_secret', `${s.webhook}\n`),
      PAYLOAD_ENCRYPTION_KEYS_FILE: fileWith('payload_encryption_keys', `${s.keys}\n`),
      TEMPORAL_API_KEY_FILE: fileWith('temporal_api_key', s.temporal),
      CODEC_SERVER_TOKEN_FILE: fileWith('codec_server_token', `${s.codec}\n`),
    });
    expectSecrets(config, s);
  });

  it('reads each from NAME; the file wins when both are set', () => {
    const s = secrets();
    expectSecrets(
      loadConfig({
        ...base,
        WEBHOOK_SECRET: s.webhook,
        PAYLOAD_ENCRYPTION_KEYS: s.keys,
        TEMPORAL_API_KEY: s.temporal,
        CODEC_SERVER_TOKEN: s.codec,
      }),
      s,
    );
    const fromFile = secrets();
    expectSecrets(
      loadConfig({
        ...base,
        WEBHOOK_SECRET: s.webhook,
        WEBHOOK_SECRET_FILE: fileWith('w2', fromFile.webhook),
        PAYLOAD_ENCRYPTION_KEYS: s.keys,
        PAYLOAD_ENCRYPTION_KEYS_FILE: fileWith('k2', fromFile.keys),
        TEMPORAL_API_KEY: s.temporal,
        TEMPORAL_API_KEY_FILE: fileWith('t2', fromFile.temporal),
        CODEC_SERVER_TOKEN: s.codec,
        CODEC_SERVER_TOKEN_FILE: fileWith('c2', fromFile.codec),
      }),
      fromFile,
    );
  });

  it('has no built-in value for any of them: the webhook secret is required, the others stay unset', () => {
    expect(() => loadConfig(base)).toThrow(ConfigError);
    expect(() => loadConfig(base)).toThrow(/api\.webhookSecret/);
    const config = loadConfig({ ...base, WEBHOOK_SECRET: 'only-the-required-one-0123' });
    expect(config.temporal.apiKey).toBeUndefined();
    expect(config.codec.keys).toEqual([]);
    expect(config.codec.serverToken).toBeUndefined();
  });

  it('names a refused secret without echoing it', () => {
    const short = 'short-secret-x';
    const weak = 'tok-1234';
    const badKey = `k1:${randomBytes(20).toString('base64')}`;
    const errors = [
      () => loadConfig({ ...base, WEBHOOK_SECRET_FILE: fileWith('short', short) }),
      () => loadConfig({ ...base, WEBHOOK_SECRET: 'long-enough-secret-0123', CODEC_SERVER_TOKEN: weak }),
      () => loadConfig({ ...base, WEBHOOK_SECRET: 'long-enough-secret-0123', PAYLOAD_ENCRYPTION_KEYS: badKey }),
    ].map((load) => {
      try {
        load();
      } catch (err) {
        return err as Error;
      }
      throw new Error('expected a ConfigError');
    });
    expect(errors.map((e) => e instanceof ConfigError)).toEqual([true, true, true]);
    expect(errors[0]!.message).toMatch(/api\.webhookSecret/);
    expect(errors[1]!.message).toMatch(/codec\.serverToken/);
    expect(errors[2]!.message).toMatch(/PAYLOAD_ENCRYPTION_KEYS/);
    const all = errors.map((e) => e.message).join('\n');
    for (const value of [short, weak, badKey, badKey.slice(3)]) expect(all).not.toContain(value);
  });
});
