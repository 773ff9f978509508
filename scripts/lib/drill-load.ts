// What the drills on the production topology send and read back (scripts/lib/disaster.ts, scripts/lib/gameday.ts):
// callbacks at a steady rate, as an open loop (each due at its time whatever happened to the ones before), each one a
// sender that got no 200 sends again; the patients they start; what the journeys recorded of those callbacks; and
// the invites the exam service's stand-in (the sandbox) received, to count a journey invited twice.
import { Client as PgClient } from 'pg';
import { Pool } from 'undici';
import { webhookToken } from '../../src/webhook-url';
import type { ApiClient, JourneyView } from '../demo/api';
import { eachLimit } from '../park-journeys';
import { sleep } from './processes';

/** One callback: when it was due, every answer it got (one per attempt) and, once a 200 came, its delivery id. */
export interface SentCallback {
  due: number;
  journeyId: string;
  body: string;
  answers: { sentAt: number; at: number; status: number | 'none' }[];
  deliveryId?: string;
  ackAt?: number;
}

/** An event 1 about a patient exam that is not the journey's own: recorded in its events[], changing nothing else. */
export function foreignEvent1(patientExamId: number): string {
  return JSON.stringify({
    event: 1,
    reason: 'Looks good',
    exam_id: '101',
    exam_url: `http://127.0.0.1/records/drill-${patientExamId}.pdf?expires=2099-01-01T00:00:00.000Z`,
    exam_name: 'Good Faith Exam',
    exam_status: 'Approved',
    rx_status: null,
    clinic_name: 'Drill Clinic',
    patient_email: 'drill@example.test',
    patient_phone_number: '5125550199',
    patient_exam_id: String(patientExamId),
    provider_name: 'Test Provider, NP',
    additional_data: '',
    questions_answers: [],
  });
}

/**
 * A drill's patient. In the sandbox's test mode (a patient named Test in TE, last name Approve) the exam is approved
 * by the simulated provider on its own and the journey completes; otherwise it waits for its consultation.
 */
export const drillPatient = (runId: string, kind: string, i: number, testMode: boolean) => ({
  firstName: testMode ? 'Test' : 'Waiting',
  lastName: testMode ? 'Approve' : `Patient ${i + 1}`,
  email: `${kind}-${runId}-${i}@example.test`,
  dob: '1986-03-21',
  phoneNumber: '5125550177',
  teleState: testMode ? 'TE' : 'TX',
});

/**
 * Callbacks at `rate` a second to the given journeys through the webhook (one connection pool, as a sender keeps);
 * an attempt answered anything but 200, or not at all, is sent again a second after its answer until it is
 * acknowledged.
 */
export class CallbackLoad {
  readonly sent: SentCallback[] = [];
  readonly #retries: SentCallback[] = [];
  readonly #inFlight = new Set<Promise<void>>();
  readonly #http: Pool;
  /** Each journey the callbacks go to, with how many it was given. */
  readonly #journeys: { id: string; given: number }[] = [];
  #next = 0;
  /** Callbacks given to a journey past its budget because every journey had spent its own. */
  overBudget = 0;

  constructor(
    private readonly o: {
      apiUrl: string;
      webhookSecret: string;
      rate: number;
      /** Patient exam ids of the callbacks count from here (one per callback: each is its own delivery). */
      firstPatientExamId: number;
      /**
       * Callbacks one journey is given at most while another has budget left (a journey sent 100 asks for a person:
       * callback_flood); unbounded when not set.
       */
      perJourney?: number;
    },
    journeys: readonly string[],
  ) {
    if (journeys.length === 0) throw new Error('callbacks need at least one journey to go to');
    this.addJourneys(journeys);
    this.#http = new Pool(new URL(o.apiUrl).origin, { connections: 32, pipelining: 1 });
  }

  /** More journeys to send to, taken in turn with the others from the next callback on. */
  addJourneys(ids: readonly string[]): void {
    for (const id of ids) this.#journeys.push({ id, given: 0 });
  }

  /** Callbacks the journeys can still be given within their budget. */
  remaining(): number {
    const budget = this.o.perJourney ?? Number.POSITIVE_INFINITY;
    return this.#journeys.reduce((n, j) => n + Math.max(0, budget - j.given), 0);
  }

  /** The next journey in turn with budget left; when none has, the one given the fewest (counted in overBudget). */
  #pick(): string {
    const budget = this.o.perJourney ?? Number.POSITIVE_INFINITY;
    const n = this.#journeys.length;
    for (let k = 0; k < n; k++) {
      const j = this.#journeys[(this.#next + k) % n]!;
      if (j.given < budget) {
        this.#next = (this.#next + k + 1) % n;
        j.given++;
        return j.id;
      }
    }
    const least = this.#journeys.reduce((a, b) => (b.given < a.given ? b : a));
    least.given++;
    this.overBudget++;
    return least.id;
  }

  #send(s: SentCallback): void {
    const p = (async () => {
      const sentAt = Date.now();
      let status: number | 'none' = 'none';
      let text = '';
      try {
        const res = await this.#http.request({
          method: 'POST',
          path: `/webhooks/exam-service/${s.journeyId}/${webhookToken(s.journeyId, this.o.webhookSecret)}`,
          headers: { 'content-type': 'application/json' },
          body: s.body,
          headersTimeout: 10_000,
          bodyTimeout: 10_000,
        });
        status = res.statusCode;
        text = await res.body.text();
      } catch {
        status = 'none';
      }
      const at = Date.now();
      s.answers.push({ sentAt, at, status });
      if (status === 200) {
        s.deliveryId = /"deliveryId":"([^"]+)"/.exec(text)?.[1];
        s.ackAt = at;
      } else {
        this.#retries.push(s);
      }
    })();
    this.#inFlight.add(p);
    void p.finally(() => this.#inFlight.delete(p));
  }

  /** Sends until `endAt` (epoch ms), each callback at its due time; refused ones again a second after their answer. */
  async run(endAt: number, running: () => boolean = () => true): Promise<void> {
    const t0 = Date.now();
    let i = 0;
    while (Date.now() < endAt && running()) {
      const now = Date.now();
      for (let due = t0 + (i * 1000) / this.o.rate; due <= now && due < endAt; due = t0 + (i * 1000) / this.o.rate) {
        const s: SentCallback = {
          due,
          journeyId: this.#pick(),
          body: foreignEvent1(this.o.firstPatientExamId + i),
          answers: [],
        };
        this.sent.push(s);
        this.#send(s);
        i++;
      }
      this.#resendDue();
      await sleep(5);
    }
  }

  #resendDue(): void {
    for (const s of this.#retries.splice(0)) {
      const wait = s.answers.at(-1)!.at + 1_000 - Date.now();
      setTimeout(() => this.#send(s), Math.max(0, wait));
    }
  }

  /** Sends refused ones again until every callback is acknowledged or `timeoutMs` passed; the ones still not. */
  async drain(timeoutMs: number): Promise<number> {
    const end = Date.now() + timeoutMs;
    while (
      (this.#inFlight.size > 0 || this.#retries.length > 0 || this.sent.some((s) => !s.ackAt)) &&
      Date.now() < end
    ) {
      for (const s of this.#retries.splice(0)) this.#send(s);
      await sleep(500);
    }
    await Promise.all([...this.#inFlight]);
    return this.sent.filter((s) => !s.ackAt).length;
  }

  close(): Promise<void> {
    return this.#http.close();
  }

  /** Acknowledgement times, in order. */
  acks(): number[] {
    return this.sent
      .map((s) => s.ackAt)
      .filter((a): a is number => a !== undefined)
      .sort((a, b) => a - b);
  }

  /** Answers other than 200, by status ('none': no answer). */
  refused(from = 0, to = Number.POSITIVE_INFINITY): Record<string, number> {
    const out: Record<string, number> = {};
    for (const s of this.sent)
      for (const a of s.answers)
        if (a.status !== 200 && a.at >= from && a.at < to) out[a.status] = (out[a.status] ?? 0) + 1;
    return out;
  }

  /** How long each attempt answered 200 (within [from, to)) took, request to answer (ms). */
  ackLatencies(from = 0, to = Number.POSITIVE_INFINITY): number[] {
    return this.sent.flatMap((s) =>
      s.answers.filter((a) => a.status === 200 && a.at >= from && a.at < to).map((a) => a.at - a.sentAt),
    );
  }
}

/** The longest time between two of the moments within [from, to) (a sorted list), and when it began. */
export function longestGap(sorted: readonly number[], from: number, to: number): { ms: number; at: number } {
  let best = { ms: 0, at: from };
  let previous = from;
  for (const t of sorted) {
    if (t < from) continue;
    if (t >= to) break;
    if (t - previous > best.ms) best = { ms: t - previous, at: previous };
    previous = t;
  }
  if (to - previous > best.ms && Number.isFinite(to)) best = { ms: to - previous, at: previous };
  return best;
}

/**
 * What the journeys recorded of the callbacks: each delivery id with when its journey received it, the ones recorded
 * twice, the journeys whose own snapshot never answered (an answer from visibility holds no events), and the ones that
 * were sent so many callbacks that they asked for a person (attention callback_flood: further callbacks are kept as
 * dead letters, not given to them; a drill that spreads its callbacks too thin sees this).
 */
export async function recordedDeliveries(
  view: (id: string) => Promise<JourneyView>,
  journeyIds: readonly string[],
): Promise<{ recorded: Map<string, number>; duplicates: number; unqueried: string[]; flooded: string[] }> {
  const recorded = new Map<string, number>();
  let duplicates = 0;
  const unqueried: string[] = [];
  const flooded: string[] = [];
  await eachLimit(journeyIds, 8, async (id) => {
    let v: JourneyView | undefined;
    for (let attempt = 0; attempt < 60 && v?.source !== 'query'; attempt++) {
      if (attempt > 0) await sleep(2_000);
      v = await view(id).catch(() => undefined);
    }
    if (v?.source !== 'query') {
      unqueried.push(id);
      return;
    }
    if ((v.journey.attention ?? []).some((a) => a.code === 'callback_flood')) flooded.push(id);
    const seen = new Set<string>();
    for (const e of v.journey.events ?? []) {
      if (!e.deliveryId) continue;
      if (seen.has(e.deliveryId)) duplicates++;
      seen.add(e.deliveryId);
      if (e.receivedAt) recorded.set(e.deliveryId, Date.parse(e.receivedAt));
    }
  });
  return { recorded, duplicates, unqueried, flooded };
}

/** A journey view through the clinic API (its own snapshot while it runs, visibility's facts once it cannot). */
export const journeyView = (api: ApiClient) => (id: string) =>
  api.request<JourneyView>('GET', `/v1/journeys/${id}`, { timeoutMs: 10_000 }).then((r) => r.body);

export interface PatientExamSeen {
  meeting_uuid: string;
  webhook_url: string | null;
  created_at?: string;
}

/** Every patient exam (an invite) the sandbox holds. */
export async function sandboxPatientExams(sandboxUrl: string): Promise<PatientExamSeen[]> {
  const res = await fetch(`${sandboxUrl}/_sandbox/patient-exams`, { signal: AbortSignal.timeout(60_000) });
  if (!res.ok) throw new Error(`the sandbox's patient exams: HTTP ${res.status}`);
  return ((await res.json()) as { patient_exams: PatientExamSeen[] }).patient_exams;
}

/** The journey an invite was sent for (its webhook URL names it). */
export const invitedJourney = (pe: PatientExamSeen) =>
  /\/webhooks\/exam-service\/([^/]+)\//.exec(pe.webhook_url ?? '')?.[1];

/** Journeys the sandbox holds more than one invite for. */
export function invitedTwice(exams: readonly PatientExamSeen[]): string[] {
  const invites = new Map<string, Set<string>>();
  for (const pe of exams) {
    const id = invitedJourney(pe);
    if (!id) continue;
    invites.set(id, (invites.get(id) ?? new Set()).add(pe.meeting_uuid));
  }
  return [...invites.entries()].filter(([, m]) => m.size > 1).map(([id]) => id);
}

/** Waits until the callback inbox is empty (every acknowledged callback handed on); false when it is not in time. */
export async function waitForEmptyInbox(superuserUrl: string, timeoutMs: number): Promise<boolean> {
  const inbox = new PgClient({ connectionString: superuserUrl });
  await inbox.connect();
  try {
    const end = Date.now() + timeoutMs;
    while (Number((await inbox.query<{ n: string }>('SELECT count(*) AS n FROM callback_inbox')).rows[0]!.n) > 0) {
      if (Date.now() > end) return false;
      await sleep(1_000);
    }
    return true;
  } finally {
    await inbox.end();
  }
}
