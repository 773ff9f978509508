/**
 * A throwaway PostgreSQL server per call: a fresh cluster in a temp dir, removed by cleanup().
 * Needs Debian's postgresql package (`bash scripts/install-postgres.sh`); without it, startTestPostgres rejects with
 * an error that says so. Set DEBUG_POSTGRES=1 to see the server's progress lines (never the password).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startPostgres, type PostgresServer, type StartPostgresOptions } from '../../scripts/lib/postgres-server';

export type TestPostgres = PostgresServer & {
  /** The temp dir holding the data dir and the socket dir. */
  readonly root: string;
  /** Stops the server and removes its files; safe to call twice. */
  cleanup(): Promise<void>;
};

export async function startTestPostgres(opts: Omit<StartPostgresOptions, 'dataDir'> = {}): Promise<TestPostgres> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'pg-test-'));
  const log = process.env.DEBUG_POSTGRES ? (line: string) => console.log(line) : undefined;
  let server: PostgresServer;
  try {
    server = await startPostgres({ log, ...opts, dataDir: path.join(root, 'data') });
  } catch (err) {
    await rm(root, { recursive: true, force: true });
    throw err;
  }
  const cleanup = async (): Promise<void> => {
    await server.stop();
    await rm(root, { recursive: true, force: true });
  };
  return Object.assign(server, { root, cleanup });
}
