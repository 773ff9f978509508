// `npm run bench:growth`'s two wake-ups of parked journeys at a step:
//   - a wave of reminders: a share of the step's journeys parked with their one reminder due at about the same
//     moment, and how late each fired, read from its own history (when its timer was due, when it fired, when the
//     journey scheduled the resend): what a clinic's morning of reminders looks like at that size;
//   - callbacks: the oldest parked journeys each sent its event 1 through the webhook at once, and how fast they were
//     applied (each journey woken, replayed where the worker's cache no longer holds it, and completed).
// Nothing here logs a patient: journey ids at most.
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { journeyWorkflowId } from '../../src/contract/definitions';
import { sleep } from '../../scripts/lib/processes';
import { countWorkflows, listWorkflows, pool, postEvent1s } from './journeys';
import { summarize } from './stats';
import type { Latency } from './growth-report';

export interface WaveResult {
  /** Journeys of the wave (their reminder due about `dueAt`). */
  journeys: number;
  /** Whose reminder was found fired in its history. */
  fired: number;
  /** When the reminders were meant to fall due (ISO 8601). */
  dueAt: string;
  /** From the first reminder's due time to the last's (they count from each journey's own invite). */
  dueSpreadMs: number;
  /** The timer's fire (the server) after its due time. */
  timerLate: Latency & { max: number };
  /** The resend scheduled by the journey (the worker ran it) after the reminder's due time: how late it fired. */
  sentLate: Latency & { max: number };
  /** From the first reminder due to the last resend scheduled: how long the wave took to pass. */
  passedMs: number;
}

export interface WakeResult {
  /** Journeys sent their event 1 (the oldest parked). */
  journeys: number;
  /** Their ids (left out of the report). */
  ids?: string[];
  /** Acknowledgements not 200. */
  not200: number;
  /** Of them, completed (applied) in time. */
  applied: number;
  /** The webhook's acknowledgement. */
  ack: Latency;
  /** From the first callback sent to each journey's completion. */
  appliedAfter: Latency & { max: number };
  /** Callbacks applied per second: journeys / the time to the last completion. */
  perSecond: number;
}

const num = (v: unknown) => Number(String(v));
/** A proto Timestamp or Duration (its seconds a Long on the wire, a number in a test) in milliseconds. */
const protoMs = (t: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
  num(t?.seconds ?? 0) * 1000 + (t?.nanos ?? 0) / 1e6;

/** The reminder of a history: when its timer was due, fired, and the resend was scheduled (epoch ms). */
export function reminderOfHistory(
  events: temporal.api.history.v1.IHistoryEvent[],
): { due: number; fired: number; scheduled: number } | undefined {
  const dueOf = new Map<number, number>();
  let fired: { due: number; fired: number } | undefined;
  for (const e of events) {
    const at = protoMs(e.eventTime);
    if (e.timerStartedEventAttributes) {
      dueOf.set(num(e.eventId), at + protoMs(e.timerStartedEventAttributes.startToFireTimeout));
    } else if (e.timerFiredEventAttributes) {
      const due = dueOf.get(num(e.timerFiredEventAttributes.startedEventId));
      if (due !== undefined) fired = { due, fired: at };
    } else if (
      e.activityTaskScheduledEventAttributes &&
      /resend/i.test(e.activityTaskScheduledEventAttributes.activityType?.name ?? '') &&
      fired
    ) {
      return { ...fired, scheduled: at };
    }
  }
  return undefined;
}

const latencyMax = (values: number[]): Latency & { max: number } => {
  const s = summarize(values);
  return { n: s.count, p50: s.p50, p99: s.p99, max: values.length > 0 ? Math.max(...values) : NaN };
};

/**
 * Waits for the wave of reminders of `ids` (due about `dueAt`) to pass, then reads each journey's history. Histories
 * are read only once a sample of them shows fired reminders, so that reading does not compete with the wave.
 */
export async function measureWave(
  client: Client,
  ids: string[],
  dueAt: number,
  o: { timeoutMs: number; log: (line: string) => void },
): Promise<WaveResult> {
  const deadline = dueAt + o.timeoutMs;
  let firstError: string | undefined;
  const read = async (id: string) => {
    try {
      const h = await client.workflow.getHandle(id).fetchHistory();
      return reminderOfHistory(h.events ?? []);
    } catch (err) {
      // The error's class and message only (a workflow id at most).
      if (!firstError) {
        firstError = err instanceof Error ? `${err.name}: ${err.message}`.slice(0, 300) : String(err);
        o.log(`  reminder wave: reading a history failed: ${firstError}`);
      }
      return undefined;
    }
  };
  if (Date.now() < dueAt + 15_000) await sleep(dueAt + 15_000 - Date.now());
  // A sample of 20 (the last started: the last due) until all of them fired.
  const probe = ids.slice(-20);
  while (Date.now() < deadline) {
    const seen = await pool(probe, 4, read);
    if (seen.every((r) => r !== undefined)) break;
    o.log(`  reminder wave: ${seen.filter((r) => r !== undefined).length} of a sample of ${probe.length} fired`);
    await sleep(5_000);
  }
  const found = new Map<string, { due: number; fired: number; scheduled: number }>();
  let missing = ids;
  while (missing.length > 0) {
    const got = await pool(missing, 16, async (id) => [id, await read(id)] as const);
    for (const [id, r] of got) if (r) found.set(id, r);
    missing = missing.filter((id) => !found.has(id));
    if (missing.length === 0 || Date.now() > deadline) break;
    o.log(`  reminder wave: ${found.size} fired, ${missing.length} not yet`);
    await sleep(5_000);
  }
  const all = [...found.values()];
  const dues = all.map((r) => r.due);
  const firstDue = dues.length > 0 ? Math.min(...dues) : NaN;
  return {
    journeys: ids.length,
    fired: all.length,
    dueAt: new Date(dueAt).toISOString(),
    dueSpreadMs: dues.length > 0 ? Math.max(...dues) - firstDue : NaN,
    timerLate: latencyMax(all.map((r) => Math.max(0, r.fired - r.due))),
    sentLate: latencyMax(all.map((r) => Math.max(0, r.scheduled - r.due))),
    passedMs: all.length > 0 ? Math.max(...all.map((r) => r.scheduled)) - firstDue : NaN,
  };
}

interface SandboxExam {
  patient_exam_id: number;
  webhook_url?: string;
}

/**
 * The oldest `n` journeys waiting for their consultation each sent its event 1 (Approved) through the webhook, 32 at
 * once, as the service would send it; then the time until each completed (its close time in visibility).
 * `endedQuery` counts the clinic's journeys that are no longer running.
 */
export async function wakeOldest(
  client: Client,
  o: {
    sandboxUrl: string;
    apiUrl: string;
    webhookSecret: string;
    n: number;
    /** Journeys woken before (their invites still pending in the sandbox, which did not send the callback): skipped. */
    woken: ReadonlySet<string>;
    endedQuery: string;
    timeoutMs: number;
  },
): Promise<WakeResult> {
  const limit = o.n + o.woken.size;
  const res = await fetch(`${o.sandboxUrl}/_sandbox/patient-exams?status=pending&limit=${limit}`, {
    signal: AbortSignal.timeout(60_000),
  });
  if (!res.ok) throw new Error(`the sandbox's patient exams answered ${res.status}`);
  const exams = ((await res.json()) as { patient_exams: SandboxExam[] }).patient_exams;
  const items = exams
    .flatMap((e) => {
      const m = /\/webhooks\/exam-service\/([^/]+)\//.exec(e.webhook_url ?? '');
      return m?.[1] ? [{ journeyId: decodeURIComponent(m[1]), patientExamId: e.patient_exam_id }] : [];
    })
    .filter((i) => !o.woken.has(i.journeyId))
    .slice(0, o.n);
  const before = await countWorkflows(client, o.endedQuery);
  const t0 = Date.now();
  const { acks, not200 } = await postEvent1s(o.apiUrl, o.webhookSecret, items, 32);
  const target = before + items.length - not200;
  const until = t0 + o.timeoutMs;
  let ended = before;
  while (Date.now() < until) {
    ended = await countWorkflows(client, o.endedQuery).catch(() => ended);
    if (ended >= target) break;
    await sleep(1_000);
  }
  const since = new Date(t0 - 1_000).toISOString();
  const closed = await listWorkflows(client, `${o.endedQuery} AND CloseTime >= '${since}'`);
  const woken = new Set(items.map((i) => journeyWorkflowId(i.journeyId)));
  const after = closed
    .filter((w) => woken.has(w.workflowId))
    .flatMap((w) => (w.closeTime ? [w.closeTime.getTime() - t0] : []));
  const a = summarize(acks);
  const last = after.length > 0 ? Math.max(...after) : NaN;
  return {
    journeys: items.length,
    ids: items.map((i) => i.journeyId),
    not200,
    applied: after.length,
    ack: { n: a.count, p50: a.p50, p99: a.p99 },
    appliedAfter: latencyMax(after),
    perSecond: after.length / (last / 1000),
  };
}
