/**
 * Point-in-time backups of the PostgreSQL cluster (scripts/lib/stack/postgres-backup.ts: pgBackRest from Debian) into
 * a bucket of the S3 object store (MinIO over HTTPS): a full backup and the continuous WAL archive; rows written, the
 * moment T noted, a table dropped by mistake; the cluster restored to T into a new data folder has the rows and not
 * the drop. Retention keeps the last full backups it is set to. The restore's time is logged, not asserted.
 */
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { ensureLocalCertificate } from '../../scripts/lib/local-tls';
import { startObjectStore, type ObjectStoreServer } from '../../scripts/lib/object-store';
import type { PostgresServer } from '../../scripts/lib/postgres-server';
import { PostgresBackups } from '../../scripts/lib/stack/postgres-backup';
import { PostgresCluster } from '../../scripts/lib/stack/postgres-cluster';

const PORT_BASE = 25_200;
const RESTORED_PORT = 25_250;
const MINIO_PORT = 25_290;
let root: string;
let minio: ObjectStoreServer | undefined;
let cluster: PostgresCluster | undefined;
let backups: PostgresBackups;
let restored: PostgresServer | undefined;
const lines: string[] = [];
const log = (line: string) => lines.push(line);
const accessKeyId = 'pgbackrest-test';
const secretAccessKey = randomBytes(18).toString('base64url');

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'pg-backup-'));
  // MinIO serves HTTPS with a certificate of its own (pgBackRest speaks S3 over TLS only), which pgBackRest trusts.
  const cert = ensureLocalCertificate(path.join(root, 'tls'), 'minio');
  const certsDir = path.join(root, 'minio-certs');
  mkdirSync(certsDir, { mode: 0o700 });
  copyFileSync(cert.certFile, path.join(certsDir, 'public.crt'));
  copyFileSync(cert.keyFile, path.join(certsDir, 'private.key'));
  minio = await startObjectStore({
    dataDir: path.join(root, 'minio', 'data'),
    port: MINIO_PORT,
    consolePort: MINIO_PORT + 1,
    accessKeyId,
    secretAccessKey,
    certsDir,
  });
  backups = new PostgresBackups({
    dir: path.join(root, 'backups'),
    repository: {
      // The certificate's DNS name: pgBackRest does not match an IP address against it.
      endpoint: minio.endpoint.replace('127.0.0.1', 'localhost'),
      bucket: 'journeys-postgres',
      accessKeyId,
      secretAccessKey,
      caFile: cert.certFile,
    },
    retentionFull: 2,
    log,
  });
  await backups.ensureBucket();
  cluster = new PostgresCluster({ dir: path.join(root, 'cluster'), portBase: PORT_BASE, archive: backups, log });
  backups.attach(cluster);
  await cluster.start();
  await backups.createStanza();
}, 300_000);

afterAll(async () => {
  await restored?.stop();
  await cluster?.stop();
  await minio?.stop();
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

test('rows written, T noted, a table dropped: restored to T into a new folder, the rows are there and the drop is not', async () => {
  const c = cluster!;
  const full = await backups.backup('full');
  expect(full.node).toBe(await c.primary());

  // After the backup: what only the WAL archive holds.
  await query(c.url(), 'CREATE TABLE inbox_copy (id integer PRIMARY KEY, body text NOT NULL)');
  await query(c.url(), "INSERT INTO inbox_copy SELECT g, 'callback ' || g FROM generate_series(1, 500) g");
  await query(c.url(), 'CREATE TABLE kept (id integer PRIMARY KEY)');
  await query(c.url(), 'INSERT INTO kept SELECT generate_series(1, 10)');
  // T: the database's clock, after the rows' commit and before the mistake.
  await new Promise((r) => setTimeout(r, 1_000));
  const [{ t }] = (await query<{ t: Date }>(c.url(), 'SELECT clock_timestamp() AS t')) as [{ t: Date }];
  await new Promise((r) => setTimeout(r, 1_000));
  await query(c.url(), 'DROP TABLE inbox_copy');
  await query(c.url(), 'INSERT INTO kept VALUES (11)');
  // The WAL holding the drop reaches the archive (the restore must see past T).
  await backups.check();
  expect(await query(c.url(), "SELECT 1 FROM pg_tables WHERE tablename = 'inbox_copy'")).toEqual([]);

  const result = await backups.restoreToTime({
    target: t,
    dataDir: path.join(root, 'restored', 'data'),
    port: RESTORED_PORT,
  });
  restored = result.server;
  const [copy] = await query<{ count: string; last: string }>(
    restored.url,
    'SELECT count(*) AS count, max(body) AS last FROM inbox_copy',
  );
  expect(Number(copy!.count)).toBe(500);
  const kept = await query<{ id: number }>(restored.url, 'SELECT id FROM kept ORDER BY id');
  expect(kept.map((k) => k.id)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  // A server of its own: it takes writes, and the cluster still has the drop.
  await query(restored.url, 'INSERT INTO kept VALUES (100)');
  expect(await query(c.url(), "SELECT 1 FROM pg_tables WHERE tablename = 'inbox_copy'")).toEqual([]);
  console.log(
    `pgbackrest point-in-time restore: full backup ${(full.ms / 1000).toFixed(1)} s; restore to T ` +
      `${(result.restoreMs / 1000).toFixed(1)} s, recovery until it took writes ${(result.recoveryMs / 1000).toFixed(1)} s`,
  );
  for (const line of lines) {
    expect(line).not.toContain(c.superuser.password);
    expect(line).not.toContain(secretAccessKey);
  }
}, 300_000);

test('after a failover the new primary archives into the same stanza: a restore follows the new timeline to T', async () => {
  const c = cluster!;
  const killed = await c.killPrimary();
  const primary = await waitForPrimary(c, 120_000);
  expect(primary).not.toBe(killed.node);
  // HAProxy sends sessions there once its next check (every second) has seen it primary.
  await c.waitForWritable();
  await query(c.url(), 'CREATE TABLE after_failover (id integer PRIMARY KEY)');
  await query(c.url(), 'INSERT INTO after_failover SELECT generate_series(1, 42)');
  await new Promise((r) => setTimeout(r, 1_000));
  const [{ t }] = (await query<{ t: Date }>(c.url(), 'SELECT clock_timestamp() AS t')) as [{ t: Date }];
  await new Promise((r) => setTimeout(r, 1_000));
  await query(c.url(), 'TRUNCATE after_failover');
  await backups.check();
  const [{ timeline }] = (await query<{ timeline: number }>(
    c.url(),
    'SELECT timeline_id AS timeline FROM pg_control_checkpoint()',
  )) as [{ timeline: number }];
  expect(timeline).toBeGreaterThan(1);

  await restored?.stop();
  restored = undefined;
  const result = await backups.restoreToTime({
    target: t,
    dataDir: path.join(root, 'restored-after-failover', 'data'),
    port: RESTORED_PORT,
  });
  restored = result.server;
  const [row] = await query<{ count: string }>(restored.url, 'SELECT count(*) AS count FROM after_failover');
  expect(Number(row!.count)).toBe(42);
  // The old primary follows again, for the backups that come next.
  await c.startNode(killed.node);
  await c.waitForReplica(killed.node);
  console.log(
    `pgbackrest restore to T after a failover (timeline ${timeline}): restore ${(result.restoreMs / 1000).toFixed(1)} s, ` +
      `recovery until it took writes ${(result.recoveryMs / 1000).toFixed(1)} s`,
  );
}, 300_000);

test('retention: two full backups kept, the oldest expired with the archive it alone needed', async () => {
  // A stack started again sets the repository up again: both are no-ops on what is there.
  await backups.ensureBucket();
  await backups.createStanza();
  await backups.backup('full');
  await backups.backup('full');
  const [stanza] = (await backups.info()) as {
    backup: { type: string; label: string }[];
    archive: { min: string; max: string }[];
  }[];
  expect(stanza!.backup.filter((b) => b.type === 'full')).toHaveLength(2);
  expect(stanza!.archive.length).toBeGreaterThan(0);
}, 300_000);

test("neither the S3 keys nor the cluster's password in pgBackRest's logs", async () => {
  const dirs = [
    ...cluster!.nodes.map((n) => path.join(backups.dir, n.name, 'log')),
    path.join(root, 'restored', 'data.pgbackrest', 'log'),
  ];
  let files = 0;
  for (const dir of dirs) {
    for (const file of await readdir(dir)) {
      files++;
      const text = await readFile(path.join(dir, file), 'utf8');
      expect({ file, leaks: text.includes(secretAccessKey) || text.includes(cluster!.superuser.password) }).toEqual({
        file,
        leaks: false,
      });
    }
  }
  expect(files).toBeGreaterThan(0);
});

async function waitForPrimary(c: PostgresCluster, timeoutMs: number): Promise<string> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const primary = await c.primary();
    if (primary) return primary;
    if (Date.now() > until) throw new Error(`no primary after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
