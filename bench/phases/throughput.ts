// 2. Journey throughput. GFE journeys started through the clinic API (POST /v1/journeys with an Idempotency-Key),
// each completed by the sandbox's simulated provider calling event 1 back through the webhook; against, in the same
// run, the raw ceiling of this Temporal server: a workflow with the same two activities, timer and signal, no HTTP,
// on its own worker and task queue (bench/raw-workflows.ts).
import { Client, Connection } from '@temporalio/client';
import type { Ctx } from '../lib/context';
import { profiled } from '../lib/cpu-profiles';
import { countWorkflows, listWorkflows, pool, startThroughApi } from '../lib/journeys';
import { cpuSeconds, ManagedProcess, outputProbe, tsx } from '../../scripts/lib/processes';
import { CLINICS } from '../lib/stack';
import { summarize, type Summary } from '../lib/stats';
import { cpuShareSampler } from '../lib/machine';
import { RAW_TASK_QUEUE } from '../raw-workflows';
import { SearchAttr } from '../../src/contract/definitions';
import { waitQuiet } from './webhook';

export interface ThroughputRun {
  label: string;
  n: number;
  completed: number;
  /** First start request to last completion. */
  wallSeconds: number;
  perSecond: number;
  /** Start request to the workflow's close. */
  timeToCompleteMs: Summary;
  /** The start call alone (HTTP to the API, or the client's gRPC start). */
  startMs: Summary;
  startErrors: number;
  /**
   * CPU seconds per completed journey of each process over the run (from the first start to the last close): where
   * the work went. `worker` is the raw worker in the raw run.
   */
  cpuPerJourney?: Record<string, number>;
  /** Each run's journeys per second, in the order they ran, when this row pools several runs. */
  runsPerSecond?: number[];
  /** The share of the machine's CPU the hypervisor took (steal) over the run; absent in older results. */
  steal?: number;
  /** Each run's steal, as runsPerSecond. */
  runsSteal?: number[];
  /** The runs' samples, while they are pooled (not kept in the results). */
  samples?: { ttc: number[]; start: number[] };
}

export interface ThroughputResults {
  providerDelayMs: number;
  concurrency: number;
  gfe: ThroughputRun;
  raw: ThroughputRun;
  ratio: number;
  /**
   * The raw shape telling Temporal what a journey tells it (search attributes at the start and at each stage, the
   * invite's heartbeat; bench/raw-workflows.ts `visible`), and the journeys against it. Absent in older results.
   */
  rawVisible?: ThroughputRun;
  ratioVisible?: number;
  /**
   * The order the runs went in: each kind runs `rounds` times, the second round in the mirror order of the first, so a
   * drift of the server over the phase (its store growing) weighs on the ceiling and the journeys alike. Absent in
   * older results (one run of each).
   */
  order?: string[];
}

/**
 * CPU seconds of each process now: the stack's, the raw worker's as `worker` when it runs, and the bench's own as
 * `bench` (the load: the starts, a clinic's requests or the raw client's, and the counts it polls), which shares the
 * machine's cores with them.
 */
async function cpuNow(ctx: Ctx, rawWorker?: ManagedProcess): Promise<Record<string, number>> {
  const own = process.cpuUsage();
  const all: Record<string, number> = { ...(await ctx.stack.cpu()), bench: (own.user + own.system) / 1e6 };
  if (!rawWorker) return all;
  const { worker: _engineWorker, ...rest } = all;
  const raw = await cpuSeconds(rawWorker.pid);
  return raw === undefined ? rest : { ...rest, worker: raw };
}

function perJourney(before: Record<string, number>, after: Record<string, number>, n: number) {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) if (before[k] !== undefined && n > 0) out[k] = (v - before[k]) / n;
  return out;
}

function measure(
  label: string,
  sends: { id: string; sentAt: number; startMs: number; ok: boolean }[],
  closed: Map<string, number>,
): ThroughputRun {
  const ttc: number[] = [];
  let last = 0;
  for (const s of sends) {
    const c = closed.get(s.id);
    if (c === undefined) continue;
    ttc.push(c - s.sentAt);
    last = Math.max(last, c);
  }
  const first = Math.min(...sends.map((s) => s.sentAt));
  // None completed (a run cut short by the hard limit): no time to speak of, not a negative one.
  const wallSeconds = ttc.length > 0 ? (last - first) / 1000 : 0;
  const start = sends.map((s) => s.startMs);
  return {
    label,
    n: sends.length,
    completed: ttc.length,
    wallSeconds,
    perSecond: wallSeconds > 0 ? ttc.length / wallSeconds : 0,
    timeToCompleteMs: summarize(ttc),
    startMs: summarize(start),
    startErrors: sends.filter((s) => !s.ok).length,
    samples: { ttc, start },
  };
}

/**
 * Runs of one kind as one row: journeys per second over their summed wall time, the latencies of all their journeys,
 * CPU per journey weighted by the journeys each completed, and each run's own rate.
 */
export function pooled(runs: ThroughputRun[]): ThroughputRun {
  const completed = runs.reduce((a, r) => a + r.completed, 0);
  const wallSeconds = runs.reduce((a, r) => a + r.wallSeconds, 0);
  const cpu: Record<string, number> = {};
  for (const r of runs) {
    for (const [k, v] of Object.entries(r.cpuPerJourney ?? {})) cpu[k] = (cpu[k] ?? 0) + (v * r.completed) / completed;
  }
  const ttc = runs.flatMap((r) => r.samples?.ttc ?? []);
  const start = runs.flatMap((r) => r.samples?.start ?? []);
  return {
    label: runs[0]!.label,
    n: runs.reduce((a, r) => a + r.n, 0),
    completed,
    wallSeconds,
    perSecond: wallSeconds > 0 ? completed / wallSeconds : 0,
    timeToCompleteMs: ttc.length > 0 ? summarize(ttc) : runs[0]!.timeToCompleteMs,
    startMs: start.length > 0 ? summarize(start) : runs[0]!.startMs,
    startErrors: runs.reduce((a, r) => a + r.startErrors, 0),
    ...(Object.keys(cpu).length > 0 ? { cpuPerJourney: cpu } : {}),
    ...(runs.length > 1 ? { runsPerSecond: runs.map((r) => r.perSecond) } : {}),
    ...(runs.length > 1 && runs.every((r) => r.steal !== undefined) ? { runsSteal: runs.map((r) => r.steal!) } : {}),
  };
}

/**
 * Waits (up to 30 s) for the Temporal server and the worker to go quiet (under 30 % of a core together) before a run:
 * a run's workflows are closed before the server is done with them (their visibility records, their deletion's
 * tasks), and a run started at once paid for the one before it. Answers how long it took, for the log.
 */
async function settle(ctx: Ctx): Promise<string> {
  const seconds = await waitQuiet(ctx, 0.3, 30_000);
  return `${seconds.toFixed(0)} s for the server and worker to go quiet`;
}

/** POST /v1/journeys for a GFE journey whose test patient the sandbox's provider approves. */
async function startViaApi(ctx: Ctx, token: string, key: string) {
  const sentAt = Date.now();
  const r = await startThroughApi(ctx.stack.apiUrl, token, key, 'Approve');
  return { id: `journey-${r.journeyId ?? key}`, sentAt, startMs: r.startMs, ok: r.status === 201 };
}

export async function gfeThroughput(ctx: Ctx, n: number, tag: string): Promise<ThroughputRun> {
  const { o, client } = ctx;
  const clinic = CLINICS.throughput;
  // Warm-up (not measured, another clinic), waited for until each has completed: the API's start route compiles its
  // schemas on first use, and the API's and the worker's code is compiled by the JIT over the first journeys (with
  // five, the first run went at three quarters of the second's rate).
  const warmSince = new Date();
  const warm = await pool(
    Array.from({ length: Math.min(30, n) }, (_, i) => i),
    10,
    (i) => startViaApi(ctx, CLINICS.hook.token, `warm-${ctx.runTag}-${tag}-${i}`),
  );
  await waitForClosed(
    ctx,
    client,
    `ClinicId = '${CLINICS.hook.clinicId}' AND ExecutionStatus != 'Running'`,
    warm.filter((x) => x.ok).map((x) => x.id),
    warmSince,
  );
  const idempotencyKeys = Array.from({ length: n }, (_, i) => `tput-${ctx.runTag}-${tag}-${i}`);
  const settled = await settle(ctx);
  ctx.log(
    `throughput: starting ${n} GFE journeys through the API (${o.startConcurrency} at a time; after ${settled})...`,
  );
  const cpu0 = await cpuNow(ctx);
  const shares = cpuShareSampler();
  const since = new Date();
  // With BENCH_API_CPU_PROFILE=1, the API's CPU profile over the run (its starts, callbacks and signals).
  const { sends, closed } = await profiled(ctx, `throughput-gfe-${tag}`, async () => {
    const sends = await pool(idempotencyKeys, o.startConcurrency, (key) => startViaApi(ctx, clinic.token, key));
    const okCount = sends.filter((s) => s.ok).length;
    ctx.log(`throughput: ${okCount} started; waiting for them to complete...`);
    const closed = await waitForClosed(
      ctx,
      client,
      `ClinicId = '${clinic.clinicId}'`,
      sends.filter((x) => x.ok).map((x) => x.id),
      since,
    );
    return { sends, closed };
  });
  const cpuPerJourney = perJourney(cpu0, await cpuNow(ctx), closed.size);
  const { steal } = shares();
  return { ...measure('GFE journeys (API, sandbox callbacks)', sends, closed), cpuPerJourney, steal };
}

export async function rawThroughput(
  ctx: Ctx,
  n: number,
  tag: string,
  label: string,
  { address = ctx.stack.temporalAddress, visible = false }: { address?: string; visible?: boolean } = {},
): Promise<ThroughputRun> {
  const { o } = ctx;
  const worker = await startRawWorker(ctx, tag, address);
  const connection = await Connection.connect({ address });
  const raw = new Client({ connection });
  try {
    // Warm-up (not measured): the worker's first workflow tasks load its bundle.
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        raw.workflow.execute('rawJourney', {
          workflowId: `raw-${ctx.runTag}-${tag}-warm-${i}`,
          taskQueue: RAW_TASK_QUEUE,
          args: [{ delayMs: 10 }],
        }),
      ),
    );
    const ids = Array.from({ length: n }, (_, i) => `raw-${ctx.runTag}-${tag}-${i}`);
    const settled = await settle(ctx);
    ctx.log(`throughput: starting ${n} raw workflows (${label}; after ${settled})...`);
    const cpu0 = await cpuNow(ctx, worker);
    const shares = cpuShareSampler();
    const since = new Date();
    const sends = await pool(ids, o.startConcurrency, async (id) => {
      const sentAt = Date.now();
      const t = performance.now();
      let ok = true;
      await raw.workflow
        .start('rawJourney', {
          workflowId: id,
          taskQueue: RAW_TASK_QUEUE,
          args: [{ delayMs: o.providerDelayMs, visible }],
          // What the API's start carries.
          ...(visible
            ? {
                typedSearchAttributes: [
                  { key: SearchAttr.ClinicId, value: CLINICS.throughput.clinicId },
                  { key: SearchAttr.Scenario, value: 'gfe' },
                  { key: SearchAttr.JourneyStage, value: 'validating' },
                  { key: SearchAttr.NeedsAttention, value: false },
                ],
              }
            : {}),
        })
        .catch(() => (ok = false));
      return { id, sentAt, startMs: performance.now() - t, ok };
    });
    const closed = await waitForClosed(
      ctx,
      raw,
      `WorkflowType = 'rawJourney'`,
      sends.filter((x) => x.ok).map((x) => x.id),
      since,
    );
    const cpuPerJourney = perJourney(cpu0, await cpuNow(ctx, worker), closed.size);
    const { steal } = shares();
    return { ...measure(label, sends, closed), cpuPerJourney, steal };
  } finally {
    await connection.close();
    await worker.stop(30_000);
  }
}

/**
 * Waits until every one of these workflows has closed (or the time is up); the close time of each that completed.
 * While they run it polls the count of the run's own workflows still running (started since `since`), which the
 * server answers from an index without reading them; the list, with the close times, is read once none runs (again
 * if it does not show them all yet: visibility lags). A list every second of every workflow the query matched
 * (earlier runs' too) cost the server more with each run, counted against the run's workflows, and most against the
 * raw kinds, whose query matched every raw run. Only our own ids are kept: the query may match warm-ups.
 */
async function waitForClosed(
  ctx: Ctx,
  client: Client,
  query: string,
  ids: string[],
  since?: Date,
): Promise<Map<string, number>> {
  const want = new Set(ids);
  const scoped = since ? `(${query}) AND StartTime >= '${since.toISOString()}'` : query;
  const until = Date.now() + Math.min(300_000, ctx.remainingMs());
  for (;;) {
    const running = await countWorkflows(client, `(${scoped}) AND ExecutionStatus = 'Running'`).catch(() => undefined);
    const late = Date.now() > until;
    if (running === 0 || late) {
      const closed = new Map<string, number>();
      let open = 0;
      let listed = 0;
      for (const w of await listWorkflows(client, scoped).catch(() => [])) {
        if (!want.has(w.workflowId)) continue;
        listed++;
        if (!w.closeTime) open++;
        else if (w.status === 'COMPLETED') closed.set(w.workflowId, w.closeTime.getTime());
      }
      if ((open === 0 && listed >= want.size) || late) {
        if (open > 0 || listed < want.size)
          ctx.log(`throughput: ${want.size - closed.size} of ${want.size} not completed in time`);
        return closed;
      }
    }
    await new Promise((r) => setTimeout(r, 1_000));
  }
}

function startRawWorker(ctx: Ctx, tag: string, address: string): Promise<ManagedProcess> {
  // The journeys' worker's CPU weight: the raw ceiling is measured on the same terms as the journeys.
  return new ManagedProcess({
    name: `raw-worker-${tag}`,
    ...tsx('bench/raw-worker.ts'),
    logDir: ctx.logDir,
    env: { TEMPORAL_ADDRESS: address },
    nice: ctx.o.backgroundNice,
    cpuGroup: ctx.o.backgroundGroup,
    ready: outputProbe('raw worker polling'),
  }).up();
}

/** `; the hypervisor took 0.4 % of the CPU` for a run whose steal was measured. */
function fmtSteal(r: ThroughputRun): string {
  return r.steal === undefined ? '' : `; the hypervisor took ${(r.steal * 100).toFixed(1)} % of the CPU`;
}

/** `temporal 31 ms, worker 12 ms, ...` (CPU milliseconds per journey, largest first). */
export function fmtCpuPerJourney(cpu: Record<string, number> | undefined): string {
  if (!cpu) return '–';
  return Object.entries(cpu)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${(v * 1000).toFixed(1)} ms`)
    .join(', ');
}

export async function throughputPhase(ctx: Ctx): Promise<ThroughputResults> {
  const n = ctx.o.throughputJourneys;
  const rounds = Math.max(1, ctx.o.throughputRounds ?? 2);
  type Kind = 'raw' | 'visible' | 'gfe';
  const runs: Record<Kind, ThroughputRun[]> = { raw: [], visible: [], gfe: [] };
  const order: Kind[] = [];
  for (let round = 0; round < rounds; round++) {
    const kinds: Kind[] = ['raw', 'visible', 'gfe'];
    order.push(...(round % 2 === 0 ? kinds : kinds.reverse()));
  }
  for (const [i, kind] of order.entries()) {
    const tag = `${kind}-${i}`;
    if (kind === 'raw') {
      const raw = await rawThroughput(ctx, n, `ceiling-${i}`, 'raw workflows (same shape, no HTTP)');
      runs.raw.push(raw);
      ctx.log(
        `throughput: raw ${raw.completed}/${raw.n} in ${raw.wallSeconds.toFixed(1)} s = ${raw.perSecond.toFixed(1)}/s, time to complete p50 ${raw.timeToCompleteMs.p50.toFixed(0)} p99 ${raw.timeToCompleteMs.p99.toFixed(0)} ms; CPU per journey ${fmtCpuPerJourney(raw.cpuPerJourney)}${fmtSteal(raw)}`,
      );
    } else if (kind === 'visible') {
      const v = await rawThroughput(ctx, n, tag, 'raw workflows telling Temporal what a journey tells it', {
        visible: true,
      });
      runs.visible.push(v);
      ctx.log(
        `throughput: raw with the journeys' visibility writes ${v.completed}/${v.n} in ${v.wallSeconds.toFixed(1)} s = ${v.perSecond.toFixed(1)}/s; CPU per journey ${fmtCpuPerJourney(v.cpuPerJourney)}${fmtSteal(v)}`,
      );
    } else {
      const gfe = await gfeThroughput(ctx, n, tag);
      runs.gfe.push(gfe);
      ctx.log(
        `throughput: GFE ${gfe.completed}/${gfe.n} in ${gfe.wallSeconds.toFixed(1)} s = ${gfe.perSecond.toFixed(1)}/s, time to complete p50 ${gfe.timeToCompleteMs.p50.toFixed(0)} p99 ${gfe.timeToCompleteMs.p99.toFixed(0)} ms; CPU per journey ${fmtCpuPerJourney(gfe.cpuPerJourney)}${fmtSteal(gfe)}`,
      );
    }
  }
  const gfe = pooled(runs.gfe);
  const raw = pooled(runs.raw);
  const rawVisible = pooled(runs.visible);
  if (rounds > 1) {
    ctx.log(
      `throughput, pooled over ${rounds} rounds: raw ${raw.perSecond.toFixed(1)}/s, visible ${rawVisible.perSecond.toFixed(1)}/s, GFE ${gfe.perSecond.toFixed(1)}/s = ${((100 * gfe.perSecond) / raw.perSecond).toFixed(0)} % of raw`,
    );
  }
  return {
    providerDelayMs: ctx.o.providerDelayMs,
    concurrency: ctx.o.startConcurrency,
    gfe,
    raw,
    ratio: gfe.perSecond / raw.perSecond,
    rawVisible,
    ratioVisible: gfe.perSecond / rawVisible.perSecond,
    order: order.map((k) =>
      k === 'visible' ? 'raw telling Temporal what a journey tells it' : k === 'gfe' ? 'GFE' : 'raw',
    ),
  };
}
