// What each layer of the webhook's acknowledgement costs, measured by leaving it out. The API (buildApp, as server.ts
// builds it for a deployment: its request log at LOG_LEVEL info, the payload keys, each callback sealed for its
// journey's patient, the audit trail, the forwarder beside the webhook) runs in a process of its own with a fake
// Temporal client whose signals take 5 ms, nothing else competing for the machine; for each layer in turn it is
// started again without that layer, and the same load is sent: 500 callbacks a second (open loop) and bursts of 200
// on new connections. The API with every layer (`all`) runs first and last, so the table shows the run-to-run noise
// beside each difference.
//
//   node --import tsx bench/ack-layers.ts                   files and postgres (its own PostgreSQL: a primary with a
//                                                           synchronous standby, and a lone server for `standby`)
//   STORES=files LEVEL_SECONDS=6 BURSTS=3 LAYERS=all,token,reading node --import tsx bench/ack-layers.ts
//
// `npm run bench` runs it as phase `layers` before its own stack starts; the report's table is layersSection
// (bench/lib/layers-report.ts). Left out in turn (a setting where one exists; else CallbackPath's measureWithout, which
// no deployment sets):
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client as PgClient } from 'pg';
import pino from 'pino';
import { API_NODE_FLAGS } from '../src/api/node-flags';
import { buildApp } from '../src/api/app';
import { profileOnSignal } from '../src/api/cpu-profile';
import { apiLoggerOptions } from '../src/api/server';
import { loadConfig } from '../src/config';
import { journeyWorkflowId, type CallbackSignal } from '../src/contract/definitions';
import type { AckLayer } from '../src/inbox/callback-path';
import type { CallbackInbox, DeadLetter, DeadLetterStore, InboxClaim, InboxEntry } from '../src/inbox/types';
import type { PatientRef } from '../src/patient-keys/envelope';
import { httpProbe, startProcess, threadCpuSeconds, tsx } from '../scripts/lib/processes';
import { apiFigures } from './lib/api-metrics';
import { event1Body, webhookPath } from './lib/journeys';
import { burstSpec, rateSpec, runLoad } from './lib/load';
import { startBenchDatabase, type BenchDatabase, type InboxStore } from './lib/stack';
import { ACK_LAYERS, type AckLayerResults, type LayerCpu, type LayerName, type LayerRun } from './lib/ack-layer-names';

export { ACK_LAYERS, type AckLayerResults, type LayerCpu, type LayerName, type LayerRun };
import { summarize } from './lib/stats';

const MEASURE_WITHOUT: Partial<Record<LayerName, AckLayer>> = {
  token: 'token',
  reading: 'reading',
  'payload-sealing': 'payload-sealing',
  pressure: 'pressure',
  'response-schema': 'response-schema',
};

const SECRET = 'ack-layers-bench-secret-0123456789';
const PORT = 22_295;
/** A bare route the generator warms itself on before each burst (its own code compiled, as the bench's bursts do). */
const WARM_PORT = 22_297;
const DATABASE = 'journeys_ack_layers';
const JOURNEYS = 100;
const RATE = 500;

/**
 * The layers the in-process measure takes: those the webhook runs for each callback before its 200, and the forwarder
 * (its claim, the opening of each entry, the signal handed on and the settle, on the same event loop: measured as the
 * API with it running, each round drained, against the API without it).
 */
export const IN_PROCESS_LAYERS: LayerName[] = [
  'token',
  'reading',
  'patient-sealing',
  'payload-sealing',
  'audit',
  'request-log',
  'pressure',
  'response-schema',
  'store-write',
  'forwarder',
];

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** Each in-process layer's CPU per callback (LayerCpu), for each store. */
export async function layerCpuInProcess(o: {
  stores: InboxStore[];
  layers?: LayerName[];
  rounds: number;
  perRound: number;
  /** For the postgres store: the inbox's database (the synchronous cluster's superuser URL). */
  postgres?: string;
  log?: (m: string) => void;
}): Promise<LayerCpu[]> {
  const work = mkdtempSync(path.join(os.tmpdir(), 'ack-layers-cpu-'));
  const logTo = pino.destination({ dest: path.join(work, 'api.log'), sync: true });
  const wanted = (o.layers ?? IN_PROCESS_LAYERS).filter((l) => IN_PROCESS_LAYERS.includes(l));
  const bodies = Array.from({ length: JOURNEYS }, (_, i) => ({
    url: webhookPath(`j${i}`, SECRET),
    payload: event1Body(8_000_000 + i),
  }));
  let n = 0;
  /** The API less `layer`, its forwarder not started; `forwarder`: every layer on, the forwarder running. */
  const build = async (layer: LayerName, store: InboxStore) => {
    const inboxUrl = store === 'postgres' ? await freshDatabase(o.postgres!, `${DATABASE}_${++n}`) : undefined;
    const { app } = await layerApp({
      layer: layer === 'forwarder' ? 'all' : layer,
      store,
      dataDir: path.join(work, `data-${++n}`),
      ...(inboxUrl ? { inboxUrl } : {}),
      startForwarder: layer === 'forwarder',
      logTo,
    });
    return app;
  };
  type App = Awaited<ReturnType<typeof build>>;
  let next = 0;
  /** Main-thread CPU per callback of `perRound` callbacks, one at a time (and, `drain`, until the forwarder has them all). */
  const round = async (app: App, drain = false) => {
    const t0 = process.threadCpuUsage();
    for (let i = 0; i < o.perRound; i++) {
      const b = bodies[next++ % bodies.length]!;
      const res = await app.inject({
        method: 'POST',
        url: b.url,
        payload: b.payload,
        headers: { 'content-type': 'application/json' },
      });
      if (res.statusCode !== 200) throw new Error(`the webhook answered ${res.statusCode} in the CPU measure`);
    }
    if (drain && !(await app.callbacks.forwarder.drained(60_000))) {
      throw new Error('the forwarder did not empty the inbox in the CPU measure');
    }
    const t = process.threadCpuUsage(t0);
    return (t.user + t.system) / o.perRound;
  };
  const out: LayerCpu[] = [];
  try {
    for (const store of o.stores) {
      if (store === 'postgres' && !o.postgres) throw new Error('the postgres store needs a PostgreSQL');
      const all = await build('all', store);
      try {
        await round(all); // warm: JIT, caches, the first segment
        for (const layer of wanted) {
          // The forwarder's pair is the other way round: the API with it (every layer on) against `all`, without it.
          const other = await build(layer, store);
          const forwarder = layer === 'forwarder';
          const [withIt, without] = forwarder ? [other, all] : [all, other];
          try {
            await round(other, forwarder);
            const diffs: number[] = [];
            const alls: number[] = [];
            for (let r = 0; r < o.rounds; r++) {
              const a = await round(withIt, forwarder);
              const w = await round(without);
              alls.push(forwarder ? w : a);
              diffs.push(a - w);
            }
            const cost: LayerCpu = {
              store,
              layer,
              usPerCallback: median(diffs),
              allUs: median(alls),
              spread: [Math.min(...diffs), Math.max(...diffs)],
              rounds: o.rounds,
              perRound: o.perRound,
            };
            out.push(cost);
            o.log?.(
              `layers in process, ${store}, ${layer}: ${cost.usPerCallback.toFixed(1)} µs per callback ` +
                `(rounds ${cost.spread[0].toFixed(1)} to ${cost.spread[1].toFixed(1)}; every layer ${cost.allUs.toFixed(0)} µs)`,
            );
          } finally {
            await other.close();
          }
        }
      } finally {
        await all.close();
      }
    }
  } finally {
    logTo.flushSync();
    logTo.end();
    rmSync(work, { recursive: true, force: true });
  }
  return out;
}

/** Nothing stored: the inbox of the `store-write` run (appends kept in memory, each claim taking what waits). */
export class MemoryInbox implements CallbackInbox {
  readonly kind = 'files' as const;
  #entries: InboxEntry[] = [];
  #next = 0;
  readonly #listeners = new Set<() => void>();
  readonly deadLetters: DeadLetterStore = {
    add: (input, now = new Date()) =>
      Promise.resolve({ ...input, id: `dl_${++this.#next}`, deadLetteredAt: now.toISOString(), replays: 0 }),
    list: () => Promise.resolve({ letters: [] }),
    get: () => Promise.resolve(undefined as DeadLetter | undefined),
    update: () => Promise.resolve(),
    remove: () => Promise.resolve(false),
    count: () => Promise.resolve(0),
  };
  init = () => Promise.resolve();
  close = () => Promise.resolve();
  append(journeyId: string, signal: CallbackSignal): Promise<void> {
    this.#entries.push({ id: String(++this.#next), journeyId, signal });
    for (const l of this.#listeners) l();
    return Promise.resolve();
  }
  claim(maxJourneys: number, maxPerJourney: number): Promise<InboxClaim | undefined> {
    const taken = this.#entries.splice(0, maxJourneys * maxPerJourney);
    if (taken.length === 0) return Promise.resolve(undefined);
    return Promise.resolve({ entries: taken, settle: () => Promise.resolve() });
  }
  stats = () => Promise.resolve({ depth: this.#entries.length, deadLetters: 0 });
  onAppend(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}

/**
 * The API as deployed, less `layer`, with a fake Temporal client, its journeys bound to patients, ready (not
 * listening). `logTo`: where its log lines go (by default stdout, as a deployment's).
 */
async function layerApp(o: {
  layer: LayerName;
  store: InboxStore;
  dataDir: string;
  inboxUrl?: string;
  startForwarder?: boolean;
  logTo?: { write(line: string): unknown };
}) {
  const { layer, store, dataDir } = o;
  const config = loadConfig({
    DATA_DIR: dataDir,
    WEBHOOK_SECRET: SECRET,
    CLINICS_JSON: '[]',
    PAYLOAD_ENCRYPTION_KEYS: `layers-1:${randomBytes(32).toString('base64')}`,
    PATIENT_KEY_STORE: layer === 'patient-sealing' ? 'off' : 'file',
    ...(layer === 'audit' ? {} : { AUDIT_FILE: path.join(dataDir, 'audit.jsonl') }),
    INBOX_STORE: store,
    INBOX_DATABASE_URL: o.inboxUrl,
    API_PORT: String(PORT),
    LOG_LEVEL: layer === 'request-log' ? 'warn' : 'info',
    LOG_FORMAT: 'json',
  });
  const temporal = {
    workflow: { getHandle: () => ({ signal: () => new Promise((r) => setTimeout(r, 5)) }) },
    connection: { withDeadline: (_deadline: number, fn: () => Promise<unknown>) => fn() },
    workflowService: { getSystemInfo: () => Promise.resolve({}) },
  };
  const without = MEASURE_WITHOUT[layer];
  const app = await buildApp({
    config,
    temporal: temporal as never,
    examServiceFor: () => undefined as never,
    logger: { ...apiLoggerOptions(config), ...(o.logTo ? { stream: o.logTo } : {}) },
    ...(layer === 'store-write' ? { inbox: new MemoryInbox() } : {}),
    ...(layer === 'forwarder' || o.startForwarder === false ? { startForwarder: false } : {}),
    ...(without ? { measureWithout: new Set([without]) } : {}),
  });
  await app.ready();
  // Each journey bound to a patient of its own, as a start binds it: its callbacks are sealed under that key.
  for (let i = 0; i < JOURNEYS; i++) {
    const ref: PatientRef = `pt_${randomBytes(16).toString('base64url')}`;
    await app.patientKeys?.bindJourney(journeyWorkflowId(`j${i}`), ref);
  }
  return { app, config };
}

/** The child: the API as deployed, less the layer LAYER names, listening. */
async function serve() {
  const layer = (process.env.LAYER ?? 'all') as LayerName;
  const { app, config } = await layerApp({
    layer,
    store: (process.env.INBOX_STORE ?? 'files') as InboxStore,
    dataDir: process.env.DATA_DIR!,
    ...(process.env.INBOX_DATABASE_URL ? { inboxUrl: process.env.INBOX_DATABASE_URL } : {}),
  });
  await app.listen({ host: '127.0.0.1', port: PORT });
  // As server.ts: a CPU profile between two SIGUSR2s when API_CPU_PROFILE_DIR is set (docs/cpu-profiles.md).
  if (process.env.API_CPU_PROFILE_DIR) profileOnSignal(process.env.API_CPU_PROFILE_DIR, app.log);
  console.error(`API for layer ${layer} on ${PORT}, ${config.inbox.store} inbox`);
  process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
}

/** A database of its own on the given server (the URL of the server's default database), empty. */
async function freshDatabase(url: string, name: string): Promise<string> {
  const client = new PgClient({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

async function waitInboxEmpty(origin: string, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if ((await apiFigures(origin)).inboxDepth === 0) return;
    await new Promise((r) => setTimeout(r, 200));
  }
}

const cpuSum = (cpu: Record<string, number>) => Object.values(cpu).reduce((a, b) => a + b, 0);

/** The layers in turn, for each store: `all` first and last. */
export async function ackLayers(o: {
  stores: InboxStore[];
  layers?: LayerName[];
  seconds: number;
  bursts: number;
  logDir: string;
  /** For the postgres store: the synchronous cluster's superuser URL, and a lone server's for `standby`. */
  postgres?: { synchronous: string; single?: string };
  log?: (m: string) => void;
}): Promise<LayerRun[]> {
  const work = mkdtempSync(path.join(os.tmpdir(), 'ack-layers-'));
  const targets = Array.from({ length: JOURNEYS }, (_, i) => ({
    path: webhookPath(`j${i}`, SECRET),
    body: event1Body(7_000_000 + i),
  }));
  const burstTargets = Array.from({ length: 200 }, (_, i) => targets[i % targets.length]!);
  const wanted = (o.layers ?? (Object.keys(ACK_LAYERS) as LayerName[])).filter((l) => l !== 'all');
  const out: LayerRun[] = [];
  let n = 0;
  const warmOrigin = `http://127.0.0.1:${WARM_PORT}`;
  const warm = startProcess({
    name: 'ack-layers-warm-route',
    ...tsx('bench/bare-server.ts', [], API_NODE_FLAGS),
    logDir: o.logDir,
    env: { BARE_PORT: String(WARM_PORT) },
    ready: httpProbe(`${warmOrigin}/healthz`),
    readyTimeoutMs: 60_000,
  });
  try {
    await warm.ready();
    for (const store of o.stores) {
      if (store === 'postgres' && !o.postgres) throw new Error('the postgres store needs a PostgreSQL');
      const layers = wanted.filter(
        (l) =>
          (l !== 'standby' || (store === 'postgres' && o.postgres?.single)) &&
          (l !== 'bare-route' || store === o.stores[0]),
      );
      const order: LayerName[] = ['all', ...layers, 'all'];
      for (const [i, layer] of order.entries()) {
        const env: Record<string, string> = {
          LAYER: layer,
          INBOX_STORE: store,
          DATA_DIR: path.join(work, `data-${++n}`),
        };
        if (store === 'postgres') {
          const server = layer === 'standby' ? o.postgres!.single! : o.postgres!.synchronous;
          env.INBOX_DATABASE_URL = await freshDatabase(server, DATABASE);
        }
        const origin = `http://127.0.0.1:${PORT}`;
        const bare = layer === 'bare-route';
        const api = startProcess({
          name: `ack-layer-${store}-${layer}-${n}`,
          ...(bare
            ? tsx('bench/bare-server.ts', [], API_NODE_FLAGS)
            : tsx('bench/ack-layers.ts', ['--serve'], API_NODE_FLAGS)),
          logDir: o.logDir,
          env: bare ? { BARE_PORT: String(PORT) } : env,
          ready: httpProbe(`${origin}/healthz`),
          readyTimeoutMs: 60_000,
        });
        try {
          await api.ready();
          const figures = () => (bare ? Promise.resolve(undefined) : apiFigures(origin));
          const f0 = await figures();
          const cpu0 = await threadCpuSeconds(api.pid);
          const runs = await runLoad(
            rateSpec(origin, targets, RATE, { warmupMs: 2_000, seconds: o.seconds }),
            work,
            o.logDir,
            120_000,
          );
          const cpu1 = await threadCpuSeconds(api.pid);
          const f1 = await figures();
          const sent = RATE * (2 + o.seconds);
          const accepted = runs.reduce((a, r) => a + r.ok, 0);
          const perCallback = (s: number) => (s * 1e6) / Math.max(1, accepted);
          const cpuUsPerCallback = {
            main: perCallback((cpu1.main ?? 0) - (cpu0.main ?? 0)),
            total: perCallback(cpuSum(cpu1) - cpuSum(cpu0)),
          };
          const drains = layer !== 'forwarder' && !bare;
          if (drains) await waitInboxEmpty(origin, 60_000);
          const samples: number[] = [];
          for (let b = 0; b < o.bursts; b++) {
            const burst = await runLoad(
              burstSpec(origin, burstTargets, false, false, warmOrigin),
              work,
              o.logDir,
              60_000,
            );
            samples.push(...(burst[0]?.latencySamples ?? []));
            if (drains) await waitInboxEmpty(origin, 30_000);
            await new Promise((r) => setTimeout(r, 300));
          }
          const latencyMs = runs.find((x) => x.record)!.latencyMs;
          const burstMs = summarize(samples);
          const run: LayerRun = {
            store,
            layer,
            pass: layer === 'all' ? (i === 0 ? 0 : 1) : 0,
            rate: RATE,
            latencyMs,
            cpuUsPerCallback,
            burstMs,
            accepted,
            sent,
            ...(f1 && f0 ? { loopDelayMaxMs: f1.loopDelayMax * 1000 } : {}),
          };
          out.push(run);
          o.log?.(
            `layers, ${store}, without ${layer}: ${RATE}/s p50 ${latencyMs.p50.toFixed(2)} p99 ${latencyMs.p99.toFixed(1)} max ${latencyMs.max.toFixed(1)} ms, ` +
              `CPU ${cpuUsPerCallback.main.toFixed(0)} µs main / ${cpuUsPerCallback.total.toFixed(0)} µs all threads per callback; ` +
              `bursts of 200 (new connections) p99 ${burstMs.p99.toFixed(1)} ms` +
              (run.loopDelayMaxMs !== undefined ? `; event loop delay max ${run.loopDelayMaxMs.toFixed(1)} ms` : ''),
          );
        } finally {
          await api.stop();
        }
      }
    }
  } finally {
    await warm.stop();
    rmSync(work, { recursive: true, force: true });
  }
  return out;
}

async function run() {
  const logDir = mkdtempSync(path.join(os.tmpdir(), 'ack-layers-logs-'));
  const stores = (process.env.STORES ?? 'files,postgres').split(',') as InboxStore[];
  const dbs: BenchDatabase[] = [];
  try {
    let postgres: { synchronous: string; single?: string } | undefined;
    if (stores.includes('postgres')) {
      const sync = await startBenchDatabase({
        shape: 'synchronous',
        dir: path.join(logDir, 'pg-sync'),
        port: 22_296,
        database: 'journeys_layers',
        log: console.log,
      });
      dbs.push(sync);
      const single = await startBenchDatabase({
        shape: 'single',
        dir: path.join(logDir, 'pg-single'),
        port: 22_340,
        database: 'journeys_layers',
        log: console.log,
      });
      dbs.push(single);
      postgres = { synchronous: sync.url, single: single.url };
    }
    const layers = process.env.LAYERS ? (process.env.LAYERS.split(',') as LayerName[]) : undefined;
    const cpu = await layerCpuInProcess({
      stores,
      ...(layers ? { layers } : {}),
      rounds: Number(process.env.ROUNDS ?? 7),
      perRound: Number(process.env.PER_ROUND ?? 600),
      ...(postgres ? { postgres: postgres.synchronous } : {}),
      log: console.log,
    });
    const runs = await ackLayers({
      stores,
      ...(layers ? { layers } : {}),
      seconds: Number(process.env.LEVEL_SECONDS ?? 6),
      bursts: Number(process.env.BURSTS ?? 3),
      logDir,
      ...(postgres ? { postgres } : {}),
      log: console.log,
    });
    const { layersSection } = await import('./lib/layers-report');
    console.log(layersSection({ runs, cpu }).join('\n'));
  } finally {
    for (const db of dbs) await db.stop();
    rmSync(logDir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  (process.argv.includes('--serve') ? serve() : run()).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
