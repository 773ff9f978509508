/**
 * The highly available PostgreSQL cluster (scripts/lib/stack/postgres-cluster.ts: Patroni and etcd from Debian,
 * HAProxy in front): a commit is acknowledged once the synchronous standby has it, so a write acknowledged just before
 * every process of the primary's node is SIGKILLed (its etcd member, Patroni, the postmaster and its backends, as when
 * its host is lost) is there after the standby is promoted, and the one address answers writes again; the old primary,
 * started again, follows as the synchronous standby; a planned switchover loses nothing. The time without a primary
 * is logged, not asserted (the machine is shared).
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { PostgresCluster } from '../../scripts/lib/stack/postgres-cluster';

const PORT_BASE = 25_100;
let root: string;
let cluster: PostgresCluster | undefined;
const lines: string[] = [];
const writers: { stop(): Promise<void> }[] = [];

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'pg-cluster-'));
  cluster = new PostgresCluster({ dir: path.join(root, 'cluster'), portBase: PORT_BASE, log: (l) => lines.push(l) });
  await cluster.start();
}, 300_000);

afterAll(async () => {
  // A test that failed midway leaves its writer running.
  await Promise.all(writers.map((w) => w.stop()));
  await cluster?.stop();
  if (root) await rm(root, { recursive: true, force: true });
}, 180_000);

async function query<T>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  client.on('error', () => {});
  try {
    await client.connect();
    return (await client.query(sql, params)).rows as T[];
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * Writes one row at a time through the cluster's address until stopped, each its own transaction: a row is counted
 * acknowledged once its COMMIT answered. A failed write (the primary gone) is retried on a new connection.
 */
function startWriter(url: string, from: number) {
  const acked: { n: number; sentAt: number; at: number }[] = [];
  let failures = 0;
  let stopped = false;
  const done = (async () => {
    let client: Client | undefined;
    for (let n = from; !stopped; n++) {
      try {
        if (!client) {
          client = new Client({ connectionString: url, connectionTimeoutMillis: 2_000, query_timeout: 5_000 });
          client.on('error', () => {});
          await client.connect();
        }
        const sentAt = Date.now();
        await client.query('INSERT INTO acks (n) VALUES ($1)', [n]);
        acked.push({ n, sentAt, at: Date.now() });
      } catch {
        failures++;
        await client?.end().catch(() => {});
        client = undefined;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    await client?.end().catch(() => {});
  })();
  const writer = {
    acked,
    get failures() {
      return failures;
    },
    async stop() {
      stopped = true;
      await done;
    },
  };
  writers.push(writer);
  return writer;
}

test('a primary with a synchronous standby: synchronous_commit on, the standby named, streaming in sync', async () => {
  const c = cluster!;
  const primary = (await c.primary())!;
  const standby = c.nodes.find((n) => n.name !== primary)!.name;
  const [settings] = await query<{ commit: string; names: string }>(
    c.url(),
    "SELECT current_setting('synchronous_commit') AS commit, current_setting('synchronous_standby_names') AS names",
  );
  expect(settings!.commit).toBe('on');
  expect(settings!.names).toContain(standby);
  const replication = await query<{ name: string; sync: string }>(
    c.url(),
    'SELECT application_name AS name, sync_state AS sync FROM pg_stat_replication',
  );
  expect(replication).toEqual([{ name: standby, sync: 'sync' }]);
  // The address reaches the primary: it takes writes.
  const [row] = await query<{ recovery: boolean }>(c.url(), 'SELECT pg_is_in_recovery() AS recovery');
  expect(row!.recovery).toBe(false);
  // Nothing secret in the progress lines.
  for (const line of lines) expect(line).not.toContain(c.superuser.password);
});

let killedNode: string;

test('a write acknowledged just before every process of the primary is SIGKILLed survives; the standby takes over', async () => {
  const c = cluster!;
  await query(c.url(), 'CREATE TABLE acks (n integer PRIMARY KEY, at timestamptz NOT NULL DEFAULT clock_timestamp())');
  const before = (await c.primary())!;
  const writer = startWriter(c.url(), 1);
  await waitUntil(() => writer.acked.length >= 50, 30_000);

  const killed = await c.killPrimary();
  killedNode = killed.node;
  expect(killed.node).toBe(before);
  // The last write acknowledged before the signals went, and the first one after.
  const lastBefore = writer.acked.filter((a) => a.at <= killed.at).at(-1)!;
  // The first write sent after the kill that was acknowledged (one sent before may be answered after the signals).
  await waitUntil(() => writer.acked.some((a) => a.sentAt > killed.at), 120_000);
  const firstAfter = writer.acked.find((a) => a.sentAt > killed.at)!;
  await new Promise((r) => setTimeout(r, 1_000));
  await writer.stop();

  const after = await c.primary();
  expect(after).toBeDefined();
  expect(after).not.toBe(before);
  // Every acknowledged row is on the new primary: none lost.
  const rows = await query<{ n: number }>(c.url(), 'SELECT n FROM acks');
  const present = new Set(rows.map((r) => r.n));
  const lost = writer.acked.filter((a) => !present.has(a.n)).map((a) => a.n);
  expect({ acknowledged: writer.acked.length, lost }).toEqual({ acknowledged: writer.acked.length, lost: [] });
  expect(present.has(lastBefore.n)).toBe(true);

  console.log(
    `postgres cluster failover (ttl ${c.timing.ttl} s, loop ${c.timing.loopWait} s): ${killed.pids.length} processes ` +
      `of ${before} SIGKILLed${killed.etcdLeader ? ' (its etcd member led etcd)' : ''}; no primary for ${((firstAfter.at - lastBefore.at) / 1000).toFixed(1)} s (last ` +
      `acknowledged write before the kill to the first sent after; ${((firstAfter.at - killed.at) / 1000).toFixed(1)} s ` +
      `from the kill); ${after} primary; ${writer.acked.length} writes acknowledged, 0 lost, ${writer.failures} failed ` +
      'attempts retried',
  );
}, 240_000);

test('the old primary, started again, follows the new one as its synchronous standby, with every row', async () => {
  const c = cluster!;
  const started = Date.now();
  await c.startNode(killedNode);
  await c.waitForReplica(killedNode);
  await expect(c.waitForSynchronousStandby(180_000)).resolves.toBe(killedNode);
  console.log(
    `postgres cluster: ${killedNode} back as the synchronous standby ${((Date.now() - started) / 1000).toFixed(1)} s after its start`,
  );
  const [onPrimary] = await query<{ count: string }>(c.url(), 'SELECT count(*) AS count FROM acks');
  // A write committed now is on the standby once acknowledged (remote_apply: visible to a read there at once).
  const client = new Client({ connectionString: c.url() });
  await client.connect();
  let n: number;
  try {
    await client.query("SET synchronous_commit = 'remote_apply'");
    n = (await client.query<{ n: number }>('INSERT INTO acks (n) VALUES (1000000) RETURNING n')).rows[0]!.n;
  } finally {
    await client.end();
  }
  expect(n).toBe(1_000_000);
  const [onStandby] = await query<{ count: string; recovery: boolean }>(
    c.nodeUrl(killedNode),
    'SELECT count(*) AS count, pg_is_in_recovery() AS recovery FROM acks',
  );
  expect(onStandby!.recovery).toBe(true);
  expect(Number(onStandby!.count)).toBe(Number(onPrimary!.count) + 1);
}, 300_000);

test('a planned switchover: the standby becomes the primary, nothing acknowledged is lost, the old one follows', async () => {
  const c = cluster!;
  const writer = startWriter(c.url(), 2_000_000);
  await waitUntil(() => writer.acked.length >= 20, 30_000);
  const started = Date.now();
  const { from, to } = await c.switchover();
  await waitUntil(() => writer.acked.some((a) => a.at > Date.now() - 500), 60_000);
  await writer.stop();
  expect(to).not.toBe(from);
  const present = new Set((await query<{ n: number }>(c.url(), 'SELECT n FROM acks')).map((r) => r.n));
  expect(writer.acked.filter((a) => !present.has(a.n))).toEqual([]);
  await c.waitForReplica(from);
  await expect(c.waitForSynchronousStandby(120_000)).resolves.toBe(from);
  // The longest time between two acknowledged writes: how long the switchover left the address without a primary.
  const longestGap = Math.max(...writer.acked.slice(1).map((a, i) => a.at - writer.acked[i]!.at));
  console.log(
    `postgres cluster switchover ${from} -> ${to}: writes stopped for ${(longestGap / 1000).toFixed(1)} s at most; ` +
      `${((Date.now() - started) / 1000).toFixed(1)} s until the old primary followed in sync; ` +
      `${writer.acked.length} writes acknowledged, 0 lost, ${writer.failures} failed attempts retried`,
  );
}, 240_000);

test('stopped and started again on its folder: the same cluster, every row, a synchronous standby', async () => {
  const c = cluster!;
  const [before] = await query<{ count: string; id: string }>(
    c.url(),
    'SELECT count(*) AS count, (SELECT system_identifier::text FROM pg_control_system()) AS id FROM acks',
  );
  await c.stop();
  for (const n of c.nodes) expect(n.postmasterPid()).toBeUndefined();
  const started = Date.now();
  await c.start();
  const [after] = await query<{ count: string; id: string }>(
    c.url(),
    'SELECT count(*) AS count, (SELECT system_identifier::text FROM pg_control_system()) AS id FROM acks',
  );
  expect(after).toEqual(before);
  await expect(c.waitForSynchronousStandby(60_000)).resolves.toBeDefined();
  console.log(`postgres cluster started again on its folder in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}, 300_000);

test("no password of the cluster's in any of its processes' logs", async () => {
  const c = cluster!;
  const secrets = Object.values(JSON.parse(await readFile(path.join(c.dir, 'secrets.json'), 'utf8')) as object);
  expect(secrets.length).toBe(4);
  const logs = await readdir(c.logDir);
  expect(logs.length).toBeGreaterThanOrEqual(6);
  for (const log of logs) {
    const text = await readFile(path.join(c.logDir, log), 'utf8');
    for (const secret of secrets) expect({ log, leaks: text.includes(String(secret)) }).toEqual({ log, leaks: false });
  }
});

async function waitUntil(fn: () => boolean, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!fn()) {
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
