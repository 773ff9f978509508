// The baselines of the webhook latency runs: a bare Fastify server in its own process (node with the tsx loader,
// like the API), with the webhook's route shape and text body parser.
//
// - The bare route (BARE_STORE unset) answers 200 at once: the floor of this machine, this Node.js and the load
//   generator; the API's figures above it are the engine's.
// - The floor of a durable acknowledgement (BARE_STORE=files or postgres): the same route stores each callback's body
//   with one durable write before it answers, and nothing else (no token, no sealing, no forwarder, no metrics).
//   Callbacks that arrive while a write is under way share the next one, as the inbox's do (src/group-commit.ts):
//   files, one record each appended to a segment log (src/inbox/segment-log.ts, the inbox's own writer: a positioned
//   write to a preallocated segment opened O_DSYNC) in BARE_DIR; postgres, one multi-row INSERT committed
//   (synchronous_commit on: on the synchronous standby too where the cluster has one) into a table of its own in
//   BARE_DATABASE_URL, through a pool of the inbox's size. What the API takes above it is the engine's own work.
//
//   BARE_PORT=22201 node --import tsx bench/bare-server.ts
//   BARE_PORT=22202 BARE_STORE=files BARE_DIR=/tmp/floor node --import tsx bench/bare-server.ts
import { randomUUID } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import Fastify from 'fastify';
import { Pool } from 'pg';
import { GroupCommit } from '../src/group-commit';
import { SegmentLog } from '../src/inbox/segment-log';

/** One durable write per batch of bodies, and how to let go of the store. */
interface FloorStore {
  write(bodies: string[]): Promise<void>;
  close(): Promise<void>;
}

async function filesFloor(dir: string): Promise<FloorStore> {
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const log = new SegmentLog({ dir, segmentBytes: 16 << 20 });
  return {
    write: async (bodies) => {
      await log.write(bodies.map((b) => Buffer.from(b)));
    },
    close: () => log.close(),
  };
}

async function postgresFloor(url: string): Promise<FloorStore> {
  const pool = new Pool({ connectionString: url, max: 10 });
  // A logged table (an unlogged or temporary one writes no WAL, so its commit would flush nothing).
  await pool.query('DROP TABLE IF EXISTS bench_floor');
  await pool.query('CREATE TABLE bench_floor (id bigserial PRIMARY KEY, body text NOT NULL)');
  return {
    write: async (bodies) => {
      await pool.query('INSERT INTO bench_floor (body) SELECT unnest($1::text[])', [bodies]);
    },
    close: async () => {
      await pool.query('DROP TABLE IF EXISTS bench_floor').catch(() => undefined);
      await pool.end();
    },
  };
}

function floorStore(): Promise<FloorStore | undefined> {
  const store = process.env.BARE_STORE;
  if (!store) return Promise.resolve(undefined);
  if (store === 'files') {
    if (!process.env.BARE_DIR) throw new Error('BARE_STORE=files needs BARE_DIR (the folder its log is written to)');
    return filesFloor(process.env.BARE_DIR);
  }
  if (store === 'postgres') {
    if (!process.env.BARE_DATABASE_URL) throw new Error('BARE_STORE=postgres needs BARE_DATABASE_URL');
    return postgresFloor(process.env.BARE_DATABASE_URL);
  }
  throw new Error(`BARE_STORE is files or postgres (or unset, for the route that stores nothing), not ${store}`);
}

async function main() {
  const port = Number(process.env.BARE_PORT ?? 22_201);
  const floor = await floorStore();
  const commit = floor ? new GroupCommit<string>((batch) => floor.write(batch)) : undefined;
  const app = Fastify({ logger: false, forceCloseConnections: 'idle' });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body));
  app.post('/webhooks/exam-service/:journeyId/:token', async (request) => {
    if (commit) await commit.add(typeof request.body === 'string' ? request.body : '');
    return { received: true, deliveryId: randomUUID() };
  });
  app.get('/healthz', () => Promise.resolve({ ok: true }));
  await app.listen({ host: '127.0.0.1', port });
  console.log(`${floor ? `floor (${process.env.BARE_STORE})` : 'bare'} server on http://127.0.0.1:${port}`);
  const stop = () =>
    void app
      .close()
      .then(() => commit?.idle())
      .then(() => floor?.close())
      .finally(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
