// 2. Journey throughput. GFE journeys started through the clinic API (POST /v1/journeys with an Idempotency-Key),
// each completed by the sandbox's simulated provider calling event 1 back through the webhook; against, in the same
// run, the raw ceiling of this Temporal server: a workflow with the same two activities, timer and signal, no HTTP,
// on its own worker and task queue (bench/raw-workflows.ts).
import { Client, Connection } from '@temporalio/client';
import type { Ctx } from '../lib/context';
import { listWorkflows, pool, startThroughApi } from '../lib/journeys';
import { cpuSeconds, ManagedProcess, outputProbe, tsx } from '../../scripts/lib/processes';
import { CLINICS } from '../lib/stack';
import { summarize, type Summary } from '../lib/stats';
import { RAW_TASK_QUEUE } from '../raw-workflows';
import { SearchAttr } from '../../src/contract/definitions';

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
}

export interface ThroughputResults {
  providerDelayMs: number;
  concurrency: number;
  gfe: ThroughputRun;
  raw: ThroughputRun;
  ratio: number;
  /**
   * The raw shape telling Temporal what a journey tells it (search attributes at the start and at each stage, the
   * patch marker, the invite's heartbeat; bench/raw-workflows.ts `visible`), and the journeys against it. Absent in
   * older results.
   */
  rawVisible?: ThroughputRun;
  ratioVisible?: number;
}

/** CPU seconds of each process now (the stack's, and the raw worker's as `worker` when it runs). */
async function cpuNow(ctx: Ctx, rawWorker?: ManagedProcess): Promise<Record<string, number>> {
  const all = await ctx.stack.cpu();
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
  const wallSeconds = (last - first) / 1000;
  return {
    label,
    n: sends.length,
    completed: ttc.length,
    wallSeconds,
    perSecond: ttc.length / wallSeconds,
    timeToCompleteMs: summarize(ttc),
    startMs: summarize(sends.map((s) => s.startMs)),
    startErrors: sends.filter((s) => !s.ok).length,
  };
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
  // Warm-up (not measured, another clinic): the API's start route compiles its schemas on first use.
  await pool(
    Array.from({ length: 5 }, (_, i) => i),
    5,
    (i) => startViaApi(ctx, CLINICS.hook.token, `warm-${ctx.runTag}-${tag}-${i}`),
  );
  const idempotencyKeys = Array.from({ length: n }, (_, i) => `tput-${ctx.runTag}-${tag}-${i}`);
  ctx.log(`throughput: starting ${n} GFE journeys through the API (${o.startConcurrency} at a time)...`);
  const cpu0 = await cpuNow(ctx);
  const sends = await pool(idempotencyKeys, o.startConcurrency, (key) => startViaApi(ctx, clinic.token, key));
  const okCount = sends.filter((s) => s.ok).length;
  ctx.log(`throughput: ${okCount} started; waiting for them to complete...`);
  const closed = await waitForClosed(
    ctx,
    client,
    `ClinicId = '${clinic.clinicId}'`,
    sends.filter((x) => x.ok).map((x) => x.id),
  );
  const cpuPerJourney = perJourney(cpu0, await cpuNow(ctx), closed.size);
  return { ...measure('GFE journeys (API, sandbox callbacks)', sends, closed), cpuPerJourney };
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
    ctx.log(`throughput: starting ${n} raw workflows (${label})...`);
    const cpu0 = await cpuNow(ctx, worker);
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
    );
    const cpuPerJourney = perJourney(cpu0, await cpuNow(ctx, worker), closed.size);
    return { ...measure(label, sends, closed), cpuPerJourney };
  } finally {
    await connection.close();
    await worker.stop(30_000);
  }
}

/**
 * Polls the list until every one of these workflows has closed (or the time is up); the close time of each that
 * completed. Counting only our own ids: a count of the whole query would include warm-ups and earlier runs.
 */
async function waitForClosed(ctx: Ctx, client: Client, query: string, ids: string[]): Promise<Map<string, number>> {
  const want = new Set(ids);
  const until = Date.now() + Math.min(300_000, ctx.remainingMs());
  for (;;) {
    const closed = new Map<string, number>();
    let open = 0;
    for (const w of await listWorkflows(client, query).catch(() => [])) {
      if (!want.has(w.workflowId)) continue;
      if (!w.closeTime) open++;
      else if (w.status === 'COMPLETED') closed.set(w.workflowId, w.closeTime.getTime());
    }
    const seen = closed.size + open;
    if ((open === 0 && seen >= want.size) || Date.now() > until) {
      if (open > 0 || seen < want.size)
        ctx.log(`throughput: ${want.size - closed.size} of ${want.size} not completed in time`);
      return closed;
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
  const raw = await rawThroughput(ctx, n, 'ceiling', 'raw workflows (same shape, no HTTP)');
  ctx.log(
    `throughput: raw ${raw.completed}/${raw.n} in ${raw.wallSeconds.toFixed(1)} s = ${raw.perSecond.toFixed(1)}/s, time to complete p50 ${raw.timeToCompleteMs.p50.toFixed(0)} p99 ${raw.timeToCompleteMs.p99.toFixed(0)} ms; CPU per journey ${fmtCpuPerJourney(raw.cpuPerJourney)}`,
  );
  const rawVisible = await rawThroughput(ctx, n, 'visible', 'raw workflows telling Temporal what a journey tells it', {
    visible: true,
  });
  ctx.log(
    `throughput: raw with the journeys' visibility writes ${rawVisible.completed}/${rawVisible.n} in ${rawVisible.wallSeconds.toFixed(1)} s = ${rawVisible.perSecond.toFixed(1)}/s; CPU per journey ${fmtCpuPerJourney(rawVisible.cpuPerJourney)}`,
  );
  const gfe = await gfeThroughput(ctx, n, 'gfe');
  ctx.log(
    `throughput: GFE ${gfe.completed}/${gfe.n} in ${gfe.wallSeconds.toFixed(1)} s = ${gfe.perSecond.toFixed(1)}/s, time to complete p50 ${gfe.timeToCompleteMs.p50.toFixed(0)} p99 ${gfe.timeToCompleteMs.p99.toFixed(0)} ms; CPU per journey ${fmtCpuPerJourney(gfe.cpuPerJourney)}`,
  );
  return {
    providerDelayMs: ctx.o.providerDelayMs,
    concurrency: ctx.o.startConcurrency,
    gfe,
    raw,
    ratio: gfe.perSecond / raw.perSecond,
    rawVisible,
    ratioVisible: gfe.perSecond / rawVisible.perSecond,
  };
}
