// 5. Sustained load: each steady rate held for minutes (not the webhook phase's seconds), Temporal up, on the journeys
// the webhook phase parks (prepareHooks: the same callbacks, each acknowledged delivery matched afterwards with the
// moment its journey applied it). For each inbox store (and each --forwarder-policies value: the API restarted with
// FORWARDER_POLICY=<value>), each rate in turn:
//
// - from an empty inbox and a quiet Temporal server and worker, the open-loop generator (bench/loadgen.ts) at the
//   rate for the whole duration (after the usual short warm-up at the same rate);
// - the inbox depth and the forwarder's count scraped from the API's /metrics every second, through the load and the
//   drain after it (until the inbox is empty, at most --sustained-drain-seconds);
// - each process's CPU over the load (/proc), the whole machine's busy share (/proc/stat).
//
// Apply lag per callback comes from the sweep at the end of the run (finalCheck: every journey's snapshot); the
// server's histogram (journey_api_callback_forward_delay_seconds) gives a bound beside it. The knee and the report:
// bench/lib/sustained-report.ts.
import path from 'node:path';
import { apiFigures, bucketBound, bucketMax, diff, fmtBoundSeconds, type ApiFigures } from '../lib/api-metrics';
import type { Ctx } from '../lib/context';
import type { AppliedSummary } from '../lib/deliveries';
import { overlappingStall, startDiskProbe, type ProbeWrite } from '../lib/disk-probe';
import { runLoad } from '../lib/load';
import { cpuBusySampler } from '../lib/machine';
import { sleep } from '../../scripts/lib/processes';
import type { InboxStore } from '../lib/stack';
import type { LevelResult, LoadSpec } from '../loadgen';
import { cpuShare, fmtCpu, keepDeliveries, waitInboxEmpty, waitQuiet, type HookState } from './webhook';

/** One scrape of the API during a run: seconds since the load began, callbacks waiting, signals sent so far. */
export interface DepthSample {
  t: number;
  depth: number;
  forwarded: number;
}

export interface SustainedRun {
  store: InboxStore;
  /** FORWARDER_POLICY the API ran with (absent: not set). */
  policy?: string;
  rate: number;
  /** Measured seconds at the rate (after warmupSeconds at the same rate, not in the ack figures). */
  seconds: number;
  warmupSeconds: number;
  /** The measured part, as the generator saw it (deliveries stripped). */
  ack: LevelResult;
  /** 200s and 503s the API counted over the whole load (warm-up included). */
  accepted: number;
  refused: number;
  /** From each 200 to its journey applying it (measured part; filled by the sweep at the end of the run). */
  applied?: AppliedSummary;
  /** The API's apply lag histogram over the load and the drain: bucket bounds, seconds. */
  serverLag: { p50?: number; p99?: number; max?: number };
  /** Every second from the load's start through the drain. */
  samples: DepthSample[];
  /** When the load stopped (seconds since it began: warm-up plus measured). */
  stopAt: number;
  depthAtStop: number;
  depthMax: number;
  /** Slope of a least-squares line through the depth over the load's last windowSeconds (callbacks/s). */
  growth: { perSecond: number; windowSeconds: number };
  /** From the load's stop to an empty inbox; NaN when it was not empty within drainLimitSeconds. */
  drainSeconds: number;
  drainLimitSeconds: number;
  /** Signals the forwarder sent per second during the load, and during the drain. */
  appliedRate: number;
  drainRate: number;
  /**
   * The slowest answers' side of the API over the load: its own answer time (request received to answered) and its
   * inbox writes at most (bucket bounds, ms), and its event loop's longest delay (ms). Absent in older results.
   */
  stalls?: { serverAckMaxMs?: number; writeMaxMs?: number; loopDelayMaxMs?: number };
  /**
   * The disk's own durable writes beside the load (bench/lib/disk-probe.ts: 1.5 KB O_DSYNC every 100 ms in the data
   * folder, timed in a thread of its own): their latency, and the slowest of them (wall-clock ms, ms; at most 200).
   * Absent in older results.
   */
  disk?: { writes: number; p50Ms: number; p99Ms: number; maxMs: number; slow: ProbeWrite[] };
  /**
   * Each answer of the measured part at or over SLOW_ANSWER_MS: ms since the load began, its latency, and the slowest
   * probe write that overlapped it (ms; absent: the disk was not slow then). At most 200. Absent in older results.
   */
  slowAnswers?: { t: number; ms: number; diskMs?: number }[];
  /**
   * Share of one core of each process over the load (api/<thread>: the API's threads; loadgen: the generator; bench:
   * this process, scraping /metrics).
   */
  cpu: Record<string, number>;
  /** The whole machine's busy share over the load (1 = every core busy). */
  machineBusy: number;
  /** Seconds waited before the run for the Temporal server and the worker to go quiet. */
  settleSeconds: number;
}

export interface SustainedResults {
  journeys: number;
  parkSeconds: number;
  connections: number;
  rates: number[];
  seconds: number;
  warmupSeconds: number;
  drainLimitSeconds: number;
  /** The --forwarder-policies values (empty: none given). */
  policies: string[];
  forwarderConcurrency: number;
  runs: SustainedRun[];
  /** Runs left out (the run's time limit). */
  skipped: string[];
}

const CONNECTIONS = 128;
/** The acknowledgement's max target (ms): each answer at or over it is kept with what the disk did at that moment. */
export const SLOW_ANSWER_MS = 100;
/** Slack around each run for the time budget: settling before, the generator's start, the API's restart. */
const RUN_OVERHEAD_MS = 45_000;

/** Scrapes the API's /metrics every `everyMs` until stopped (a failed scrape is skipped). */
function depthSampler(apiUrl: string, everyMs = 1_000) {
  const samples: { at: number; depth: number; forwarded: number; loopDelayMax: number }[] = [];
  let stopped = false;
  const done = (async () => {
    let next = performance.now();
    while (!stopped) {
      try {
        const f = await apiFigures(apiUrl);
        samples.push({ at: f.at, depth: f.inboxDepth, forwarded: f.forwarded, loopDelayMax: f.loopDelayMax });
      } catch {
        // a scrape that failed or timed out: a gap in the series
      }
      next += everyMs;
      while (next < performance.now()) next += everyMs;
      await sleep(next - performance.now());
    }
  })();
  return {
    samples,
    stop: async () => {
      stopped = true;
      await done;
    },
  };
}

const secondsToMs = (v: number | undefined) => (v === undefined ? undefined : v * 1000);

/** Least-squares slope of y over x (NaN with fewer than 2 points). */
export function slope(points: { x: number; y: number }[]): number {
  if (points.length < 2) return NaN;
  const mx = points.reduce((a, p) => a + p.x, 0) / points.length;
  const my = points.reduce((a, p) => a + p.y, 0) / points.length;
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.x - mx) * (p.y - my);
    den += (p.x - mx) ** 2;
  }
  return den > 0 ? num / den : NaN;
}

const fmt = (v: number | undefined, d = 1) => (v === undefined || !Number.isFinite(v) ? '–' : v.toFixed(d));

/** One rate: settle, load, drain. */
async function sustainedRun(
  ctx: Ctx,
  hooks: HookState,
  rate: number,
  policy: string | undefined,
): Promise<{ run: SustainedRun; deliveries: [string, number][] }> {
  const { o, stack } = ctx;
  const store = stack.apiStore;
  const drainLimitSeconds = o.sustainedDrainSeconds;
  const warmupSeconds = Math.min(2, o.warmupSeconds);
  const loadSeconds = warmupSeconds + o.sustainedSeconds;
  // Each rate from the same state: nothing left in the inbox, the journeys done applying the rate before.
  const left = await waitInboxEmpty(ctx, Math.max(30_000, drainLimitSeconds * 1000));
  if (left > 1) ctx.log(`sustained (${store}): the inbox took ${left.toFixed(0)} s more to empty`);
  const settleSeconds = await waitQuiet(ctx, 0.3, 30_000);
  const spec: LoadSpec = {
    origin: stack.apiUrl,
    targets: hooks.targets,
    levels: [
      ...(warmupSeconds > 0
        ? [{ name: `${rate}/s warm-up`, rate, durationMs: warmupSeconds * 1000, record: false }]
        : []),
      { name: `${rate}/s sustained`, rate, durationMs: o.sustainedSeconds * 1000, record: true },
    ],
    connections: CONNECTIONS,
    timeoutMs: 15_000,
    keepAlive: true,
    collect: true,
    slowMs: SLOW_ANSWER_MS,
  };
  ctx.log(
    `sustained (${store}${policy ? `, policy ${policy}` : ''}): ${rate}/s for ${o.sustainedSeconds} s (after ${warmupSeconds} s warm-up; ${settleSeconds.toFixed(0)} s to settle first)...`,
  );
  const probe = await startDiskProbe(path.join(stack.o.dataDir, 'disk-probe'));
  const sampler = depthSampler(stack.apiUrl);
  const f0 = await apiFigures(stack.apiUrl);
  const cpu0 = await cpuShare(ctx);
  const busy = cpuBusySampler();
  const own0 = process.cpuUsage();
  const tStart = performance.now();
  let runs: LevelResult[];
  try {
    runs = await runLoad(spec, ctx.workDir, ctx.logDir, (loadSeconds + 120) * 1000);
  } catch (err) {
    await sampler.stop();
    await probe.stop();
    throw err;
  }
  const diskProbe = await probe.stop();
  const cpu = await cpu0();
  const machineBusy = busy();
  const tStop = performance.now();
  const fStop = await apiFigures(stack.apiUrl);
  cpu.loadgen = (runs[0]?.generatorCpuSeconds ?? NaN) / ((tStop - tStart) / 1000);
  const own = process.cpuUsage(own0);
  cpu.bench = (own.user + own.system) / 1e6 / ((tStop - tStart) / 1000);
  // The drain: until the inbox is empty, at most the drain limit (and what the run's time limit leaves).
  const limitMs = Math.min(drainLimitSeconds * 1000, Math.max(10_000, ctx.remainingMs() - 60_000));
  let drainSeconds = NaN;
  let fEnd: ApiFigures = fStop;
  for (;;) {
    fEnd = await apiFigures(stack.apiUrl);
    if (fEnd.inboxDepth === 0) {
      drainSeconds = Math.max(0, (fEnd.at - tStop) / 1000);
      break;
    }
    if (fEnd.at - tStop >= limitMs) break;
    await sleep(250);
  }
  await sampler.stop();
  const deliveries = keepDeliveries(hooks, runs, hooks.targets);
  const ack = runs.find((r) => r.record)!;
  // The load began about loadSeconds before its last answer (the generator's own start-up comes before).
  const origin = tStop - loadSeconds * 1000;
  // The scrapes at the stop and at the end of the drain belong to the series too.
  const scraped = [
    ...sampler.samples,
    ...[fStop, fEnd].map((f) => ({ at: f.at, depth: f.inboxDepth, forwarded: f.forwarded })),
  ];
  const samples = scraped
    .sort((x, y) => x.at - y.at)
    .map((s) => ({ t: Math.round((s.at - origin) / 10) / 100, depth: s.depth, forwarded: s.forwarded }))
    .filter((s) => s.t >= -1);
  const windowSeconds = Math.min(60, o.sustainedSeconds);
  const growth = {
    perSecond: slope(
      samples
        .filter((s) => s.t >= loadSeconds - windowSeconds && s.t <= loadSeconds)
        .map((s) => ({ x: s.t, y: s.depth })),
    ),
    windowSeconds,
  };
  const whole = diff(fEnd, f0);
  // Where the slowest answers were made: the API's own answer time and its inbox writes over the load (histogram
  // bucket bounds), and the longest event-loop delay any scrape of the load saw.
  const load = diff(fStop, f0);
  const loopDelays = sampler.samples
    .filter((x) => x.at >= tStart && x.at <= tStop && Number.isFinite(x.loopDelayMax))
    .map((x) => x.loopDelayMax * 1000);
  const stalls = {
    serverAckMaxMs: secondsToMs(bucketMax(load.ack)),
    writeMaxMs: secondsToMs(bucketMax(load.write)),
    ...(loopDelays.length ? { loopDelayMaxMs: Math.max(...loopDelays) } : {}),
  };
  const run: SustainedRun = {
    store,
    ...(policy !== undefined ? { policy } : {}),
    rate,
    seconds: o.sustainedSeconds,
    warmupSeconds,
    ack,
    accepted: fStop.accepted - f0.accepted,
    refused: fStop.refused - f0.refused,
    serverLag: {
      p50: bucketBound(whole.forwardDelay, 0.5),
      p99: bucketBound(whole.forwardDelay, 0.99),
      max: bucketMax(whole.forwardDelay),
    },
    samples,
    stopAt: loadSeconds,
    depthAtStop: fStop.inboxDepth,
    depthMax: Math.max(fStop.inboxDepth, ...samples.map((s) => s.depth)),
    growth,
    drainSeconds,
    drainLimitSeconds,
    appliedRate: (fStop.forwarded - f0.forwarded) / loadSeconds,
    drainRate: drainSeconds > 0 ? (fEnd.forwarded - fStop.forwarded) / drainSeconds : NaN,
    cpu,
    machineBusy,
    settleSeconds,
    stalls,
    disk: {
      writes: diskProbe.writes,
      p50Ms: diskProbe.p50Ms,
      p99Ms: diskProbe.p99Ms,
      maxMs: diskProbe.maxMs,
      slow: [...diskProbe.slow].sort((x, y) => y[1] - x[1]).slice(0, 200),
    },
    slowAnswers: (ack.slow ?? []).slice(0, 200).map(([due, ms]) => {
      const stall = overlappingStall(diskProbe, due, ms);
      return {
        t: Math.round((due - (performance.timeOrigin + origin)) / 10) / 100,
        ms,
        ...(stall ? { diskMs: stall[1] } : {}),
      };
    }),
  };
  const a = ack.latencyMs;
  ctx.log(
    `sustained (${store}${policy ? `, policy ${policy}` : ''}): ${rate}/s ack p50 ${fmt(a.p50)} p99 ${fmt(a.p99)} p99.9 ${fmt(a.p999)} max ${fmt(a.max)} ms ` +
      `(${ack.ok}/${ack.scheduled} 200, ${ack.non2xx} other, ${ack.errors} errors); apply lag (server) p99 ${fmtBoundSeconds(run.serverLag.p99)}; ` +
      `inbox ${run.depthAtStop} at the stop, max ${run.depthMax}, ${fmt(growth.perSecond)}/s over the last ${windowSeconds} s; ` +
      `${Number.isFinite(drainSeconds) ? `empty ${drainSeconds.toFixed(1)} s after` : `not empty after ${(limitMs / 1000).toFixed(0)} s`}; ` +
      `forwarder ${run.appliedRate.toFixed(0)}/s during the load, ${fmt(run.drainRate, 0)}/s draining; ` +
      `machine ${(machineBusy * 100).toFixed(0)} % busy; disk's own writes p99 ${fmt(diskProbe.p99Ms)} max ${fmt(diskProbe.maxMs)} ms; ` +
      `${run.slowAnswers?.length ?? 0} answers ≥ ${SLOW_ANSWER_MS} ms (${run.slowAnswers?.filter((x) => x.diskMs !== undefined).length ?? 0} while the disk stalled); cpu ${fmtCpu(Object.fromEntries(Object.entries(cpu).filter(([k]) => !k.startsWith('api/') || k === 'api/main')))}`,
  );
  return { run, deliveries };
}

/** Every store, policy and rate; runs are added to `into` as they finish (a failure keeps the ones before it). */
export async function sustainedPhase(ctx: Ctx, hooks: HookState, into: SustainedResults): Promise<void> {
  const { o, stack } = ctx;
  const policies: (string | undefined)[] = o.forwarderPolicies.length ? o.forwarderPolicies : [undefined];
  const perRunMs = (Math.min(2, o.warmupSeconds) + o.sustainedSeconds + o.sustainedDrainSeconds) * 1000;
  for (const store of o.stores) {
    if (store === 'postgres' && !stack.postgres) {
      into.skipped.push(`${store}: PostgreSQL did not start`);
      continue;
    }
    for (const policy of policies) {
      const label = `${store}${policy !== undefined ? `, policy ${policy}` : ''}`;
      const env: Record<string, string> = policy !== undefined ? { FORWARDER_POLICY: policy } : {};
      const sameEnv = JSON.stringify(stack.apiEnv) === JSON.stringify(env);
      if (stack.apiStore !== store || !stack.api?.running || !sameEnv) {
        ctx.log(
          `sustained: the API restarted on the ${store} inbox${policy !== undefined ? ` with FORWARDER_POLICY=${policy}` : ''}`,
        );
        await stack.restartApi(store, env);
      }
      for (const rate of o.sustainedRates) {
        if (ctx.remainingMs() < perRunMs + RUN_OVERHEAD_MS) {
          const why = `${label} ${rate}/s: not run (${Math.round(ctx.remainingMs() / 1000)} s left before the run's time limit)`;
          ctx.log(`sustained: ${why}`);
          into.skipped.push(why);
          continue;
        }
        const { run, deliveries } = await sustainedRun(ctx, hooks, rate, policy);
        into.runs.push(run);
        hooks.pending.push({ target: run, deliveries });
      }
    }
  }
}
