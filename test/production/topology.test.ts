// The production topology of `npm run start:production`, run for real: PostgreSQL, the Temporal server on it, the Web
// UI, MinIO, the codec server, the sandbox, two workers and two API replicas behind HAProxy. The demo's journeys (all
// scenarios, attachments included) pass through the load balancer; then one API replica and one worker are SIGKILLed
// and the demo passes again on what is left. Attachments sit sealed in the bucket, the PostgreSQL inbox drains, and
// the stack stops in order leaving no process behind.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { Client as PgClient } from 'pg';
import { DEFAULT_DEPLOYMENT_NAME } from '../../src/config';
import { stackBuildId } from '../../scripts/lib/build-id';
import { ProductionStack, type ProductionPorts } from '../../scripts/lib/production-stack';
import { pickProductionPorts } from '../faults/harness/production';

const ROOT = path.resolve(__dirname, '../..');

/** Runs `npm run demo -- --api <url>` as a user would; resolves with its exit code and the end of its output. */
function demo(api: string): Promise<{ code: number | null; tail: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [require.resolve('tsx/cli'), 'scripts/demo.ts', '--api', api, '--timeout', '150'],
      {
        cwd: ROOT,
        env: { ...process.env, NO_COLOR: '1', CI: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.on('exit', (code) => resolve({ code, tail: out.split('\n').slice(-15).join('\n') }));
  });
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

  it("registers its workers' version with the Temporal server and makes it current", () => {
    // As an operator asks it: the Temporal CLI's deployment list, as JSON.
    const out = execFileSync(
      path.join(ROOT, '.tools', 'bin', 'temporal'),
      ['worker', 'deployment', 'list', '--address', stack.temporalAddress, '-o', 'json'],
      { encoding: 'utf8' },
    );
    const list = JSON.parse(out) as { name: string; routingConfig?: { currentVersionBuildID?: string } }[];
    expect(list.map((d) => ({ name: d.name, current: d.routingConfig?.currentVersionBuildID }))).toEqual([
      { name: DEFAULT_DEPLOYMENT_NAME, current: stackBuildId(ROOT) },
    ]);
  });

  it('runs every scenario through the load balancer, and again with one API replica and one worker killed', async () => {
    const first = await demo(stack.apiUrl);
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
    const second = await demo(stack.apiUrl);
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
});
