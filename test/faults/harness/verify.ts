// What a fault run is judged on, read from the outside: the sandbox's control surface (every invite it created, every
// callback it sent and how each attempt ended), the API (each journey's snapshot with its received events and their
// dispositions, and the dead letters), and the plan (which scenario and outcome each journey had).
import type { ScenarioName } from '../../support/journey-requests';
import { expectedOf, http, clinicHeaders, type Outcome, type StartedJourney } from './journeys';
import { ADMIN_TOKEN } from './stack';

export interface SandboxPatientExam {
  patient_exam_id: number;
  exam_id: number;
  meeting_uuid: string;
  webhook_url: string | null;
  status: string;
  rx_status: string | null;
  prescriptions: { prescription_id: number; shipped_at: string | null; tracking_number: string | null }[];
  events_emitted: number[];
}

export interface SandboxDelivery {
  delivery_id: number;
  receiver: string;
  event: number;
  /** What the callback is about in the sandbox's own ids, whatever its layout carries. */
  patient_exam_id: number;
  /** Event 3's prescription, or the one drug of a flat event 2. */
  prescription_id?: number;
  layout?: string;
  copy: number;
  state: 'scheduled' | 'in_flight' | 'retrying' | 'delivered' | 'failed';
  created_at: string;
  attempts: { attempt: number; at: string; status: number | null; latency_ms: number; error?: string }[];
  payload: Record<string, unknown>;
}

export interface DeadLetterInfo {
  id: string;
  journeyId: string;
  reason: string;
  event?: number;
  patientExamId?: number;
  prescriptionId?: number;
  /** The API's id of the HTTP delivery, as it signalled it to the journey. */
  deliveryId?: string;
  /** The callback's body as the API kept it: matched to the sandbox's delivery it came from. */
  rawBody?: string;
}

export interface ReceivedEvent {
  deliveryId: string;
  event: number;
  /** Null when the callback did not say and the journey could not tell. */
  patientExamId: number | null;
  prescriptionId?: number;
  /** Event 3: the tracking number it carried. */
  trackingNumber?: string;
  disposition: 'applied' | 'duplicate' | 'buffered' | 'foreign' | 'ignored' | 'held';
  note?: string;
  layout?: string;
}

export interface JourneySnapshot {
  stage: string;
  exams: {
    patientExamId: number;
    status: string;
    rxStatus: string | null;
    prescriptions: { prescriptionId: number; tracking: { trackingNumber: string } | null }[];
  }[];
  meetings: { meetingUuid: string }[];
  events: ReceivedEvent[];
  attention: { code: string; message: string }[];
}

export const TERMINAL = ['completed', 'cancelled', 'abandoned', 'failed'];

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** The journey id in a webhook URL `.../webhooks/exam-service/<journeyId>/<token>`. */
export function journeyOfUrl(url: string | null | undefined): string | undefined {
  return url ? /\/webhooks\/exam-service\/([^/]+)\//.exec(url)?.[1] : undefined;
}

/**
 * Accounting key of a callback: patient exam, event, and the prescription it is about (event 3's; the one drug of an
 * event 2 sent once per drug).
 */
export function callbackKey(patientExamId: number | null, event: number, prescriptionId?: number): string {
  const pe = patientExamId ?? '?';
  if (prescriptionId !== undefined) return `${pe}:${event}:${prescriptionId}`;
  return event === 3 ? `${pe}:3:?` : `${pe}:${event}`;
}

// ---- reading ------------------------------------------------------------------------------------------------------

export async function sandboxExams(sandboxUrl: string): Promise<SandboxPatientExam[]> {
  return (await http('GET', `${sandboxUrl}/_sandbox/patient-exams`, { timeoutMs: 60_000 })).body.patient_exams;
}

export async function sandboxDeliveries(sandboxUrl: string): Promise<SandboxDelivery[]> {
  return (await http('GET', `${sandboxUrl}/_sandbox/deliveries`, { timeoutMs: 60_000 })).body.deliveries;
}

/** Invites (meetings) the sandbox created per journey, attributed by the journey id in their webhook URL. */
export function invitesByJourney(exams: SandboxPatientExam[]): Map<string, SandboxPatientExam[][]> {
  const meetings = new Map<string, Map<string, SandboxPatientExam[]>>();
  for (const pe of exams) {
    const journeyId = journeyOfUrl(pe.webhook_url);
    if (!journeyId) continue;
    const byMeeting = meetings.get(journeyId) ?? new Map<string, SandboxPatientExam[]>();
    byMeeting.set(pe.meeting_uuid, [...(byMeeting.get(pe.meeting_uuid) ?? []), pe]);
    meetings.set(journeyId, byMeeting);
  }
  return new Map([...meetings].map(([id, m]) => [id, [...m.values()]]));
}

export async function deadLetters(apiUrl: string): Promise<DeadLetterInfo[]> {
  const out: DeadLetterInfo[] = [];
  // The static admin token names nobody: who reads the dead letters comes with it (X-Actor, on the audit trail).
  const headers = { authorization: `Bearer ${ADMIN_TOKEN}`, 'x-actor': 'fault-suite' };
  let after: string | null = null;
  do {
    const page: { status: number; body: any } = await http(
      'GET',
      `${apiUrl}/admin/dead-letters?limit=500${after ? `&after=${encodeURIComponent(after)}` : ''}`,
      { headers },
    );
    if (page.status !== 200) throw new Error(`GET /admin/dead-letters answered ${page.status}`);
    for (const letter of page.body.deadLetters as DeadLetterInfo[]) {
      // The list leaves the body out: it tells which callback this was (the sandbox's delivery with that body).
      const detail = await http('GET', `${apiUrl}/admin/dead-letters/${letter.id}`, { headers });
      const rawBody = typeof detail.body?.rawBody === 'string' ? (detail.body.rawBody as string) : undefined;
      let prescriptionId: number | undefined;
      try {
        const id = Number((JSON.parse(rawBody ?? '') as { prescription_id?: unknown }).prescription_id);
        if (Number.isSafeInteger(id) && id > 0) prescriptionId = id;
      } catch {
        // not JSON: no prescription to name
      }
      out.push({
        id: letter.id,
        journeyId: letter.journeyId,
        reason: letter.reason,
        ...(letter.event !== undefined ? { event: letter.event } : {}),
        ...(letter.patientExamId !== undefined ? { patientExamId: letter.patientExamId } : {}),
        ...(prescriptionId !== undefined ? { prescriptionId } : {}),
        ...(letter.deliveryId !== undefined ? { deliveryId: letter.deliveryId } : {}),
        ...(rawBody !== undefined ? { rawBody } : {}),
      });
    }
    after = page.body.next;
  } while (after);
  return out;
}

/** The journey's live snapshot through the API (source `query`: it has the received events). */
export async function journeySnapshot(apiUrl: string, journeyId: string, timeoutMs = 60_000): Promise<JourneySnapshot> {
  const until = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    try {
      const res = await http('GET', `${apiUrl}/v1/journeys/${journeyId}`, { headers: clinicHeaders });
      if (res.status === 200 && res.body.source === 'query') return res.body.journey as JourneySnapshot;
      last = `${res.status} ${res.body?.source ?? JSON.stringify(res.body)}`;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    if (Date.now() > until) throw new Error(`no snapshot of journey ${journeyId}: ${last}`);
    await sleep(500);
  }
}

/** Stage of every journey of the clinic, from the API's list (Temporal visibility). */
export async function stagesByList(apiUrl: string): Promise<Map<string, string>> {
  const stages = new Map<string, string>();
  let token: string | null = null;
  do {
    const url: string = `${apiUrl}/v1/journeys?pageSize=100${token ? `&nextPageToken=${token}` : ''}`;
    const res = await http('GET', url, { headers: clinicHeaders });
    if (res.status !== 200) throw new Error(`GET /v1/journeys answered ${res.status}`);
    for (const j of res.body.journeys as { journeyId: string; stage: string | null }[]) {
      stages.set(j.journeyId, j.stage ?? 'unknown');
    }
    token = res.body.nextPageToken;
  } while (token);
  return stages;
}

// ---- judging ------------------------------------------------------------------------------------------------------

export interface OperatorDecision {
  journeyId: string;
  action: 'abandon' | 'retry';
  round: number;
  invitesFound: number;
  code: string;
  /** Why the invite was in doubt: a 500, a reset connection, or the invite activity timing out. */
  cause: string;
}

export interface JourneyVerdict {
  journeyId: string;
  scenario: ScenarioName;
  outcome: Outcome;
  stage: string;
  examStatus: string | null;
  invites: number;
  operator: OperatorDecision[];
}

export interface CallbackTotals {
  /** Delivery records the sandbox created (every copy of every event). */
  deliveries: number;
  /** Of those, answered 200 by the API (on some attempt). */
  delivered: number;
  /** Records the sandbox gave up on after its retries (a callback lost at the source). */
  failedAtSandbox: number;
  attempts: number;
  /** Attempts that found no API listening (connection refused) and were retried later. */
  refusedAttempts: number;
  /** Attempts that failed otherwise (reset, timeout, non-200). */
  otherFailedAttempts: number;
  /** Of those, answered 400 (a callback the API refused to read): must be none. */
  answered400: number;
  /** Received by the journeys, by disposition. */
  recorded: Record<string, number>;
  /** Kept as dead letters because the journey had already finished (late copies). */
  deadLettered: number;
  /** Dead letters by reason: only `journey_finished` may occur (no callback is dead-lettered for its layout). */
  deadLettersByReason: Record<string, number>;
  /**
   * Of the dead letters, those of a delivery the journey had recorded already, or dead-lettered already (the same
   * delivery id): the API's inbox forwards at least once, and forwarded it again after a crash once the journey ended.
   */
  deadLetteredAgain: number;
  /** Expected events (by scenario/outcome) of the completed journeys, and how many were applied exactly once. */
  expected: number;
  appliedExactlyOnce: number;
}

export interface Judgement {
  verdicts: JourneyVerdict[];
  callbacks: CallbackTotals;
  problems: string[];
}

/** Checks every journey against its plan and every callback the sandbox delivered against what the journeys got. */
export function judge(input: {
  journeys: StartedJourney[];
  snapshots: Map<string, JourneySnapshot>;
  exams: SandboxPatientExam[];
  deliveries: SandboxDelivery[];
  deadLetters: DeadLetterInfo[];
  decisions: OperatorDecision[];
}): Judgement {
  const problems: string[] = [];
  const invites = invitesByJourney(input.exams);
  const verdicts: JourneyVerdict[] = [];
  const totals: CallbackTotals = {
    deliveries: input.deliveries.length,
    delivered: 0,
    failedAtSandbox: 0,
    attempts: 0,
    refusedAttempts: 0,
    otherFailedAttempts: 0,
    answered400: 0,
    recorded: {},
    deadLettered: 0,
    deadLettersByReason: {},
    deadLetteredAgain: 0,
    expected: 0,
    appliedExactlyOnce: 0,
  };

  // Callbacks are keyed by the sandbox's own ids, whatever their layout carried: a delivery by what the sandbox says
  // it is about, a journey's event 3 by the tracking number it carried, a dead letter by the body it kept.
  const shipped = new Map<string, { patientExamId: number; prescriptionId: number }>();
  for (const pe of input.exams) {
    for (const p of pe.prescriptions) {
      if (p.tracking_number)
        shipped.set(p.tracking_number, { patientExamId: pe.patient_exam_id, prescriptionId: p.prescription_id });
    }
  }
  const keyOfDelivery = (d: SandboxDelivery) => callbackKey(d.patient_exam_id, d.event, d.prescription_id);
  const keyOfBody = new Map(input.deliveries.map((d) => [JSON.stringify(d.payload), keyOfDelivery(d)]));
  const keyOfEvent = (e: ReceivedEvent) => {
    const owner = e.event === 3 && e.trackingNumber !== undefined ? shipped.get(e.trackingNumber) : undefined;
    return owner
      ? callbackKey(owner.patientExamId, 3, owner.prescriptionId)
      : callbackKey(e.patientExamId, e.event, e.prescriptionId);
  };
  const keyOfLetter = (l: DeadLetterInfo) =>
    (l.rawBody === undefined ? undefined : keyOfBody.get(l.rawBody)) ??
    callbackKey(l.patientExamId ?? null, l.event ?? 0, l.prescriptionId);

  // Per journey and key: what the sandbox delivered (200), what may have reached the API, what the journey recorded.
  const delivered = new Map<string, Map<string, number>>();
  const reached = new Map<string, Map<string, number>>();
  const bump = (m: Map<string, Map<string, number>>, journeyId: string, key: string) => {
    const inner = m.get(journeyId) ?? new Map<string, number>();
    inner.set(key, (inner.get(key) ?? 0) + 1);
    m.set(journeyId, inner);
  };
  for (const d of input.deliveries) {
    const journeyId = journeyOfUrl(d.receiver);
    if (!journeyId) {
      problems.push(`sandbox delivery ${d.delivery_id} went to ${d.receiver}, not a journey's webhook`);
      continue;
    }
    const key = keyOfDelivery(d);
    totals.attempts += d.attempts.length;
    for (const a of d.attempts) {
      if (a.status === 200) continue;
      if (a.status === 400) {
        totals.answered400++;
        problems.push(
          `journey ${journeyId}: callback ${key} (delivery ${d.delivery_id}, layout ${d.layout ?? 'interface'}) answered 400`,
        );
      }
      if (a.status === null && /ECONNREFUSED/.test(a.error ?? '')) totals.refusedAttempts++;
      else totals.otherFailedAttempts++;
      // Anything but a refused connection may have reached the API before it failed.
      if (!(a.status === null && /ECONNREFUSED/.test(a.error ?? ''))) bump(reached, journeyId, key);
    }
    if (d.state === 'delivered') {
      totals.delivered++;
      bump(delivered, journeyId, key);
      bump(reached, journeyId, key);
    } else if (d.state === 'failed') {
      totals.failedAtSandbox++;
      problems.push(`journey ${journeyId}: the sandbox gave up on callback ${key} (delivery ${d.delivery_id})`);
    } else {
      problems.push(`journey ${journeyId}: callback ${key} still ${d.state} at the sandbox`);
    }
  }
  const lettersByJourney = new Map<string, DeadLetterInfo[]>();
  for (const letter of input.deadLetters) {
    if (letter.reason !== 'journey_finished') {
      problems.push(`dead letter ${letter.id} (${letter.reason}) for journey ${letter.journeyId}`);
    }
    totals.deadLettered++;
    totals.deadLettersByReason[letter.reason] = (totals.deadLettersByReason[letter.reason] ?? 0) + 1;
    lettersByJourney.set(letter.journeyId, [...(lettersByJourney.get(letter.journeyId) ?? []), letter]);
  }

  const decisionsOf = (id: string) => input.decisions.filter((d) => d.journeyId === id);
  const known = new Set<string>();
  for (const j of input.journeys) {
    const { plan } = j;
    const label = `journey ${j.journeyId ?? plan.idempotencyKey} (${plan.scenario}, ${plan.outcome})`;
    if (!j.journeyId) {
      problems.push(`${label}: never started: ${j.error ?? 'no answer'}`);
      continue;
    }
    known.add(j.journeyId);
    if (j.created > 1) problems.push(`${label}: ${j.created} answers 201 for one Idempotency-Key`);
    if (plan.twin && j.created + j.startReplays < 2) problems.push(`${label}: the twin start got no answer`);
    const snap = input.snapshots.get(j.journeyId);
    const meetings = invites.get(j.journeyId) ?? [];
    const operator = decisionsOf(j.journeyId);
    verdicts.push({
      journeyId: j.journeyId,
      scenario: plan.scenario,
      outcome: plan.outcome,
      stage: snap?.stage ?? 'unknown',
      examStatus: snap?.exams[0]?.status ?? null,
      invites: meetings.length,
      operator,
    });
    if (meetings.length > 1) {
      problems.push(
        `${label}: ${meetings.length} invites at the sandbox (${meetings.map((m) => m[0]!.meeting_uuid).join(', ')})`,
      );
    }
    if (!snap) {
      problems.push(`${label}: no snapshot`);
      continue;
    }
    for (const e of snap.events) totals.recorded[e.disposition] = (totals.recorded[e.disposition] ?? 0) + 1;

    // Recorded by the journey (any disposition) or kept as a dead letter after it finished, per key.
    const recorded = new Map<string, number>();
    for (const e of snap.events) {
      const key = keyOfEvent(e);
      recorded.set(key, (recorded.get(key) ?? 0) + 1);
      // The journey's own account of a shipment must name the prescription the sandbox shipped it for.
      const owner = e.event === 3 && e.trackingNumber !== undefined ? shipped.get(e.trackingNumber) : undefined;
      if (owner && e.prescriptionId !== undefined && e.prescriptionId !== owner.prescriptionId) {
        problems.push(
          `${label}: event 3 ${e.disposition} against prescription ${e.prescriptionId}, the sandbox shipped it for ${owner.prescriptionId}`,
        );
      }
    }
    // A delivery is counted once, however often the inbox forwarded it: recorded, then dead-lettered on a later try.
    const deliveryIds = new Set(snap.events.map((e) => e.deliveryId));
    const letters = lettersByJourney.get(j.journeyId) ?? [];
    for (const l of letters) {
      if (l.deliveryId !== undefined && deliveryIds.has(l.deliveryId)) {
        totals.deadLetteredAgain++;
        continue;
      }
      if (l.deliveryId !== undefined) deliveryIds.add(l.deliveryId);
      const key = keyOfLetter(l);
      recorded.set(key, (recorded.get(key) ?? 0) + 1);
    }
    // No callback lost: each 200 the sandbox got is in the journey or a dead letter; and nothing from nowhere.
    const sent = delivered.get(j.journeyId) ?? new Map<string, number>();
    const mayHaveReached = reached.get(j.journeyId) ?? new Map<string, number>();
    for (const [key, n] of sent) {
      const got = recorded.get(key) ?? 0;
      if (got < n) problems.push(`${label}: callback ${key} delivered ${n}x with a 200 but recorded ${got}x (lost)`);
    }
    for (const [key, n] of recorded) {
      const max = mayHaveReached.get(key) ?? 0;
      if (n > max)
        problems.push(`${label}: callback ${key} recorded ${n}x but at most ${max} attempts reached the API`);
    }

    const ambiguous = operator.some((d) => d.action === 'abandon');
    if (snap.stage === 'completed') {
      const expected = expectedOf(plan.scenario, plan.outcome);
      const exam = snap.exams[0];
      const sandboxExam = meetings[0]?.[0];
      if (meetings.length !== 1 || !sandboxExam) {
        problems.push(`${label}: completed with ${meetings.length} invites at the sandbox`);
        continue;
      }
      if (snap.exams.length !== 1 || !exam || exam.patientExamId !== sandboxExam.patient_exam_id) {
        problems.push(
          `${label}: the journey's exams ${JSON.stringify(snap.exams.map((e) => e.patientExamId))} are not the sandbox's ${sandboxExam.patient_exam_id}`,
        );
        continue;
      }
      if (exam.status !== expected.status) problems.push(`${label}: exam ${exam.status}, expected ${expected.status}`);
      const pe = exam.patientExamId;
      const expectedKeys = Array.from({ length: expected.verdicts }, () => callbackKey(pe, 1));
      // Event 2 once, or once per drug when the sandbox sent it so (the flat layout).
      const perDrug = input.deliveries.some(
        (d) => d.patient_exam_id === pe && d.event === 2 && d.prescription_id !== undefined,
      );
      if (expected.event2 && perDrug) {
        for (const p of sandboxExam.prescriptions) expectedKeys.push(callbackKey(pe, 2, p.prescription_id));
      } else if (expected.event2) {
        expectedKeys.push(callbackKey(pe, 2));
      }
      if (sandboxExam.prescriptions.length !== expected.prescriptions) {
        problems.push(
          `${label}: ${sandboxExam.prescriptions.length} prescriptions at the sandbox, expected ${expected.prescriptions}`,
        );
      }
      if (exam.prescriptions.length !== expected.prescriptions) {
        problems.push(
          `${label}: ${exam.prescriptions.length} prescriptions in the journey, expected ${expected.prescriptions}`,
        );
      }
      if (expected.event3) {
        for (const p of sandboxExam.prescriptions) expectedKeys.push(callbackKey(pe, 3, p.prescription_id));
        if (exam.prescriptions.some((p) => p.tracking === null))
          problems.push(`${label}: a prescription has no tracking`);
        for (const p of sandboxExam.prescriptions) {
          const got = exam.prescriptions.find((x) => x.prescriptionId === p.prescription_id)?.tracking?.trackingNumber;
          if (got !== undefined && got !== p.tracking_number) {
            problems.push(
              `${label}: prescription ${p.prescription_id} has tracking ${got}, the sandbox shipped ${p.tracking_number}`,
            );
          }
        }
      }
      const applied = new Map<string, number>();
      for (const e of snap.events) {
        // A deferral that arrives after the medical director's final verdict (the out-of-order fault) is stale: the
        // journey keeps the final verdict and records the deferral as ignored. It is that deferral, handled.
        const staleDeferral =
          expected.verdicts > 1 &&
          e.event === 1 &&
          e.disposition === 'ignored' &&
          /^verdict already /.test(e.note ?? '');
        if (e.disposition === 'applied' || staleDeferral) {
          const key = keyOfEvent(e);
          applied.set(key, (applied.get(key) ?? 0) + 1);
        } else if (e.disposition !== 'duplicate') {
          problems.push(`${label}: event ${keyOfEvent(e)} left ${e.disposition}${e.note ? ` (${e.note})` : ''}`);
        }
      }
      // A deferral held back by the out-of-order fault until after the final verdict had completed the journey is a
      // dead letter of the finished journey: that deferral, handled (once).
      const verdictKey = callbackKey(pe, 1);
      const lateDeferral = letters.some(
        (l) => l.reason === 'journey_finished' && keyOfLetter(l) === verdictKey && /deferred/i.test(l.rawBody ?? ''),
      );
      if (expected.verdicts > 1 && lateDeferral && (applied.get(verdictKey) ?? 0) < expected.verdicts) {
        applied.set(verdictKey, (applied.get(verdictKey) ?? 0) + 1);
      }
      // A deferral's event 1 and the medical director's are two expected events under one key.
      const wanted = new Map<string, number>();
      for (const key of expectedKeys) wanted.set(key, (wanted.get(key) ?? 0) + 1);
      totals.expected += expectedKeys.length;
      for (const [key, want] of wanted) {
        const n = applied.get(key) ?? 0;
        if (n === want) totals.appliedExactlyOnce += want;
        else problems.push(`${label}: expected event ${key} applied ${n}x, not ${want === 1 ? 'once' : `${want}x`}`);
        if ((sent.get(key) ?? 0) < want) problems.push(`${label}: the sandbox delivered ${key} fewer than ${want}x`);
      }
      for (const key of applied.keys()) {
        if (!expectedKeys.includes(key)) problems.push(`${label}: unexpected event ${key} applied`);
      }
      for (const l of letters) {
        const key = keyOfLetter(l);
        if (!applied.has(key)) problems.push(`${label}: dead letter ${l.id} (${key}) was never applied to the journey`);
      }
    } else if (snap.stage === 'abandoned') {
      // Only an operator abandons, and only when the service had the invite the journey could not know about.
      if (!ambiguous) problems.push(`${label}: abandoned without an operator's decision`);
      if (meetings.length !== 1) problems.push(`${label}: abandoned with ${meetings.length} invites at the sandbox`);
      for (const e of snap.events) {
        if (e.disposition === 'applied') problems.push(`${label}: abandoned journey applied event ${e.event}`);
      }
    } else {
      const attention = snap.attention.map((a) => a.code).join(',');
      problems.push(
        `${label}: ended ${snap.stage}${attention ? ` (${attention})` : ''}; ${endedAccount(snap, meetings, input.deliveries, j.journeyId)}`,
      );
    }
  }
  for (const journeyId of new Set([...invites.keys(), ...delivered.keys()])) {
    if (!known.has(journeyId)) problems.push(`the sandbox has invites or callbacks for unknown journey ${journeyId}`);
  }
  return { verdicts, callbacks: totals, problems };
}

/**
 * What a journey left in a stage short of its end had and what the sandbox did for it: each event it recorded with its
 * disposition, each invite's exam with its status and the events it emitted, each delivery to it with its state. A
 * journey stuck so is read from this line alone.
 */
function endedAccount(
  snap: JourneySnapshot,
  meetings: SandboxPatientExam[][],
  deliveries: SandboxDelivery[],
  journeyId: string,
): string {
  const events = snap.events.map(
    (e) =>
      `${e.event}@${e.patientExamId ?? '?'} ${e.disposition}${e.note ? ` (${e.note})` : ''} [${e.deliveryId.slice(-8)}]`,
  );
  const exams = meetings
    .flat()
    .map(
      (pe) =>
        `${pe.patient_exam_id} ${pe.status} rx ${pe.rx_status ?? 'none'} emitted [${pe.events_emitted.join(',')}]`,
    );
  const sent = deliveries
    .filter((d) => journeyOfUrl(d.receiver) === journeyId)
    .map(
      (d) =>
        `${d.event}@${d.patient_exam_id} #${d.delivery_id} copy ${d.copy} ${d.state} (${d.attempts.map((a) => a.status ?? 'x').join(',')})`,
    );
  return `events: ${events.join('; ') || 'none'}; sandbox exams: ${exams.join('; ') || 'none'}; deliveries: ${sent.join('; ') || 'none'}`;
}
