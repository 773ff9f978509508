/**
 * The PostgreSQL server the tests and the local stack run on (scripts/lib/postgres-server.ts): a committed row
 * survives a SIGKILL of the postmaster (fsync on, crash recovery on restart), stop() is a clean shutdown, and a later
 * start on the same data dir reuses the cluster instead of running initdb again.
 */
import { inspect } from 'node:util';
import { Client } from 'pg';
import { findPostgresBin, startPostgres } from '../../scripts/lib/postgres-server';
import { startTestPostgres, type TestPostgres } from '../support/postgres';

let server: TestPostgres | undefined;
const logLines: string[] = [];

beforeAll(async () => {
  server = await startTestPostgres({ log: (line) => logLines.push(line) });
});

afterAll(async () => {
  await server?.cleanup();
});

async function connect(url: string): Promise<Client> {
  const client = new Client({ connectionString: url });
  client.on('error', () => {}); // the server is killed under some clients on purpose
  await client.connect();
  return client;
}

async function query<T>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = await connect(url);
  try {
    return (await client.query(sql, params)).rows as T[];
  } finally {
    await client.end();
  }
}

/** Set by initdb: the same value after a restart means the same cluster. */
async function systemIdentifier(url: string): Promise<string> {
  const [row] = await query<{ id: string }>(url, 'SELECT system_identifier::text AS id FROM pg_control_system()');
  return row!.id;
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

test('a new cluster: the URL, the database, scram over TCP, nothing secret in the log lines', async () => {
  const pg = server!;
  expect(pg.initialized).toBe(true);
  const url = new URL(pg.url);
  expect(url.protocol).toBe('postgres:');
  expect(url.hostname).toBe('127.0.0.1');
  expect(Number(url.port)).toBe(pg.port);
  expect(url.pathname).toBe(`/${pg.database}`);
  expect(url.username).toBe(pg.user);
  expect(url.password.length).toBeGreaterThan(10);

  const [row] = await query<{ db: string; enc: string; fsync: string }>(
    pg.url,
    `SELECT current_database() AS db, pg_encoding_to_char(encoding) AS enc, current_setting('fsync') AS fsync
       FROM pg_database WHERE datname = current_database()`,
  );
  expect(row).toEqual({ db: 'journeys', enc: 'UTF8', fsync: 'on' });

  // A wrong password is refused: TCP logins are scram, not trust.
  const wrong = new URL(pg.url);
  wrong.password = 'not-the-password';
  await expect(query(wrong.toString(), 'SELECT 1')).rejects.toMatchObject({ code: '28P01' });

  // Printing the server object (a failing test's output) shows no password.
  expect(inspect(pg)).not.toContain(decodeURIComponent(url.password));
  expect(logLines.some((l) => l.includes('initdb'))).toBe(true);
  for (const line of logLines) {
    expect(line).not.toContain(decodeURIComponent(url.password));
    expect(line).not.toContain(pg.url);
  }
});

test('a committed row survives a SIGKILL of the postmaster; stop() and a later start reuse the cluster', async () => {
  const pg = server!;
  await query(pg.url, 'CREATE TABLE journal (id int PRIMARY KEY, note text NOT NULL)');
  await query(pg.url, "INSERT INTO journal VALUES (1, 'committed before the crash')");
  const cluster = await systemIdentifier(pg.url);

  // A session open at the time of the crash.
  const open = await connect(pg.url);
  const pid = pg.pid!;
  await pg.kill();
  expect(pg.pid).toBeUndefined();
  expect(isRunning(pid)).toBe(false);
  await expect(query(pg.url, 'SELECT 1')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  await open.end().catch(() => {});

  const port = pg.port;
  await pg.start(); // crash recovery
  expect(pg.port).toBe(port);
  expect(await query(pg.url, 'SELECT id, note FROM journal')).toEqual([{ id: 1, note: 'committed before the crash' }]);

  await pg.stop();
  expect(pg.pid).toBeUndefined();
  await expect(query(pg.url, 'SELECT 1')).rejects.toMatchObject({ code: 'ECONNREFUSED' });

  // Another startPostgres on the same data dir: no initdb, the same cluster, the stored password.
  const again = await startPostgres({ dataDir: pg.dataDir, port });
  try {
    expect(again.initialized).toBe(false);
    expect(again.url).toBe(pg.url);
    expect(await systemIdentifier(again.url)).toBe(cluster);
    expect(await query(again.url, 'SELECT count(*)::int AS n FROM journal')).toEqual([{ n: 1 }]);
  } finally {
    await again.stop();
  }
});

test('without PostgreSQL the error says how to install it', async () => {
  const saved = process.env.PG_BIN;
  process.env.PG_BIN = '/nonexistent/postgresql/bin';
  try {
    await expect(findPostgresBin()).rejects.toThrow(/scripts\/install-postgres\.sh/);
  } finally {
    if (saved === undefined) delete process.env.PG_BIN;
    else process.env.PG_BIN = saved;
  }
});
