// 1. The webhook and its callback inbox. Journeys parked waiting for event 1 (the sandbox's provider never acts for a
// test patient without an outcome keyword) take valid callbacks: event 1 bodies with valid webhook tokens, for
// patient exams that are not theirs, so each journey records them ('foreign', then 'duplicate') and keeps waiting.
// For each inbox store (files, postgres: the API restarted on it):
//
// - webhook: fixed rates (100, 500, 1000/s) with Temporal up, the bare Fastify route beside each level in the same
//   run (bare first, so neither pays for the other's backlog). The API's 200s are read for their deliveryId; after
//   the run each is matched with the time its journey applied it (ack -> applied). The inbox's group commit (batch
//   histogram), the forwarder's rate and each part's CPU share come from /metrics and /proc.
// - burst: 200 callbacks all due at the same instant (one per journey, up to 200 connections), Temporal up, and
//   Temporal stopped (in the outage).
// - outage: the Temporal dev server stopped, the same levels, then restarted: how long the forwarder takes to resume
//   (its backoff), its drain rate, and beside it Temporal's raw signal rate (a client's signal loop, no API).
// At the end, every journey's snapshot: each acknowledged callback must be recorded exactly once.
import path from 'node:path';
import type { Ctx } from '../lib/context';
import {
  apiFigures,
  batchSummary,
  bucketBound,
  diff,
  fmtBatch,
  fmtBoundSeconds,
  fmtGc,
  type ApiFigures,
  type BatchSummary,
} from '../lib/api-metrics';
import {
  appliedSummary,
  deliveryCheck,
  rawSignalLoop,
  sweep,
  type AppliedSummary,
  type DeliveryCheck,
  type PendingApplied,
  type RawSignalRun,
} from '../lib/deliveries';
import { event1Body, pool, startThroughApi, waitForCount, webhookPath } from '../lib/journeys';
import { profiled } from '../lib/cpu-profiles';
import { burstSpec, runLoad } from '../lib/load';
import { durableWriteProbe, type WriteProbe } from '../lib/probe';
import {
  httpOk,
  httpProbe,
  ManagedProcess,
  runQueueWaitSeconds,
  sleep,
  threadCpuSeconds,
  tsx,
  waitFor,
} from '../../scripts/lib/processes';
import { CLINICS, type InboxStore } from '../lib/stack';
import { summarize, type Summary } from '../lib/stats';
import type { LevelResult, LoadSpec } from '../loadgen';

export type TemporalState = 'up' | 'down';

export interface WebhookLevel {
  store: InboxStore;
  temporal: TemporalState;
  rate: number;
  api: LevelResult;
  /** The bare Fastify route at the same rate, just before (Temporal up only). */
  bare?: LevelResult;
  /**
   * The floor of a durable acknowledgement on this store: the bare route storing each body with one durable write
   * (bench/bare-server.ts BARE_STORE), at the same rate, between the bare route and the API (Temporal up only).
   */
  floor?: LevelResult;
  /** The API's counters over the run (warm-up included). */
  figures: ApiFigures;
  /** The inbox's group commit over the run. */
  batch: BatchSummary;
  /** The API's own ack time (its histogram): bounds of p50 and p99, seconds. */
  serverAck: { p50?: number; p99?: number };
  /** Share of one core each part used during the API run (warm-up included). */
  cpu: Record<string, number>;
  /** Temporal up: from the 200 to the journey having applied the callback (measured level only). */
  applied?: AppliedSummary;
  /** Inbox depth at the end of the run. */
  depthAfter: number;
  /** Temporal up: from the end of the run to an empty inbox. */
  drainSeconds?: number;
  /** Temporal up: signals per second the forwarder sent from the run's start to the empty inbox. */
  forwardRate?: number;
}

export interface WebhookResults {
  journeys: number;
  parkSeconds: number;
  connections: number;
  levels: WebhookLevel[];
  /** One durable write of each store on its own, the stack idle. */
  probes: WriteProbe[];
}

export interface BurstRun {
  store: InboxStore;
  temporal: TemporalState;
  size: number;
  /** Each burst on its own (a fresh generator, its connections established first). */
  bursts: { latencyMs: Summary; ok: number; sendLagMs: Summary; writes: number; batch: BatchSummary }[];
  /** Every callback of every burst (established connections). */
  pooled: Summary;
  /** The same bursts against the bare route, just before (pooled): the generator's and the connections' share. */
  bare?: Summary;
  /** The same bursts against the floor (the bare route with one durable write on this store), Temporal up (pooled). */
  floor?: Summary;
  /** Bursts that opened their connections themselves (as many as established; pooled), API, bare route and floor. */
  newConnections?: {
    api: Summary;
    bare: Summary;
    floor?: Summary;
    writes: number;
    bursts?: number;
    ok?: number;
    sent?: number;
  };
  /** 200s and callbacks sent, every burst (new connections included). */
  ok: number;
  sent: number;
  /** Inbox writes per burst (group commits). */
  writes: number[];
  /** The API's own ack time over every burst (its histogram): bounds, seconds. */
  serverAck: { p50?: number; p99?: number };
  cpu: Record<string, number>;
  applied?: AppliedSummary;
}

export interface BurstResults {
  runs: BurstRun[];
}

export interface StoreOutage {
  store: InboxStore;
  down: WebhookLevel[];
  /** SIGTERM of the dev server to its exit; start to ready. */
  stopMs: number;
  restartMs: number;
  /** Callbacks waiting in the inbox when Temporal came back. */
  depthAtRestart: number;
  /** Signals that failed (Temporal unreachable) while it was down: the forwarder's attempts. */
  failedAttempts: number;
  /** From Temporal ready to the forwarder's first signal: what was left of its backoff. */
  resumeSeconds: number;
  /** From the first signal to an empty inbox (every signal accepted by the server). */
  drainSeconds: number;
  /**
   * From the empty inbox until the Temporal server and the worker went quiet (under 30 % of a core together): the
   * journeys still applying what the server had accepted. NaN when they were still busy after a minute.
   */
  catchUpSeconds: number;
  forwarded: number;
  drainRate: number;
  drainCpu: Record<string, number>;
}

export interface OutageResults {
  stores: StoreOutage[];
}

export interface HookState {
  journeyIds: string[];
  parkSeconds: number;
  targets: { path: string; body: string }[];
  bare: ManagedProcess | undefined;
  /** The floor route of the store the API is on (started by the store's webhook levels or bursts). */
  floor?: { store: InboxStore; process: ManagedProcess };
  /** Every 200 the API gave these journeys' callbacks: deliveryId -> wall-clock ms of the answer. */
  acked: Map<string, number>;
  /** The journey each acknowledged delivery went to. */
  journeyOf: Map<string, string>;
  /** Deliveries the raw signal loop sent. */
  raw: Set<string>;
  pending: PendingApplied[];
  bursts: number;
}

const CONNECTIONS = 128;
/** Burst size and how many bursts per condition. */
export const BURST = 200;

export const fmtCpu = (cpu: Record<string, number>) =>
  Object.entries(cpu)
    .map(([k, v]) => `${k} ${(v * 100).toFixed(0)}%`)
    .join(' ');

const ms = (v: number | undefined) => (v === undefined || !Number.isFinite(v) ? '–' : v.toFixed(1));

function levels(ctx: Ctx, rate: number, warmup = ctx.o.warmupSeconds) {
  const out: LoadSpec['levels'] = [];
  if (warmup > 0) out.push({ name: `${rate}/s warm-up`, rate, durationMs: warmup * 1000, record: false });
  out.push({ name: `${rate}/s`, rate, durationMs: ctx.o.levelSeconds * 1000, record: true });
  return out;
}

function spec(origin: string, targets: LoadSpec['targets'], lv: LoadSpec['levels'], collect: boolean): LoadSpec {
  return { origin, targets, levels: lv, connections: CONNECTIONS, timeoutMs: 15_000, keepAlive: true, collect };
}

/** Starts the parked journeys and the bare server; builds the callbacks. */
export async function prepareHooks(ctx: Ctx): Promise<HookState> {
  const { o, config, client } = ctx;
  const t0 = performance.now();
  const keys = Array.from({ length: o.hookJourneys }, (_, i) => `bh${ctx.runTag}${String(i).padStart(4, '0')}`);
  ctx.log(`webhook: starting ${keys.length} journeys through the API that will wait for their consultation...`);
  // Through the clinic API: each journey bound to a patient of its own, so every callback is sealed under that
  // patient's data key in the inbox and in the journey's history, as a clinic's are.
  const started = await pool(keys, o.startConcurrency, async (key) => {
    const r = await startThroughApi(ctx.stack.apiUrl, CLINICS.hook.token, key, 'Waiting');
    if (r.status !== 201 || !r.journeyId) throw new Error(`webhook: a journey did not start (HTTP ${r.status})`);
    return r.journeyId;
  });
  const journeyIds = started;
  await waitForCount(
    client,
    `ClinicId = '${CLINICS.hook.clinicId}' AND JourneyStage = 'awaiting_consultation'`,
    journeyIds.length,
    Math.min(180_000, ctx.remainingMs()),
  );
  const parkSeconds = (performance.now() - t0) / 1000;
  ctx.log(`webhook: ${journeyIds.length} journeys parked in ${parkSeconds.toFixed(1)} s`);
  const secret = config.api.webhookSecret;
  // Patient exams that are not the journeys' own (the sandbox numbers its own from 90001).
  const targets = journeyIds.flatMap((id, i) =>
    [0, 1].map((k) => ({ path: webhookPath(id, secret), body: event1Body(5_000_000 + i * 2 + k) })),
  );
  const bare = await new ManagedProcess({
    name: 'bare-server',
    ...tsx('bench/bare-server.ts'),
    logDir: ctx.logDir,
    env: { BARE_PORT: String(o.portBase + 1) },
    ready: httpProbe(`http://127.0.0.1:${o.portBase + 1}/healthz`),
    readyTimeoutMs: 60_000,
  }).up();
  return {
    journeyIds,
    targets,
    bare,
    parkSeconds,
    acked: new Map(),
    journeyOf: new Map(),
    raw: new Set(),
    pending: [],
    bursts: 0,
  };
}

/**
 * The floor of a durable acknowledgement for the store the API is on (bench/bare-server.ts with BARE_STORE): started
 * once per store, on the stack's own storage (the API's data folder's disk; the PostgreSQL cluster of its inbox).
 */
async function floorOrigin(ctx: Ctx, hooks: HookState): Promise<string> {
  const { stack, o } = ctx;
  const store = stack.apiStore;
  const origin = `http://127.0.0.1:${o.portBase + 2}`;
  if (hooks.floor?.store === store) return origin;
  await hooks.floor?.process.stop();
  hooks.floor = undefined;
  const env: Record<string, string> = { BARE_PORT: String(o.portBase + 2), BARE_STORE: store };
  if (store === 'files') env.BARE_DIR = path.join(ctx.config.dataDir, 'floor-log');
  else if (stack.postgres) env.BARE_DATABASE_URL = stack.postgres.url;
  const proc = await new ManagedProcess({
    name: `floor-${store}`,
    ...tsx('bench/bare-server.ts'),
    logDir: ctx.logDir,
    env,
    ready: httpProbe(`${origin}/healthz`),
    readyTimeoutMs: 60_000,
  }).up();
  hooks.floor = { store, process: proc };
  return origin;
}

/** Starts measuring; the returned function gives each part's CPU share of one core since then. */
export async function cpuShare(ctx: Ctx): Promise<() => Promise<Record<string, number>>> {
  const t0 = performance.now();
  const apiPid = ctx.stack.api?.pid;
  const threads = async () => {
    const t = apiPid ? await threadCpuSeconds(apiPid) : {};
    const out = Object.fromEntries(Object.entries(t).map(([k, v]) => [`api/${k}`, v]));
    // Time the API's event loop thread was ready to run but had no CPU: starvation, not work.
    const wait = apiPid ? await runQueueWaitSeconds(apiPid) : undefined;
    if (wait !== undefined) out['api/main-waiting-for-cpu'] = wait;
    return out;
  };
  const before = { ...(await ctx.stack.cpu()), ...(await threads()) };
  return async () => {
    const after = { ...(await ctx.stack.cpu()), ...(await threads()) };
    const seconds = (performance.now() - t0) / 1000;
    const out: Record<string, number> = {};
    for (const [k, v] of Object.entries(after)) if (before[k] !== undefined) out[k] = (v - before[k]) / seconds;
    return out;
  };
}

/** Waits until the API's inbox is empty; the seconds it took, or NaN if it was not empty in time (not fatal). */
export async function waitInboxEmpty(ctx: Ctx, timeoutMs: number, what = 'the inbox to empty'): Promise<number> {
  const t0 = performance.now();
  try {
    await waitFor(what, async () => (await apiFigures(ctx.stack.apiUrl)).inboxDepth === 0, timeoutMs, 200);
  } catch {
    ctx.log(`the ${ctx.stack.apiStore} inbox was not empty after ${Math.round(timeoutMs / 1000)} s; going on`);
    return NaN;
  }
  return (performance.now() - t0) / 1000;
}

/** Keeps the 200s of a load run (deliveryId, time of the answer, journey); strips them from the results kept. */
export function keepDeliveries(hooks: HookState, runs: LevelResult[], targets: { path: string }[]): [string, number][] {
  const recorded: [string, number][] = [];
  for (const r of runs) {
    for (const [id, at, index] of r.deliveries ?? []) {
      hooks.acked.set(id, at);
      // /webhooks/exam-service/<journeyId>/<token>
      const journeyId = decodeURIComponent(targets[index]?.path.split('/')[3] ?? '');
      hooks.journeyOf.set(id, journeyId);
      if (r.record) recorded.push([id, at]);
    }
    delete r.deliveries;
    delete r.latencySamples;
  }
  return recorded;
}

/** One level against the API: warm-up and measured run, its counters, its CPU shares. */
async function apiLevel(
  ctx: Ctx,
  hooks: HookState,
  temporal: TemporalState,
  rate: number,
  warmup: number,
): Promise<WebhookLevel> {
  const { stack } = ctx;
  const before = await apiFigures(stack.apiUrl);
  const cpu0 = await cpuShare(ctx);
  const runs = await runLoad(
    spec(stack.apiUrl, hooks.targets, levels(ctx, rate, warmup), true),
    ctx.workDir,
    ctx.logDir,
    120_000,
  );
  const cpu = await cpu0();
  const figures = diff(await apiFigures(stack.apiUrl), before);
  const recorded = keepDeliveries(hooks, runs, hooks.targets);
  const api = runs.find((r) => r.record)!;
  const level: WebhookLevel = {
    store: stack.apiStore,
    temporal,
    rate,
    api,
    figures,
    batch: batchSummary(figures),
    serverAck: { p50: bucketBound(figures.ack, 0.5), p99: bucketBound(figures.ack, 0.99) },
    cpu,
    depthAfter: figures.inboxDepth,
  };
  if (temporal === 'up') hooks.pending.push({ target: level, deliveries: recorded });
  return level;
}

function describe(l: WebhookLevel): string {
  const a = l.api.latencyMs;
  return (
    `p50 ${ms(a.p50)} p99 ${ms(a.p99)} p99.9 ${ms(a.p999)} max ${ms(a.max)} ms (${l.api.ok}/${l.api.scheduled} 200; ` +
    `server-side p99 ${fmtBoundSeconds(l.serverAck.p99)}; inbox ${fmtBatch(l.batch)}; depth after ${l.depthAfter}; ` +
    `gen lag p99 ${ms(l.api.sendLagMs.p99)} ms; event loop delay max ${ms(l.figures.loopDelayMax * 1000)} ms; ` +
    `gc ${fmtGc(l.figures)}; cpu ${fmtCpu(l.cpu)})`
  );
}

/** Temporal up: the store's durable write on its own, then each level against the bare route and the API. */
export async function webhookPhase(ctx: Ctx, hooks: HookState, into: WebhookResults): Promise<void> {
  const { o, stack } = ctx;
  const store = stack.apiStore;
  const bareOrigin = `http://127.0.0.1:${o.portBase + 1}`;
  const out = into.levels;
  await waitInboxEmpty(ctx, 60_000);
  const probe = await durableWriteProbe(store, {
    dataDir: ctx.config.dataDir,
    ...(stack.postgres ? { databaseUrl: stack.postgres.url } : {}),
  });
  into.probes.push(probe);
  ctx.log(
    `webhook (${store}): one durable write on its own: p50 ${ms(probe.latencyMs.p50)} p99 ${ms(probe.latencyMs.p99)} max ${ms(probe.latencyMs.max)} ms (${probe.n} in a row)`,
  );
  for (const rate of o.levels) {
    const left = await waitInboxEmpty(ctx, Math.min(180_000, Math.max(30_000, ctx.remainingMs() - 300_000)));
    if (left > 1) ctx.log(`webhook: the inbox took ${left.toFixed(0)} s more to empty`);
    ctx.log(`webhook (${store}): ${rate}/s against the bare Fastify route...`);
    const bareRun = await runLoad(
      spec(bareOrigin, hooks.targets, levels(ctx, rate, Math.min(2, o.warmupSeconds)), false),
      ctx.workDir,
      ctx.logDir,
      120_000,
    );
    const bare = bareRun.find((r) => r.record)!;
    ctx.log(`webhook (${store}): ${rate}/s against the floor (the bare route with one durable write)...`);
    const floorRun = await runLoad(
      spec(await floorOrigin(ctx, hooks), hooks.targets, levels(ctx, rate, Math.min(2, o.warmupSeconds)), false),
      ctx.workDir,
      ctx.logDir,
      120_000,
    );
    const floor = floorRun.find((r) => r.record)!;
    ctx.log(
      `webhook (${store}): ${rate}/s against the API (${o.warmupSeconds} s warm-up, ${o.levelSeconds} s measured)...`,
    );
    const t0 = performance.now();
    const f0 = (await apiFigures(stack.apiUrl)).forwarded;
    const level = await profiled(ctx, `${store}-${rate}`, () => apiLevel(ctx, hooks, 'up', rate, o.warmupSeconds));
    level.bare = bare;
    level.floor = floor;
    level.drainSeconds = await waitInboxEmpty(ctx, Math.min(240_000, Math.max(30_000, ctx.remainingMs() - 240_000)));
    const f1 = (await apiFigures(stack.apiUrl)).forwarded;
    level.forwardRate = (f1 - f0) / ((performance.now() - t0) / 1000);
    out.push(level);
    ctx.log(
      `webhook (${store}): ${rate}/s API ${describe(level)}; inbox empty ${ms(level.drainSeconds)} s after, forwarder ${level.forwardRate.toFixed(0)}/s` +
        `  | bare p50 ${ms(bare.latencyMs.p50)} p99 ${ms(bare.latencyMs.p99)} p99.9 ${ms(bare.latencyMs.p999)} max ${ms(bare.latencyMs.max)} ms` +
        `  | floor p50 ${ms(floor.latencyMs.p50)} p99 ${ms(floor.latencyMs.p99)} p99.9 ${ms(floor.latencyMs.p999)} max ${ms(floor.latencyMs.max)} ms`,
    );
  }
}

/**
 * Bursts of BURST callbacks (one per journey) all due at once, each from a fresh generator whose BURST connections
 * are established first (pooled over the repeats: the target's figure); the same against the bare route; then one
 * burst each that opens its BURST connections itself.
 */
export async function burstRun(ctx: Ctx, hooks: HookState, temporal: TemporalState): Promise<BurstRun> {
  const { stack } = ctx;
  const repeats = ctx.o.burstRepeats;
  const bareOrigin = `http://127.0.0.1:${ctx.o.portBase + 1}`;
  const cpu0 = await cpuShare(ctx);
  const bursts: BurstRun['bursts'] = [];
  const samples: number[] = [];
  const recorded: [string, number][] = [];
  let sent = 0;
  let ok = 0;
  const burstTargets = (k: number) =>
    Array.from({ length: BURST }, (_, i) => hooks.targets[(i * 2 + k) % hooks.targets.length]!);
  const bareBurst = async (warm: boolean, origin = bareOrigin) => {
    const runs = await runLoad(
      burstSpec(origin, burstTargets(0), false, warm, bareOrigin),
      ctx.workDir,
      ctx.logDir,
      60_000,
    );
    await sleep(500);
    return runs[0]!.latencySamples ?? [];
  };
  const apiBurst = async (warm: boolean) => {
    // Temporal up: each burst from the same state, the forwarder idle and the journeys done applying what it sent
    // (the Temporal server and the worker quiet); stopped: the backlog waits anyway.
    if (temporal === 'up') {
      await waitInboxEmpty(ctx, 60_000);
      await waitQuiet(ctx, 0.3, 30_000);
    }
    // BURST callbacks, one per journey while there are enough journeys (a different one of its two each burst).
    const targets = burstTargets(hooks.bursts++ % 2);
    const before = await apiFigures(stack.apiUrl);
    const runs = await runLoad(
      burstSpec(stack.apiUrl, targets, true, warm, bareOrigin),
      ctx.workDir,
      ctx.logDir,
      60_000,
    );
    const d = diff(await apiFigures(stack.apiUrl), before);
    const r = runs[0]!;
    const latencies = r.latencySamples ?? [];
    const deliveries = keepDeliveries(hooks, runs, targets);
    sent += r.scheduled;
    ok += r.ok;
    ctx.log(
      `burst (${stack.apiStore}, Temporal ${temporal}, ${warm ? 'established' : 'new'} connections): p50 ${ms(r.latencyMs.p50)} p95 ${ms(r.latencyMs.p95)} p99 ${ms(r.latencyMs.p99)} max ${ms(r.latencyMs.max)} ms, ${r.ok}/${r.scheduled} 200 in ${d.batchWrites} inbox writes (server-side p99 ${fmtBoundSeconds(bucketBound(d.ack, 0.99))}; generator lag max ${ms(r.sendLagMs.max)} ms)`,
    );
    if (temporal === 'down') await sleep(1_000);
    return { r, d, latencies, deliveries };
  };
  // The bare route first: what the generator and the connections cost on their own.
  const bareSamples: number[] = [];
  for (let b = 0; b < repeats; b++) bareSamples.push(...(await bareBurst(true)));
  const bare = summarize(bareSamples);
  // Temporal up: the floor too, the bare route storing each callback with one durable write on this store.
  const floorAt = temporal === 'up' ? await floorOrigin(ctx, hooks) : undefined;
  const floorSamples: number[] = [];
  for (let b = 0; floorAt && b < repeats; b++) floorSamples.push(...(await bareBurst(true, floorAt)));
  const all0 = await apiFigures(stack.apiUrl);
  for (let b = 0; b < repeats; b++) {
    const { r, d, latencies, deliveries } = await profiled(ctx, `${stack.apiStore}-burst-${temporal}-${b + 1}`, () =>
      apiBurst(true),
    );
    samples.push(...latencies);
    recorded.push(...deliveries);
    bursts.push({
      latencyMs: r.latencyMs,
      ok: r.ok,
      sendLagMs: r.sendLagMs,
      writes: d.batchWrites,
      batch: batchSummary(d),
    });
  }
  const all = diff(await apiFigures(stack.apiUrl), all0);
  // As many bursts on connections each burst opens itself: how a sender that connects per callback arrives.
  const bareNewSamples: number[] = [];
  for (let b = 0; b < repeats; b++) bareNewSamples.push(...(await bareBurst(false)));
  const bareNew = summarize(bareNewSamples);
  const floorNewSamples: number[] = [];
  for (let b = 0; floorAt && b < repeats; b++) floorNewSamples.push(...(await bareBurst(false, floorAt)));
  const apiNewSamples: number[] = [];
  let newWrites = 0;
  let newOk = 0;
  let newSent = 0;
  for (let b = 0; b < repeats; b++) {
    const { r, d, latencies, deliveries } = await apiBurst(false);
    apiNewSamples.push(...latencies);
    recorded.push(...deliveries);
    newWrites += d.batchWrites;
    newOk += r.ok;
    newSent += r.scheduled;
  }
  ctx.log(
    `burst (bare route, beside ${stack.apiStore}, Temporal ${temporal}): established connections p50 ${ms(bare.p50)} p99 ${ms(bare.p99)} max ${ms(bare.max)} ms over ${repeats}; new connections p99 ${ms(bareNew.p99)} ms`,
  );
  const floor = floorAt ? summarize(floorSamples) : undefined;
  const floorNew = floorAt ? summarize(floorNewSamples) : undefined;
  if (floor && floorNew) {
    ctx.log(
      `burst (floor, ${stack.apiStore}, Temporal ${temporal}): established connections p50 ${ms(floor.p50)} p99 ${ms(floor.p99)} max ${ms(floor.max)} ms over ${repeats}; new connections p99 ${ms(floorNew.p99)} ms`,
    );
  }
  const run: BurstRun = {
    store: stack.apiStore,
    temporal,
    size: BURST,
    bursts,
    pooled: summarize(samples),
    bare,
    ...(floor ? { floor } : {}),
    newConnections: {
      api: summarize(apiNewSamples),
      bare: bareNew,
      ...(floorNew ? { floor: floorNew } : {}),
      writes: newWrites,
      bursts: repeats,
      ok: newOk,
      sent: newSent,
    },
    ok,
    sent,
    writes: bursts.map((x) => x.writes),
    serverAck: { p50: bucketBound(all.ack, 0.5), p99: bucketBound(all.ack, 0.99) },
    cpu: await cpu0(),
  };
  if (temporal === 'up') hooks.pending.push({ target: run, deliveries: recorded });
  return run;
}

/** Waits (up to timeoutMs) until the Temporal server and the worker together use less than `share` of a core. */
export async function waitQuiet(ctx: Ctx, share: number, timeoutMs: number): Promise<number> {
  const t0 = performance.now();
  while (performance.now() - t0 < timeoutMs) {
    const since = await cpuShare(ctx);
    await sleep(1_000);
    const cpu = await since();
    if ((cpu.temporal ?? 0) + (cpu.worker ?? 0) < share) break;
  }
  return (performance.now() - t0) / 1000;
}

/**
 * Temporal's raw signal rate: the forwarder's concurrency, straight from a client, against the parked journeys; once
 * with the journeys in turn (one signal each, as live traffic spreads), once in runs of 32 per journey (the
 * forwarder's lanes while it drains a backlog: a journey's entries one after another).
 */
export async function rawSignalRate(ctx: Ctx, hooks: HookState, after: string): Promise<RawSignalRun[]> {
  const seconds = ctx.o.quickSizes ? 4 : 6;
  const concurrency = ctx.config.forwarder.concurrency;
  const out: RawSignalRun[] = [];
  for (const perJourney of [1, 32]) {
    // The server accepts a signal before the worker has applied it: let earlier signals' workflow tasks finish
    // first, so each loop starts from a quiet server and worker.
    const settled = await waitQuiet(ctx, 0.3, 30_000);
    ctx.log(
      `signals: Temporal's raw signal rate, ${concurrency} in flight from a client, ${perJourney === 1 ? 'journeys in turn' : `${perJourney} in a row per journey`}, ${seconds} s (after ${settled.toFixed(0)} s for the server and worker to go quiet)...`,
    );
    const cpu0 = await cpuShare(ctx);
    const own0 = process.cpuUsage();
    const t0 = performance.now();
    const run = await rawSignalLoop(
      ctx.client,
      hooks.journeyIds,
      hooks.targets.slice(0, 64).map((t) => t.body),
      { concurrency, perJourney, seconds, timeoutMs: 10_000, after, sent: hooks.raw },
    );
    const own = process.cpuUsage(own0);
    run.cpu = { ...(await cpu0()), bench: (own.user + own.system) / 1e6 / ((performance.now() - t0) / 1000) };
    ctx.log(
      `signals: ${run.ok} signals in ${run.seconds.toFixed(1)} s = ${run.perSecond.toFixed(0)}/s (${run.errors} failed; one signal p50 ${ms(run.latencyMs.p50)} p99 ${ms(run.latencyMs.p99)} ms; cpu ${fmtCpu(run.cpu)})`,
    );
    out.push(run);
  }
  return out;
}

/**
 * Temporal stopped: the levels (when `levels`) and the bursts (when `burst`) against the API alone with its inbox,
 * then Temporal restarted and the inbox drained: the forwarder's resume delay and drain rate.
 */
export async function outagePhase(
  ctx: Ctx,
  hooks: HookState,
  what: { levels: boolean; burst: boolean },
): Promise<{ outage: StoreOutage; burst?: BurstRun }> {
  const { o, stack } = ctx;
  const store = stack.apiStore;
  const left = await waitInboxEmpty(ctx, Math.min(180_000, Math.max(30_000, ctx.remainingMs() - 300_000)));
  if (left > 1) ctx.log(`outage: the ${store} inbox took ${left.toFixed(0)} s more to empty`);
  ctx.log(`outage (${store}): stopping the Temporal dev server...`);
  const figures0 = await apiFigures(stack.apiUrl);
  const s0 = performance.now();
  await stack.stopTemporal();
  const stopMs = performance.now() - s0;
  const down: WebhookLevel[] = [];
  let burst: BurstRun | undefined;
  let restartMs = NaN;
  try {
    await sleep(500);
    if (what.levels) {
      for (const rate of o.levels) {
        ctx.log(`outage (${store}): ${rate}/s against the API while Temporal is down...`);
        // The API is warm from the runs before: a short warm-up keeps the backlog (and the drain after it) smaller.
        const level = await profiled(ctx, `${store}-${rate}-down`, () =>
          apiLevel(ctx, hooks, 'down', rate, Math.min(1, o.warmupSeconds)),
        );
        down.push(level);
        ctx.log(`outage (${store}): ${rate}/s API ${describe(level)}`);
      }
    }
    if (what.burst) burst = await burstRun(ctx, hooks, 'down');
  } finally {
    ctx.log(`outage (${store}): restarting the Temporal dev server...`);
    restartMs = await stack.startTemporal();
  }
  const tReady = performance.now();
  const atRestart = await apiFigures(stack.apiUrl);
  ctx.log(
    `outage (${store}): Temporal ready in ${(restartMs / 1000).toFixed(1)} s; ${atRestart.inboxDepth} callbacks in the inbox`,
  );
  const cpu0 = await cpuShare(ctx);
  // The forwarder is in its backoff: note when it signals again, then when the inbox is empty.
  let tFirst: number | undefined;
  let last = atRestart;
  const until = performance.now() + Math.min(600_000, Math.max(60_000, ctx.remainingMs() - 240_000));
  while (performance.now() < until) {
    last = await apiFigures(stack.apiUrl);
    if (tFirst === undefined && last.forwarded > atRestart.forwarded) tFirst = last.at;
    if (last.inboxDepth === 0) break;
    await sleep(200);
  }
  const drainCpu = await cpu0();
  const tEnd = last.at;
  if (last.inboxDepth > 0) ctx.log(`outage (${store}): ${last.inboxDepth} callbacks still in the inbox; going on`);
  const forwarded = last.forwarded - atRestart.forwarded;
  const first = tFirst ?? tEnd;
  const drainSeconds = (tEnd - first) / 1000;
  const catchUp = await waitQuiet(ctx, 0.3, 60_000);
  const outage: StoreOutage = {
    store,
    catchUpSeconds: catchUp >= 60 ? NaN : catchUp,
    down,
    stopMs,
    restartMs,
    depthAtRestart: atRestart.inboxDepth,
    failedAttempts:
      atRestart.forwardUnreachable + atRestart.forwardRefused - figures0.forwardUnreachable - figures0.forwardRefused,
    resumeSeconds: (first - tReady) / 1000,
    drainSeconds,
    forwarded,
    drainRate: forwarded / Math.max(drainSeconds, 0.001),
    drainCpu,
  };
  ctx.log(
    `outage (${store}): the forwarder resumed ${outage.resumeSeconds.toFixed(1)} s after Temporal was ready and forwarded ${forwarded} in ${drainSeconds.toFixed(1)} s = ${outage.drainRate.toFixed(0)}/s (cpu ${fmtCpu(drainCpu)}); the server and worker went quiet ${catchUp.toFixed(0)} s later`,
  );
  await waitFor('the API to be ready again', () => httpOk(`${stack.apiUrl}/readyz`), 60_000);
  return { outage, ...(burst ? { burst } : {}) };
}

/** Every journey's snapshot: the time each acknowledged callback was applied, and the exactly-once count. */
export async function finalCheck(
  ctx: Ctx,
  hooks: HookState,
  counters: { accepted: number; forwarded: number },
): Promise<DeliveryCheck> {
  // The server accepted every signal; the worker may still be applying them (queries wait behind that work).
  const quiet = await waitQuiet(ctx, 0.3, 30_000);
  ctx.log(
    `delivery check: querying the ${hooks.journeyIds.length} journeys' snapshots (after ${quiet.toFixed(0)} s for the worker to go quiet)...`,
  );
  const s = await sweep(ctx.client, hooks.journeyIds);
  for (const p of hooks.pending) p.target.applied = appliedSummary(p.deliveries, s);
  hooks.pending = [];
  const check = deliveryCheck(s, hooks.acked, hooks.raw, counters, hooks.journeyOf);
  ctx.log(
    `delivery check: the journeys recorded ${check.recorded} deliveries (${check.sweepSeconds.toFixed(1)} s to query); ` +
      `acknowledged ${check.acked} + raw signals ${check.rawSignals}: ${check.missing} missing, ${check.unexpected} unexpected, ` +
      (check.unqueried ? `${check.unqueried} journeys could not be queried (${check.unqueriedError}), ` : '') +
      `${check.duplicateEntries} recorded twice; the API accepted ${check.accepted} and forwarded ${check.forwarded}`,
  );
  return check;
}

export async function stopBare(hooks: HookState | undefined): Promise<void> {
  await hooks?.bare?.stop();
  await hooks?.floor?.process.stop();
  if (hooks) hooks.floor = undefined;
}
