// The floor of a durable acknowledgement on this machine: what one durable write costs each store, measured on its
// own (one write at a time, the stack idle). Files: the inbox's write (src/inbox/segment-log.ts: one callback-sized
// record, a positioned write to a preallocated segment opened O_DSYNC) in the API's data folder. PostgreSQL: one
// single-row INSERT committed (the WAL flushed, synchronous_commit on) on the bench's server.
import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { Client as PgClient } from 'pg';
import { SegmentLog } from '../../src/inbox/segment-log';
import type { InboxStore } from './stack';
import { summarize, type Summary } from './stats';

export interface WriteProbe {
  store: InboxStore;
  /** What the files probe wrote: a log record (since the segment log), or a whole file (runs before it). */
  method?: 'log' | 'batch-file';
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
    const log = new SegmentLog({ dir, segmentBytes: 16 << 20 });
    const record = Buffer.from(body);
    try {
      // The first write prepares the segment (zero-filled ahead of need, as the inbox does): not measured.
      await log.write([record]);
      for (let i = 0; i < n; i++) {
        const t = performance.now();
        await log.write([record]);
        times.push(performance.now() - t);
      }
    } finally {
      await log.close();
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
  return { store, n, ...(store === 'files' ? { method: 'log' as const } : {}), latencyMs: summarize(times) };
}
