// docker-compose.yml against someone on the host or in another container of the project, checked without a Docker
// engine: the secret files deploy/init-secrets.sh writes (run here in a folder of its own) and how the containers read
// them.
import { execFileSync, spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { freePort } from '../support/dev-server-process';
import { until } from '../support/until';
import { ROOT, envOf, loadCompose, mounts, parseDotenv, publishedPorts, read } from './compose-file';

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

const HAPROXY = ['/usr/sbin/haproxy', '/usr/local/sbin/haproxy', '/usr/bin/haproxy'].find((p) => existsSync(p));

describe('the load balancer', () => {
  test('is published on loopback unless API_PUBLISH_ADDRESS says otherwise, plain HTTP and HTTPS alike', () => {
    const lb = compose.services['load-balancer']!;
    expect(publishedPorts(lb)).toEqual([
      { hostIp: '127.0.0.1', host: 3000, container: 3000 },
      { hostIp: '127.0.0.1', host: 3443, container: 3443 },
    ]);
    expect(envExample.documented.has('API_PUBLISH_ADDRESS')).toBe(true);
    const { compose: open } = loadCompose(text, { ...userEnv, API_PUBLISH_ADDRESS: '0.0.0.0' });
    expect(publishedPorts(open.services['load-balancer']!).map((p) => p.hostIp)).toEqual(['0.0.0.0', '0.0.0.0']);
    // Its certificate and key, from the secret file init-secrets.sh makes, read by the image's user through the group.
    expect(lb.secrets).toEqual(['api_tls']);
    expect(compose.secrets.api_tls).toEqual({ file: './deploy/secrets/api_tls.pem' });
    expect(lb.group_add).toEqual([userEnv.SECRETS_GID]);
  });

  (HAPROXY ? test : test.skip)(
    'serves the admin routes and the audit export over HTTPS only; plain HTTP takes the clinic API and the webhook',
    async () => {
      const work = mkdtempSync(path.join(tmpdir(), 'compose-haproxy-'));
      const seen: { url: string; headers: IncomingHttpHeaders }[] = [];
      const replica = createServer((req, res) => {
        seen.push({ url: req.url!, headers: req.headers });
        res.end('a replica');
      });
      await new Promise<void>((resolve) => replica.listen(0, '127.0.0.1', resolve));
      const replicaPort = (replica.address() as AddressInfo).port;
      let haproxy: ReturnType<typeof spawn> | undefined;
      try {
        initSecrets(path.join(work, 'secrets'), path.join(work, '.env'));
        const pem = path.join(work, 'secrets', 'api_tls.pem');
        const [plain, tls] = [await freePort(), await freePort()];
        // The compose's file as the container reads it, its addresses this machine's: the ports, the replicas (a
        // stand-in), the certificate where the secret is.
        const mounted = mounts(compose.services['load-balancer']!).find((m) => m.target.endsWith('haproxy.cfg'))!;
        let cfg = read(mounted.source);
        const edits: [string, string][] = [
          ['  bind :3000\n', `  bind 127.0.0.1:${plain}\n`],
          ['  bind :3443 ssl crt /run/secrets/api_tls ', `  bind 127.0.0.1:${tls} ssl crt ${pem} `],
          ['server api-1 api-1:3000 check', `server api-1 127.0.0.1:${replicaPort} check`],
          ['server api-2 api-2:3000 check', `server api-2 127.0.0.1:${replicaPort} check`],
        ];
        for (const [from, to] of edits) {
          expect([from, cfg.includes(from)]).toEqual([from, true]);
          cfg = cfg.replace(from, to);
        }
        writeFileSync(path.join(work, 'haproxy.cfg'), cfg);
        haproxy = spawn(HAPROXY!, ['-db', '-f', path.join(work, 'haproxy.cfg')], { stdio: 'ignore' });

        const get = (port: number, url: string, https = false) =>
          new Promise<{ status: number; body: string }>((resolve, reject) => {
            const options = { host: '127.0.0.1', port, path: url, method: 'GET', headers: { host: 'localhost' } };
            const done = (res: IncomingMessage) => {
              let body = '';
              res.setEncoding('utf8');
              res.on('data', (c: string) => (body += c));
              res.on('end', () => resolve({ status: res.statusCode!, body }));
            };
            const req = https
              ? httpsRequest({ ...options, servername: 'localhost', ca: readFileSync(pem) }, done)
              : httpRequest(options, done);
            req.on('error', reject);
            req.end();
          });
        await until('HAProxy', async () => ((await get(plain, '/healthz')).status === 200 ? true : undefined), 10_000);

        // Plain HTTP: what clinics and the exam service call, and the API's documentation and health.
        for (const url of ['/v1/catalog/exams', '/webhooks/exam-service/j-1/t-1', '/docs', '/docs/json', '/readyz']) {
          expect([url, (await get(plain, url)).status]).toEqual([url, 200]);
        }
        // Nothing else, however the path is spelt: the request never reaches a replica.
        const before = seen.length;
        for (const url of [
          '/admin/audit',
          '/admin/audit/export',
          '/admin/dead-letters',
          '/%61dmin/audit/export',
          '//admin/audit',
          '/ADMIN/audit',
          '/metrics',
          '/v1',
        ]) {
          const res = await get(plain, url);
          expect([url, res.status, res.body]).toEqual([url, 403, 'Use HTTPS (port 3443) for this route.\n']);
        }
        expect(seen.length).toBe(before);
        expect(seen.at(-1)!.headers['x-forwarded-proto']).toBe('http');

        // HTTPS: everything, the admin routes among it, with the certificate init-secrets.sh made for localhost.
        for (const url of ['/admin/audit/export', '/admin/audit?limit=1', '/metrics', '/v1/catalog/exams']) {
          expect([url, await get(tls, url, true)]).toEqual([url, { status: 200, body: 'a replica' }]);
          expect(seen.at(-1)).toMatchObject({ url, headers: { 'x-forwarded-proto': 'https' } });
        }
        // A client cannot claim HTTPS over plain HTTP.
        const spoofed = await new Promise<number>((resolve, reject) => {
          const req = httpRequest(
            { host: '127.0.0.1', port: plain, path: '/v1/x', headers: { 'x-forwarded-proto': 'https' } },
            (res) => {
              res.resume();
              resolve(res.statusCode!);
            },
          );
          req.on('error', reject);
          req.end();
        });
        expect(spoofed).toBe(200);
        expect(seen.at(-1)!.headers['x-forwarded-proto']).toBe('http');
      } finally {
        haproxy?.kill();
        await new Promise<void>((resolve) => replica.close(() => resolve()));
        rmSync(work, { recursive: true, force: true });
      }
    },
  );
});
