// docker-compose.yml against someone on the host or in another container of the project, checked without a Docker
// engine: the secret files deploy/init-secrets.sh writes (run here in a folder of its own) and how the containers read
// them.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { ROOT, envOf, loadCompose, parseDotenv, publishedPorts, read } from './compose-file';

const text = read('docker-compose.yml');
const envExample = parseDotenv(read('deploy/.env.example'));
const userEnv = { ...envExample.values, POSTGRES_PASSWORD: 'a-test-password-only', SECRETS_GID: '1000' };
const { compose } = loadCompose(text, userEnv);

const initSecrets = (secretsDir: string, envFile: string) =>
  execFileSync('sh', [path.join(ROOT, 'deploy/init-secrets.sh'), secretsDir, envFile], { encoding: 'utf8' });
const mode = (file: string) => statSync(file).mode & 0o777;

describe('the secret files', () => {
  let work: string;
  beforeEach(() => {
    work = mkdtempSync(path.join(tmpdir(), 'compose-hardening-'));
  });
  afterEach(() => rmSync(work, { recursive: true, force: true }));

  test('deploy/init-secrets.sh writes each one 0640 of your group in a 0700 folder, and .env 0600 naming that group', () => {
    const secrets = path.join(work, 'secrets');
    const envFile = path.join(work, '.env');
    initSecrets(secrets, envFile);
    const gid = process.getgid!();
    expect(mode(secrets)).toBe(0o700);
    const files = readdirSync(secrets);
    // Every secret the compose file names, the codec server's TLS key among them.
    for (const { file } of Object.values(compose.secrets)) expect(files).toContain(path.basename(file));
    expect(files).toContain('codec_tls.key');
    for (const name of files) {
      const st = statSync(path.join(secrets, name));
      expect([name, (st.mode & 0o777).toString(8), st.gid]).toEqual([name, '640', gid]);
    }
    expect(mode(envFile)).toBe(0o600);
    expect(parseDotenv(readFileSync(envFile, 'utf8')).values.SECRETS_GID).toBe(String(gid));
  });

  test('files of an earlier run (0644) are made 0640, kept as they were; a .env without SECRETS_GID gets it', () => {
    const secrets = path.join(work, 'secrets');
    const envFile = path.join(work, '.env');
    initSecrets(secrets, envFile);
    const before = Object.fromEntries(readdirSync(secrets).map((n) => [n, readFileSync(path.join(secrets, n))]));
    // What an earlier version left: world-readable files, a Temporal Cloud key put there by hand, no SECRETS_GID.
    for (const name of Object.keys(before)) chmodSync(path.join(secrets, name), 0o644);
    writeFileSync(path.join(secrets, 'temporal_api_key'), 'a-key\n', { mode: 0o644 });
    const oldEnv = 'POSTGRES_PASSWORD=kept-as-it-was\nTEMPORAL_NAMESPACE=default\n';
    writeFileSync(envFile, oldEnv, { mode: 0o644 });

    const out = initSecrets(secrets, envFile);
    expect(out).not.toMatch(/^created/m);
    for (const [name, content] of Object.entries(before)) {
      expect([name, mode(path.join(secrets, name)).toString(8)]).toEqual([name, '640']);
      expect(readFileSync(path.join(secrets, name))).toEqual(content);
    }
    expect(mode(path.join(secrets, 'temporal_api_key'))).toBe(0o640);
    const env = readFileSync(envFile, 'utf8');
    expect(env.startsWith(oldEnv)).toBe(true);
    expect(parseDotenv(env).values).toMatchObject({
      POSTGRES_PASSWORD: 'kept-as-it-was',
      SECRETS_GID: String(process.getgid!()),
    });
    expect(mode(envFile)).toBe(0o600);
    // Once it is there, nothing changes.
    expect(initSecrets(secrets, envFile)).toContain(`kept     ${envFile}`);
    expect(readFileSync(envFile, 'utf8')).toBe(env);
  });

  test('every container given a secret reads it through SECRETS_GID, whichever user its image runs as', () => {
    const given = Object.entries(compose.services).filter(([, s]) => (s.secrets ?? []).length > 0);
    expect(given.length).toBeGreaterThan(10);
    for (const [name, s] of given) expect([name, s.group_add]).toEqual([name, [userEnv.SECRETS_GID]]);
    // The images that read their secrets as a user of their own (not root), so through the group.
    for (const name of ['api-1', 'worker', 'codec', 'audit-trail', 'keycloak', 'temporal-ui', 'temporal-setup']) {
      expect([name, compose.services[name]?.group_add]).toEqual([name, [userEnv.SECRETS_GID]]);
    }
    // The folder is made when missing, even several levels down.
    const nested = path.join(work, 'a', 'b', 'secrets');
    mkdirSync(path.dirname(nested), { recursive: true });
    initSecrets(nested, path.join(work, 'nested.env'));
    expect(mode(nested)).toBe(0o700);
  });
});

/** Renders the Temporal server's `{{ env "NAME" }}` (sprig, as the server renders an `enable-template` file). */
const renderEnv = (template: string, vars: Record<string, string>) =>
  template.replace(/\{\{ env "([A-Z0-9_]+)" \}\}/g, (_m, name: string) => {
    if (!(name in vars)) throw new Error(`${name} is not set`);
    return vars[name]!;
  });

describe("the Temporal server's services without a token check", () => {
  test('listen on its own loopback only: the internal frontend, history, matching and the system worker', () => {
    const e = envOf(compose.services.temporal!);
    const mounted = compose.services.temporal!.configs!.find((c) => c.source === 'temporal-auth')!;
    expect(mounted.target).toBe(`/etc/temporal/config/docker_${e.TEMPORAL_AVAILABILITY_ZONE}.yaml`);
    const rendered = YAML.parse(renderEnv(compose.configs!['temporal-auth']!.content, e)) as {
      global: { membership: Record<string, unknown> };
      services: Record<string, { rpc: Record<string, unknown> }>;
    };
    const loopback = '127.0.0.1';
    // Every service of the server but the frontend, each entry whole (it replaces the image's), ports the image's.
    expect(rendered.services).toEqual({
      'internal-frontend': { rpc: { grpcPort: 7236, membershipPort: 6936, httpPort: 7246, bindOnIP: loopback } },
      history: { rpc: { grpcPort: 7234, membershipPort: 6934, bindOnIP: loopback } },
      matching: { rpc: { grpcPort: 7235, membershipPort: 6935, bindOnIP: loopback } },
      worker: { rpc: { grpcPort: 7239, membershipPort: 6939, bindOnIP: loopback } },
    });
    expect(e.SERVICES!.split(':').filter((x) => x !== 'frontend')).toEqual(Object.keys(rendered.services));
    // They find each other on loopback: they run in this one container. The frontend (the image's entry) listens on
    // every interface, the network's among them.
    expect(rendered.global.membership).toEqual({ maxJoinDuration: '30s', broadcastAddress: loopback });
    expect(e.BIND_ON_IP).toBe('0.0.0.0');

    // No other container shares the server's network namespace (its loopback), and every other service reaches
    // Temporal at the frontend, the one port published (on this machine's loopback).
    for (const [name, s] of Object.entries(compose.services)) expect([name, s.network_mode]).toEqual([name, undefined]);
    const addresses = Object.entries(compose.services).flatMap(([name, s]) =>
      Object.values(envOf(s)).flatMap((v) => [...v.matchAll(/\btemporal:(\d+)\b/g)].map((m) => [name, m[1]])),
    );
    expect(addresses.length).toBeGreaterThan(3);
    for (const [name, port] of addresses) expect([name, port]).toEqual([name, '7233']);
    expect(publishedPorts(compose.services.temporal!)).toEqual([{ hostIp: loopback, host: 7233, container: 7233 }]);
  });
});
