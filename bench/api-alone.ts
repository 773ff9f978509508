// The API's own share of a webhook acknowledgement: the real API (buildApp, spool, forwarder, metrics) in its own
// process with a fake Temporal client whose signals take SIGNAL_MS, under the open-loop generator. No Temporal
// server, worker or sandbox competes for the machine, so this isolates the hand-off (signal budget, spool writes).
//
//   node --import tsx bench/api-alone.ts                        signal 5 ms and 200 ms, budget 50 ms, 500 and 1000/s
//   SIGNAL_MS=200 BUDGET_MS=50 RATES=500,1000 LEVEL_SECONDS=8 node --import tsx bench/api-alone.ts
//
// `npm run bench` runs it too (phase `alone`), before its own stack starts.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildApp } from '../src/api/app';
import { loadConfig } from '../src/config';
import { event1Body, webhookPath } from './lib/journeys';
import { runLoad } from './lib/load';
import { spawnTs, stopChild, threadCpuSeconds, waitFor } from './lib/proc';
import { httpOk } from './lib/stack';
import type { Summary } from './lib/stats';

const SECRET = 'api-alone-bench-secret-0123456789';
const PORT = 22_290;

/** The child: the API with the fake client. */
async function serve() {
  const signalMs = Number(process.env.SIGNAL_MS ?? 5);
  const config = loadConfig({
    DATA_DIR: process.env.DATA_DIR,
    WEBHOOK_SECRET: SECRET,
    CLINICS_JSON: '[]',
    PAYLOAD_ENCRYPTION_DISABLED: 'true',
    WEBHOOK_SIGNAL_BUDGET_MS: process.env.BUDGET_MS ?? '50',
    API_PORT: String(PORT),
    LOG_LEVEL: 'warn',
  });
  const temporal = {
    workflow: { getHandle: () => ({ signal: () => new Promise((r) => setTimeout(r, signalMs)) }) },
    connection: { withDeadline: (_deadline: number, fn: () => Promise<unknown>) => fn() },
  };
  const app = await buildApp({ config, temporal: temporal as never, examServiceFor: () => undefined as never });
  await app.listen({ host: '127.0.0.1', port: PORT });
  console.log(`API alone on ${PORT}, signals take ${signalMs} ms`);
  process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
}

export interface AloneRun {
  signalMs: number;
  budgetMs: number;
  rate: number;
  latencyMs: Summary;
  /** Share of one core: the event loop thread and the others (libuv pool, GC). */
  cpu: Record<string, number>;
}

/** Each signal latency in turn: the API alone at each rate. */
export async function apiAlone(o: {
  signalsMs: number[];
  rates: number[];
  seconds: number;
  budgetMs: number;
  logDir: string;
  log?: (m: string) => void;
}): Promise<AloneRun[]> {
  const work = mkdtempSync(path.join(os.tmpdir(), 'api-alone-'));
  const targets = Array.from({ length: 100 }, (_, i) => ({
    path: webhookPath(`j${i}`, SECRET),
    body: event1Body(5_000_000 + i),
  }));
  const out: AloneRun[] = [];
  try {
    for (const signalMs of o.signalsMs) {
      const api = spawnTs(`api-alone-${signalMs}`, 'bench/api-alone.ts', ['--serve'], {
        logDir: o.logDir,
        env: {
          SIGNAL_MS: String(signalMs),
          BUDGET_MS: String(o.budgetMs),
          DATA_DIR: path.join(work, `data-${signalMs}`),
        },
      });
      try {
        await waitFor('the API', () => httpOk(`http://127.0.0.1:${PORT}/healthz`), 60_000);
        for (const rate of o.rates) {
          const cpu0 = await threadCpuSeconds(api.pid);
          const t0 = performance.now();
          const runs = await runLoad(
            {
              origin: `http://127.0.0.1:${PORT}`,
              targets,
              levels: [
                { name: 'warm-up', rate, durationMs: 1_000, record: false },
                { name: `${rate}/s`, rate, durationMs: o.seconds * 1000, record: true },
              ],
              connections: 128,
              timeoutMs: 15_000,
              keepAlive: true,
            },
            work,
            o.logDir,
            120_000,
          );
          const cpu1 = await threadCpuSeconds(api.pid);
          const wall = (performance.now() - t0) / 1000;
          const cpu = Object.fromEntries(Object.entries(cpu1).map(([k, v]) => [k, (v - (cpu0[k] ?? 0)) / wall]));
          const l = runs.find((x) => x.record)!.latencyMs;
          out.push({ signalMs, budgetMs: o.budgetMs, rate, latencyMs: l, cpu });
          o.log?.(
            `API alone, signals ${signalMs} ms, ${rate}/s: p50 ${l.p50.toFixed(1)} p99 ${l.p99.toFixed(1)} p99.9 ${l.p999.toFixed(1)} max ${l.max.toFixed(1)} ms`,
          );
        }
      } finally {
        await stopChild(api);
      }
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return out;
}

async function run() {
  const logDir = mkdtempSync(path.join(os.tmpdir(), 'api-alone-logs-'));
  await apiAlone({
    signalsMs: (process.env.SIGNAL_MS ?? '5,200').split(',').map(Number),
    rates: (process.env.RATES ?? '500,1000').split(',').map(Number),
    seconds: Number(process.env.LEVEL_SECONDS ?? 8),
    budgetMs: Number(process.env.BUDGET_MS ?? 50),
    logDir,
    log: console.log,
  });
  rmSync(logDir, { recursive: true, force: true });
}

if (require.main === module) {
  (process.argv.includes('--serve') ? serve() : run()).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
