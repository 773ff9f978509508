// 1. Webhook ack latency. Journeys parked waiting for event 1 (the sandbox's provider never acts for a test patient
// without an outcome keyword) take valid callbacks at fixed rates: event 1 bodies with valid webhook tokens, for
// patient exams that are not theirs, so each journey records them ('foreign', then 'duplicate') and keeps waiting.
// Each level runs against the API and against a bare Fastify route in the same run, back to back.
// Then the same loads with the Temporal server stopped (the API spools), and after its restart every spooled callback
// is checked to have reached its journey.
import { handOff, diff, serverAckQuantile, type HandOff } from '../lib/api-metrics';
import type { Ctx } from '../lib/context';
import { event1Body, gfeInput, pool, startJourney, waitForCount, webhookPath } from '../lib/journeys';
import { runLoad } from '../lib/load';
import { runQueueWaitSeconds, sleep, spawnTs, stopChild, threadCpuSeconds, waitFor, type Child } from '../lib/proc';
import { CLINICS, httpOk } from '../lib/stack';
import type { LevelResult, LoadSpec } from '../loadgen';
import { snapshotQuery, journeyWorkflowId } from '../../src/workflows/definitions';

export interface WebhookLevel {
  rate: number;
  api: LevelResult;
  bare?: LevelResult;
  handOff: HandOff;
  /** Share of one core each part used during the API run (warm-up included). */
  cpu: Record<string, number>;
}

export interface WebhookResults {
  journeys: number;
  parkSeconds: number;
  connections: number;
  up: WebhookLevel[];
  /** Callbacks acknowledged 200 by the API in the Temporal-up runs, warm-ups included. */
  upAcked: number;
  upNot200: number;
}

export interface OutageResults {
  down: WebhookLevel[];
  downAcked: number;
  downNot200: number;
  /** Stop of the dev server to its first refused connection, restart to ready. */
  restartMs: number;
  /** From the restarted server's readiness to an empty spool. */
  drainSeconds: number;
  /** Share of one core each part used while the spool drained. */
  drainCpu: Record<string, number>;
  spooledWhileDown: number;
  forwardedAfterRestart: number;
  /** Callbacks the parked journeys recorded (distinct deliveries), against every 200 the API gave. */
  recordedByJourneys: number;
  ackedInTotal: number;
  missing: number;
  /** Callbacks per journey at the end (history growth). */
  perJourney: number;
}

export interface HookState {
  journeyIds: string[];
  targets: { path: string; body: string }[];
  acked: number;
  bare: Child | undefined;
}

const CONNECTIONS = 128;

export const fmtCpu = (cpu: Record<string, number>) =>
  Object.entries(cpu)
    .map(([k, v]) => `${k} ${(v * 100).toFixed(0)}%`)
    .join(' ');

function levels(ctx: Ctx, rate: number, record: boolean, warmup = ctx.o.warmupSeconds) {
  const out: LoadSpec['levels'] = [];
  if (warmup > 0) out.push({ name: `${rate}/s warm-up`, rate, durationMs: warmup * 1000, record: false });
  if (record) out.push({ name: `${rate}/s`, rate, durationMs: ctx.o.levelSeconds * 1000, record: true });
  return out;
}

function spec(origin: string, targets: LoadSpec['targets'], lv: LoadSpec['levels']): LoadSpec {
  return { origin, targets, levels: lv, connections: CONNECTIONS, timeoutMs: 15_000, keepAlive: true };
}

const acked = (rs: LevelResult[]) => rs.reduce((n, r) => n + r.ok, 0);
const not200 = (rs: LevelResult[]) => rs.reduce((n, r) => n + r.non2xx + r.errors, 0);

/** Starts the parked journeys and the bare server; builds the callbacks. */
export async function prepareHooks(ctx: Ctx): Promise<HookState & { parkSeconds: number }> {
  const { o, config, client } = ctx;
  const t0 = performance.now();
  const journeyIds = Array.from({ length: o.hookJourneys }, (_, i) => `bh${ctx.runTag}${String(i).padStart(4, '0')}`);
  ctx.log(`webhook: starting ${journeyIds.length} journeys that will wait for their consultation...`);
  await pool(journeyIds, o.startConcurrency, (id) =>
    startJourney(client, config, gfeInput(config, CLINICS.hook.clinicId, id, 'Waiting')),
  );
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
  const bare = spawnTs('bare-server', 'bench/bare-server.ts', [], {
    logDir: ctx.logDir,
    env: { BARE_PORT: String(o.portBase + 1) },
  });
  await waitFor('the bare server', () => httpOk(`http://127.0.0.1:${o.portBase + 1}/healthz`), 60_000);
  return { journeyIds, targets, acked: 0, bare, parkSeconds };
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

/** Waits until the API's spool is empty; the seconds it took, or NaN if it was not empty in time (not fatal). */
async function drainSpool(ctx: Ctx, timeoutMs: number): Promise<number> {
  const t0 = performance.now();
  try {
    await waitFor(
      'the spool to drain',
      async () => {
        const h = await handOff(ctx.stack.apiUrl);
        return h.spoolDepth === 0;
      },
      timeoutMs,
      250,
    );
  } catch {
    ctx.log(`the spool was not empty after ${Math.round(timeoutMs / 1000)} s; going on`);
    return NaN;
  }
  return (performance.now() - t0) / 1000;
}

export async function webhookPhase(ctx: Ctx, hooks: HookState): Promise<WebhookResults> {
  const { o, stack } = ctx;
  const bareOrigin = `http://127.0.0.1:${o.portBase + 1}`;
  const up: WebhookLevel[] = [];
  let upAcked = 0;
  let upNot200 = 0;
  for (const rate of o.levels) {
    const drained = await drainSpool(ctx, 120_000);
    if (drained > 1) ctx.log(`webhook: the previous level's spooled callbacks took ${drained.toFixed(0)} s to drain`);
    const before = await handOff(stack.apiUrl);
    const cpu0 = await cpuShare(ctx);
    ctx.log(`webhook: ${rate}/s against the API (${o.warmupSeconds} s warm-up, ${o.levelSeconds} s measured)...`);
    const apiRun = await runLoad(
      spec(stack.apiUrl, hooks.targets, levels(ctx, rate, true)),
      ctx.workDir,
      ctx.logDir,
      120_000,
    );
    const after = await handOff(stack.apiUrl);
    const cpu = await cpu0();
    upAcked += acked(apiRun);
    upNot200 += not200(apiRun);
    ctx.log(`webhook: ${rate}/s against the bare Fastify route...`);
    const bareRun = await runLoad(
      spec(bareOrigin, hooks.targets, levels(ctx, rate, true, Math.min(2, o.warmupSeconds))),
      ctx.workDir,
      ctx.logDir,
      120_000,
    );
    const api = apiRun.find((r) => r.record)!;
    const bare = bareRun.find((r) => r.record)!;
    const h = diff(after, before);
    up.push({ rate, api, bare, handOff: h, cpu });
    ctx.log(
      `webhook: ${rate}/s  API p50 ${api.latencyMs.p50.toFixed(1)} p99 ${api.latencyMs.p99.toFixed(1)} p99.9 ${api.latencyMs.p999.toFixed(1)} ms` +
        ` (signalled ${h.signalled}, spooled ${h.spooled}; server-side p50 ${serverAckQuantile(h, 0.5)} p99 ${serverAckQuantile(h, 0.99)}; gen lag p99 ${api.sendLagMs.p99.toFixed(1)} ms; cpu ${fmtCpu(cpu)})  bare p50 ${bare.latencyMs.p50.toFixed(1)} p99 ${bare.latencyMs.p99.toFixed(1)} p99.9 ${bare.latencyMs.p999.toFixed(1)} ms`,
    );
  }
  hooks.acked += upAcked;
  return {
    journeys: hooks.journeyIds.length,
    parkSeconds: 0,
    connections: CONNECTIONS,
    up,
    upAcked,
    upNot200,
  };
}

/** Counts the callbacks every parked journey recorded (distinct deliveries), through the snapshot query. */
export async function recordedCallbacks(ctx: Ctx, journeyIds: string[]): Promise<number> {
  const counts = await pool(journeyIds, 16, async (id) => {
    const snap = await ctx.client.workflow.getHandle(journeyWorkflowId(id)).query(snapshotQuery);
    return new Set(snap.events.map((e) => e.deliveryId)).size;
  });
  return counts.reduce((a, b) => a + b, 0);
}

export async function outagePhase(ctx: Ctx, hooks: HookState): Promise<OutageResults> {
  const { o, stack } = ctx;
  const drained = await drainSpool(ctx, 120_000);
  if (drained > 1) ctx.log(`outage: the spooled callbacks of the runs before took ${drained.toFixed(0)} s to drain`);
  ctx.log('outage: stopping the Temporal dev server...');
  await stack.stopTemporal();
  await sleep(500);
  const down: WebhookLevel[] = [];
  let downAcked = 0;
  let downNot200 = 0;
  for (const rate of o.levels) {
    const before = await handOff(stack.apiUrl);
    const cpu0 = await cpuShare(ctx);
    ctx.log(`outage: ${rate}/s against the API while Temporal is down...`);
    // The API is warm from the runs before: a short warm-up keeps the spool (and the drain after it) smaller.
    const run = await runLoad(
      spec(stack.apiUrl, hooks.targets, levels(ctx, rate, true, Math.min(1, o.warmupSeconds))),
      ctx.workDir,
      ctx.logDir,
      120_000,
    );
    const after = await handOff(stack.apiUrl);
    const cpu = await cpu0();
    downAcked += acked(run);
    downNot200 += not200(run);
    const api = run.find((r) => r.record)!;
    const h = diff(after, before);
    down.push({ rate, api, handOff: h, cpu });
    ctx.log(
      `outage: ${rate}/s  API p50 ${api.latencyMs.p50.toFixed(1)} p99 ${api.latencyMs.p99.toFixed(1)} p99.9 ${api.latencyMs.p999.toFixed(1)} ms (spooled ${h.spooled}, spool depth ${h.spoolDepth}; server-side p50 ${serverAckQuantile(h, 0.5)} p99 ${serverAckQuantile(h, 0.99)}; cpu ${fmtCpu(cpu)})`,
    );
  }
  hooks.acked += downAcked;
  const beforeRestart = await handOff(stack.apiUrl);
  ctx.log(`outage: restarting the Temporal dev server (${beforeRestart.spoolDepth} callbacks spooled)...`);
  const restartMs = await stack.startTemporal();
  const drainCpu0 = await cpuShare(ctx);
  const drainSeconds = await drainSpool(ctx, Math.max(60_000, ctx.remainingMs() - 240_000));
  const drainCpu = await drainCpu0();
  const afterDrain = await handOff(stack.apiUrl);
  ctx.log(
    `outage: spool drained ${drainSeconds.toFixed(1)} s after the restart (${afterDrain.forwarded - beforeRestart.forwarded} forwarded; cpu ${fmtCpu(drainCpu)})`,
  );
  // Every 200 the API gave must have reached its journey: count what the journeys recorded.
  await waitFor('the API to be ready again', () => httpOk(`${stack.apiUrl}/readyz`), 60_000);
  const recorded = await recordedCallbacks(ctx, hooks.journeyIds);
  const missing = hooks.acked - recorded;
  ctx.log(
    `outage: the journeys recorded ${recorded} callbacks; the API acknowledged ${hooks.acked}: ${missing === 0 ? 'none missing' : `${missing} MISSING`}`,
  );
  return {
    down,
    downAcked,
    downNot200,
    restartMs,
    drainSeconds,
    drainCpu,
    spooledWhileDown: down.reduce((n, l) => n + l.handOff.spooled, 0),
    forwardedAfterRestart: afterDrain.forwarded - beforeRestart.forwarded,
    recordedByJourneys: recorded,
    ackedInTotal: hooks.acked,
    missing,
    perJourney: recorded / hooks.journeyIds.length,
  };
}

export async function stopBare(hooks: HookState | undefined): Promise<void> {
  if (hooks?.bare) await stopChild(hooks.bare);
}
