// docker-compose.yml, checked structurally (no Docker engine here): the services, their images and commands, what
// they are told and what the engine reads, secrets, ports, the load balancer, the UI and codec wiring, the search
// attributes; the one-shot jobs' scripts run for real where they can (the inbox database's against PostgreSQL, the
// temporal CLI's entrypoint against the codec server).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Script } from 'node:vm';
import { S3Client } from '@aws-sdk/client-s3';
import type { Payload } from '@temporalio/common';
import { Client as PgClient } from 'pg';
import YAML from 'yaml';
import { API_NODE_FLAGS } from '../../src/api/node-flags';
import { PostgresAuditLog, prepareAuditStore, verifyAuditTable } from '../../src/audit/postgres';
import { buildCodecServer } from '../../src/codec/server';
import {
  CONFIG_ENV_VARS,
  loadAuditConfig,
  loadCodecConfig,
  loadConfig,
  loadPatientKeyConfig,
  type Config,
} from '../../src/config';
import { sandboxConfigFromEnv } from '../../src/sandbox/config';
import { dataConverterOf } from '../../src/temporal';
import { SEARCH_ATTRIBUTE_KEYS } from '../../src/contract/definitions';
import { startTestPostgres, type TestPostgres } from '../support/postgres';
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
const userEnv = { ...envExample.values, POSTGRES_PASSWORD: 'a-test-password-only', SECRETS_GID: '1000' };
const { compose, used } = loadCompose(text, userEnv);
const raw = parseCompose(text);

const API_REPLICAS = ['api-1', 'api-2'] as const;
const ENGINE = [...API_REPLICAS, 'worker', 'codec'] as const;
const LONG_RUNNING = [
  'postgres',
  'postgres-standby',
  'temporal',
  'temporal-ui',
  'minio',
  ...API_REPLICAS,
  'load-balancer',
  'worker',
  'codec',
  'sandbox',
  'keycloak',
];
const ONE_SHOTS = [
  'postgres-replication',
  'postgres-synchronous',
  'temporal-database',
  'temporal-schema',
  'temporal-setup',
  'inbox-database',
  'patient-key-database',
  'minio-bucket',
  'keycloak-database',
  'audit-database',
  'audit-trail',
];
/** The one-shot jobs that sign in to PostgreSQL as its superuser (psql scripts in the postgres image). */
const SUPERUSER_JOBS = [
  'postgres-replication',
  'postgres-synchronous',
  'temporal-database',
  'inbox-database',
  'patient-key-database',
  'keycloak-database',
  'audit-database',
];
const ON_DEMAND = ['temporal-cli'];
/** Read by the AWS SDK's credential chain, not by src/config.ts. */
const AWS_SDK_ENV_VARS = ['AWS_SHARED_CREDENTIALS_FILE'];
/** The production stack's own choices (scripts/lib/production-stack.ts), which the compose file repeats. */
const productionStack = read('scripts/lib/production-stack.ts');
/** The parts the native stacks start (scripts/lib/stack/parts.ts): the load balancer's configuration among them. */
const stackParts = read('scripts/lib/stack/parts.ts');
const NATIVE_BUCKET = /^const BUCKET = '([^']+)';$/m.exec(productionStack)?.[1];
const NATIVE_INBOX_DATABASE = /^const INBOX_DATABASE = '([^']+)';$/m.exec(productionStack)?.[1];
const NATIVE_PATIENT_KEYS_DATABASE = /^const PATIENT_KEYS_DATABASE = '([^']+)';$/m.exec(productionStack)?.[1];
const NATIVE_PATIENT_KEYS_ROLE = /^const PATIENT_KEYS_ROLE = '([^']+)';$/m.exec(productionStack)?.[1];
const NATIVE_AUDIT_WRITER =
  /\bwriterRole: '([^']+)'/.exec(productionStack)?.[1] ??
  /^const AUDIT_WRITER = '([^']+)';$/m.exec(productionStack)?.[1];

const svc = (name: string, c: ComposeFile = compose): Service => {
  const s = c.services[name];
  if (!s) throw new Error(`no service ${name}`);
  return s;
};
const env = (name: string) => envOf(svc(name));
const hostPort = (name: string, container: number) => {
  const p = publishedPorts(svc(name)).find((x) => x.container === container);
  if (!p) throw new Error(`${name} publishes no port for ${container}`);
  return p;
};
/** A one-shot's or a tool's shell script (`entrypoint: [/bin/sh, -ec]` with the script as its command). */
const scriptOf = (name: string) => {
  const s = svc(name);
  expect(s.entrypoint).toEqual(['/bin/sh', '-ec']);
  return s.command!.join('\n');
};

/** The audit-trail job's program (`node -e <code>` in the project image). */
const auditJobCode = () => {
  const command = svc('audit-trail').command!;
  expect(command.slice(0, 2)).toEqual(['node', '-e']);
  expect(command).toHaveLength(3);
  return command[2]!;
};

/** The variables the sandbox reads (SANDBOX_*). */
const SANDBOX_ENV_VARS = readsOf((e) => sandboxConfigFromEnv(e));

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
    expect([name, k, service.secrets?.includes(secret)]).toEqual([name, k, true]);
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

/** The file init-secrets.sh made for a secret of the compose file. */
const secretFile = (secretsDir: string, secret: string) =>
  path.join(secretsDir, path.basename(compose.secrets[secret]!.file));

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

  /**
   * A service's secrets as its container sees them (/run/secrets/<name>), in a folder of their own; `content` puts
   * something else in some of them (a URL naming a test server).
   */
  const runSecrets = (service: string, content: Record<string, string> = {}) => {
    const dir = mkdtempSync(path.join(work, `${service}-secrets-`));
    for (const secret of svc(service).secrets ?? []) {
      writeFileSync(path.join(dir, secret), content[secret] ?? readFileSync(secretFile(secretsDir, secret)));
    }
    return dir;
  };
  /** A psql job's script run here against a test server, signed in as the compose's superuser is. */
  const runSuperuserJob = (name: string, pg: TestPostgres, content: Record<string, string> = {}) => {
    const jobEnv = env(name);
    expect(jobEnv).toMatchObject({ PGUSER: env('postgres').POSTGRES_USER, PGDATABASE: 'postgres' });
    expect(jobEnv.PGPASSWORD).toBe(env('postgres').POSTGRES_PASSWORD);
    const secrets = `${runSecrets(name, content)}/`;
    const script = scriptOf(name).replaceAll('/run/secrets/', secrets);
    // A *_FILE variable names a secret as the container sees it: here, in the folder of this run's secrets.
    const fileVars = Object.entries(jobEnv).filter(([k, v]) => k.endsWith('_FILE') && v.startsWith('/run/secrets/'));
    return execFileSync('sh', ['-ec', script], {
      env: {
        ...jobEnv,
        ...Object.fromEntries(fileVars.map(([k, v]) => [k, v.replace('/run/secrets/', secrets)])),
        PATH: process.env.PATH,
        PGHOST: pg.host,
        PGPORT: String(pg.port),
        PGUSER: pg.user,
        PGPASSWORD: decodeURIComponent(new URL(pg.url).password),
      },
      encoding: 'utf8',
    });
  };
  /** A URL of the compose network pointed at a test server instead. */
  const at = (pg: TestPostgres, url: string | URL, database?: string) => {
    const u = new URL(url);
    u.hostname = pg.host;
    u.port = String(pg.port);
    if (database) u.pathname = `/${database}`;
    return u;
  };

  test('interpolates only variables deploy/.env.example documents, and needs POSTGRES_PASSWORD and SECRETS_GID', () => {
    expect([...used].filter((v) => !envExample.documented.has(v))).toEqual([]);
    // Both are left for deploy/init-secrets.sh to fill in; without either the file does not load.
    for (const name of ['POSTGRES_PASSWORD', 'SECRETS_GID']) {
      expect([name, envExample.values[name]]).toEqual([name, '']);
      const without = { ...userEnv, [name]: '' };
      expect(() => loadCompose(text, without)).toThrow(InterpolationError);
      expect(() => loadCompose(text, without)).toThrow(new RegExp(`^${name}: `));
    }
  });

  test('has the services, from pinned official images or the project Dockerfile', () => {
    expect(Object.keys(compose.services).sort()).toEqual([...LONG_RUNNING, ...ONE_SHOTS, ...ON_DEMAND].sort());
    expect(svc('postgres').image).toMatch(/^postgres:16\.\d+$/);
    for (const job of SUPERUSER_JOBS) expect([job, svc(job).image]).toEqual([job, svc('postgres').image]);
    expect(svc('minio').image).toMatch(/^minio\/minio:RELEASE\.\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ$/);
    expect(svc('minio-bucket').image).toMatch(/^minio\/mc:RELEASE\.\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ$/);
    expect(svc('load-balancer').image).toMatch(/^haproxy:\d+\.\d+\.\d+$/);

    const commands: Record<string, string> = {
      'api-1': 'dist/api/server.js',
      'api-2': 'dist/api/server.js',
      worker: 'dist/worker.js',
      codec: 'dist/codec/main.js',
      sandbox: 'dist/sandbox/main.js',
    };
    const images = new Set<string | undefined>();
    for (const [name, entry] of Object.entries(commands)) {
      const s = svc(name);
      // The product image (the build id comes in as a build argument: its WORKER_BUILD_ID); the sandbox its own.
      expect(s.build).toEqual(
        name === 'sandbox'
          ? { context: '.', dockerfile: 'Dockerfile', target: 'sandbox' }
          : { context: '.', dockerfile: 'Dockerfile', target: 'product', args: { BUILD_ID: '' } },
      );
      expect(s.command).toEqual(['node', ...(name.startsWith('api-') ? API_NODE_FLAGS : []), entry]);
      if (name !== 'sandbox') images.add(s.image);
      // tsconfig.build.json compiles src/ into dist/: the entry point has its source.
      expect(existsSync(path.join(ROOT, entry.replace(/^dist\//, 'src/').replace(/\.js$/, '.ts')))).toBe(true);
    }
    expect(images.size).toBe(1);
    expect(svc('sandbox').image).not.toBe(svc('api-1').image);
    const build = JSON.parse(read('tsconfig.build.json')) as { compilerOptions: Record<string, unknown> };
    expect(build.compilerOptions).toMatchObject({ rootDir: 'src', outDir: 'dist', noEmit: false });
  });

  test('runs the Temporal server, its admin tools and its UI at the versions the native stack builds', () => {
    const serverVersion = /^version="v(\d+\.\d+\.\d+)"$/m.exec(read('scripts/install-temporal-server.sh'))?.[1];
    const uiVersion = /^version="v(\d+\.\d+\.\d+)"$/m.exec(read('scripts/install-temporal-ui.sh'))?.[1];
    // Outside the published advisories' ranges (test/unit/test-tools.test.ts checks the installer's against them).
    expect(serverVersion).toBe('1.30.8');
    expect(uiVersion).toBe('2.42.1');
    expect(svc('temporal').image).toBe(`temporalio/server:${serverVersion}`);
    for (const s of ['temporal-schema', 'temporal-setup', 'temporal-cli']) {
      // From 1.30 the admin tools' tags are the server's version alone.
      expect([s, svc(s).image]).toEqual([s, `temporalio/admin-tools:${serverVersion}`]);
    }
    // Temporal's UI image of that release, its server built again with PKCE from the same release's source.
    const ui = svc('temporal-ui') as { build?: { args?: Record<string, string> }; image?: string };
    expect(ui.build?.args?.TEMPORAL_UI_IMAGE).toBe(`temporalio/ui:${uiVersion}`);
    expect(ui.image).toBe(`patient-journey-temporal-ui:${uiVersion}-pkce`);
    expect(read('Dockerfile')).toContain(`ARG TEMPORAL_UI_IMAGE=temporalio/ui:${uiVersion}`);
  });

  test('runs the sandbox in the optional profile `sandbox` and the temporal CLI in `tools`, nothing else', () => {
    expect(svc('sandbox').profiles).toEqual(['sandbox']);
    expect(svc('temporal-cli').profiles).toEqual(['tools']);
    for (const name of Object.keys(compose.services).filter((n) => !['sandbox', 'temporal-cli'].includes(n))) {
      expect([name, svc(name).profiles]).toEqual([name, undefined]);
    }
  });

  test('publishes the API on 3000 and 3443 through the load balancer; everything on loopback or not at all', () => {
    // HAProxy listens on what the load balancer publishes and forwards to the replicas' API_PORT: on this machine's
    // loopback unless API_PUBLISH_ADDRESS says otherwise (test/compose/hardening.test.ts).
    expect(publishedPorts(svc('load-balancer'))).toEqual([
      { hostIp: '127.0.0.1', host: 3000, container: 3000 },
      { hostIp: '127.0.0.1', host: 3443, container: 3443 },
    ]);
    expect(env('sandbox').SANDBOX_HOST).toBe('0.0.0.0');
    expect(hostPort('sandbox', Number(env('sandbox').SANDBOX_PORT)).host).toBe(4010);
    expect(env('sandbox').SANDBOX_PUBLIC_URL).toBe('http://localhost:4010');
    // temporalio/ui listens on 8080 unless TEMPORAL_UI_PORT says otherwise.
    expect(env('temporal-ui').TEMPORAL_UI_PORT).toBeUndefined();
    expect(hostPort('temporal-ui', 8080).host).toBe(8080);
    for (const [name, s] of Object.entries(compose.services)) {
      for (const p of publishedPorts(s)) expect([name, p.host, p.hostIp]).toEqual([name, p.host, '127.0.0.1']);
    }
    // What holds data answers inside the network only; the codec server (the payload keys) on loopback only, for
    // the operators' browsers (test/deploy/compose-identity.test.ts checks how it identifies them).
    for (const name of ['minio', ...API_REPLICAS, 'worker', 'postgres']) {
      expect([name, svc(name).ports]).toEqual([name, undefined]);
    }
    expect(publishedPorts(svc('codec'))).toEqual([{ hostIp: '127.0.0.1', host: 8888, container: 8888 }]);
  });

  test('runs two identical API replicas behind HAProxy, which checks GET /healthz as the native stack does', () => {
    expect(svc('api-2')).toEqual(svc('api-1'));
    for (const name of API_REPLICAS) expect(env(name).API_HOST).toBe('0.0.0.0');
    const apiPort = Number(env('api-1').API_PORT);

    const lb = svc('load-balancer');
    const cfgMount = mounts(lb).find((m) => m.target === '/usr/local/etc/haproxy/haproxy.cfg');
    expect(cfgMount).toEqual({ source: './deploy/haproxy/haproxy.cfg', target: expect.any(String), readOnly: true });
    const cfg = read(cfgMount!.source);
    const servers = [...cfg.matchAll(/^\s*server (\S+) (\S+):(\d+) check$/gm)].map((m) => [m[1], m[2], Number(m[3])]);
    expect(servers).toEqual(API_REPLICAS.map((name) => [name, name, apiPort]));
    expect(cfg).toMatch(/^\s*bind :3000$/m);
    expect(lb.depends_on).toEqual(Object.fromEntries(API_REPLICAS.map((n) => [n, { condition: 'service_started' }])));

    // The same balancing, retries and health check as the load balancer `npm run start:production` starts.
    for (const line of [
      'balance roundrobin',
      'option httpchk GET /healthz',
      'http-check expect status 200',
      'retries 2',
      'option redispatch',
      'option forwardfor',
    ]) {
      expect([line, cfg.includes(`  ${line}\n`), stackParts.includes(`'  ${line}'`)]).toEqual([line, true, true]);
    }
    expect(read('src/api/routes/health-and-metrics.ts')).toContain("'/healthz'");
    // A webhook URL carries the journey's credential: HAProxy logs no request.
    expect(cfg).not.toMatch(/^\s*(log|option httplog)\b/m);

    // Inside the network the load balancer is `api`: the sandbox calls the webhook there. Its fixed address is the one
    // the replicas trust (test/deploy/trusted-proxies.test.ts).
    expect(lb.networks).toEqual({ default: { ipv4_address: env('api-1').API_TRUSTED_PROXIES, aliases: ['api'] } });
    const publicUrl = new URL(env('worker').PUBLIC_BASE_URL!);
    expect([publicUrl.hostname, Number(publicUrl.port)]).toEqual(['api', 3000]);
  });

  test('the HAProxy configuration is valid (when haproxy is installed here)', () => {
    const bin = ['/usr/sbin/haproxy', '/usr/local/sbin/haproxy', '/usr/bin/haproxy'].find((p) => existsSync(p));
    if (!bin) return;
    // Exits 0 on a valid file; the replicas' names do not resolve here, which only warns (init-addr none). The
    // certificate is the one init-secrets.sh made, where the container finds its secret.
    expect(svc('load-balancer').secrets).toEqual(['api_tls']);
    const cfg = path.join(work, 'haproxy.cfg');
    writeFileSync(
      cfg,
      read('deploy/haproxy/haproxy.cfg').replaceAll('/run/secrets/api_tls', secretFile(secretsDir, 'api_tls')),
    );
    execFileSync(bin, ['-c', '-q', '-f', cfg], { stdio: 'pipe' });
  });

  test('runs two workers that scale out: no fixed name, no published port, no volume', () => {
    expect(svc('worker').deploy).toEqual({ replicas: 2 });
    expect(/this\.o\.workers \?\? (\d+)/.exec(productionStack)?.[1]).toBe('2');
    expect(svc('worker').ports).toBeUndefined();
    for (const [name, s] of Object.entries(compose.services)) {
      expect([name, s.container_name, s.hostname]).toEqual([name, undefined, undefined]);
    }
  });

  test('sets only variables the engine reads (CONFIG_ENV_VARS), the AWS SDK reads, or the sandbox reads', () => {
    for (const name of ENGINE) {
      const unknown = Object.keys(env(name)).filter((k) => !CONFIG_ENV_VARS.includes(k));
      expect([name, unknown.filter((k) => !AWS_SDK_ENV_VARS.includes(k))]).toEqual([name, []]);
    }
    // The codec server reaches the object store for the audit checkpoints only (test/compose/checkpoints.test.ts).
    expect(Object.keys(env('codec')).filter((k) => k.startsWith('AWS_'))).toEqual(['AWS_SHARED_CREDENTIALS_FILE']);
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
      'api-1': ['TEMPORAL_ADDRESS', 'WEBHOOK_SECRET', 'PAYLOAD_ENCRYPTION_KEYS', 'CLINICS_FILE', 'INBOX_DATABASE_URL'],
      'api-2': ['TEMPORAL_ADDRESS', 'WEBHOOK_SECRET', 'PAYLOAD_ENCRYPTION_KEYS', 'CLINICS_FILE', 'INBOX_DATABASE_URL'],
      worker: [
        'TEMPORAL_ADDRESS',
        'WEBHOOK_SECRET',
        'PAYLOAD_ENCRYPTION_KEYS',
        'CLINICS_FILE',
        'EXAM_SERVICE_BASE_URL',
        'PUBLIC_BASE_URL',
      ],
      codec: ['PAYLOAD_ENCRYPTION_KEYS', 'CODEC_SERVER_TOKEN'],
    };
    for (const name of ENGINE) {
      const e = env(name);
      for (const k of required[name]) expect([name, k, k in e || `${k}_FILE` in e]).toEqual([name, k, true]);
      // Secrets come from files only.
      for (const k of [
        'WEBHOOK_SECRET',
        'PAYLOAD_ENCRYPTION_KEYS',
        'INBOX_DATABASE_URL',
        'CODEC_SERVER_TOKEN',
        'AUDIT_DATABASE_URL',
      ]) {
        expect([name, k, e[k]]).toEqual([name, k, undefined]);
      }

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

  test('keeps the callback inbox in PostgreSQL: the database the inbox-database job makes from the same secret', () => {
    const urls = API_REPLICAS.map((name) => {
      const inbox = configOf(compose, name, secretsDir).inbox;
      expect(inbox.store).toBe('postgres');
      return inbox.store === 'postgres' ? new URL(inbox.databaseUrl) : undefined;
    });
    expect(urls[0]?.href).toBe(urls[1]?.href);
    const url = urls[0]!;
    expect([url.protocol, url.hostname, url.port, url.pathname]).toEqual([
      'postgres:',
      'postgres',
      '5432',
      `/${NATIVE_INBOX_DATABASE}`,
    ]);
    expect(url.username).toBe(NATIVE_INBOX_DATABASE);
    expect(url.username).not.toBe(env('postgres').POSTGRES_USER);
    expect(url.password.length).toBeGreaterThanOrEqual(24);

    const job = svc('inbox-database');
    expect(job.secrets).toEqual(['inbox_database_url']);
    expect(env(API_REPLICAS[0]).INBOX_DATABASE_URL_FILE).toBe('/run/secrets/inbox_database_url');
    expect(env('inbox-database').DATABASE_URL_FILE).toBe('/run/secrets/inbox_database_url');
    expect(scriptOf('inbox-database')).toContain('$(cat "$DATABASE_URL_FILE")');
    expect(env('inbox-database')).toMatchObject({ PGHOST: 'postgres', PGUSER: env('postgres').POSTGRES_USER });
    expect(env('inbox-database').PGPASSWORD).toBe(env('postgres').POSTGRES_PASSWORD);
    // The API replicas' alone: no other process of the engine may read or drop the callbacks waiting there.
    for (const name of ['worker', 'codec']) {
      expect([name, svc(name).secrets?.includes('inbox_database_url')]).toEqual([name, false]);
    }
  });

  test("keeps each patient's data key in PostgreSQL, a database and role of their own every engine process reads", () => {
    const urls = ENGINE.map((name) => {
      const { patientKeys } = loadPatientKeyConfig(serviceEnv(compose, name, secretsDir));
      expect([name, patientKeys.store]).toEqual([name, 'postgres']);
      if (patientKeys.store !== 'postgres') return '';
      // The erasure log beside the audit trail's checkpoints, under Object Lock (what a restore cannot take back).
      const log = patientKeys.erasureLog;
      expect([name, log.store, log.store === 's3' && log.bucket]).toEqual([
        name,
        's3',
        env('codec').AUDIT_CHECKPOINT_BUCKET,
      ]);
      return patientKeys.databaseUrl;
    });
    expect(new Set(urls).size).toBe(1);
    const url = new URL(urls[0]!);
    expect([url.protocol, url.hostname, url.port, url.pathname]).toEqual([
      'postgres:',
      'postgres',
      '5432',
      `/${NATIVE_PATIENT_KEYS_DATABASE}`,
    ]);
    expect(url.username).toBe(NATIVE_PATIENT_KEYS_ROLE);
    expect(url.password.length).toBeGreaterThanOrEqual(24);
    expect(env('patient-key-database').DATABASE_URL_FILE).toBe('/run/secrets/patient_key_database_url');
    expect(svc('patient-key-database').secrets).toEqual(['patient_key_database_url']);
    // Every engine process waits for the job.
    for (const name of ENGINE) {
      expect([name, Object.keys(svc(name).depends_on ?? {})]).toEqual([
        name,
        expect.arrayContaining(['patient-key-database']),
      ]);
    }
  });

  test.each([
    ['inbox-database', 'inbox_database_url'],
    ['patient-key-database', 'patient_key_database_url'],
  ])('the %s job makes a role that owns its database only, and running it again is harmless', async (job, secret) => {
    // The job's script against a PostgreSQL of its own, the superuser named as in the compose file; the other parts'
    // databases made by their own jobs.
    const pg = await startTestPostgres({ user: env('postgres').POSTGRES_USER, database: 'postgres' });
    try {
      runSuperuserJob('temporal-database', pg);
      for (let run = 0; run < 2; run++) expect(runSuperuserJob(job, pg)).toContain('is ready');
      // The engine's URL, with this server's address instead of the compose network's.
      const url = new URL(readFileSync(secretFile(secretsDir, secret), 'utf8').trim());
      const client = new PgClient({ connectionString: at(pg, url).href });
      await client.connect();
      try {
        // The engine creates its tables at start.
        await client.query('CREATE TABLE inbox_check (id int)');
        const { rows } = await client.query<{ super: boolean; createdb: boolean }>(
          'SELECT rolsuper AS super, rolcreatedb AS createdb FROM pg_roles WHERE rolname = current_user',
        );
        expect(rows).toEqual([{ super: false, createdb: false }]);
      } finally {
        await client.end();
      }
      for (const other of ['temporal', 'temporal_visibility', 'postgres']) {
        const c = new PgClient({ connectionString: at(pg, url, other).href });
        await expect(c.connect()).rejects.toThrow(/permission denied/);
        await c.end().catch(() => undefined);
      }
    } finally {
      await pg.cleanup();
    }
  });

  test('keeps one audit trail in PostgreSQL: the API replicas, the workers and the codec server share one table', () => {
    const urls = ENGINE.map((name) => {
      const e = env(name);
      expect([name, e.AUDIT_STORE, e.AUDIT_DATABASE_URL_FILE]).toEqual([
        name,
        'postgres',
        '/run/secrets/audit_database_url',
      ]);
      // What the process loads: the codec server its audit settings alone (src/codec/main.ts), the others everything.
      const { audit } =
        name === 'codec' ? loadAuditConfig(serviceEnv(compose, name, secretsDir)) : configOf(compose, name, secretsDir);
      expect([name, audit.store]).toEqual([name, 'postgres']);
      return audit.store === 'postgres' ? audit.databaseUrl : '';
    });
    expect(new Set(urls).size).toBe(1);
    const url = new URL(urls[0]!);
    expect([url.protocol, url.hostname, url.port]).toEqual(['postgres:', 'postgres', '5432']);
    // The writer role of `npm run start:production`, with a generated password.
    expect(NATIVE_AUDIT_WRITER).toBe('journey_audit_writer');
    expect(url.username).toBe(NATIVE_AUDIT_WRITER);
    expect(url.password.length).toBeGreaterThanOrEqual(24);
    // A database of its own: not the inbox's (whose role owns it, and could drop what is in it), nor another's.
    const database = url.pathname.slice(1);
    expect(database).toMatch(/^[a-z_]+$/);
    expect(['postgres', 'temporal', 'temporal_visibility', 'keycloak', NATIVE_INBOX_DATABASE]).not.toContain(database);
    // The codec server keeps no file of its own any more.
    expect(env('codec').CODEC_AUDIT_FILE).toBeUndefined();

    // The job: the project image, the same secret, signed in as the table's owner (not the superuser), whose
    // password only the two one-shot audit jobs are given.
    const job = svc('audit-trail');
    expect(job.image).toBe(svc('api-1').image);
    expect(job.build).toEqual(svc('api-1').build);
    expect(job.secrets).toEqual(['audit_owner_password', 'audit_database_url']);
    expect(env('audit-trail')).toEqual({ AUDIT_OWNER_ROLE: 'journey_audit_owner' });
    expect(env('audit-database').AUDIT_OWNER_ROLE).toBe('journey_audit_owner');
    const holders = Object.entries(compose.services).filter(([, s]) => s.secrets?.includes('audit_owner_password'));
    expect(holders.map(([name]) => name).sort()).toEqual(['audit-database', 'audit-trail']);
    for (const name of ENGINE) expect([name, 'PGPASSWORD' in env(name)]).toEqual([name, false]);
  });

  test("the audit-trail job runs the engine's own prepareAuditStore from the image: no SQL of its own to drift", () => {
    const code = auditJobCode();
    expect([...code.matchAll(/require\('([^']+)'\)/g)].map((m) => m[1])).toEqual([
      'node:fs',
      'pg',
      '/app/dist/audit/postgres.js',
    ]);
    // The image: WORKDIR /app, dist/ compiled from src/ (tsconfig.build.json), production dependencies (pg).
    const dockerfile = read('Dockerfile');
    expect(dockerfile).toMatch(/^WORKDIR \/app$/m);
    expect(dockerfile).toMatch(/^COPY --from=build \/app\/dist \.\/dist$/m);
    const pkg = JSON.parse(read('package.json')) as { dependencies: Record<string, string> };
    expect(pkg.dependencies.pg).toBeDefined();
    expect(read('src/audit/postgres.ts')).toContain('export async function prepareAuditStore(');
    // The table, its triggers, the grants and the password are prepareAuditStore's alone.
    for (const sql of [/audit_trail/, /CREATE TABLE/i, /TRIGGER/i, /GRANT SELECT/i, /\bINSERT\b/i, /\bPASSWORD\b/]) {
      expect([String(sql), sql.test(code)]).toEqual([String(sql), false]);
    }
  });

  test('the audit jobs: a table owned by a role no running process signs in as, an append-only writer; harmless again', async () => {
    const pg = await startTestPostgres({ user: env('postgres').POSTGRES_USER, database: 'postgres' });
    try {
      const writerUrl = at(pg, readFileSync(secretFile(secretsDir, 'audit_database_url'), 'utf8').trim());
      const database = writerUrl.pathname.slice(1);
      const code = auditJobCode().replaceAll('/app/dist/audit/postgres.js', path.join(ROOT, 'src/audit/postgres.ts'));
      const runJobs = (url: URL) => {
        // The audit-database job (psql, the superuser), then the audit-trail job (node, the owner).
        expect(runSuperuserJob('audit-database', pg, { audit_database_url: `${url.href}\n` })).toContain(
          `the audit trail's database ${database} is ready (owner journey_audit_owner)`,
        );
        const secrets = runSecrets('audit-trail', { audit_database_url: `${url.href}\n` });
        return execFileSync(
          process.execPath,
          ['--import', 'tsx', '-e', code.replaceAll('/run/secrets/', `${secrets}/`)],
          {
            cwd: ROOT,
            env: { PATH: process.env.PATH, ...env('audit-trail') },
            encoding: 'utf8',
          },
        );
      };
      // Other parts' databases, made as the compose's jobs make them.
      runSuperuserJob('temporal-database', pg);
      runSuperuserJob('keycloak-database', pg);
      for (let run = 0; run < 2; run++) {
        expect(runJobs(writerUrl)).toContain(`the audit trail public.audit_trail in the database ${database} is ready`);
      }

      // As the engine's processes: the table is there and the role may append and read it, nothing more (init
      // refuses a role that could change the trail).
      const log = new PostgresAuditLog({ connectionString: writerUrl.href, poolSize: 1 });
      try {
        await log.init();
        const first = await log.append({ action: 'compose.check', subject: 'test', roles: [], outcome: 'ok' });
        expect(first.seq).toBe(1);
        await expect(log.pool.query("UPDATE public.audit_trail SET subject = 'x'")).rejects.toThrow(/permission/);
        await expect(log.pool.query('DELETE FROM public.audit_trail')).rejects.toThrow(/permission/);
        await expect(log.pool.query('CREATE TABLE public.other (id int)')).rejects.toThrow(/permission/);
      } finally {
        await log.close();
      }
      expect(await verifyAuditTable(writerUrl.href)).toEqual({ ok: true, records: 1 });
      // The table, its trigger function and its database are the owner's, a role that is no superuser; the writer is
      // neither.
      const superuser = new PgClient({ connectionString: at(pg, pg.url, database).href });
      await superuser.connect();
      try {
        const owners = await superuser.query<{ table: string; fn: string; db: string }>(
          `SELECT (SELECT tableowner FROM pg_tables WHERE schemaname = 'public' AND tablename = 'audit_trail') AS table,
                  (SELECT proowner::regrole::text FROM pg_proc WHERE oid = 'public.audit_trail_append_only()'::regprocedure) AS fn,
                  (SELECT datdba::regrole::text FROM pg_database WHERE datname = current_database()) AS db`,
        );
        expect(owners.rows).toEqual([
          { table: 'journey_audit_owner', fn: 'journey_audit_owner', db: 'journey_audit_owner' },
        ]);
        const roles = await superuser.query<{ name: string; super: boolean; createdb: boolean; bypassrls: boolean }>(
          `SELECT rolname AS name, rolsuper AS super, rolcreatedb AS createdb, rolbypassrls AS bypassrls FROM pg_roles
             WHERE rolname IN ('journey_audit_owner', $1) ORDER BY rolname`,
          [writerUrl.username],
        );
        expect(roles.rows).toEqual([
          { name: 'journey_audit_owner', super: false, createdb: false, bypassrls: false },
          { name: writerUrl.username, super: false, createdb: false, bypassrls: false },
        ]);
      } finally {
        await superuser.end();
      }
      // The owner signs in with the password of its secret file; the writer reaches its database only.
      const ownerPassword = readFileSync(secretFile(secretsDir, 'audit_owner_password'), 'utf8').trim();
      const owner = new PgClient({
        connectionString: at(pg, writerUrl, database).href,
        user: 'journey_audit_owner',
        password: ownerPassword,
      });
      await owner.connect();
      await owner.end();
      for (const other of ['temporal', 'temporal_visibility', 'keycloak', 'postgres']) {
        const c = new PgClient({ connectionString: at(pg, writerUrl, other).href });
        const outcome = await c.connect().then(
          () => 'connected',
          (err: Error) => err.message,
        );
        expect([other, outcome]).toEqual([other, expect.stringMatching(/permission denied/)]);
        await c.end().catch(() => undefined);
      }

      // A new password in the file is the role's after the next run; the trail stays as it was.
      const rotated = new URL(writerUrl);
      rotated.password = 'another-password-of-the-writer';
      runJobs(rotated);
      expect(await verifyAuditTable(rotated.href)).toEqual({ ok: true, records: 1 });
      await expect(verifyAuditTable(writerUrl.href)).rejects.toThrow(/password/);
    } finally {
      await pg.cleanup();
    }
  });

  test("a trail an earlier version made as the superuser is handed to the owner, records and writer's rights kept", async () => {
    // An earlier volume: the superuser `temporal`, the table and the writer made as it.
    const pg = await startTestPostgres({ user: 'temporal', database: 'postgres' });
    try {
      const writerUrl = at(pg, readFileSync(secretFile(secretsDir, 'audit_database_url'), 'utf8').trim());
      const database = writerUrl.pathname.slice(1);
      const admin = new PgClient({ connectionString: pg.url });
      await admin.connect();
      await admin.query(`CREATE DATABASE ${database}`);
      await admin.end();
      await prepareAuditStore({
        ownerUrl: at(pg, pg.url, database).href,
        writerRole: writerUrl.username,
        writerPassword: decodeURIComponent(writerUrl.password),
      });
      const before = new PostgresAuditLog({ connectionString: writerUrl.href, poolSize: 1 });
      await before.init();
      await before.append({ action: 'compose.before', subject: 'test', roles: [], outcome: 'ok' });
      await before.close();

      // The jobs of this version, the superuser named as that volume's (POSTGRES_SUPERUSER=temporal).
      const { compose: kept } = loadCompose(text, { ...userEnv, POSTGRES_SUPERUSER: 'temporal' });
      expect(envOf(kept.services['audit-database']!).PGUSER).toBe('temporal');
      expect(runSuperuserJob('audit-database', pg, { audit_database_url: `${writerUrl.href}\n` })).toContain(
        'is ready',
      );
      const secrets = runSecrets('audit-trail', { audit_database_url: `${writerUrl.href}\n` });
      const code = auditJobCode()
        .replaceAll('/app/dist/audit/postgres.js', path.join(ROOT, 'src/audit/postgres.ts'))
        .replaceAll('/run/secrets/', `${secrets}/`);
      execFileSync(process.execPath, ['--import', 'tsx', '-e', code], {
        cwd: ROOT,
        env: { PATH: process.env.PATH, ...env('audit-trail') },
        encoding: 'utf8',
      });

      const superuser = new PgClient({ connectionString: at(pg, pg.url, database).href });
      await superuser.connect();
      try {
        const { rows } = await superuser.query<{ table: string; fn: string }>(
          `SELECT (SELECT tableowner FROM pg_tables WHERE schemaname = 'public' AND tablename = 'audit_trail') AS table,
                  (SELECT proowner::regrole::text FROM pg_proc WHERE oid = 'public.audit_trail_append_only()'::regprocedure) AS fn`,
        );
        expect(rows).toEqual([{ table: 'journey_audit_owner', fn: 'journey_audit_owner' }]);
      } finally {
        await superuser.end();
      }
      const after = new PostgresAuditLog({ connectionString: writerUrl.href, poolSize: 1 });
      try {
        await after.init();
        expect((await after.append({ action: 'compose.after', subject: 'test', roles: [], outcome: 'ok' })).seq).toBe(
          2,
        );
      } finally {
        await after.close();
      }
      expect(await verifyAuditTable(writerUrl.href)).toEqual({ ok: true, records: 2 });
    } finally {
      await pg.cleanup();
    }
  });

  test('no long-running service signs in to PostgreSQL as the superuser: its password is in one-shot jobs only', () => {
    const password = env('postgres').POSTGRES_PASSWORD!;
    expect(password).toBe(userEnv.POSTGRES_PASSWORD);
    expect(env('postgres').POSTGRES_USER).toBe('postgres');
    const holders = Object.entries(compose.services)
      .filter(([, s]) => JSON.stringify([s.environment, s.command, s.entrypoint]).includes(password))
      .map(([name]) => name);
    expect(holders.sort()).toEqual(['postgres', ...SUPERUSER_JOBS].sort());
    for (const job of SUPERUSER_JOBS)
      expect([job, ONE_SHOTS.includes(job), svc(job).restart]).toEqual([job, true, 'no']);
    // Each long-running part signs in as a role of its own, none of them the superuser.
    const roles = {
      temporal: env('temporal').POSTGRES_USER,
      'temporal-schema': env('temporal-schema').SQL_USER,
      keycloak: env('keycloak').KC_DB_USERNAME,
      inbox: new URL(readFileSync(secretFile(secretsDir, 'inbox_database_url'), 'utf8').trim()).username,
      patientKeys: new URL(readFileSync(secretFile(secretsDir, 'patient_key_database_url'), 'utf8').trim()).username,
      audit: new URL(readFileSync(secretFile(secretsDir, 'audit_database_url'), 'utf8').trim()).username,
    };
    expect(roles).toEqual({
      temporal: 'temporal_server',
      'temporal-schema': 'temporal_server',
      keycloak: 'keycloak',
      inbox: 'journeys',
      patientKeys: 'journey_patient_keys',
      audit: 'journey_audit_writer',
    });
    // The Temporal server's password comes from its own secret file, into its environment in its entrypoint.
    expect(env('temporal').POSTGRES_PWD).toBeUndefined();
    expect(svc('temporal').secrets).toEqual(['temporal_database_password']);
    const [sh, flag, script, argv0] = svc('temporal').entrypoint!;
    expect([sh, flag, argv0]).toEqual(['/bin/sh', '-ec', 'entrypoint.sh']);
    expect(script).toContain('POSTGRES_PWD=$(cat /run/secrets/temporal_database_password)\nexport POSTGRES_PWD\n');
    expect(script).toMatch(/exec \/etc\/temporal\/entrypoint\.sh "\$@"\n$/);
    // A volume of an earlier version keeps its superuser's name.
    const { compose: kept } = loadCompose(text, { ...userEnv, POSTGRES_SUPERUSER: 'temporal' });
    for (const job of SUPERUSER_JOBS) expect([job, envOf(kept.services[job]!).PGUSER]).toEqual([job, 'temporal']);
  });

  test('the Temporal databases: its role owns them and nothing else, the schema job sets them up as it', async () => {
    const pg = await startTestPostgres({ user: env('postgres').POSTGRES_USER, database: 'postgres' });
    try {
      for (let run = 0; run < 2; run++) {
        expect(runSuperuserJob('temporal-database', pg)).toContain('the Temporal databases are ready');
      }
      runTemporalSchemaJob(pg);
      await expectTemporalDatabasesOwned(pg);
    } finally {
      await pg.cleanup();
    }
  });

  test('Temporal databases an earlier version made as the superuser are handed to its role, schema and all', async () => {
    const pg = await startTestPostgres({ user: 'temporal', database: 'postgres' });
    try {
      // What the earlier temporal-schema job did, as the superuser.
      const bin = path.join(ROOT, '.tools/temporal-server/bin/temporal-sql-tool');
      const schema = path.join(ROOT, '.tools/temporal-server/schema/postgresql/v12');
      const password = decodeURIComponent(new URL(pg.url).password);
      for (const [db, dir] of [
        ['temporal', 'temporal'],
        ['temporal_visibility', 'visibility'],
      ] as const) {
        const sql = ['--plugin', 'postgres12', '--ep', pg.host, '-p', String(pg.port), '-u', 'temporal', '--db', db];
        const opts = { env: { PATH: process.env.PATH, SQL_PASSWORD: password }, stdio: 'ignore' as const };
        execFileSync(bin, [...sql, 'create'], opts);
        execFileSync(bin, [...sql, 'setup-schema', '-v', '0.0'], opts);
        execFileSync(bin, [...sql, 'update-schema', '-d', path.join(schema, dir, 'versioned')], opts);
      }
      runSuperuserJob('temporal-database', pg);
      runTemporalSchemaJob(pg);
      await expectTemporalDatabasesOwned(pg);
    } finally {
      await pg.cleanup();
    }
  });

  /** The temporal-schema job's script, with the server's tool and schema files of this checkout. */
  const runTemporalSchemaJob = (pg: TestPostgres) => {
    const bin = path.join(ROOT, '.tools/temporal-server/bin');
    expect(existsSync(path.join(bin, 'temporal-sql-tool'))).toBe(true);
    const script = scriptOf('temporal-schema')
      .replaceAll('/run/secrets/', `${runSecrets('temporal-schema')}/`)
      .replaceAll('/etc/temporal/schema/', path.join(ROOT, '.tools/temporal-server/schema/'));
    const out = execFileSync('sh', ['-ec', script], {
      env: {
        PATH: `${bin}:${process.env.PATH}`,
        ...env('temporal-schema'),
        SQL_HOST: pg.host,
        SQL_PORT: String(pg.port),
      },
      encoding: 'utf8',
    });
    expect(out).toContain('Temporal schemas are up to date');
  };

  /** Everything in the two databases is temporal_server's (an extension's own objects aside); it is no superuser. */
  const expectTemporalDatabasesOwned = async (pg: TestPostgres) => {
    const password = readFileSync(secretFile(secretsDir, 'temporal_database_password'), 'utf8').trim();
    const as = (database: string) =>
      new PgClient({ host: pg.host, port: pg.port, user: env('temporal').POSTGRES_USER, password, database });
    for (const database of ['temporal', 'temporal_visibility']) {
      const c = as(database);
      await c.connect();
      try {
        const { rows } = await c.query<{ kind: string; name: string; owner: string }>(
          `SELECT 'relation' AS kind, c.relname AS name, c.relowner::regrole::text AS owner
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'i')
           UNION ALL
           SELECT 'function', p.proname, p.proowner::regrole::text
             FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
             WHERE n.nspname = 'public' AND NOT EXISTS (SELECT FROM pg_depend d
               WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
           UNION ALL
           SELECT 'database', datname, datdba::regrole::text FROM pg_database WHERE datname = current_database()`,
        );
        expect(rows.filter((r) => r.kind === 'relation').length).toBeGreaterThan(5);
        expect([database, rows.filter((r) => r.owner !== 'temporal_server')]).toEqual([database, []]);
        const me = await c.query<{ super: boolean; createdb: boolean; createrole: boolean }>(
          'SELECT rolsuper AS super, rolcreatedb AS createdb, rolcreaterole AS createrole FROM pg_roles WHERE rolname = current_user',
        );
        expect(me.rows).toEqual([{ super: false, createdb: false, createrole: false }]);
        // It changes its schema itself (update-schema, a later version's).
        await c.query('ALTER TABLE schema_version ADD COLUMN IF NOT EXISTS compose_check int');
        await c.query('ALTER TABLE schema_version DROP COLUMN compose_check');
      } finally {
        await c.end();
      }
    }
    const other = as('postgres');
    await expect(other.connect()).rejects.toThrow(/permission denied/);
    await other.end().catch(() => undefined);
  };

  test('keeps attachments in the MinIO bucket the minio-bucket job makes, as a user of its own from a secret file', async () => {
    const bucket = env('minio-bucket').BUCKET;
    expect(bucket).toBe(NATIVE_BUCKET);
    expect(scriptOf('minio-bucket')).toContain('mc mb --ignore-existing "objects/$BUCKET"');
    expect(scriptOf('minio-bucket')).toContain('@minio:9000"');
    for (const name of [...API_REPLICAS, 'worker']) {
      const store = configOf(compose, name, secretsDir).attachmentStore;
      expect([name, store]).toEqual([
        name,
        { kind: 's3', bucket, prefix: '', endpoint: 'http://minio:9000', region: 'us-east-1' },
      ]);
    }
    expect(svc('minio').command).toEqual(['server', '/data']);
    expect(mounts(svc('minio'))).toEqual([{ source: 'minio-data', target: '/data', readOnly: false }]);

    // MinIO's root user and password, for MinIO and the minio-bucket job only; the engine's processes sign in as
    // journey-engine, whose secret key is in the AWS shared credentials file (test/compose/checkpoints.test.ts).
    const minio = env('minio');
    const root = readFileSync(secretFile(secretsDir, 'object_store_root_user'), 'utf8').trim();
    const password = readFileSync(secretFile(secretsDir, 'object_store_root_password'), 'utf8').trim();
    expect(minio.MINIO_ROOT_USER_FILE).toBe('/run/secrets/object_store_root_user');
    expect(minio.MINIO_ROOT_PASSWORD_FILE).toBe('/run/secrets/object_store_root_password');
    expect(svc('minio-bucket').secrets).toEqual([
      ...svc('minio').secrets!,
      'object_store_engine_credentials',
      'object_store_codec_credentials',
    ]);
    expect(password.length).toBeGreaterThanOrEqual(24);
    const ini = readFileSync(secretFile(secretsDir, 'object_store_engine_credentials'), 'utf8');
    const user = /^aws_access_key_id = (.+)$/m.exec(ini)![1]!;
    const secret = /^aws_secret_access_key = (.+)$/m.exec(ini)![1]!;
    expect(user).toBe('journey-engine');
    expect(user).not.toBe(root);
    expect(secret.length).toBeGreaterThanOrEqual(24);

    const credentialsFile = serviceEnv(compose, 'worker', secretsDir).AWS_SHARED_CREDENTIALS_FILE!;
    const saved = { ...process.env };
    try {
      for (const k of Object.keys(process.env)) if (k.startsWith('AWS_')) delete process.env[k];
      process.env.AWS_SHARED_CREDENTIALS_FILE = credentialsFile;
      const s3 = new S3Client({ region: 'us-east-1' });
      const credentials = await s3.config.credentials();
      s3.destroy();
      expect([credentials.accessKeyId, credentials.secretAccessKey]).toEqual([user, secret]);
    } finally {
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
    }
  });

  test('keeps secrets in files under deploy/secrets/ that git and the Docker build context ignore', () => {
    for (const [name, { file }] of Object.entries(compose.secrets)) {
      expect([name, file.startsWith('./deploy/secrets/')]).toEqual([name, true]);
      // deploy/init-secrets.sh makes every one of them.
      expect([name, existsSync(path.join(secretsDir, path.basename(file)))]).toEqual([name, true]);
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
    // Every secret a service is given is one it reads through a *_FILE variable, or a job's script reads.
    for (const [name, s] of Object.entries(compose.services)) {
      for (const secret of s.secrets ?? []) {
        const read = Object.values(envOf(s)).includes(`/run/secrets/${secret}`);
        const script = [...(s.entrypoint ?? []), ...(s.command ?? [])].join('\n').includes(`/run/secrets/${secret}`);
        // Or a configuration file mounted from this checkout (HAProxy's).
        const mounted = mounts(s).some(
          (m) =>
            m.source.startsWith('./deploy/') &&
            readFileSync(path.join(ROOT, m.source), 'utf8').includes(`/run/secrets/${secret}`),
        );
        expect([name, secret, read || script || mounted]).toEqual([name, secret, true]);
      }
    }
  });

  test('holds no literal secret', () => {
    const secretish = /(SECRET|PASSWORD|PWD|TOKEN|API_KEY|KEYS?|AUTH|DATABASE_URL)$/;
    for (const [name, s] of Object.entries(raw.services)) {
      for (const [k, v] of Object.entries(envOf(s))) {
        // Every *_FILE names a secret file.
        if (k.endsWith('_FILE')) {
          expect([name, k, /^\/run\/secrets\/[a-z0-9_]+$/.test(v)]).toEqual([name, k, true]);
          continue;
        }
        // TEMPORAL_CODEC_PASS_ACCESS_TOKEN is a switch (the Web UI passes the signed-in person's token), not a token.
        if (!secretish.test(k) || k === 'TEMPORAL_CODEC_PASS_ACCESS_TOKEN') continue;
        // Either a file path or `${VAR:?...}` from .env, never a value.
        expect([name, k, /^\$\{[A-Z_]+:\?[^}]*\}$/.test(v)]).toEqual([name, k, true]);
      }
    }
    expect(text).not.toMatch(/whsec_|PRIVATE KEY|minioadmin/);
    // Nothing that looks like a generated key or token (paths and names here are lower case).
    const keyLike = (text.match(/[A-Za-z0-9+/_-]{24,}={0,2}/g) ?? []).filter((t) => /[A-Z]/.test(t) && /\d/.test(t));
    expect(keyLike).toEqual([]);
    for (const [k, v] of Object.entries(envExample.values)) {
      if (secretish.test(k)) expect([k, v]).toEqual([k, '']);
    }
  });

  test("keeps the static token at the codec server for the temporal CLI; the UI passes signed-in operators' tokens", () => {
    const codec = loadCodecConfig(serviceEnv(compose, 'codec', secretsDir)).codec;
    expect(codec.serverToken).toBe(readFileSync(secretFile(secretsDir, 'codec_server_token'), 'utf8').trim());
    expect(codec.serverToken!.length).toBeGreaterThanOrEqual(32);
    // The operators' browsers call it from the UI's origin, over HTTPS, with their access token (never in a URL).
    expect(codec.corsOrigins).toEqual([new URL(env('temporal-ui').TEMPORAL_AUTH_CALLBACK_URL!).origin]);
    expect(codec.oidc).toBeDefined();
    expect(codec.tls).toBeDefined();
    expect(env('temporal-ui').TEMPORAL_CODEC_ENDPOINT).toBe(`https://localhost:${env('codec').CODEC_PORT}`);
    expect(env('temporal-ui').TEMPORAL_CODEC_PASS_ACCESS_TOKEN).toBe('true');
    expect(env('temporal-ui').TEMPORAL_ADDRESS).toBe('temporal:7233');
    expect(env('temporal-ui').TEMPORAL_DEFAULT_NAMESPACE).toBe(env('api-1').TEMPORAL_NAMESPACE);

    // The temporal CLI service decrypts through it, the token going from the secret file to its environment.
    const cli = env('temporal-cli');
    expect(cli.TEMPORAL_CODEC_ENDPOINT).toBe(`https://codec:${env('codec').CODEC_PORT}`);
    expect(cli.TEMPORAL_ADDRESS).toBe(env('worker').TEMPORAL_ADDRESS);
    expect(cli.TEMPORAL_NAMESPACE).toBe(env('worker').TEMPORAL_NAMESPACE);
    expect(svc('temporal-cli').secrets).toEqual([
      'codec_server_token',
      'codec_tls_cert',
      'journey_automation_client_secret',
    ]);
    expect(svc('temporal-cli').depends_on).toEqual({ codec: { condition: 'service_healthy' } });
  });

  test("the temporal CLI's entrypoint hands the codec server the token it requires", async () => {
    const [sh, flag, script, argv0] = svc('temporal-cli').entrypoint!;
    expect([sh, flag, argv0]).toEqual(['/bin/sh', '-ec', 'temporal']);
    const token = readFileSync(secretFile(secretsDir, 'codec_server_token'), 'utf8').trim();
    const bin = path.join(work, 'bin');
    execFileSync('mkdir', ['-p', bin]);
    // A stand-in `temporal` that prints the settings it was started with.
    writeFileSync(
      path.join(bin, 'temporal'),
      '#!/bin/sh\nprintf "%s\\n" "args=$*" "auth=$TEMPORAL_CODEC_AUTH" "key=${TEMPORAL_API_KEY:-}" "tls=${TEMPORAL_TLS:-}"\n',
      { mode: 0o755 },
    );
    // The identity provider's token endpoint, stood in for (test/deploy/compose-identity.test.ts checks the request).
    writeFileSync(path.join(bin, 'curl'), '#!/bin/sh\ncat > /dev/null\necho \'{"access_token":"a-service-token"}\'\n', {
      mode: 0o755,
    });
    writeFileSync(path.join(bin, 'jq'), '#!/bin/sh\nsed -n \'s/.*"access_token":"\\([^"]*\\)".*/\\1/p\'\n', {
      mode: 0o755,
    });
    const roots = path.join(work, 'system-roots.pem');
    writeFileSync(roots, '');
    const run = (secretDir: string) =>
      execFileSync(
        'sh',
        [
          '-ec',
          script!
            .replaceAll('/etc/ssl/certs/ca-certificates.crt', roots)
            .replaceAll('/tmp/roots.pem', path.join(work, 'roots.pem'))
            .replaceAll('/run/secrets/', `${secretDir}/`),
          argv0!,
          ...svc('temporal-cli').command!,
        ],
        { env: { PATH: `${bin}:${process.env.PATH}` }, encoding: 'utf8' },
      );
    // The service's secrets as the container sees them: /run/secrets/<secret name>.
    const runSecrets = path.join(work, 'run-secrets');
    execFileSync('mkdir', ['-p', runSecrets]);
    for (const secret of svc('temporal-cli').secrets!) {
      writeFileSync(path.join(runSecrets, secret), readFileSync(secretFile(secretsDir, secret)));
    }
    const out = run(runSecrets);
    expect(out).toContain(`args=${svc('temporal-cli').command!.join(' ')}\n`);
    // The bundled server's authorizer: the automation service account's token, over plain gRPC in the network.
    expect(out).toContain('key=a-service-token\ntls=false\n');
    const auth = /^auth=(.*)$/m.exec(out)![1]!;

    const same = (p: Payload[]) => Promise.resolve(p);
    const app = buildCodecServer({ codec: { encode: same, decode: same }, corsOrigins: [], token });
    try {
      const decode = (headers: Record<string, string>) =>
        app.inject({ method: 'POST', url: '/decode', headers, payload: { payloads: [] } });
      expect((await decode({ authorization: auth })).statusCode).toBe(200);
      expect((await decode({})).statusCode).toBe(401);
    } finally {
      await app.close();
    }

    // With Temporal Cloud's key mounted (deploy/compose.temporal-cloud.yml), the CLI gets it too.
    const withKey = path.join(work, 'with-key');
    execFileSync('mkdir', ['-p', withKey]);
    writeFileSync(path.join(withKey, 'codec_server_token'), `${token}\n`);
    writeFileSync(path.join(withKey, 'codec_tls_cert'), readFileSync(secretFile(secretsDir, 'codec_tls_cert')));
    writeFileSync(path.join(withKey, 'temporal_api_key'), 'a-cloud-key\n');
    expect(run(withKey)).toContain('key=a-cloud-key\ntls=\n');
  });

  test("registers exactly the journey's search attributes, after the server answers, idempotently", () => {
    const script = scriptOf('temporal-setup');
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
    expect(svc('temporal-setup').depends_on).toEqual({ temporal: { condition: 'service_healthy' } });
  });

  test('sets up the PostgreSQL schemas before the server starts, and configures the server', () => {
    const server = svc('temporal');
    const e = env('temporal');
    const schema = svc('temporal-schema');
    const script = scriptOf('temporal-schema');
    expect(script).toContain('temporal-sql-tool --plugin postgres12 --ep $SQL_HOST -p $SQL_PORT -u $SQL_USER');
    for (const step of ['setup-schema -v 0.0', 'update-schema -d']) expect(script).toContain(step);
    // Its role may not create databases: the temporal-database job made them.
    expect(script).not.toMatch(/\$sql create\b/);
    expect(script).toMatch(/temporal:temporal temporal_visibility:visibility/);
    expect(schema.depends_on).toEqual({ 'temporal-database': { condition: 'service_completed_successfully' } });
    expect(env('temporal-schema')).toEqual({ SQL_HOST: 'postgres', SQL_PORT: '5432', SQL_USER: e.POSTGRES_USER });

    // After Keycloak too: its JWT authorizer reads the issuer's keys at start (test/deploy/compose-identity.test.ts).
    expect(server.depends_on).toEqual({
      'temporal-schema': { condition: 'service_completed_successfully' },
      keycloak: { condition: 'service_healthy' },
    });
    expect(e).toMatchObject({ DB: 'postgres12', DB_PORT: '5432', POSTGRES_SEEDS: 'postgres' });
    // Its own role and password (the superuser's is not Temporal's: see the superuser test above).
    expect(e.POSTGRES_USER).toBe('temporal_server');
    expect(e.POSTGRES_USER).not.toBe(env('postgres').POSTGRES_USER);
    expect(svc('temporal-schema').secrets).toEqual(svc('temporal').secrets);

    const dynamic = mounts(server).find((m) => m.target === e.DYNAMIC_CONFIG_FILE_PATH);
    expect(dynamic).toBeDefined();
    expect(dynamic!.readOnly).toBe(true);
    const values = YAML.parse(readFileSync(path.join(ROOT, dynamic!.source), 'utf8')) as Record<string, unknown>;
    // The API acts on journeys through workflow updates.
    expect(values['frontend.enableUpdateWorkflowExecution']).toEqual([{ value: true }]);
  });

  test('checks the health of every long-running service that can tell', () => {
    for (const name of ['postgres', 'temporal', 'minio', ...API_REPLICAS, 'codec', 'sandbox']) {
      const t = svc(name).healthcheck?.test;
      expect([name, Array.isArray(t) && t.length > 1 && t.every((x) => typeof x === 'string')]).toEqual([name, true]);
    }
    const probes: [string, string][] = [
      ...API_REPLICAS.map((n): [string, string] => [n, `fetch('http://127.0.0.1:${env(n).API_PORT}/healthz'`]),
      // HTTPS with its own certificate (the Web UI passes tokens to an https:// endpoint only).
      ['codec', `.get('https://127.0.0.1:${env('codec').CODEC_PORT}/healthz'`],
      ['sandbox', `fetch('http://127.0.0.1:${env('sandbox').SANDBOX_PORT}/_sandbox/health'`],
    ];
    for (const [name, call] of probes) {
      const [cmd, node, flag, code] = svc(name).healthcheck!.test as string[];
      expect([cmd, node, flag]).toEqual(['CMD', 'node', '-e']);
      expect(code).toContain(call);
      expect(() => new Script(code!)).not.toThrow();
    }
    // The codec server's /healthz needs no token: the probe carries none.
    expect((svc('codec').healthcheck!.test as string[])[3]).not.toContain('codec_server_token');
    expect((svc('postgres').healthcheck!.test as string[]).join(' ')).toContain('pg_isready');
    expect(svc('minio').healthcheck!.test).toEqual(['CMD', 'mc', 'ready', 'local']);
  });

  test('starts in order: conditions on every dependency', () => {
    const done = { condition: 'service_completed_successfully' };
    for (const name of API_REPLICAS) {
      expect([name, svc(name).depends_on]).toEqual([
        name,
        {
          'temporal-setup': done,
          'inbox-database': done,
          'patient-key-database': done,
          'minio-bucket': done,
          'audit-trail': done,
        },
      ]);
    }
    expect(svc('worker').depends_on).toEqual({
      'temporal-setup': done,
      'minio-bucket': done,
      'audit-trail': done,
      'patient-key-database': done,
    });
    expect(svc('codec').depends_on).toEqual({
      'audit-trail': done,
      'minio-bucket': done,
      'patient-key-database': done,
    });
    expect(svc('temporal-ui').depends_on).toEqual({ 'temporal-setup': done });
    const healthy = { postgres: { condition: 'service_healthy' } };
    for (const job of SUPERUSER_JOBS.filter((j) => j !== 'postgres-synchronous')) {
      expect([job, svc(job).depends_on]).toEqual([job, healthy]);
    }
    // The standby named synchronous once it streams; it starts after the replication job.
    expect(svc('postgres-synchronous').depends_on).toEqual({ 'postgres-standby': { condition: 'service_healthy' } });
    expect(svc('postgres-standby').depends_on).toEqual({ 'postgres-replication': done });
    expect(svc('temporal-schema').depends_on).toEqual({ 'temporal-database': done });
    expect(svc('audit-trail').depends_on).toEqual({ 'audit-database': done });
    expect(svc('minio-bucket').depends_on).toEqual({ minio: { condition: 'service_healthy' } });
    for (const [name, s] of Object.entries(compose.services)) {
      for (const [dep, d] of Object.entries(s.depends_on ?? {})) {
        expect([name, dep, dep in compose.services, typeof d.condition]).toEqual([name, dep, true, 'string']);
      }
    }
  });

  test('restarts long-running services, not the one-shots', () => {
    for (const name of LONG_RUNNING) expect([name, svc(name).restart]).toEqual([name, 'unless-stopped']);
    for (const name of [...ONE_SHOTS, ...ON_DEMAND]) expect([name, svc(name).restart]).toEqual([name, 'no']);
  });

  test('runs PostgreSQL as a primary and a synchronous standby: a commit waits for postgres_standby', () => {
    const args = (svc('postgres') as { command?: string[] }).command ?? [];
    const settings = args.filter((_, i) => args[i - 1] === '-c');
    expect(settings).toEqual(expect.arrayContaining(['wal_level=replica', 'synchronous_commit=on']));
    // Named synchronous once it streams (not at the primary's first start, which would wait for it).
    expect(settings.filter((kv) => kv.startsWith('synchronous_standby_names'))).toEqual([]);
    const sync = [...(svc('postgres-synchronous').command ?? [])].join('\n');
    expect(sync).toContain("ALTER SYSTEM SET synchronous_standby_names = 'FIRST 1 (postgres_standby)'");
    expect(svc('postgres-synchronous').depends_on).toEqual({ 'postgres-standby': { condition: 'service_healthy' } });
    const standby = svc('postgres-standby');
    const script = [...(standby.entrypoint ?? []), ...(standby.command ?? [])].join('\n');
    // Its copy through the slot the primary keeps, then streaming under the name the primary waits for.
    expect(script).toContain('pg_basebackup -h postgres -U replicator');
    expect(script).toContain('-S postgres_standby');
    expect(script).toContain('application_name=postgres_standby');
    expect(script).toContain("primary_slot_name = 'postgres_standby'");
    expect(script).toContain('standby.signal');
    // The password from its secret file into a passfile (0600), never on a command line or in the environment.
    expect(script).toContain('chmod 0600');
    expect(script).not.toMatch(/PGPASSWORD/);
    expect(standby.depends_on).toEqual({ 'postgres-replication': { condition: 'service_completed_successfully' } });
    const job = [...(svc('postgres-replication').command ?? [])].join('\n');
    expect(job).toContain("pg_create_physical_replication_slot('postgres_standby')");
    expect(job).toContain('host replication replicator all scram-sha-256');
    expect(job).toContain('CREATE ROLE replicator WITH REPLICATION LOGIN');
  });

  test('keeps state in PostgreSQL and MinIO only: the engine keeps nothing on its own disks', () => {
    // The audit trail of every process is in PostgreSQL too (Keycloak keeps its realm there).
    expect(Object.keys(compose.volumes).sort()).toEqual(['minio-data', 'postgres-data', 'postgres-standby-data']);
    const named = (name: string) => mounts(svc(name)).filter((m) => m.source in compose.volumes);
    expect(named('postgres').map((m) => m.target)).toEqual(['/var/lib/postgresql/data']);
    expect(named('postgres-standby').map((m) => m.target)).toEqual(['/var/lib/postgresql/data']);
    expect(named('minio').map((m) => m.target)).toEqual(['/data']);
    for (const name of [...ENGINE, 'audit-trail']) expect([name, svc(name).volumes]).toEqual([name, undefined]);
    expect(env('codec').CODEC_AUDIT_FILE).toBeUndefined();
  });
});

/** Compose's merge of an override file, as far as these files use it. */
function mergeOverride(base: ComposeFile, override: ComposeFile, overrideText: string): ComposeFile {
  const merged: ComposeFile = { ...base, services: { ...base.services }, secrets: { ...base.secrets } };
  Object.assign(merged.secrets, override.secrets);
  for (const [name, o] of Object.entries(override.services)) {
    const b = base.services[name]!;
    merged.services[name] = {
      ...b,
      environment: { ...b.environment, ...o.environment },
      secrets: [...new Set([...(b.secrets ?? []), ...(o.secrets ?? [])])],
      // Merged by key unless tagged `!override`, which these files always do.
      depends_on: o.depends_on ?? b.depends_on,
    };
  }
  const overridden = Object.values(override.services).filter((o) => o.depends_on).length;
  expect(overrideText.match(/depends_on: !override\n/g)?.length).toBe(overridden);
  return merged;
}

describe('deploy/compose.promoted.yml', () => {
  test('after a promotion, the standby answers as postgres and the old primary no longer starts', () => {
    const overrideText = read('deploy/compose.promoted.yml');
    const override = YAML.parse(overrideText.replaceAll('!override', '')) as {
      services: Record<string, { profiles?: string[]; networks?: { default?: { aliases?: string[] } } }>;
    };
    expect(override.services.postgres?.profiles).toEqual(['old-primary']);
    expect(override.services['postgres-replication']?.profiles).toEqual(['old-primary']);
    expect(override.services['postgres-standby']?.networks?.default?.aliases).toEqual(['postgres']);
    expect(overrideText).toContain("STANDBY_PROMOTED: 'true'");
    const standby = [...(svc('postgres-standby').command ?? [])].join('\n');
    expect(standby).toContain('if [ "${STANDBY_PROMOTED:-}" = true ]; then');
    // Every part connects to the name `postgres`, which the promoted standby then answers as.
    expect(read('deploy/init-secrets.sh')).toContain('@postgres:5432/');
    expect(overrideText).toContain('depends_on: !override {}');
  });
});

describe('deploy/compose.temporal-cloud.yml', () => {
  test('turns the API replicas, the workers and the CLI to Temporal Cloud with an API key from a secret file', () => {
    const overrideText = read('deploy/compose.temporal-cloud.yml');
    const override = parseCompose(overrideText);
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
      const merged = mergeOverride(base, override, overrideText);
      for (const o of Object.values(override.services)) {
        expect(Object.keys(o.environment ?? {}).filter((k) => !CONFIG_ENV_VARS.includes(k))).toEqual([]);
      }
      for (const { file } of Object.values(override.secrets)) expect(file.startsWith('./deploy/secrets/')).toBe(true);
      for (const name of [...API_REPLICAS, 'worker']) {
        const config = configOf(merged, name, secretsDir);
        expect(config.temporal).toMatchObject({ address: 'us-east-1.aws.api.temporal.io:7233', namespace: 'ns.acct' });
        expect(config.temporal.apiKey).toBe('an-api-key');
      }
      expect(svc('temporal-cli', merged).secrets).toContain('temporal_api_key');
      expect(envOf(svc('temporal-cli', merged)).TEMPORAL_ADDRESS).toBe('us-east-1.aws.api.temporal.io:7233');

      // What `up load-balancer worker` starts never reaches the bundled Temporal.
      const started = new Set<string>();
      const visit = (name: string) => {
        if (started.has(name)) return;
        started.add(name);
        for (const dep of Object.keys(svc(name, merged).depends_on ?? {})) visit(dep);
      };
      visit('load-balancer');
      visit('worker');
      expect([...started].sort()).toEqual(
        [
          'load-balancer',
          ...API_REPLICAS,
          'worker',
          'inbox-database',
          'audit-database',
          'audit-trail',
          'postgres',
          'minio-bucket',
          'minio',
        ].sort(),
      );
      expect(overrideText).toContain('up -d --build load-balancer worker');
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
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:24\.\d+\.\d+-bookworm-slim$/m);
    const final = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    expect(final).toMatch(/^USER node$/m);
    // node:*-slim has no root certificates; the worker's native Temporal connection needs them for TLS.
    expect(final).toMatch(/apt-get install -y --no-install-recommends ca-certificates/);
    expect(final).toMatch(/COPY --from=build \/app\/dist \.\/dist/);
    const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
    expect(pkg.scripts.build).toBe('tsc -p tsconfig.build.json');
  });

  test('runs the Node.js 24 LTS release CI tests on, inside the range package.json supports', () => {
    const image = /^ARG NODE_IMAGE=node:(\d+\.\d+\.\d+)-bookworm-slim$/m.exec(dockerfile)![1]!;
    const installed = /^version="\$\{1:-(\d+\.\d+\.\d+)\}"$/m.exec(read('scripts/install-node.sh'))![1]!;
    expect(image).toBe(installed);
    const pkg = JSON.parse(read('package.json')) as { engines: { node: string } };
    expect(pkg.engines.node).toBe('>=24.11.0');
    const [major, minor] = image.split('.').map(Number);
    expect(major).toBe(24);
    expect(minor).toBeGreaterThanOrEqual(11);
    // The lowest supported release is the one CI's smoke run installs.
    expect(read('.ci/run')).toContain('scripts/install-node.sh 24.11.0');
  });

  test('leaves the sandbox out of the product image: the sandbox is a target and an image of its own', () => {
    const stages = dockerfile.split(/^(?=FROM )/m);
    const stage = (name: string) => stages.find((s) => new RegExp(`^FROM \\S+ AS ${name}$`, 'm').test(s)) ?? '';
    // The build compiles everything, then keeps the sandbox's files apart and takes them out of the product's dist/.
    expect(stage('build')).toMatch(/^RUN mkdir \/sandbox && cp -a dist \/sandbox\/dist && rm -rf dist\/sandbox$/m);
    const product = stages.at(-1)!;
    expect(product).toMatch(/^FROM runtime AS product$/m);
    expect([...product.matchAll(/^COPY --from=(\S+) (\S+)/gm)].map((m) => `${m[1]} ${m[2]}`)).toEqual([
      'build /app/dist',
    ]);
    expect(product).toContain('CMD ["node", "--v8-pool-size=1", "dist/api/server.js"]');
    const sandbox = stage('sandbox');
    expect(sandbox).toMatch(/^FROM runtime AS sandbox$/m);
    expect(sandbox).toMatch(/^COPY --from=build \/sandbox\/dist \.\/dist$/m);
    expect(sandbox).toMatch(/^USER node$/m);
    expect(sandbox).toContain('CMD ["node", "dist/sandbox/main.js"]');
    // What both share: the production dependencies, no source and no dist/.
    expect(stage('runtime')).not.toMatch(/dist/);
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
