// The production topology of `npm run start:production`, run for real: PostgreSQL, the Temporal server on it, the Web
// UI, MinIO, the codec server, the sandbox, two workers and two API replicas behind HAProxy. The demo's journeys (all
// scenarios, attachments included) pass through the load balancer; then one API replica and one worker are SIGKILLed
// and the demo passes again on what is left. Attachments sit sealed in the bucket, the PostgreSQL inbox drains, and
// the stack stops in order leaving no process behind.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  GetObjectLockConfigurationCommand,
  ListObjectsV2Command,
  ListObjectVersionsCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { Client as PgClient } from 'pg';
import { DEFAULT_DEPLOYMENT_NAME } from '../../src/config';
import { stackBuildId } from '../../scripts/lib/build-id';
import { ProductionStack, type ProductionPorts } from '../../scripts/lib/production-stack';
import { pickProductionPorts } from '../faults/harness/production';
import { runDemo } from '../support/demo';

const ROOT = path.resolve(__dirname, '../..');

/** Runs a script of the project as a user would (`node --import tsx`); resolves with its exit code and output. */
function script(
  file: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', file, ...args], {
      cwd: ROOT,
      env: { ...process.env, NO_COLOR: '1', CI: '1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.on('exit', (code) => resolve({ code, out }));
  });
}

/**
 * The processes whose command line matches, of this test's stack (its parts name it in STACK_PID) unless `anyStack`:
 * pid, command line, environment.
 */
function stackProcesses(
  command: RegExp | string,
  anyStack = false,
): { pid: number; cmd: string; env: Record<string, string> }[] {
  const out: { pid: number; cmd: string; env: Record<string, string> }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let cmd: string;
    let env: Record<string, string>;
    try {
      cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ');
      env = Object.fromEntries(
        readFileSync(`/proc/${entry}/environ`, 'utf8')
          .split('\0')
          .filter((kv) => kv.includes('='))
          .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
      );
    } catch {
      continue; // gone meanwhile
    }
    if (!anyStack && env.STACK_PID !== String(process.pid)) continue;
    if (typeof command === 'string' ? !cmd.includes(command) : !command.test(cmd)) continue;
    out.push({ pid: Number(entry), cmd, env });
  }
  return out;
}

describe('production topology', () => {
  let root: string;
  let stack: ProductionStack;
  let codecPort: number;
  const fatal: string[] = [];

  beforeAll(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'production-'));
    // Below the ephemeral range (an outgoing connection cannot take one before the stack binds it), a base of its own.
    const ports: ProductionPorts = await pickProductionPorts(20_800);
    codecPort = ports.codec;
    stack = new ProductionStack({ dataDir: root, ports, workers: 2, onFatal: (why) => fatal.push(why) });
    await stack.start();
  }, 180_000);

  afterAll(async () => {
    await stack?.stop();
    rmSync(root, { recursive: true, force: true });
  }, 120_000);

  it("registers its workers' version with the Temporal server and makes it current", async () => {
    // As an operator asks it: the Temporal CLI's deployment list, as JSON. The list is read from visibility, which the
    // server writes after the deployment's own record: a loaded machine may answer an empty list for a moment.
    const listed = () => {
      const out = execFileSync(
        path.join(ROOT, '.tools', 'bin', 'temporal'),
        ['worker', 'deployment', 'list', '--address', stack.temporalAddress, '-o', 'json'],
        { encoding: 'utf8' },
      );
      const list = JSON.parse(out) as { name: string; routingConfig?: { currentVersionBuildID?: string } }[];
      return list.map((d) => ({ name: d.name, current: d.routingConfig?.currentVersionBuildID }));
    };
    const expected = [{ name: DEFAULT_DEPLOYMENT_NAME, current: stackBuildId(ROOT) }];
    let seen = listed();
    for (const until = Date.now() + 20_000; Date.now() < until && JSON.stringify(seen) !== JSON.stringify(expected);) {
      await new Promise((r) => setTimeout(r, 500));
      seen = listed();
    }
    expect(seen).toEqual(expected);
  }, 30_000);

  it('hands the engine its secrets as files only it can read, never in its environment', () => {
    const kept = JSON.parse(readFileSync(path.join(root, 'local-secrets.json'), 'utf8')) as Record<string, unknown>;
    const names = [
      'webhookSecret',
      'payloadEncryptionKeys',
      'codecServerToken',
      'auditWriterPassword',
      'inboxPassword',
      'objectStoreSecretKey',
    ];
    expect(names.every((k) => typeof kept[k] === 'string' && kept[k].length >= 12)).toBe(true);
    // The engine's processes: the API replicas, the workers, the codec server.
    const engine = stackProcesses(/src\/(api\/server|worker|codec\/main)\.ts/);
    // Two API replicas, two workers and the codec server (tsx may run each as a parent and its child).
    expect(engine.filter((p) => p.cmd.includes('src/api/server.ts')).length).toBeGreaterThanOrEqual(2);
    expect(engine.filter((p) => p.cmd.includes('src/worker.ts')).length).toBeGreaterThanOrEqual(2);
    expect(engine.filter((p) => p.cmd.includes('src/codec/main.ts')).length).toBeGreaterThanOrEqual(1);
    for (const p of engine) {
      const values = Object.values(p.env);
      // By name: a failure shows which secret is in the environment, never its value.
      const leaked = names.filter((k) => values.some((v) => v.includes(kept[k] as string)));
      expect({ pid: p.pid, cmd: p.cmd, leaked }).toEqual({ pid: p.pid, cmd: p.cmd, leaked: [] });
      // The object store's keys come from a credentials file (AWS_SHARED_CREDENTIALS_FILE), not the environment.
      expect([p.env.AWS_ACCESS_KEY_ID ?? '', p.env.AWS_SECRET_ACCESS_KEY ?? '']).toEqual(['', '']);
      const files = Object.entries(p.env).filter(
        ([k]) => k.endsWith('_FILE') && /SECRET|KEYS|DATABASE_URL|TOKEN|CREDENTIALS/.test(k),
      );
      expect(files.length).toBeGreaterThanOrEqual(3);
      for (const [name, file] of files) {
        expect({ name, mode: (statSync(file).mode & 0o777).toString(8) }).toEqual({ name, mode: '600' });
      }
    }
    // MinIO reads its root credentials from files too (MINIO_ROOT_USER_FILE, MINIO_ROOT_PASSWORD_FILE).
    const minio = stackProcesses(`server ${path.join(root, 'objects', 'data')} `, true);
    expect(minio.length).toBe(1);
    expect(Object.values(minio[0]!.env).some((v) => v.includes(kept.objectStoreSecretKey as string))).toBe(false);
    expect((statSync(minio[0]!.env.MINIO_ROOT_PASSWORD_FILE!).mode & 0o777).toString(8)).toBe('600');
  });

  it("takes the admin routes' token it made, never the public local one", async () => {
    const file = path.join(root, 'secrets', 'admin_token');
    expect((statSync(file).mode & 0o777).toString(8)).toBe('600');
    const token = readFileSync(file, 'utf8').trim();
    expect(token).toMatch(/^[A-Za-z0-9_-]{32,}$/);
    // The static token names nobody: the request says who reads (X-Actor).
    const list = (auth: string) =>
      fetch(`${stack.apiUrl}/admin/dead-letters`, {
        headers: { authorization: `Bearer ${auth}`, 'x-actor': 'topology-test' },
      });
    expect((await list('local-admin-token')).status).toBe(401);
    expect((await list(token)).status).toBe(200);
  });

  it('runs every scenario through the load balancer, and again with one API replica and one worker killed', async () => {
    const first = await runDemo(stack.apiUrl, 150);
    expect(first.tail).toMatch(/All 5 journeys ended as expected/);
    expect(first.code).toBe(0);

    // The UI server answers, and the LB's health checks reach both replicas.
    expect((await fetch(stack.uiUrl)).status).toBe(200);
    // The UI's codec endpoint carries no token in its URL: the codec server takes the static token (automation) in
    // the header only; without an identity provider the UI decodes nothing.
    const uiConfig = readFileSync(path.join(root, 'temporal-ui', 'config', 'production.yaml'), 'utf8');
    expect(/endpoint: (\S+)/.exec(uiConfig)![1]).toBe(`http://127.0.0.1:${codecPort}`);
    const { codecServerToken } = JSON.parse(readFileSync(path.join(root, 'local-secrets.json'), 'utf8')) as {
      codecServerToken: string;
    };
    const decode = (auth?: string) =>
      fetch(`http://127.0.0.1:${codecPort}/decode`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) },
        body: '{}',
      });
    expect((await decode(`Bearer ${codecServerToken}`)).status).toBe(200);
    expect((await decode()).status).toBe(401);

    const killed = [stack.apis[0]!.pid, stack.workers[0]!.pid];
    await stack.apis[0]!.kill();
    await stack.workers[0]!.kill();
    for (const pid of killed) expect(() => process.kill(pid!, 0)).toThrow(/ESRCH/);
    const second = await runDemo(stack.apiUrl, 150);
    expect(second.tail).toMatch(/All 5 journeys ended as expected/);
    expect(second.code).toBe(0);

    // Attachments are in the bucket, sealed: no file name of the demo in any key (records, and each clinic's usage
    // under a keyed name).
    const s3 = new S3Client({
      region: 'us-east-1',
      endpoint: stack.objectStore!.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: stack.objectStore!.accessKeyId, secretAccessKey: stack.objectStore!.secretAccessKey },
    });
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: 'journey-attachments' }));
    s3.destroy();
    expect(listed.Contents?.length ?? 0).toBeGreaterThanOrEqual(2);
    for (const o of listed.Contents ?? []) {
      expect(o.Key).toMatch(
        /^(att_[A-Za-z0-9_-]+(\.json)?|usage\/[A-Za-z0-9_-]{22}\/att_[A-Za-z0-9_-]+\.(\d+|taken))$/,
      );
    }

    // Every callback went through the PostgreSQL inbox and was forwarded: nothing waits there. The replicas' role
    // (this URL's) owns the inbox's tables and is no superuser.
    const pg = new PgClient({ connectionString: stack.inboxDatabaseUrl });
    await pg.connect();
    try {
      const { rows } = await pg.query<{ n: string }>('SELECT count(*)::text AS n FROM callback_inbox');
      expect(rows[0]!.n).toBe('0');
      const role = await pg.query<{ rolname: string; rolsuper: boolean; owner: string }>(
        `SELECT r.rolname, r.rolsuper, pg_get_userbyid(c.relowner) AS owner
           FROM pg_roles r, pg_class c WHERE r.rolname = current_user AND c.relname = 'callback_inbox'`,
      );
      expect(role.rows).toEqual([{ rolname: 'journey_inbox', rolsuper: false, owner: 'journey_inbox' }]);
    } finally {
      await pg.end();
    }
    expect(fatal).toEqual([]);
  }, 400_000);

  it('logs no part in to PostgreSQL as a superuser; the audit table belongs to a role nobody logs in as', async () => {
    // As the cluster's superuser (the stack's preparation): what every other connection is.
    const su = new PgClient({ connectionString: stack.postgres!.url });
    await su.connect();
    try {
      const sessions = await su.query<{ usename: string; rolsuper: boolean }>(
        `SELECT DISTINCT a.usename, r.rolsuper FROM pg_stat_activity a JOIN pg_roles r ON r.rolname = a.usename
          WHERE a.pid <> pg_backend_pid() AND a.backend_type = 'client backend' ORDER BY a.usename`,
      );
      expect(sessions.rows.filter((r) => r.rolsuper)).toEqual([]);
      expect(sessions.rows.map((r) => r.usename)).toEqual(expect.arrayContaining(['journey_inbox', 'temporal']));
      const owners = await su.query<{ datname: string; owner: string; rolsuper: boolean }>(
        `SELECT d.datname, r.rolname AS owner, r.rolsuper FROM pg_database d JOIN pg_roles r ON r.oid = d.datdba
          WHERE d.datname IN ('temporal', 'temporal_visibility', 'journeys', 'journey_audit') ORDER BY d.datname`,
      );
      expect(owners.rows).toEqual([
        { datname: 'journey_audit', owner: 'journey_audit_owner', rolsuper: false },
        { datname: 'journeys', owner: 'journey_inbox', rolsuper: false },
        { datname: 'temporal', owner: 'temporal', rolsuper: false },
        { datname: 'temporal_visibility', owner: 'temporal', rolsuper: false },
      ]);
      const owner = await su.query(
        `SELECT rolname, rolsuper, rolcanlogin, rolpassword IS NULL AS "noPassword", rolcreaterole, rolbypassrls
           FROM pg_authid WHERE rolname = 'journey_audit_owner'`,
      );
      expect(owner.rows).toEqual([
        {
          rolname: 'journey_audit_owner',
          rolsuper: false,
          rolcanlogin: false,
          noPassword: true,
          rolcreaterole: false,
          rolbypassrls: false,
        },
      ]);
    } finally {
      await su.end();
    }
    const superUrl = new URL(stack.postgres!.url);
    superUrl.pathname = '/journey_audit';
    const audit = new PgClient({ connectionString: superUrl.toString() });
    await audit.connect();
    try {
      const table = await audit.query<{ owner: string; fn: string }>(
        `SELECT pg_get_userbyid(c.relowner) AS owner,
                (SELECT pg_get_userbyid(p.proowner) FROM pg_proc p WHERE p.proname = 'audit_trail_append_only') AS fn
           FROM pg_class c WHERE c.oid = 'public.audit_trail'::regclass`,
      );
      expect(table.rows).toEqual([{ owner: 'journey_audit_owner', fn: 'journey_audit_owner' }]);
    } finally {
      await audit.end();
    }
    // The writer (the engine's role) may not turn the append-only triggers off.
    const writer = new PgClient({ connectionString: stack.auditDatabaseUrl });
    await writer.connect();
    try {
      await expect(
        writer.query('ALTER TABLE public.audit_trail DISABLE TRIGGER audit_trail_no_change'),
      ).rejects.toMatchObject({ code: '42501' });
    } finally {
      await writer.end();
    }
  });

  it('checkpoints the audit table to a bucket with Object Lock, which audit-trail:verify checks it against', async () => {
    const bucket = 'journey-audit-checkpoints';
    const credentials = {
      accessKeyId: stack.objectStore!.accessKeyId,
      secretAccessKey: stack.objectStore!.secretAccessKey,
    };
    const s3 = new S3Client({
      region: 'us-east-1',
      endpoint: stack.objectStore!.endpoint,
      forcePathStyle: true,
      credentials,
    });
    try {
      const lock = await s3.send(new GetObjectLockConfigurationCommand({ Bucket: bucket }));
      expect(lock.ObjectLockConfiguration?.ObjectLockEnabled).toBe('Enabled');
      const versions = await s3.send(
        new ListObjectVersionsCommand({ Bucket: bucket, Prefix: 'audit-checkpoints/table/' }),
      );
      expect(versions.Versions?.length ?? 0).toBeGreaterThanOrEqual(1);
    } finally {
      s3.destroy();
    }
    const verified = await script('scripts/audit-trail.ts', ['--database-url', stack.auditDatabaseUrl], {
      AUDIT_CHECKPOINT_BUCKET: bucket,
      AUDIT_CHECKPOINT_ENDPOINT: stack.objectStore!.endpoint,
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    });
    expect(verified.out).toMatch(
      /the audit table: \d+ records, the chain is whole and matches its [1-9]\d* checkpoints/,
    );
    expect(verified.code).toBe(0);
  }, 60_000);
});
