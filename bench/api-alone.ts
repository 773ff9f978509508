// The API's own share of a webhook acknowledgement: the real API (buildApp: routes, callback inbox with its group
// commit, forwarder, metrics) in its own process, with a fake Temporal client whose signals take SIGNAL_MS, under the
// open-loop generator. No Temporal server, worker or sandbox competes for the machine, so this isolates what a 200
// costs: a durable inbox append (files: temp file, fsync, rename, folder fsync; postgres: one INSERT committed),
// shared by the callbacks that arrive meanwhile, and the forwarder's work beside it.
//
//   node --import tsx bench/api-alone.ts                          files and postgres, 500 and 1000/s, signals 5 ms
//   STORES=files SIGNAL_MS=5 RATES=500,1000 LEVEL_SECONDS=8 node --import tsx bench/api-alone.ts
//
// Standalone, it starts its own PostgreSQL (from port 22291, a temp folder) for the postgres inbox: a primary with a
// synchronous standby as in production, or with POSTGRES_SHAPE=single one server. `npm run bench` runs
// it too (phase `alone`), before its own stack starts, on the bench's PostgreSQL (a database of its own).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client as PgClient } from 'pg';
import { API_NODE_FLAGS } from '../src/api/node-flags';
import { buildApp } from '../src/api/app';
import { loadConfig } from '../src/config';
import { event1Body, webhookPath } from './lib/journeys';
import { burstSpec, rateSpec, runLoad } from './lib/load';
import { httpProbe, startProcess, threadCpuSeconds, tsx } from '../scripts/lib/processes';
import {
  DATABASE_SHAPES,
  startBenchDatabase,
  type BenchDatabase,
  type DatabaseShape,
  type InboxStore,
} from './lib/stack';
import { apiFigures, batchSummary, diff, type BatchSummary } from './lib/api-metrics';
import { summarize, type Summary } from './lib/stats';

const SECRET = 'api-alone-bench-secret-0123456789';
const PORT = 22_290;
const DATABASE = 'journeys_api_alone';

/** The child: the API with the fake client. */
async function serve() {
  const signalMs = Number(process.env.SIGNAL_MS ?? 5);
  const config = loadConfig({
    DATA_DIR: process.env.DATA_DIR,
    WEBHOOK_SECRET: SECRET,
    CLINICS_JSON: '[]',
    PAYLOAD_ENCRYPTION_DISABLED: 'true',
    INBOX_STORE: process.env.INBOX_STORE ?? 'files',
    INBOX_DATABASE_URL: process.env.INBOX_DATABASE_URL,
    // As the stack's API: an A/B of the settles runs the bench with INBOX_SETTLES=durable.
    INBOX_SETTLES: process.env.INBOX_SETTLES,
    API_PORT: String(PORT),
    LOG_LEVEL: 'warn',
  });
  const temporal = {
    workflow: { getHandle: () => ({ signal: () => new Promise((r) => setTimeout(r, signalMs)) }) },
    connection: { withDeadline: (_deadline: number, fn: () => Promise<unknown>) => fn() },
    workflowService: { getSystemInfo: () => Promise.resolve({}) },
  };
  const app = await buildApp({ config, temporal: temporal as never, examServiceFor: () => undefined as never });
  await app.listen({ host: '127.0.0.1', port: PORT });
  console.log(`API alone on ${PORT}, ${config.inbox.store} inbox, signals take ${signalMs} ms`);
  process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
}

export interface AloneRun {
  store: InboxStore;
  signalMs: number;
  /** Callbacks per second; for a burst, its size. */
  rate: number;
  /** A burst of this many callbacks all due at once (several, pooled), instead of a fixed rate. */
  burst?: number;
  latencyMs: Summary;
  /** Share of one core: the event loop thread and the others (libuv pool, GC); postgres: the server. */
  cpu: Record<string, number>;
  batch: BatchSummary;
}

/** A database of its own on the given server (the URL of the server's default database): created when missing. */
async function ownDatabase(url: string): Promise<string> {
  const client = new PgClient({ connectionString: url });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
    if (found.rowCount === 0) await client.query(`CREATE DATABASE ${DATABASE}`);
  } finally {
    await client.end();
  }
  const u = new URL(url);
  u.pathname = `/${DATABASE}`;
  return u.toString();
}

/** Each store in turn: the API alone at each rate. */
export async function apiAlone(o: {
  stores: InboxStore[];
  signalMs: number;
  rates: number[];
  seconds: number;
  /** Bursts of 200 callbacks per store (pooled; connections established first), after the rates. */
  bursts?: number;
  logDir: string;
  /** The database (postgres store): its superuser URL, and its processes' CPU for its share. */
  postgres?: Pick<BenchDatabase, 'url' | 'cpuSeconds'>;
  log?: (m: string) => void;
}): Promise<AloneRun[]> {
  const work = mkdtempSync(path.join(os.tmpdir(), 'api-alone-'));
  const targets = Array.from({ length: 100 }, (_, i) => ({
    path: webhookPath(`j${i}`, SECRET),
    body: event1Body(5_000_000 + i),
  }));
  const out: AloneRun[] = [];
  try {
    for (const store of o.stores) {
      if (store === 'postgres' && !o.postgres) throw new Error('the API alone on postgres needs a PostgreSQL');
      const env: Record<string, string> = {
        SIGNAL_MS: String(o.signalMs),
        INBOX_STORE: store,
        DATA_DIR: path.join(work, `data-${store}`),
      };
      if (store === 'postgres') env.INBOX_DATABASE_URL = await ownDatabase(o.postgres!.url);
      const origin = `http://127.0.0.1:${PORT}`;
      const api = startProcess({
        name: `api-alone-${store}`,
        ...tsx('bench/api-alone.ts', ['--serve'], API_NODE_FLAGS),
        logDir: o.logDir,
        env,
        ready: httpProbe(`${origin}/healthz`),
        readyTimeoutMs: 60_000,
      });
      try {
        await api.ready();
        for (const rate of o.rates) {
          const pgCpu = store === 'postgres' ? o.postgres : undefined;
          const cpu0 = await threadCpuSeconds(api.pid);
          const pg0 = await pgCpu?.cpuSeconds();
          const f0 = await apiFigures(origin);
          const t0 = performance.now();
          const runs = await runLoad(
            rateSpec(origin, targets, rate, { warmupMs: 1_000, seconds: o.seconds }),
            work,
            o.logDir,
            120_000,
          );
          const cpu1 = await threadCpuSeconds(api.pid);
          const pg1 = await pgCpu?.cpuSeconds();
          const wall = (performance.now() - t0) / 1000;
          const batch = batchSummary(diff(await apiFigures(origin), f0));
          const cpu = Object.fromEntries(Object.entries(cpu1).map(([k, v]) => [k, (v - (cpu0[k] ?? 0)) / wall]));
          if (pg0 !== undefined && pg1 !== undefined) cpu.postgres = (pg1 - pg0) / wall;
          const l = runs.find((x) => x.record)!.latencyMs;
          out.push({ store, signalMs: o.signalMs, rate, latencyMs: l, cpu, batch });
          o.log?.(
            `API alone, ${store} inbox, ${rate}/s: p50 ${l.p50.toFixed(1)} p99 ${l.p99.toFixed(1)} p99.9 ${l.p999.toFixed(1)} max ${l.max.toFixed(1)} ms (${batch.writes} inbox writes, mean ${batch.mean.toFixed(1)} callbacks)`,
          );
        }
        if (o.bursts) {
          const size = 200;
          const f0 = await apiFigures(origin);
          const samples: number[] = [];
          for (let b = 0; b < o.bursts; b++) {
            const burstTargets = Array.from({ length: size }, (_, i) => targets[i % targets.length]!);
            const runs = await runLoad(burstSpec(origin, burstTargets, false, true), work, o.logDir, 60_000);
            samples.push(...(runs[0]?.latencySamples ?? []));
            await new Promise((r) => setTimeout(r, 500));
          }
          const batch = batchSummary(diff(await apiFigures(origin), f0));
          const l = summarize(samples);
          out.push({ store, signalMs: o.signalMs, rate: size, burst: size, latencyMs: l, cpu: {}, batch });
          o.log?.(
            `API alone, ${store} inbox, ${o.bursts} bursts of ${size}: p50 ${l.p50.toFixed(1)} p99 ${l.p99.toFixed(1)} max ${l.max.toFixed(1)} ms (${batch.writes} inbox writes)`,
          );
        }
      } finally {
        await api.stop();
      }
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return out;
}

async function run() {
  const logDir = mkdtempSync(path.join(os.tmpdir(), 'api-alone-logs-'));
  const stores = (process.env.STORES ?? 'files,postgres').split(',') as InboxStore[];
  const shape = (process.env.POSTGRES_SHAPE ?? 'synchronous') as DatabaseShape;
  if (!DATABASE_SHAPES.includes(shape)) throw new Error(`POSTGRES_SHAPE is ${DATABASE_SHAPES.join(' or ')}`);
  const pg = stores.includes('postgres')
    ? await startBenchDatabase({
        shape,
        dir: path.join(logDir, 'postgres'),
        port: 22_291,
        database: 'journeys_alone',
        log: console.log,
      })
    : undefined;
  try {
    await apiAlone({
      stores,
      signalMs: Number(process.env.SIGNAL_MS ?? 5),
      rates: (process.env.RATES ?? '500,1000').split(',').map(Number),
      seconds: Number(process.env.LEVEL_SECONDS ?? 8),
      bursts: Number(process.env.BURSTS ?? 3),
      logDir,
      ...(pg ? { postgres: pg } : {}),
      log: console.log,
    });
  } finally {
    await pg?.stop();
    rmSync(logDir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  (process.argv.includes('--serve') ? serve() : run()).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
