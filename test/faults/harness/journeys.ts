// The journeys of a fault run: which scenario and test-mode outcome each one has, when it starts, how it is started
// through the clinic API (attachments first, then POST /v1/journeys with an Idempotency-Key, retried through every
// outage with the same key and body), and what its final state must be.
import { journeyInput, scenarioOf, type ScenarioName } from '../../support/journey-requests';
import { CLINIC_TOKEN } from './stack';

/**
 * The test provider's keywords, and `Deferred`: an invite outside test mode whose provider defers to the medical
 * director, who approves a few seconds later (both by the run's medical director, through the sandbox's control surface).
 */
export type Outcome = 'Approve' | 'Prescription Approve' | 'Reject' | 'Prescription Reject' | 'N/A' | 'Deferred';
export const SCENARIOS: readonly ScenarioName[] = ['gfe', 'partner_pharmacy', 'urgent_care', 'custom_pharmacy'];

/** Seeded random source of the suite (fault times, start times), so a seed replays the same plan. */
export class Rng {
  #state: number;
  constructor(seed: number) {
    this.#state = seed >>> 0 || 1;
  }
  next(): number {
    // mulberry32
    let t = (this.#state = (this.#state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  }
  between(min: number, max: number): number {
    return min + (max - min) * this.next();
  }
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [items[i], items[j]] = [items[j]!, items[i]!];
    }
    return items;
  }
}

export interface PlannedJourney {
  index: number;
  idempotencyKey: string;
  scenario: ScenarioName;
  outcome: Outcome;
  /** Offset from the start of the run. */
  startAfterMs: number;
  /** The start request is sent twice at once (a double submit). */
  twin: boolean;
}

/** Mostly approvals (the longest journeys: events 1, 2 and 3), with rejections and N/A mixed in. */
const OUTCOME_PATTERN = ['approve', 'approve', 'reject', 'approve', 'na', 'approve'] as const;

export function planJourneys(count: number, startWindowMs: number, rng: Rng, runId: string): PlannedJourney[] {
  const plans: PlannedJourney[] = [];
  for (let i = 0; i < count; i++) {
    const scenario = SCENARIOS[i % SCENARIOS.length]!;
    const kind = OUTCOME_PATTERN[Math.floor(i / SCENARIOS.length) % OUTCOME_PATTERN.length]!;
    const rx = scenario !== 'gfe';
    const outcome: Outcome =
      kind === 'approve'
        ? rx
          ? 'Prescription Approve'
          : 'Approve'
        : kind === 'na'
          ? 'N/A'
          : rx && Math.floor(i / SCENARIOS.length / OUTCOME_PATTERN.length) % 2 === 0
            ? 'Prescription Reject'
            : 'Reject';
    // Every fifth good faith exam is deferred to the medical director before its final verdict.
    const deferred = scenario === 'gfe' && Math.floor(i / SCENARIOS.length) % 5 === 2;
    plans.push({
      index: i,
      idempotencyKey: `faults-${runId}-${String(i).padStart(4, '0')}`,
      scenario,
      outcome: deferred ? 'Deferred' : outcome,
      startAfterMs: Math.round(rng.between(0, startWindowMs)),
      twin: i % 6 === 5,
    });
  }
  return plans.sort((a, b) => a.startAfterMs - b.startAfterMs);
}

/** What a journey must end with when nothing needed an operator. */
export interface Expected {
  status: 'Approved' | 'Rejected' | 'NA';
  /** Event 2 follows the approval of a prescription exam. */
  event2: boolean;
  /** Prescriptions written (seeded regimens: 201/8101 two drugs, 301 two, 302 one). */
  prescriptions: number;
  /** Event 3 per prescription (partner pharmacy only). */
  event3: boolean;
  /** Event 1 per verdict: two when the first one deferred to the medical director. */
  verdicts: number;
}

export function expectedOf(scenario: ScenarioName, outcome: Outcome): Expected {
  const deferred = outcome === 'Deferred';
  const status = outcome.endsWith('Approve') || deferred ? 'Approved' : outcome === 'N/A' ? 'NA' : 'Rejected';
  const rx = scenario !== 'gfe' && status === 'Approved';
  const prescriptions = !rx ? 0 : scenario === 'custom_pharmacy' ? 1 : 2;
  return {
    status,
    event2: rx,
    prescriptions,
    event3: rx && scenario === 'partner_pharmacy',
    verdicts: deferred ? 2 : 1,
  };
}

// ---- HTTP ----------------------------------------------------------------------------------------------------------

export interface HttpAnswer {
  status: number;
  body: any;
}

/** One request; throws on a transport failure (refused, reset, timeout). */
export async function http(
  method: string,
  url: string,
  options: { body?: unknown; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<HttpAnswer> {
  const res = await fetch(url, {
    method,
    headers: {
      ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...options.headers,
    },
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
    signal: AbortSignal.timeout(options.timeoutMs ?? 20_000),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text === '' ? null : JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, body };
}

export const clinicHeaders = { authorization: `Bearer ${CLINIC_TOKEN}` };

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** An answer no retry can change (a 4xx other than 408/429). */
class Refused extends Error {}

/** Transient for a client: the API is down or restarting, Temporal or the service is away, or a rate limit. */
function transient(status: number): boolean {
  return status >= 500 || status === 429 || status === 408;
}

// ---- starting -------------------------------------------------------------------------------------------------------

export interface StartedJourney {
  plan: PlannedJourney;
  journeyId?: string;
  /** POST /v1/journeys attempts (the same key and body each time). */
  startAttempts: number;
  /** Answers 201 created:true: must be at most one per key. */
  created: number;
  /** Answers 200 created:false: an earlier attempt had started it and its answer was lost (or a twin). */
  startReplays: number;
  /** Attempts that failed at the transport (API down) or with a 5xx/429 (Temporal or the service away). */
  startFailures: number;
  attachmentAttempts: number;
  startedAt?: number;
  error?: string;
}

/**
 * Stores the attachments the exams need, then starts the journey. Retries with the same Idempotency-Key and the same
 * body until the API answers 201 or 200, for at most `deadlineMs`.
 */
export async function startJourney(apiUrl: string, plan: PlannedJourney, deadlineMs: number): Promise<StartedJourney> {
  const out: StartedJourney = {
    plan,
    created: 0,
    startAttempts: 0,
    startReplays: 0,
    startFailures: 0,
    attachmentAttempts: 0,
  };
  try {
    await start(apiUrl, plan, Date.now() + deadlineMs, out);
  } catch (err) {
    out.error = err instanceof Error ? err.message : String(err);
  }
  return out;
}

async function start(apiUrl: string, plan: PlannedJourney, until: number, out: StartedJourney): Promise<void> {
  const { exams } = scenarioOf(plan.scenario);
  const input = journeyInput('unused', plan.scenario, plan.outcome);
  const attachments: { examId: number; attachment: unknown }[] = [];
  const required: Record<number, string[]> = { 201: ['Lab'], 302: ['Scalp photo (top of head)'] };
  for (const examId of exams) {
    for (const kind of required[examId] ?? []) {
      const ref = await retrying(until, async () => {
        out.attachmentAttempts++;
        const res = await http('POST', `${apiUrl}/v1/attachments`, {
          headers: clinicHeaders,
          body: {
            kind,
            fileName: `${kind.split(' ')[0]!.toLowerCase()}.pdf`,
            contentType: 'application/pdf',
            contentBase64: Buffer.from(`%PDF-1.4 ${kind} for ${plan.idempotencyKey}`).toString('base64'),
          },
        });
        if (res.status === 201) return res.body.attachment;
        if (transient(res.status)) return undefined;
        throw new Refused(`POST /v1/attachments answered ${res.status}: ${JSON.stringify(res.body)}`);
      });
      attachments.push({ examId, attachment: ref });
    }
  }
  const body = {
    patient: {
      ...input.patient,
      email: `patient-${plan.idempotencyKey}@example.test`,
      // Outside test mode the sandbox's provider waits for the run's medical director.
      ...(plan.outcome === 'Deferred' ? { teleState: 'CA' } : {}),
    },
    scenario: input.scenario,
    exams,
    additionalData: JSON.stringify({ suite: 'faults', key: plan.idempotencyKey }),
    ...(attachments.length > 0 ? { attachments } : {}),
  };
  const post = () =>
    retrying(until, async () => {
      out.startAttempts++;
      let res: HttpAnswer;
      try {
        res = await http('POST', `${apiUrl}/v1/journeys`, {
          headers: { ...clinicHeaders, 'idempotency-key': plan.idempotencyKey },
          body,
          timeoutMs: 30_000,
        });
      } catch (err) {
        out.startFailures++;
        throw err;
      }
      if (res.status === 201 || res.status === 200) {
        if (res.status === 201) out.created++;
        else out.startReplays++;
        return res.body.journeyId as string;
      }
      if (transient(res.status)) {
        out.startFailures++;
        return undefined;
      }
      throw new Refused(`POST /v1/journeys answered ${res.status}: ${JSON.stringify(res.body)}`);
    });
  // A twin: the clinic's request sent twice at once (a double submit); both must name the same journey.
  const ids = await Promise.all(plan.twin ? [post(), post()] : [post()]);
  if (new Set(ids).size !== 1) throw new Error(`the same Idempotency-Key started journeys ${ids.join(' and ')}`);
  out.journeyId = ids[0];
  out.startedAt = Date.now();
}

/** Runs `attempt` until it returns a value; transport errors and undefined mean "again, after a pause". */
async function retrying<T>(until: number, attempt: () => Promise<T | undefined>): Promise<T> {
  let pause = 250;
  for (;;) {
    let last: unknown;
    try {
      const value = await attempt();
      if (value !== undefined) return value;
    } catch (err) {
      // A transport failure (API down) is retried; an answer we cannot accept is not.
      if (err instanceof Refused) throw err;
      last = err;
    }
    if (Date.now() > until) {
      throw new Error(`gave up retrying: ${last instanceof Error ? last.message : 'no usable answer'}`);
    }
    await sleep(pause);
    pause = Math.min(pause * 2, 3_000);
  }
}
