// The floor of a durable acknowledgement on this machine: what one durable write costs each store, measured on its
// own (one write at a time, the stack idle). Files: the inbox's write (src/attachments/store.ts writeFileDurably:
// temp file, fsync, rename, folder fsync) of a callback-sized file in the API's data folder. PostgreSQL: one
// single-row INSERT committed (the WAL flushed, synchronous_commit on) on the bench's server.
import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { Client as PgClient } from 'pg';
import { writeFileDurably } from '../../src/attachments/store';
import type { InboxStore } from './stack';
import { summarize, type Summary } from './stats';

export interface WriteProbe {
  store: InboxStore;
  n: number;
  latencyMs: Summary;
}

export async function durableWriteProbe(
  store: InboxStore,
  o: { dataDir: string; databaseUrl?: string; n?: number },
): Promise<WriteProbe> {
  const n = o.n ?? 200;
  const body = randomBytes(1536).toString('base64');
  const times: number[] = [];
  if (store === 'files') {
    const dir = path.join(o.dataDir, 'write-probe');
    await mkdir(dir, { recursive: true });
    try {
      for (let i = 0; i < n; i++) {
        const t = performance.now();
        await writeFileDurably(path.join(dir, `probe-${i}.json`), body);
        times.push(performance.now() - t);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  } else {
    if (!o.databaseUrl) throw new Error('the postgres write probe needs the database URL');
    const client = new PgClient({ connectionString: o.databaseUrl });
    await client.connect();
    try {
      // A logged table (a temporary one writes no WAL, so its commit would flush nothing).
      await client.query(
        'CREATE TABLE IF NOT EXISTS bench_write_probe (id bigserial PRIMARY KEY, body bytea NOT NULL)',
      );
      const bytes = Buffer.from(body);
      for (let i = 0; i < n; i++) {
        const t = performance.now();
        await client.query('INSERT INTO bench_write_probe (body) VALUES ($1)', [bytes]);
        times.push(performance.now() - t);
      }
      await client.query('DROP TABLE bench_write_probe');
    } finally {
      await client.end();
    }
  }
  return { store, n, latencyMs: summarize(times) };
}
