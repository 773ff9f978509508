// `npm run journeys:park`: journeys parked in every wait state a deploy meets, on a running stack with the sandbox
// (npm start or npm run start:production): invited, reminded, deferred to the medical director, awaiting the
// prescription, awaiting tracking, parked for an operator, completed, cancelled, expired. Each is driven through the
// clinic API and the sandbox's control surface, with short per-journey timings where a wait must pass. What the replay
// gate's histories are captured from (npm run histories:capture), and what a deploy drill rolls a version out under.
//
//   npm run journeys:park -- [--per-state N] [--api URL] [--sandbox URL]
import { sleep } from './lib/http';
import { exitWith, parseApiUrl, parseCommandLine, table, UsageError } from './lib/cli';
import { DEMO_CLINIC_TOKEN } from './lib/stack-secrets';
import { ApiClient, type AttachmentRef, type JourneyView, type StartResponse } from './demo/api';
import { PARTNER_PHARMACY_ID, sampleAttachment } from './demo/scenarios';
import { WAIT_STATES, type WaitState } from './histories';

interface Parking {
  exams: number[];
  partner?: boolean;
  timings?: Record<string, unknown>;
  /** What the sandbox's provider and pharmacy do to the first patient exam. */
  drive: ('Approved' | 'Deferred to Medical Director' | 'confirm' | 'cancel')[];
  /** The journey is in its wait state once it shows this stage (and, closed, these exam statuses). */
  stage: string;
  examStatus?: string;
  /** Seconds a state needs beyond its stage (a reminder's timer). */
  settleMs?: number;
}

const PLAN: Record<WaitState, Parking> = {
  invited: { exams: [101], drive: [], stage: 'awaiting_consultation' },
  reminded: {
    exams: [101],
    timings: { remindersMs: [1_000] },
    drive: [],
    stage: 'awaiting_consultation',
    settleMs: 4_000,
  },
  deferred: { exams: [101], drive: ['Deferred to Medical Director'], stage: 'awaiting_final_verdict' },
  awaiting_prescription: { exams: [201], partner: true, drive: ['Approved'], stage: 'awaiting_prescription' },
  awaiting_tracking: { exams: [201], partner: true, drive: ['Approved', 'confirm'], stage: 'awaiting_tracking' },
  parked: {
    exams: [101],
    timings: { finalVerdictDeadlineMs: 1_000 },
    drive: ['Deferred to Medical Director'],
    stage: 'needs_attention',
  },
  completed: { exams: [101], drive: ['Approved'], stage: 'completed' },
  cancelled: { exams: [101], drive: ['cancel'], stage: 'cancelled' },
  expired: {
    exams: [101],
    timings: { consultationDeadlineMs: 2_000 },
    drive: [],
    stage: 'completed',
    examStatus: 'expired',
  },
};

export interface ParkedJourney {
  state: WaitState;
  journeyId: string;
  ready: boolean;
}

/** Starts `perState` journeys for each wait state and drives each into it; resolves once all are there (or timed out). */
export async function parkJourneys(
  api: ApiClient,
  sandboxUrl: string,
  o: { perState: number; runId: string; timeoutMs?: number; say?: (line: string) => void },
  // A PacedApiClient keeps many journeys under the clinic API's rate limit.
): Promise<ParkedJourney[]> {
  const started: { state: WaitState; journeyId: string }[] = [];
  for (const state of WAIT_STATES) {
    for (let i = 0; i < o.perState; i++) {
      const plan = PLAN[state];
      const body = {
        // Not the sandbox's test mode (a patient named Test in TE): nothing happens unless driven.
        patient: {
          firstName: 'Parked',
          lastName: `Patient ${i + 1}`,
          email: `park-${o.runId}-${state}-${i}@example.test`,
          dob: '1985-02-17',
          phoneNumber: '5125550142',
          teleState: 'TX',
        },
        exams: plan.exams,
        scenario: plan.partner
          ? { type: 'partner_pharmacy', pharmacyId: PARTNER_PHARMACY_ID, orderSetId: '8101' }
          : { type: 'gfe' },
        ...(plan.timings ? { timings: plan.timings } : {}),
        ...(plan.partner ? { attachments: [await uploadLab(api, plan.exams[0]!)] } : {}),
      };
      const { body: r } = await api.request<StartResponse>('POST', '/v1/journeys', {
        body,
        headers: { 'idempotency-key': `park-${o.runId}-${state}-${i}` },
      });
      started.push({ state, journeyId: r.journeyId });
    }
  }
  o.say?.(`started ${started.length} journeys; driving each into its wait state...`);
  // Each exam invited first, then driven by the sandbox's provider and pharmacy.
  await eachLimit(started, DRIVE_CONCURRENCY, async (j) => {
    const plan = PLAN[j.state];
    if (plan.drive.length === 0) return;
    const view = await until(api, j.journeyId, (v) => (v.journey.exams ?? []).some((e) => e.patientExamId), 60_000);
    const patientExamId = view?.journey.exams?.[0]?.patientExamId;
    if (!patientExamId) return;
    for (const step of plan.drive) {
      if (step === 'cancel') {
        await api.request('POST', `/v1/journeys/${j.journeyId}/cancel`, { body: {} });
      } else if (step === 'confirm') {
        await until(api, j.journeyId, (v) => v.journey.stage === 'awaiting_prescription', 60_000);
        await control(sandboxUrl, `/_sandbox/patient-exams/${patientExamId}/confirm-prescription`, {});
      } else {
        await control(sandboxUrl, `/_sandbox/patient-exams/${patientExamId}/verdict`, { status: step });
      }
    }
  });
  const deadline = Date.now() + (o.timeoutMs ?? 120_000 + started.length * 500);
  const parked: ParkedJourney[] = [];
  await eachLimit(started, DRIVE_CONCURRENCY, async (j) => {
    const plan = PLAN[j.state];
    const view = await until(
      api,
      j.journeyId,
      (v) => v.journey.stage === plan.stage && (!plan.examStatus || statusesOf(v).includes(plan.examStatus)),
      Math.max(1_000, deadline - Date.now()),
    );
    parked.push({ state: j.state, journeyId: j.journeyId, ready: view !== undefined });
  });
  const settle = Math.max(...WAIT_STATES.map((s) => PLAN[s].settleMs ?? 0));
  if (settle > 0) await sleep(settle);
  return parked;
}

/**
 * The clinic API allows a clinic 600 requests a minute: every request of this client waits for its turn, at most
 * `perSecond` a second, so that parking hundreds of journeys stays under the limit.
 */
export class PacedApiClient extends ApiClient {
  #nextAt = 0;

  constructor(
    base: string,
    token: string,
    private readonly perSecond = 8,
  ) {
    super(base, token);
  }

  override async request<T>(...args: Parameters<ApiClient['request']>): Promise<{ status: number; body: T }> {
    const now = Date.now();
    const at = Math.max(now, this.#nextAt);
    this.#nextAt = at + 1_000 / this.perSecond;
    if (at > now) await sleep(at - now);
    return super.request<T>(...args);
  }
}

/** Journeys driven at once: each waits on its invite and the sandbox, not on the CPU. */
const DRIVE_CONCURRENCY = 16;

export async function eachLimit<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
}

/** The partner package's lab result, as the clinic uploads it before the start. */
async function uploadLab(api: ApiClient, examId: number) {
  const { body } = await api.request<{ attachment: AttachmentRef }>('POST', '/v1/attachments', {
    body: sampleAttachment('Lab', examId),
  });
  return { examId, attachment: body.attachment };
}

/** The exams' statuses, from the view of a running journey or of a closed one. */
export const statusesOf = (v: JourneyView) => v.journey.examStatus ?? (v.journey.exams ?? []).map((e) => e.status);

export async function until(
  api: ApiClient,
  journeyId: string,
  done: (v: JourneyView) => boolean,
  timeoutMs: number,
): Promise<JourneyView | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    // An answer that fails (a replica restarting, a query that times out) is asked again at the next turn.
    const body = await api.request<JourneyView>('GET', `/v1/journeys/${journeyId}`).then(
      (r) => r.body,
      () => undefined,
    );
    if (body && done(body)) return body;
    if (Date.now() > deadline) return undefined;
    await sleep(1_000);
  }
}

export async function control(sandboxUrl: string, route: string, body: unknown): Promise<void> {
  const res = await fetch(`${sandboxUrl}${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`sandbox ${route} answered ${res.status}: ${await res.text()}`);
}

async function main(argv: string[]): Promise<number> {
  try {
    const { values } = parseCommandLine(argv, {
      'per-state': { type: 'string' },
      api: { type: 'string' },
      sandbox: { type: 'string' },
    });
    const perState = Number(values['per-state'] ?? 1);
    if (!Number.isInteger(perState) || perState < 1) throw new UsageError('--per-state must be a whole number above 0');
    const api = new PacedApiClient(
      parseApiUrl(values.api ?? 'http://127.0.0.1:3000').href.replace(/\/$/, ''),
      DEMO_CLINIC_TOKEN,
    );
    const sandbox = parseApiUrl(values.sandbox ?? 'http://127.0.0.1:4010').href.replace(/\/$/, '');
    const runId = Date.now().toString(36);
    const parked = await parkJourneys(api, sandbox, { perState, runId, say: (l) => console.log(l) });
    const rows = WAIT_STATES.map((s) => {
      const of = parked.filter((p) => p.state === s);
      return [s, String(of.filter((p) => p.ready).length), String(of.length)];
    });
    console.log(table([['wait state', 'parked', 'started'], ...rows], { rule: true }));
    return parked.every((p) => p.ready) ? 0 : 1;
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`${err.message}\n\nUsage: npm run journeys:park -- [--per-state N] [--api URL] [--sandbox URL]`);
      return 2;
    }
    console.error(err instanceof Error ? err.message : String(err));
    return 1;
  }
}

if (require.main === module) exitWith(() => main(process.argv.slice(2)));
