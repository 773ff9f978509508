// 3. Waiting journeys. Many GFE journeys started straight through the Temporal client (a valid JourneyInput, as the
// API would start it) against the sandbox, whose provider never acts for a test patient without an outcome keyword,
// so each parks in awaiting_consultation. The worker's RSS (VmRSS of its pid) is sampled while they park, and then
// every one is woken by its event 1 (Approved, its own patient exam) POSTed to the webhook, as the service would:
// first the journeys still in the worker's sticky cache (the most recently parked), then the evicted ones, which
// the worker must replay from their history first.
import { apiFigures, diff, type ApiFigures } from '../lib/api-metrics';
import type { Ctx } from '../lib/context';
import { countWorkflows, gfeInput, pool, postEvent1s, startJourney, waitForCount } from '../lib/journeys';
import { heapLimitIn, memoryGroupStats, rssBytes, sleep } from '../../scripts/lib/processes';
import { CLINICS } from '../lib/stack';
import { journeyWorkflowId, snapshotQuery } from '../../src/contract/definitions';
import { cpuShare, fmtCpu } from './webhook';
import { summarize, type Summary } from '../lib/stats';

export interface WakeRun {
  label: string;
  n: number;
  completed: number;
  seconds: number;
  perSecond: number;
  ackMs: Summary;
  not200: number;
  /** The API's counters over the wake (accepted, forwarded...). */
  figures: ApiFigures;
}

export interface WaitingResults {
  n: number;
  cacheSize: number;
  concurrency: number;
  parked: number;
  startSeconds: number;
  parkSeconds: number;
  parkPerSecond: number;
  rssIdle: number;
  rssParked: number;
  rssPeak: number;
  samples: { t: number; parked: number; rss: number }[];
  cacheAb: CacheAb[];
  wake: WakeRun[];
  wakeSeconds: number;
  wakePerSecond: number;
  rssAfterWake: number;
  /**
   * The worker's memory cgroup (--worker-memory-mib), as the kernel counted it over the phase (every worker started
   * in it: the parking one, the cache A/B's, the waking one): its limit, the heap limit Node.js sized to it, the peak
   * charged (page cache included), how often the limit was hit and the processes killed for it.
   */
  memoryLimit?: {
    limitMiB: number;
    heapLimitMiB?: number;
    maxUsageBytes: number;
    limitHits: number;
    oomKills?: number;
    /** The same, once all were parked (the parking worker alone). */
    atParked?: { maxUsageBytes: number; limitHits: number; oomKills?: number };
  };
  note?: string;
}

/** The cache sizes compared: the default and twice it (the default comes last: it wakes the journeys). */
const CACHE_AB_SIZES = (defaultSize: number) => [defaultSize * 2, defaultSize];
/** Time the cache A/B needs (two worker starts, the queries). */
const CACHE_AB_RESERVE_MS = 80_000;

export interface CacheAb {
  cacheSize: number;
  isDefault: boolean;
  /** Parked journeys queried back into the fresh worker's cache. */
  touched: number;
  rssFresh: number;
  rssAfter: number;
  /** Queries per second (each a replay of an evicted journey's history). */
  perSecond: number;
}

/** Journeys started ahead of those parked, at most. */
const WINDOW = 600;

interface SandboxExam {
  patient_exam_id: number;
  webhook_url: string | null;
}

async function wake(
  ctx: Ctx,
  label: string,
  items: { journeyId: string; patientExamId: number }[],
  completedBefore: number,
): Promise<WakeRun> {
  const { stack, client, config } = ctx;
  const before = await apiFigures(stack.apiUrl);
  const t0 = performance.now();
  ctx.log(`waiting: waking ${items.length} journeys (${label}) with their event 1 through the webhook...`);
  const { acks, not200 } = await postEvent1s(stack.apiUrl, config.api.webhookSecret, items, 32);
  const query = `ClinicId = '${CLINICS.waiting.clinicId}' AND ExecutionStatus = 'Completed'`;
  let completed = completedBefore;
  try {
    completed = await waitForCount(
      client,
      query,
      completedBefore + items.length,
      Math.max(30_000, ctx.remainingMs() - 60_000),
      undefined,
      500,
    );
  } catch (err) {
    ctx.log(`waiting: ${err instanceof Error ? err.message : String(err)}`);
    completed = await countWorkflows(client, query).catch(() => completed);
  }
  const seconds = (performance.now() - t0) / 1000;
  const done = completed - completedBefore;
  const run: WakeRun = {
    label,
    n: items.length,
    completed: done,
    seconds,
    perSecond: done / seconds,
    ackMs: summarize(acks),
    not200,
    figures: diff(await apiFigures(stack.apiUrl), before),
  };
  ctx.log(
    `waiting: ${label}: ${done}/${items.length} completed in ${seconds.toFixed(1)} s = ${run.perSecond.toFixed(1)}/s (webhook ack p50 ${run.ackMs.p50.toFixed(1)} p99 ${run.ackMs.p99.toFixed(1)} ms)`,
  );
  return run;
}

export async function waitingPhase(ctx: Ctx): Promise<WaitingResults> {
  const { o, stack, client, config } = ctx;
  const cacheSize = config.worker.maxCachedWorkflows;
  // A fresh worker: its RSS and sticky cache hold nothing from the earlier phases.
  await stack.stopWorker();
  let worker = await stack.startWorker({}, 'worker-waiting');
  const rssIdle = (await rssBytes(worker.pid)) ?? NaN;
  const n = o.waitingJourneys;
  const ids = Array.from({ length: n }, (_, i) => `bw${ctx.runTag}${String(i).padStart(6, '0')}`);
  const parkedQuery = `ClinicId = '${CLINICS.waiting.clinicId}' AND JourneyStage = 'awaiting_consultation'`;
  const samples: WaitingResults['samples'] = [];
  const t0 = performance.now();
  let parked = 0;
  let rssPeak = rssIdle;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const rss = await rssBytes(worker.pid);
      if (rss !== undefined) rssPeak = Math.max(rssPeak, rss);
      parked = await countWorkflows(client, parkedQuery).catch(() => parked);
      samples.push({ t: (performance.now() - t0) / 1000, parked, rss: rss ?? NaN });
      await new Promise((r) => setTimeout(r, 3_000));
    }
  })();
  ctx.log(`waiting: starting ${n} journeys through the Temporal client (${o.startConcurrency} at a time)...`);
  let started = 0;
  let lastLog = performance.now();
  let cpu = await cpuShare(ctx);
  const progress = async () => {
    if (performance.now() - lastLog < 10_000) return;
    lastLog = performance.now();
    const share = await cpu();
    cpu = await cpuShare(ctx);
    ctx.log(
      `waiting: ${started} started, ${parked} parked, worker RSS ${(((await rssBytes(worker.pid)) ?? 0) / 2 ** 20).toFixed(0)} MiB; cpu ${fmtCpu(share)}`,
    );
  };
  // Starts run at most WINDOW ahead of the parked count, and stop at the parking deadline: what is started is then
  // (nearly) all parked when the wake begins, and the wake has its share of the time left.
  // Waking an evicted journey (a replay first) took about as long as parking one: half the time for each.
  const parkBudgetMs = Math.max(60_000, (ctx.remainingMs() - 45_000 - CACHE_AB_RESERVE_MS) * 0.48);
  const parkDeadline = performance.now() + parkBudgetMs;
  let skipped = 0;
  await pool(ids, o.startConcurrency, async (id) => {
    while (started - parked > WINDOW && performance.now() < parkDeadline) await sleep(250);
    if (performance.now() >= parkDeadline) {
      skipped++;
      return;
    }
    await startJourney(client, config, gfeInput(config, CLINICS.waiting.clinicId, id, 'Waiting'));
    started++;
    await progress();
  });
  const startSeconds = (performance.now() - t0) / 1000;
  if (skipped > 0) ctx.log(`waiting: the time is up: ${started} of ${n} journeys started`);
  ctx.log(`waiting: all ${n} started in ${startSeconds.toFixed(1)} s; waiting until every one is parked...`);
  let note: string | undefined;
  if (skipped > 0) {
    note = `only ${started.toLocaleString('en')} of ${n.toLocaleString('en')} journeys could be started and parked in the ${Math.round(parkBudgetMs / 1000)} s this phase had`;
  }
  try {
    parked = await waitForCount(
      client,
      parkedQuery,
      started,
      Math.max(30_000, parkDeadline + 60_000 - performance.now()),
      () => void progress(),
      2_000,
    );
  } catch (err) {
    note = `not every started journey parked in time: ${err instanceof Error ? err.message : String(err)}`;
    ctx.log(`waiting: ${note}`);
    parked = await countWorkflows(client, parkedQuery).catch(() => parked);
  }
  const parkSeconds = (performance.now() - t0) / 1000;
  // Let the last workflow tasks settle, then read the RSS of the parked state.
  await new Promise((r) => setTimeout(r, 3_000));
  const rssParked = (await rssBytes(worker.pid)) ?? NaN;
  sampling = false;
  await sampler;
  samples.push({ t: (performance.now() - t0) / 1000, parked, rss: rssParked });
  const memoryGroup = o.workerMemoryGroup;
  const atParked = memoryGroup ? memoryGroupStats(memoryGroup) : undefined;
  ctx.log(
    `waiting: ${parked} parked in ${parkSeconds.toFixed(1)} s (${(parked / parkSeconds).toFixed(1)}/s); worker RSS ${(rssParked / 2 ** 20).toFixed(0)} MiB (idle ${(rssIdle / 2 ** 20).toFixed(0)} MiB, peak ${(rssPeak / 2 ** 20).toFixed(0)} MiB)`,
  );

  // Each journey's own patient exam, from the sandbox (its webhook URL names the journey).
  const res = await fetch(`${stack.sandboxUrl}/_sandbox/patient-exams?status=pending`, {
    signal: AbortSignal.timeout(60_000),
  });
  const exams = ((await res.json()) as { patient_exams: SandboxExam[] }).patient_exams;
  const examOf = new Map<string, number>();
  for (const e of exams) {
    const m = /\/webhooks\/exam-service\/([^/]+)\//.exec(e.webhook_url ?? '');
    if (m?.[1]?.startsWith(`bw${ctx.runTag}`)) examOf.set(decodeURIComponent(m[1]), e.patient_exam_id);
  }
  const items = ids.flatMap((journeyId) => {
    const patientExamId = examOf.get(journeyId);
    return patientExamId === undefined ? [] : [{ journeyId, patientExamId }];
  });
  // The sticky cache's size, A/B: a fresh worker with each size gets the most recently parked journeys put back into
  // its cache by a snapshot query each (a replay), and its RSS is read; the default comes last and wakes them all.
  const cacheAb: CacheAb[] = [];
  const touch = items.slice(-Math.min(items.length, Math.max(...CACHE_AB_SIZES(cacheSize)) + 500));
  for (const size of CACHE_AB_SIZES(cacheSize)) {
    await stack.stopWorker();
    worker = await stack.startWorker(
      size === cacheSize ? {} : { WORKER_MAX_CACHED_WORKFLOWS: String(size) },
      `worker-cache-${size}`,
    );
    const rssFresh = (await rssBytes(worker.pid)) ?? NaN;
    const t = performance.now();
    await pool(touch, 16, (it) =>
      client.workflow
        .getHandle(journeyWorkflowId(it.journeyId))
        .query(snapshotQuery)
        .catch(() => undefined),
    );
    const seconds = (performance.now() - t) / 1000;
    await sleep(2_000);
    const rssAfter = (await rssBytes(worker.pid)) ?? NaN;
    cacheAb.push({
      cacheSize: size,
      isDefault: size === cacheSize,
      touched: touch.length,
      rssFresh,
      rssAfter,
      perSecond: touch.length / seconds,
    });
    ctx.log(
      `waiting: cache ${size}${size === cacheSize ? ' (default)' : ''}: ${touch.length} journeys queried back into a fresh worker at ${(touch.length / seconds).toFixed(0)}/s; RSS ${(rssFresh / 2 ** 20).toFixed(0)} -> ${(rssAfter / 2 ** 20).toFixed(0)} MiB`,
    );
  }

  // The most recently parked ones are still in the sticky cache (LRU); those parked before the last cacheSize were
  // evicted. Woken in three groups: surely cached, surely evicted, and the band in between.
  const warmCount = Math.min(Math.floor(cacheSize * 0.75), items.length);
  const coldCount = Math.max(0, items.length - cacheSize);
  const groups: { label: string; items: typeof items }[] = [
    { label: `${warmCount} most recently parked (in the sticky cache)`, items: items.slice(items.length - warmCount) },
    { label: `${coldCount} parked first (evicted: replayed from history)`, items: items.slice(0, coldCount) },
    { label: 'the rest (at the edge of the cache)', items: items.slice(coldCount, items.length - warmCount) },
  ].filter((g) => g.items.length > 0);
  const completedBefore = await countWorkflows(
    client,
    `ClinicId = '${CLINICS.waiting.clinicId}' AND ExecutionStatus = 'Completed'`,
  );
  const tw = performance.now();
  const wakeRuns: WakeRun[] = [];
  let rssWakePeak = rssParked;
  const wakeSampler = setInterval(() => {
    void rssBytes(worker.pid).then((r) => {
      if (r !== undefined) rssWakePeak = Math.max(rssWakePeak, r);
    });
  }, 1_000);
  try {
    let completed = completedBefore;
    for (const g of groups) {
      const run = await wake(ctx, g.label, g.items, completed);
      completed += run.completed;
      wakeRuns.push(run);
    }
  } finally {
    clearInterval(wakeSampler);
  }
  const wakeSeconds = (performance.now() - tw) / 1000;
  const woken = wakeRuns.reduce((a, r) => a + r.completed, 0);
  return {
    n,
    cacheSize,
    concurrency: o.startConcurrency,
    parked,
    startSeconds,
    parkSeconds,
    parkPerSecond: parked / parkSeconds,
    rssIdle,
    rssParked,
    rssPeak: Math.max(rssPeak, rssWakePeak),
    samples,
    cacheAb,
    wake: wakeRuns,
    wakeSeconds,
    wakePerSecond: woken / wakeSeconds,
    rssAfterWake: (await rssBytes(worker.pid)) ?? NaN,
    ...(memoryGroup ? { memoryLimit: memoryLimitFigures(o.workerMemoryMiB, memoryGroup, atParked) } : {}),
    ...(note ? { note } : {}),
  };
}

/** What the worker's memory cgroup counted, with the heap limit Node.js takes in it. */
function memoryLimitFigures(
  limitMiB: number,
  group: string,
  atParked: ReturnType<typeof memoryGroupStats>,
): NonNullable<WaitingResults['memoryLimit']> {
  const end = memoryGroupStats(group) ?? { maxUsageBytes: NaN, limitHits: NaN };
  const heap = heapLimitIn(group);
  return {
    limitMiB,
    ...(heap !== undefined ? { heapLimitMiB: heap / 2 ** 20 } : {}),
    ...end,
    ...(atParked ? { atParked } : {}),
  };
}
