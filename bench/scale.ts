// `npm run bench:scale`: how the engine scales out on this machine. The same two workloads through three shapes of the
// stack, each started fresh:
//   - dev:  the Temporal dev server (SQLite), one worker, one API (files inbox): what `npm start` runs;
//   - 1x1:  the production topology (PostgreSQL, the Temporal server, HAProxy, the PostgreSQL inbox, MinIO) with one
//           worker and one API replica;
//   - 2x2:  the same with two workers and two API replicas.
// Workloads: (1) journeys: N good faith exams started through the clinic API, each approved by the sandbox's test
// provider (invite, catalog check, callback through the webhook, inbox and forwarder): journeys completed per second;
// (2) callbacks: M journeys parked awaiting their consultation, then each one's event 1 POSTed to the webhook: callbacks
// acknowledged and applied per second. Then, on 2x2 only, many journeys parked (10,000 by default, all of them) with
// each worker's RSS, and woken by their event 1 (wake rate). For the production shapes the Temporal server's own
// metrics over each workload: persistence latency by operation, and the history service's lock and task latencies.
// Writes its section of docs/performance.md (between the scale markers; `npm run bench` keeps it).
//
//   npm run bench:scale                               everything, about 25-35 minutes on the 2-core machine
//   npm run bench:scale -- --quick                    small sizes (development), about 8 minutes
//   Options: --shapes dev,1x1,2x2  --journeys 300  --callbacks 600  --parked 10000  --concurrency 32
//            --provider-delay-ms 1000  --port-base 23000  --out docs/performance.md  --keep-data
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Client } from '@temporalio/client';
import { loadConfig, type Config } from '../src/config';
import { buildWorkflowBundle } from '../src/workflow-bundle';
import { DEMO_API_KEY } from '../src/sandbox/seed';
import { freeProductionPorts, ProductionStack } from '../scripts/lib/production-stack';
import { stackSecrets } from '../scripts/lib/stack-secrets';
import {
  benchClient,
  benchConfig,
  closeBenchClient,
  countWorkflows,
  gfeInput,
  pool,
  postEvent1s,
  startJourney,
} from './lib/journeys';
import { cpuBusySampler, describeMachine, loadAverage } from './lib/machine';
import { killAllNow, ROOT, rssBytes, sleep } from '../scripts/lib/processes';
import { BenchStack, benchPorts, CLINICS } from './lib/stack';
import { SCALE_END, SCALE_START, withScaleSection } from './lib/sections';
import { fmtBytes, fmtMs, summarize, type Summary } from './lib/stats';

const CLINIC = CLINICS.throughput;

interface Options {
  shapes: string[];
  journeys: number;
  callbacks: number;
  parked: number;
  concurrency: number;
  providerDelayMs: number;
  portBase: number;
  out: string;
  keepData: boolean;
}

function options(argv: string[]): Options {
  const { values: v } = parseArgs({
    args: argv,
    strict: true,
    options: {
      quick: { type: 'boolean', default: false },
      shapes: { type: 'string', default: 'dev,1x1,2x2' },
      journeys: { type: 'string' },
      callbacks: { type: 'string' },
      parked: { type: 'string' },
      concurrency: { type: 'string', default: '32' },
      'provider-delay-ms': { type: 'string', default: '1000' },
      'port-base': { type: 'string', default: '23000' },
      out: { type: 'string', default: path.join(ROOT, 'docs/performance.md') },
      'keep-data': { type: 'boolean', default: false },
    },
  });
  const int = (name: string, value: string | undefined, fallback: number) => {
    const n = value === undefined ? fallback : Number(value);
    if (!Number.isInteger(n) || n < 0) throw new Error(`--${name}: a whole number, not ${value}`);
    return n;
  };
  const shapes = v.shapes.split(',').map((s) => s.trim());
  for (const s of shapes)
    if (!['dev', '1x1', '2x2'].includes(s)) throw new Error(`--shapes: dev, 1x1 or 2x2, not ${s}`);
  return {
    shapes,
    journeys: int('journeys', v.journeys, v.quick ? 60 : 300),
    callbacks: int('callbacks', v.callbacks, v.quick ? 100 : 600),
    parked: int('parked', v.parked, v.quick ? 300 : 10_000),
    concurrency: int('concurrency', v.concurrency, 32),
    providerDelayMs: int('provider-delay-ms', v['provider-delay-ms'], 1000),
    portBase: int('port-base', v['port-base'], 23_000),
    out: path.resolve(v.out),
    keepData: v['keep-data'],
  };
}

// ---- the shapes ----------------------------------------------------------------------------------------------------

interface Shape {
  name: string;
  label: string;
  apiUrl: string;
  sandboxUrl: string;
  config: Config;
  workerPids(): number[];
  /** The Temporal server's Prometheus page (production shapes). */
  temporalMetricsUrl?: string;
  stop(): Promise<void>;
}

/** The worker's start times (dev shape): the bundle's build, then three starts each way. */
let workerStart: { bundleMs: number; bundleBytes: number; fromSource: number[]; prebuilt: number[] } | undefined;

async function devShape(o: Options, dir: string, log: (l: string) => void): Promise<Shape> {
  const stack = new BenchStack({
    dataDir: path.join(dir, 'data'),
    logDir: path.join(dir, 'logs'),
    ports: benchPorts(o.portBase),
    providerDelayMs: o.providerDelayMs,
    backgroundNice: 0,
    log,
  });
  mkdirSync(stack.o.dataDir, { recursive: true });
  mkdirSync(stack.o.logDir, { recursive: true });
  await stack.configure();
  await stack.startTemporal();
  await stack.startSandbox();
  // The worker's start, from the sources (webpack at start: development) and from a bundle built ahead (the image).
  const bundleFile = path.join(dir, 'workflows.bundle.js');
  const built = await buildWorkflowBundle(bundleFile);
  const timed = async (env: Record<string, string>) => {
    const t0 = performance.now();
    await stack.startWorker(env);
    const ms = performance.now() - t0;
    await stack.stopWorker();
    return ms;
  };
  const fromSource: number[] = [];
  const prebuilt: number[] = [];
  for (let i = 0; i < 3; i++) {
    fromSource.push(await timed({}));
    prebuilt.push(await timed({ WORKFLOW_BUNDLE_PATH: bundleFile }));
  }
  workerStart = { bundleMs: built.ms, bundleBytes: built.bytes, fromSource, prebuilt };
  log(
    `dev: worker start from the sources ${fromSource.map((m) => fmtMs(m)).join(', ')}; from the bundle ${prebuilt.map((m) => fmtMs(m)).join(', ')}`,
  );
  await stack.startWorker();
  await stack.startApi({}, [], { store: 'files' });
  return {
    name: 'dev',
    label: 'dev server (SQLite), 1 worker, 1 API, files inbox',
    apiUrl: stack.apiUrl,
    sandboxUrl: stack.sandboxUrl,
    config: benchConfig(stack.env),
    workerPids: () => (stack.worker?.pid ? [stack.worker.pid] : []),
    stop: () => stack.stopAll(),
  };
}

async function productionShape(o: Options, dir: string, n: number, log: (l: string) => void): Promise<Shape> {
  const base = o.portBase + 100 * n;
  const ports = await freeProductionPorts(base, base + 900, { replicas: n, workerMetrics: true });
  const dataDir = path.join(dir, 'stack');
  mkdirSync(dataDir, { recursive: true });
  const clinicsFile = path.join(dir, 'clinics.json');
  writeFileSync(
    clinicsFile,
    JSON.stringify([
      {
        clinicId: CLINIC.clinicId,
        examServiceApiKey: DEMO_API_KEY,
        apiTokenSha256: [createHash('sha256').update(CLINIC.token).digest('hex')],
      },
    ]),
    { mode: 0o600 },
  );
  const stack = new ProductionStack({
    dataDir,
    ports,
    workers: n,
    supervise: false,
    sandboxEnv: { SANDBOX_HOST: '127.0.0.1', SANDBOX_PROVIDER_DELAY_MS: String(o.providerDelayMs) },
    engineEnv: { CLINICS_FILE: clinicsFile, API_RATE_LIMIT_PER_MINUTE: '1000000', LOG_LEVEL: 'warn' },
    log: (line) => log(`stack: ${line}`),
  });
  await stack.start();
  const secrets = stackSecrets(dataDir);
  const config = loadConfig({
    DATA_DIR: path.join(dir, 'client'),
    TEMPORAL_ADDRESS: stack.temporalAddress,
    CLINICS_FILE: clinicsFile,
    WEBHOOK_SECRET: secrets.webhookSecret,
    PAYLOAD_ENCRYPTION_KEYS: secrets.payloadEncryptionKeys,
  });
  return {
    name: `${n}x${n}`,
    label: `production topology: Temporal server on PostgreSQL, ${n} worker${n > 1 ? 's' : ''}, ${n} API replica${
      n > 1 ? 's' : ''
    } behind HAProxy, PostgreSQL inbox`,
    apiUrl: stack.apiUrl,
    sandboxUrl: stack.sandboxUrl,
    config,
    workerPids: () => stack.workers.flatMap((w) => (w.pid ? [w.pid] : [])),
    temporalMetricsUrl: `http://127.0.0.1:${ports.temporalMetrics}/metrics`,
    stop: () => stack.stop(),
  };
}

// ---- Temporal's own metrics ----------------------------------------------------------------------------------------

type Series = Map<string, number>;

async function scrape(url: string | undefined): Promise<Series> {
  const out: Series = new Map();
  if (!url) return out;
  const text = await fetch(url, { signal: AbortSignal.timeout(10_000) })
    .then((r) => r.text())
    .catch(() => '');
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    const value = Number(line.slice(space + 1));
    if (Number.isFinite(value)) out.set(line.slice(0, space), value);
  }
  return out;
}

interface LatencyRow {
  metric: string;
  operation: string;
  count: number;
  meanMs: number;
}

/** Histograms of seconds whose name matches: count and mean over the window, by operation, busiest first. */
function latencies(before: Series, after: Series, name: RegExp, top: number): LatencyRow[] {
  const rows = new Map<string, { metric: string; operation: string; sum: number; count: number }>();
  for (const [series, value] of after) {
    const m = /^([a-z_]+?)_(sum|count)\{(.*)\}$/.exec(series);
    if (!m || !name.test(m[1]!)) continue;
    const labels = m[3]!;
    const operation = /operation="([^"]*)"/.exec(labels)?.[1] ?? '';
    const key = `${m[1]}|${operation}`;
    const row = rows.get(key) ?? { metric: m[1]!, operation, sum: 0, count: 0 };
    const delta = value - (before.get(series) ?? 0);
    if (m[2] === 'sum') row.sum += delta;
    else row.count += delta;
    rows.set(key, row);
  }
  return [...rows.values()]
    .filter((r) => r.count > 0)
    .sort((a, b) => b.sum - a.sum)
    .slice(0, top)
    .map((r) => ({ metric: r.metric, operation: r.operation, count: r.count, meanMs: (r.sum / r.count) * 1000 }));
}

// ---- the workloads -------------------------------------------------------------------------------------------------

interface Throughput {
  n: number;
  completed: number;
  /** Parked for an operator (an invite in doubt) instead of completing. */
  attention: number;
  seconds: number;
  perSecond: number;
  startMs: Summary;
  refused: number;
}

interface Wake {
  n: number;
  completed: number;
  attention: number;
  seconds: number;
  perSecond: number;
  ackMs: Summary;
  not200: number;
}

interface ShapeResult {
  name: string;
  label: string;
  journeys: Throughput;
  callbacks: Wake;
  parkPerSecond: number;
  rssAfter: number[];
  persistence: LatencyRow[];
  history: LatencyRow[];
  cpuBusy: number;
}

const completedQuery = `ClinicId = '${CLINIC.clinicId}' AND ExecutionStatus = 'Completed'`;
const parkedQuery = `ClinicId = '${CLINIC.clinicId}' AND JourneyStage = 'awaiting_consultation'`;

const attentionQuery = `ClinicId = '${CLINIC.clinicId}' AND ExecutionStatus = 'Running' AND NeedsAttention = true`;

/**
 * Waits until `n` more journeys than `before` have completed, or parked for an operator (an invite in doubt: the
 * engine never re-sends it on its own); resolves with how many completed and how many parked.
 */
async function settle(
  client: Client,
  before: { completed: number; attention: number },
  n: number,
  timeoutMs: number,
): Promise<{ completed: number; attention: number }> {
  const until = Date.now() + timeoutMs;
  let now = { completed: before.completed, attention: before.attention };
  for (;;) {
    now = {
      completed: await countWorkflows(client, completedQuery).catch(() => now.completed),
      attention: await countWorkflows(client, attentionQuery).catch(() => now.attention),
    };
    const completed = now.completed - before.completed;
    const attention = now.attention - before.attention;
    if (completed + attention >= n || Date.now() > until) return { completed, attention };
    await sleep(250);
  }
}

async function counts(client: Client): Promise<{ completed: number; attention: number }> {
  return {
    completed: await countWorkflows(client, completedQuery),
    attention: await countWorkflows(client, attentionQuery),
  };
}

/** N good faith exams started through the clinic API; the sandbox approves each: journeys completed per second. */
async function journeysThroughApi(shape: Shape, client: Client, o: Options, tag: string): Promise<Throughput> {
  const before = await counts(client);
  const starts: number[] = [];
  let refused = 0;
  const t0 = performance.now();
  await pool(
    Array.from({ length: o.journeys }, (_, i) => i),
    o.concurrency,
    async (i) => {
      const t = performance.now();
      const res = await fetch(`${shape.apiUrl}/v1/journeys`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${CLINIC.token}`,
          'content-type': 'application/json',
          'idempotency-key': `scale-${tag}-${i}`,
        },
        body: JSON.stringify({
          patient: { ...gfeInput(shape.config, CLINIC.clinicId, `scale-${tag}-${i}`, 'Approve').patient },
          scenario: { type: 'gfe' },
          exams: [101],
          additionalData: JSON.stringify({ bench: 'scale' }),
        }),
        signal: AbortSignal.timeout(60_000),
      }).catch(() => undefined);
      if (res) await res.arrayBuffer();
      starts.push(performance.now() - t);
      if (res?.status !== 201) refused++;
    },
  );
  const { completed, attention } = await settle(client, before, o.journeys - refused, 600_000);
  const seconds = (performance.now() - t0) / 1000;
  return {
    n: o.journeys,
    completed,
    attention,
    seconds,
    perSecond: completed / seconds,
    startMs: summarize(starts),
    refused,
  };
}

/** Journeys parked awaiting their consultation (started through the client, as the API would), with their exams. */
/** Journeys started ahead of those parked, at most. */
const PARK_WINDOW = 400;

async function park(
  shape: Shape,
  client: Client,
  n: number,
  tag: string,
  log: (l: string) => void,
): Promise<{ items: { journeyId: string; patientExamId: number }[]; perSecond: number }> {
  const already = await countWorkflows(client, parkedQuery);
  const attentionBefore = await countWorkflows(client, attentionQuery);
  const ids = Array.from({ length: n }, (_, i) => `sc${tag}${String(i).padStart(6, '0')}`);
  const t0 = performance.now();
  let last = 0;
  let started = 0;
  let parkedNow = 0;
  // Starts run at most PARK_WINDOW ahead of those parked: started all at once, thousands of journeys compete for the
  // same Temporal server and every one of them slows (the rate fell from 15/s to 2/s on 2x2 that way).
  const poll = setInterval(() => {
    void countWorkflows(client, parkedQuery).then(
      (c) => (parkedNow = c - already),
      () => undefined,
    );
  }, 1_000);
  try {
    await pool(ids, 50, async (id) => {
      while (started - parkedNow > PARK_WINDOW) await sleep(250);
      started++;
      // No outcome keyword: the sandbox's test provider leaves the exam pending.
      await startJourney(client, shape.config, gfeInput(shape.config, CLINIC.clinicId, id, 'Waiting'));
      if (performance.now() - last > 15_000) {
        last = performance.now();
        log(`  parking: ${started} started, ${parkedNow} parked`);
      }
    });
  } finally {
    clearInterval(poll);
  }
  // Done when every journey is parked, or the rest wait for an operator (an invite in doubt): reported, not awaited.
  const until = Date.now() + 1_800_000;
  let parked = 0;
  let attention = 0;
  for (;;) {
    parked = (await countWorkflows(client, parkedQuery).catch(() => already + parked)) - already;
    attention =
      (await countWorkflows(client, attentionQuery).catch(() => attentionBefore + attention)) - attentionBefore;
    if (parked + attention >= n || Date.now() > until) break;
    await sleep(250);
  }
  const perSecond = parked / ((performance.now() - t0) / 1000);
  if (parked < n) {
    throw new Error(
      `only ${parked} of ${n} journeys parked` + (attention > 0 ? ` (${attention} wait for an operator)` : ''),
    );
  }
  const exams = (
    (await (await fetch(`${shape.sandboxUrl}/_sandbox/patient-exams?status=pending`)).json()) as {
      patient_exams: { patient_exam_id: number; webhook_url: string | null }[];
    }
  ).patient_exams;
  const byJourney = new Map<string, number>();
  for (const e of exams) {
    const id = /\/webhooks\/exam-service\/([^/]+)\//.exec(e.webhook_url ?? '')?.[1];
    if (id) byJourney.set(decodeURIComponent(id), e.patient_exam_id);
  }
  const items = ids.flatMap((journeyId) => {
    const patientExamId = byJourney.get(journeyId);
    return patientExamId === undefined ? [] : [{ journeyId, patientExamId }];
  });
  if (items.length < n) throw new Error(`the sandbox holds exams for only ${items.length} of ${n} parked journeys`);
  return { items, perSecond };
}

/** Each parked journey's event 1 through the webhook: acknowledged, then applied (the journey completes). */
async function wake(
  shape: Shape,
  client: Client,
  items: { journeyId: string; patientExamId: number }[],
  o: Options,
): Promise<Wake> {
  const before = await counts(client);
  const t0 = performance.now();
  const { acks, not200 } = await postEvent1s(shape.apiUrl, shape.config.api.webhookSecret, items, o.concurrency * 2);
  const { completed, attention } = await settle(client, before, items.length, 1_800_000);
  const seconds = (performance.now() - t0) / 1000;
  return {
    n: items.length,
    completed,
    attention,
    seconds,
    perSecond: completed / seconds,
    ackMs: summarize(acks),
    not200,
  };
}

// ---- the run ---------------------------------------------------------------------------------------------------------

interface BigPark {
  n: number;
  parkPerSecond: number;
  rssIdle: number[];
  rssParked: number[];
  rssPeak: number[];
  wake: Wake;
  rssAfterWake: number[];
}

async function main() {
  const o = options(process.argv.slice(2));
  const log = (line: string) => console.log(`[scale] ${new Date().toISOString().slice(11, 19)} ${line}`);
  const work = mkdtempSync(path.join(os.tmpdir(), 'journeys-scale-'));
  const began = new Date();
  const loadBefore = loadAverage();
  const busy = cpuBusySampler();
  const results: ShapeResult[] = [];
  let big: BigPark | undefined;
  let bigFailure: string | undefined;
  // Every part of the stack running now is killed as this process exits (scripts/lib/processes.ts).
  const onSignal = () => process.exit(130);
  process.on('SIGINT', onSignal);
  try {
    for (const name of o.shapes) {
      const dir = path.join(work, name);
      mkdirSync(dir, { recursive: true });
      log(`${name}: starting the stack`);
      const shape =
        name === 'dev' ? await devShape(o, dir, log) : await productionShape(o, dir, name === '1x1' ? 1 : 2, log);
      const client = await benchClient(shape.config);
      const shapeBusy = cpuBusySampler();
      try {
        const m0 = await scrape(shape.temporalMetricsUrl);
        log(`${name}: ${o.journeys} journeys through the clinic API...`);
        const journeys = await journeysThroughApi(shape, client, o, `${name}-${randomUUID().slice(0, 6)}`);
        log(`${name}: ${journeys.completed}/${journeys.n} completed, ${journeys.perSecond.toFixed(1)} journeys/s`);
        log(`${name}: ${o.callbacks} journeys parked, then woken by their event 1...`);
        const parked = await park(shape, client, o.callbacks, `${name.replace('x', '')}a`, log);
        const callbacks = await wake(shape, client, parked.items, o);
        log(`${name}: ${callbacks.completed}/${callbacks.n} applied, ${callbacks.perSecond.toFixed(1)} callbacks/s`);
        const m1 = await scrape(shape.temporalMetricsUrl);
        const rssAfter = await Promise.all(shape.workerPids().map(async (pid) => (await rssBytes(pid)) ?? NaN));
        results.push({
          name,
          label: shape.label,
          journeys,
          callbacks,
          parkPerSecond: parked.perSecond,
          rssAfter,
          persistence: latencies(m0, m1, /^persistence_latency$/, 6),
          // Long polls (Poll*) wait by design: left out.
          history: latencies(m0, m1, /^(\w*lock\w*_latency|cache_latency|task_latency|service_latency)$/, 12)
            .filter((l) => !l.operation.startsWith('Poll'))
            .slice(0, 6),
          cpuBusy: shapeBusy(),
        });
        if (name === '2x2' && o.parked > 0) {
          log(`${name}: ${o.parked} journeys parked (all of them), worker RSS sampled...`);
          const pids = shape.workerPids();
          const rssIdle = await Promise.all(pids.map(async (pid) => (await rssBytes(pid)) ?? NaN));
          const peak = [...rssIdle];
          const sampler = setInterval(() => {
            void Promise.all(pids.map((pid) => rssBytes(pid))).then((now) =>
              now.forEach((v, i) => (peak[i] = Math.max(peak[i]!, v ?? 0))),
            );
          }, 2_000);
          try {
            const many = await park(shape, client, o.parked, 'big', log);
            const rssParked = await Promise.all(pids.map(async (pid) => (await rssBytes(pid)) ?? NaN));
            log(`${name}: parked ${many.items.length} at ${many.perSecond.toFixed(1)}/s; waking them...`);
            const woke = await wake(shape, client, many.items, o);
            log(`${name}: woke ${woke.completed}/${woke.n} at ${woke.perSecond.toFixed(1)}/s`);
            const rssAfterWake = await Promise.all(pids.map(async (pid) => (await rssBytes(pid)) ?? NaN));
            big = {
              n: many.items.length,
              parkPerSecond: many.perSecond,
              rssIdle,
              rssParked,
              rssPeak: peak,
              wake: woke,
              rssAfterWake,
            };
          } catch (err) {
            // Reported, not fatal: the shapes' figures above still make the report.
            bigFailure = err instanceof Error ? err.message : String(err);
            log(`${name}: the parked journeys did not complete: ${bigFailure}`);
          } finally {
            clearInterval(sampler);
          }
        }
      } finally {
        await closeBenchClient(client);
        log(`${name}: stopping the stack`);
        await shape.stop();
      }
    }
  } finally {
    process.off('SIGINT', onSignal);
    killAllNow();
    if (!o.keepData) rmSync(work, { recursive: true, force: true });
  }
  const section = render({ o, began, loadBefore, loadAfter: loadAverage(), busy: busy(), results, big, bigFailure });
  writeSection(o.out, section);
  console.log(section);
  log(`written to ${path.relative(ROOT, o.out)}`);
}

// ---- the report ------------------------------------------------------------------------------------------------------

function render(r: {
  o: Options;
  began: Date;
  loadBefore: ReturnType<typeof loadAverage>;
  loadAfter: ReturnType<typeof loadAverage>;
  busy: number;
  results: ShapeResult[];
  big: BigPark | undefined;
  bigFailure: string | undefined;
}): string {
  const { o } = r;
  const by = (name: string) => r.results.find((x) => x.name === name);
  const ratio = (a: number | undefined, b: number | undefined) =>
    a !== undefined && b !== undefined && b > 0 ? `${(a / b).toFixed(2)}x` : '–';
  const rows = r.results.map(
    (x) =>
      `| ${x.name}: ${x.label} | ${x.journeys.completed}/${x.journeys.n} in ${x.journeys.seconds.toFixed(1)} s: **${x.journeys.perSecond.toFixed(1)}/s** (start p50 ${fmtMs(x.journeys.startMs.p50)}, p99 ${fmtMs(x.journeys.startMs.p99)}${x.journeys.refused ? `, ${x.journeys.refused} refused` : ''}${x.journeys.attention ? `; ${x.journeys.attention} parked for an operator (invite in doubt)` : ''}) | parked at ${x.parkPerSecond.toFixed(1)}/s; ${x.callbacks.completed}/${x.callbacks.n} applied in ${x.callbacks.seconds.toFixed(1)} s: **${x.callbacks.perSecond.toFixed(1)}/s** (ack p50 ${fmtMs(x.callbacks.ackMs.p50)}, p99 ${fmtMs(x.callbacks.ackMs.p99)}${x.callbacks.not200 ? `, ${x.callbacks.not200} not 200` : ''}) | ${x.rssAfter.map(fmtBytes).join(', ')} | ${(x.cpuBusy * 100).toFixed(0)} % |`,
  );
  const temporalRows = r.results
    .filter((x) => x.persistence.length > 0 || x.history.length > 0)
    .flatMap((x) =>
      [...x.persistence, ...x.history].map(
        (l) => `| ${x.name} | ${l.metric} | ${l.operation || '–'} | ${l.count} | ${fmtMs(l.meanMs)} |`,
      ),
    );
  const lines = [
    SCALE_START,
    '## 6. Scaling out: one of each against two of each, and the dev server',
    '',
    `Measured by \`npm run bench:scale\` (bench/scale.ts), ${r.began.toISOString().slice(0, 16).replace('T', ' ')} UTC, on ${machineLine()}; load average (1, 5, 15 min) before ${loadLine(r.loadBefore)}, after ${loadLine(r.loadAfter)}; the machine's CPUs ${(r.busy * 100).toFixed(0)} % busy over the run. Each shape started fresh; every part of it on this one machine (2 cores), so two of each share the same cores as one of each.`,
    '',
    `*Journeys*: ${o.journeys} good faith exams started through the clinic API (${o.concurrency} requests at once), each approved by the sandbox's test provider ${o.providerDelayMs} ms after its invite: catalog check, invite, callback through the webhook and inbox, completed. *Callbacks*: ${o.callbacks} journeys parked awaiting their consultation, then each one's event 1 POSTed to the webhook (${o.concurrency * 2} at once): acknowledged, forwarded, applied, completed.`,
    '',
    '| Shape | Journeys/s | Callbacks/s | Worker RSS after | CPU busy |',
    '|---|---|---|---|---|',
    ...rows,
    '',
    `Two of each against one of each: journeys ${ratio(by('2x2')?.journeys.perSecond, by('1x1')?.journeys.perSecond)}, callbacks ${ratio(by('2x2')?.callbacks.perSecond, by('1x1')?.callbacks.perSecond)}; the production topology (1x1) against the dev server: journeys ${ratio(by('1x1')?.journeys.perSecond, by('dev')?.journeys.perSecond)}, callbacks ${ratio(by('1x1')?.callbacks.perSecond, by('dev')?.callbacks.perSecond)}.`,
    '',
  ];
  if (workerStart) {
    const w = workerStart;
    const list = (xs: number[]) => xs.map((x) => fmtMs(x)).join(', ');
    lines.push(
      `**Worker start** (spawned until it polls, the dev server up): with the workflows bundled at start by webpack (development, \`npm run worker\`) ${list(w.fromSource)}; with the bundle built ahead (\`WORKFLOW_BUNDLE_PATH\`, what the image does: \`node dist/workflow-bundle.js\`, ${(w.bundleBytes / 1024).toFixed(0)} KiB built in ${fmtMs(w.bundleMs)}) ${list(w.prebuilt)}.`,
      '',
    );
  }
  if (r.big) {
    const b = r.big;
    lines.push(
      `**${b.n} journeys parked** on 2x2 (all of them, at ${b.parkPerSecond.toFixed(1)}/s): worker RSS idle ${b.rssIdle.map(fmtBytes).join(', ')}, parked ${b.rssParked.map(fmtBytes).join(', ')}, peak ${b.rssPeak.map(fmtBytes).join(', ')}; every one woken by its event 1: ${b.wake.completed}/${b.wake.n} completed in ${b.wake.seconds.toFixed(1)} s = **${b.wake.perSecond.toFixed(1)} wakes/s** (ack p50 ${fmtMs(b.wake.ackMs.p50)}, p99 ${fmtMs(b.wake.ackMs.p99)}${b.wake.not200 ? `, ${b.wake.not200} not 200` : ''}); RSS after ${b.rssAfterWake.map(fmtBytes).join(', ')}.`,
      '',
    );
  }
  if (r.bigFailure) lines.push(`**${o.parked} journeys parked** on 2x2: not done in this run (${r.bigFailure}).`, '');
  if (temporalRows.length > 0) {
    lines.push(
      "The Temporal server's own metrics over both workloads (its Prometheus page; the busiest operations by total time):",
      '',
      '| Shape | Metric | Operation | Count | Mean |',
      '|---|---|---|---|---|',
      ...temporalRows,
      '',
    );
  }
  const pace = paceParagraph(r.results);
  if (pace) lines.push(pace, '');
  lines.push(SCALE_END);
  return lines.join('\n');
}

/** The Temporal server operations whose mean latency says who sets the pace, from 1x1 to 2x2. */
const PACE_OPERATIONS: [metric: string, operation: string][] = [
  ['service_latency', 'RespondWorkflowTaskCompleted'],
  ['service_latency', 'RecordWorkflowTaskStarted'],
  ['service_latency', 'RespondActivityTaskCompleted'],
  ['task_latency', 'TransferActiveTaskWorkflowTask'],
  ['persistence_latency', 'UpdateWorkflowExecution'],
];

/**
 * What two of each changed, by the Temporal server's own latencies and the machine's CPU: where they grew with the
 * CPUs already busy, the shared cores set the pace, and what a larger deployment would change follows from that.
 */
export function paceParagraph(results: Pick<ShapeResult, 'name' | 'persistence' | 'history' | 'cpuBusy'>[]) {
  const one = results.find((x) => x.name === '1x1');
  const two = results.find((x) => x.name === '2x2');
  if (!one || !two) return undefined;
  const mean = (x: typeof one, metric: string, operation: string) =>
    [...x.persistence, ...x.history].find((l) => l.metric === metric && l.operation === operation)?.meanMs;
  const changes = PACE_OPERATIONS.flatMap(([metric, operation]) => {
    const a = mean(one, metric, operation);
    const b = mean(two, metric, operation);
    return a !== undefined && b !== undefined && a > 0 ? [{ operation, a, b, x: b / a }] : [];
  });
  if (changes.length === 0) return undefined;
  const listed = changes.map((c) => `${c.operation} ${fmtMs(c.a)} → ${fmtMs(c.b)} (${c.x.toFixed(1)}x)`).join(', ');
  const service = changes.filter((c) => c.operation !== 'UpdateWorkflowExecution');
  const grew = service.length > 0 && service.every((c) => c.x >= 1.3);
  const busy = Math.min(one.cpuBusy, two.cpuBusy);
  const storage = changes.find((c) => c.operation === 'UpdateWorkflowExecution');
  const head = `**What sets the pace.** From one of each to two of each, the Temporal server's mean latencies: ${listed}; the machine's CPUs ${(one.cpuBusy * 100).toFixed(0)} % and ${(two.cpuBusy * 100).toFixed(0)} % busy.`;
  if (!grew || busy < 0.75) {
    return `${head} They did not grow with the CPUs short, so this run does not show the cores as the limit.`;
  }
  const store =
    storage && storage.x < Math.min(...service.map((c) => c.x))
      ? ` PostgreSQL's own write (UpdateWorkflowExecution) grew less than the server's handling around it: the database is not what saturated.`
      : '';
  return (
    `${head} With the CPUs already busy, a second worker and API replica add pollers and connections that compete for the same two cores with the Temporal server, which then answers every workflow task later: on this machine the Temporal server's CPU sets the pace, not the workers.${store} ` +
    'What a larger deployment would do: give the Temporal server (history and matching) and PostgreSQL cores of their own, then add workers and API replicas; the workers scale out on the same task queue and the API replicas share the PostgreSQL inbox, so their count follows the load once the server is not starved.'
  );
}

function machineLine(): string {
  const m = describeMachine();
  return `${m.cpuModel}, ${m.cores} cores, ${m.memTotalGiB.toFixed(0)} GiB, Node ${m.node}, Temporal CLI ${m.temporalCli.split('\n')[0]}`;
}

function loadLine(l: ReturnType<typeof loadAverage>): string {
  return [l.one, l.five, l.fifteen].map((x) => x.toFixed(2)).join(', ');
}

/** Replaces the scale section of the file (or appends it). */
function writeSection(file: string, section: string): void {
  writeFileSync(file, withScaleSection(existsSync(file) ? readFileSync(file, 'utf8') : '', section));
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : err);
    process.exit(1);
  });
}
