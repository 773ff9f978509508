// The journey's state machine as a pure reducer: (state, event) -> state. Deterministic, no I/O, no clock of its own:
// every event carries its time. The workflow feeds it; unit tests drive it without Temporal.
import type { JourneyInput, JourneyTimings, ScenarioType } from './journey-request';

export type Verdict = 'Approved' | 'Rejected' | 'Deferred to Medical Director' | 'NA' | 'Missed';
export type ExamStatus = 'pending' | Verdict | 'cancelled' | 'expired';
export type Fulfilment = 'none' | 'partner' | 'custom';

export type JourneyStage =
  | 'validating'
  | 'inviting'
  | 'preparing'
  | 'awaiting_consultation'
  | 'awaiting_final_verdict'
  | 'awaiting_reinvite'
  | 'awaiting_prescription'
  | 'awaiting_tracking'
  | 'needs_attention'
  | 'completed'
  | 'cancelled'
  | 'abandoned'
  | 'failed';

export const TERMINAL_STAGES: readonly JourneyStage[] = ['completed', 'cancelled', 'abandoned', 'failed'];

/** The part of a callback the journey acts on; the raw payload travels beside it for audit. */
export type JourneyCallback =
  | {
      event: 1;
      patientExamId: number;
      examId: number;
      examStatus: string;
      rxStatus: string | null;
      examUrl: string | null;
      providerName: string | null;
      reason: string | null;
      layout?: string;
    }
  | {
      event: 2;
      patientExamId: number;
      examId: number;
      rxStatus: string | null;
      prescribedOrderSetId: number | null;
      prescriptions: PrescriptionFacts[];
      /** One drug per callback (a layout without the prescription array): added to the exam's earlier event 2s. */
      partial?: boolean;
      /** The callback layout when it was not the interface's (docs/callback-layouts.md). */
      layout?: string;
    }
  | ({
      event: 3;
      /** Absent when the layout does not carry it: the journey's single partner prescription exam is meant. */
      patientExamId?: number;
      /** Absent when the layout does not carry it: the exam's next unshipped prescription(s) are meant. */
      prescriptionId?: number;
      /** Further shipments of the same callback (a tracking array of several entries), in order. */
      moreTracking?: ShipmentFacts[];
      layout?: string;
    } & ShipmentFacts);

/** A callback with an event number that could not be read as events 1, 2 or 3: held for a person, never dropped. */
export interface UnreadCallback {
  /** The body's event number (any integer). */
  event: number;
  unread: true;
  patientExamId?: number;
  /** Why it could not be read (field names and rules, no values). */
  reason: string;
}

export interface ShipmentFacts {
  trackingNumber: string;
  deliveryService: string | null;
  pharmacyLocation: string | null;
  orderId: string | null;
  /** The pharmacy's rx number of the shipment (a tracking array's entry); names its prescription when it matches. */
  rxNumber?: string | null;
}

export interface PrescriptionFacts {
  prescriptionId: number;
  drugName: string;
  strength: string | null;
  quantity: string | null;
  pharmacyName: string | null;
  /** The rx number event 2 gave the prescription (its prescription_tracking), when the layout carries it. */
  rxNumber?: string | null;
}

export interface Tracking {
  trackingNumber: string;
  deliveryService: string | null;
  pharmacyLocation: string | null;
  orderId: string | null;
  shippedAt: string;
  /** The rx number the shipment came with, when it came without a prescription id. */
  rxNumber?: string | null;
}

export interface PrescriptionState extends PrescriptionFacts {
  tracking: Tracking | null;
}

export interface CatalogExam {
  examId: number;
  title: string;
  rxType: 1 | 2;
}

/** Error facts safe for history, queries and notifications: no PHI, no secret. */
export interface ErrorFacts {
  kind: string;
  operation: string;
  message: string;
  httpStatus?: number;
  field?: string;
  setupCode?: string;
  at: string;
}

export type AttentionCode =
  | 'invite_ambiguous'
  | 'account_setup'
  | 'unauthorized'
  | 'service_unavailable'
  | 'verdict_lost'
  | 'callback_held'
  | 'final_verdict_overdue';

export interface Attention {
  code: AttentionCode;
  message: string;
  since: string;
  patientExamId?: number;
  facts: Record<string, string | number | boolean | null>;
}

export interface PatientExamState {
  patientExamId: number;
  examId: number;
  examTitle: string;
  rxType: 1 | 2;
  fulfilment: Fulfilment;
  meetingUuid: string;
  status: ExamStatus;
  rxStatus: string | null;
  verdictAt: string | null;
  /** Where the verdict came from: the service's callback, or a cancel answer when the callback was lost. */
  verdictSource: 'callback' | 'cancel_response' | null;
  examUrl: string | null;
  reason: string | null;
  providerName: string | null;
  prescriptionConfirmedAt: string | null;
  prescriptions: PrescriptionState[];
  /** Its event 2 came one drug per callback (a layout without the prescription array): more drugs may follow. */
  oneDrugPerEvent2?: boolean;
  prescriptionOverdue: boolean;
  trackingOverdue: boolean;
  /** Stopped waiting for event 2 or 3 at the hard limit. */
  gaveUpWaiting: 'prescription' | 'tracking' | null;
  attachmentsUploaded: string[];
  answersSubmitted: number;
  /** A re-invite after Missed or NA: the patient exam it replaces, and the one that replaced this. */
  reinviteOf: number | null;
  reinvitedAs: number | null;
  reinviteAttempt: number;
  cancelledAt: string | null;
  /** Deferred to the medical director: the final verdict's wait runs from here (the deferral, or the last retry). */
  finalVerdictWaitFrom?: string;
  /** Drugs one per event 2: when the last one came, and whether the wait for more has ended. */
  lastDrugAt?: string;
  drugsSettled?: boolean;
}

export interface MeetingState {
  /** Empty for a meeting known only from evidence (a callback for an invite whose creation was in doubt). */
  meetingUuid: string;
  meetingUrl: string;
  createdAt: string;
  patientExamIds: number[];
  remindersSent: number;
  expiryHandled: boolean;
  /** Known from evidence: the exams the invite in doubt asked for (their patient exams adopted as callbacks name them). */
  evidenceOf?: number[];
}

/** An attention that ended without an operator: what settled it. */
export interface ResolvedAttention {
  code: AttentionCode;
  since: string;
  resolvedAt: string;
  why: string;
  patientExamId?: number;
}

/** `held`: recorded for a person (the reason is in `note` and in the journey's attention), not applied. */
export type EventDisposition = 'applied' | 'duplicate' | 'buffered' | 'foreign' | 'ignored' | 'held';

export interface ReceivedEvent {
  deliveryId: string;
  /** 1, 2 or 3; any other number the service sent is recorded (held) too. */
  event: number;
  /** Null when the callback did not say and the journey could not tell (yet). */
  patientExamId: number | null;
  prescriptionId?: number;
  /** Event 3: the (first) tracking number it carried, which tells copies and shipments apart whatever the layout. */
  trackingNumber?: string;
  receivedAt: string;
  disposition: EventDisposition;
  note?: string;
  /** The callback layout when it was not the interface's. */
  layout?: string;
}

interface PendingCallback {
  deliveryId: string;
  at: string;
  callback: JourneyCallback;
}

type AnyCallback = JourneyCallback | UnreadCallback;

export function isUnread(cb: JourneyCallback | UnreadCallback): cb is UnreadCallback {
  return (cb as { unread?: unknown }).unread === true;
}

/** An action taken on the journey from outside (an operator, or the clinic through its API): who, when, what, why. */
export interface OperatorAction {
  at: string;
  action: 'retry' | 'abandon' | 'cancel' | 'resend';
  /** An operator's name or ticket, or `clinic` for the clinic API's own calls; never patient data. */
  actor: string;
  /** Why, in the actor's words (no patient data). */
  note?: string;
  /** What the action acted on: the attention it settled, the patient exams it cancelled or resent. */
  detail: string;
}

export interface JourneyState {
  journeyId: string;
  clinicId: string;
  scenario: ScenarioType;
  examIds: number[];
  timings: JourneyTimings;
  startedAt: string;
  updatedAt: string;
  catalog: CatalogExam[] | null;
  /** An invite call is on the wire: callbacks for patient exams we do not know yet may be its own. */
  inviteInFlight: boolean;
  inviteAttempts: number;
  meetings: MeetingState[];
  exams: PatientExamState[];
  preparing: boolean;
  received: ReceivedEvent[];
  pending: PendingCallback[];
  seen: string[];
  attention: Attention[];
  outcome: 'cancelled' | 'abandoned' | 'failed' | null;
  lastError: ErrorFacts | null;
  /** Every action taken on the journey from outside, in order. */
  actions: OperatorAction[];
  /**
   * How callbacks lacking ids are resolved. 1: as journeys started before rule 2 (their histories replay with it).
   * 2: an event 3 is paired with its prescription by rx number first, and an exam whose drugs come one per event 2
   * waits for the drug a shipment or an unknown prescription_id points to instead of ignoring or holding it.
   */
  callbackRules: 1 | 2;
  /**
   * Deferred to Medical Director is a wait for the final verdict, with its own deadline (false: final, as for
   * journeys started before; their histories replay with it).
   */
  deferredWaits: boolean;
  /**
   * A callback on the journey's own URL naming a patient exam it does not know, while its invite is in doubt, proves
   * the invite was created: the patient exam is adopted, the attention settled, the invite never sent again (false:
   * such callbacks are foreign, as for journeys started before; their histories replay with it).
   */
  adoptsEvidence: boolean;
  /**
   * Drugs one per event 2: the exam waits a grace period after the last drug before it is final, so a drug whose
   * callback an outage delayed still joins it (false: final at once, as for journeys started before).
   */
  drugsGrace: boolean;
  /** The exams of the last invite attempt that ended in doubt (ambiguous), until evidence or a new attempt. */
  ambiguousInvite: number[] | null;
  /** Attention settled by evidence rather than by an operator. */
  resolvedAttention: ResolvedAttention[];
  /** Bumped by every event: the workflow waits for it to move. */
  version: number;
}

export type JourneyEvent =
  | { type: 'catalog_checked'; at: string; exams: CatalogExam[] }
  | { type: 'invite_started'; at: string }
  | {
      type: 'invite_created';
      at: string;
      meetingUuid: string;
      meetingUrl: string;
      patientExams: { patientExamId: number; examId: number; examTitle: string }[];
      reinviteOf?: number;
    }
  | { type: 'invite_not_created'; at: string; ambiguousExams?: number[] }
  | { type: 'preparation_started'; at: string }
  | { type: 'preparation_finished'; at: string }
  | { type: 'attachment_uploaded'; at: string; patientExamId: number; kind: string }
  | { type: 'answers_submitted'; at: string; patientExamId: number; count: number }
  | { type: 'callback'; at: string; deliveryId: string; callback: JourneyCallback | UnreadCallback }
  | { type: 'reminder_sent'; at: string; meetingUuid: string }
  | { type: 'exam_cancelled'; at: string; patientExamId: number; by: 'clinic' | 'expiry' }
  | { type: 'expiry_found_verdict'; at: string; patientExamId: number; status: Verdict }
  | { type: 'expiry_handled'; at: string; meetingUuid: string }
  | { type: 'prescription_overdue'; at: string; patientExamId: number }
  | { type: 'tracking_overdue'; at: string; patientExamId: number }
  | { type: 'gave_up_waiting'; at: string; patientExamId: number; what: 'prescription' | 'tracking' }
  | { type: 'attention_needed'; at: string; attention: Omit<Attention, 'since'> }
  | { type: 'attention_resolved'; at: string }
  | { type: 'error_recorded'; at: string; error: ErrorFacts }
  | { type: 'journey_failed'; at: string; error: ErrorFacts }
  | { type: 'journey_cancelled'; at: string }
  | { type: 'journey_abandoned'; at: string }
  | { type: 'action_recorded'; at: string; action: OperatorAction }
  | { type: 'drugs_settled'; at: string; patientExamId: number };

const FINAL_VERDICTS: readonly ExamStatus[] = ['Approved', 'Rejected', 'Deferred to Medical Director', 'NA', 'Missed'];
const VERDICTS: readonly string[] = FINAL_VERDICTS;

export function initialState(
  input: JourneyInput,
  at: string,
  callbackRules: 1 | 2 = 2,
  deferredWaits = true,
  adoptsEvidence = true,
  drugsGrace = true,
): JourneyState {
  return {
    journeyId: input.journeyId,
    clinicId: input.clinicId,
    scenario: input.scenario.type,
    examIds: [...input.exams],
    timings: input.timings,
    startedAt: at,
    updatedAt: at,
    catalog: null,
    inviteInFlight: false,
    inviteAttempts: 0,
    meetings: [],
    exams: [],
    preparing: false,
    received: [],
    pending: [],
    seen: [],
    attention: [],
    outcome: null,
    lastError: null,
    actions: [],
    callbackRules,
    deferredWaits,
    adoptsEvidence,
    drugsGrace,
    ambiguousInvite: null,
    resolvedAttention: [],
    version: 0,
  };
}

function fulfilmentOf(scenario: ScenarioType, rxType: 1 | 2): Fulfilment {
  if (rxType === 1 || scenario === 'gfe') return 'none';
  return scenario === 'partner_pharmacy' ? 'partner' : 'custom';
}

function updateExam(state: JourneyState, id: number, patch: (e: PatientExamState) => PatientExamState): JourneyState {
  return { ...state, exams: state.exams.map((e) => (e.patientExamId === id ? patch(e) : e)) };
}

export function findExam(state: JourneyState, id: number): PatientExamState | undefined {
  return state.exams.find((e) => e.patientExamId === id);
}

/** Idempotency key of a callback. Event 1 includes the verdict: a deferred exam may later get its final verdict. */
export function callbackKey(cb: JourneyCallback): string {
  switch (cb.event) {
    case 1:
      return `${cb.patientExamId}:1:${cb.examStatus}`;
    case 2:
      // One drug per callback: each drug is its own event 2.
      return cb.partial
        ? `${cb.patientExamId}:2:${cb.prescriptions[0]?.prescriptionId ?? ''}`
        : `${cb.patientExamId}:2`;
    case 3:
      // Without a prescription id the tracking number tells copies of one shipment from another shipment.
      return cb.prescriptionId === undefined
        ? `${cb.patientExamId ?? '?'}:3:tracking:${cb.trackingNumber}`
        : `${cb.patientExamId ?? '?'}:3:${cb.prescriptionId}`;
  }
}

function record(
  state: JourneyState,
  p: { deliveryId: string; at: string; callback: AnyCallback },
  disposition: EventDisposition,
  note?: string,
  resolved?: { patientExamId: number; prescriptionId?: number },
): JourneyState {
  const cb = p.callback;
  const existing = state.received.findIndex((r) => r.deliveryId === p.deliveryId);
  const unread = isUnread(cb);
  const named = unread
    ? undefined
    : cb.event === 3
      ? cb.prescriptionId
      : cb.event === 2 && cb.partial
        ? cb.prescriptions[0]?.prescriptionId
        : undefined;
  const prescriptionId = resolved?.prescriptionId ?? named;
  const entry: ReceivedEvent = {
    deliveryId: p.deliveryId,
    event: cb.event,
    patientExamId: resolved?.patientExamId ?? cb.patientExamId ?? null,
    ...(prescriptionId !== undefined ? { prescriptionId } : {}),
    ...(!unread && cb.event === 3 ? { trackingNumber: cb.trackingNumber } : {}),
    receivedAt: existing >= 0 ? state.received[existing]!.receivedAt : p.at,
    disposition,
    ...(note ? { note } : {}),
    ...(!unread && cb.layout ? { layout: cb.layout } : {}),
  };
  const received = [...state.received];
  if (existing >= 0) received[existing] = entry;
  else received.push(entry);
  return { ...state, received };
}

/** Records a callback for a person: disposition `held`, and an attention entry saying why. */
function hold(state: JourneyState, p: { deliveryId: string; at: string; callback: AnyCallback }, why: string) {
  const cb = p.callback;
  const attention: Attention = {
    code: 'callback_held',
    message: `a callback (event ${cb.event}) was kept but not applied: ${why}; read it in the journey's events, act on the journey, then retry`,
    since: p.at,
    ...(cb.patientExamId !== undefined ? { patientExamId: cb.patientExamId } : {}),
    facts: { deliveryId: p.deliveryId, event: cb.event, reason: why },
  };
  return record({ ...state, attention: [...state.attention, attention] }, p, 'held', why);
}

type Applied =
  | { kind: 'applied'; state: JourneyState; resolved?: { patientExamId: number; prescriptionId?: number } }
  | { kind: 'wait'; why: string }
  | { kind: 'reject'; why: string }
  | { kind: 'hold'; why: string };

/** The shipments of an event 3: the first, then any further entries of its tracking array. */
function shipmentsOf(cb: Extract<JourneyCallback, { event: 3 }>): ShipmentFacts[] {
  return [cb, ...(cb.moreTracking ?? [])];
}

/**
 * The prescription of the exam a shipment's rx number names: the one event 2 gave that rx number, else the one whose
 * id it spells (`RX<prescription_id>`, as the sandbox sends it). Only ever a prescription the journey knows.
 */
function prescriptionByRxNumber(exam: PatientExamState, rxNumber: string | null | undefined): number | undefined {
  const rx = rxNumber?.trim();
  if (!rx) return undefined;
  const exact = exam.prescriptions.find((p) => p.rxNumber?.trim() === rx);
  if (exact) return exact.prescriptionId;
  const digits = /^(?:rx)?[\s#-]*0*(\d{1,15})$/i.exec(rx)?.[1];
  return digits === undefined
    ? undefined
    : exam.prescriptions.find((p) => String(p.prescriptionId) === digits)?.prescriptionId;
}

/** The partner prescription exam an event 3 without patient_exam_id is for, or why there is none (yet). */
function trackingExam(
  state: JourneyState,
  cb: Extract<JourneyCallback, { event: 3 }>,
): PatientExamState | { kind: 'wait' | 'hold'; why: string } {
  const partner = state.exams.filter((e) => e.fulfilment === 'partner');
  const confirmed = partner.filter((e) => e.status === 'Approved' && e.prescriptionConfirmedAt !== null);
  const byDrug = state.callbackRules === 2;
  if (byDrug) {
    // A prescription the journey knows, named by id or rx number, names its exam.
    const named = confirmed.filter(
      (e) =>
        e.prescriptions.some((rx) => rx.prescriptionId === cb.prescriptionId) ||
        shipmentsOf(cb).some((s) => prescriptionByRxNumber(e, s.rxNumber) !== undefined),
    );
    if (named.length === 1) return named[0]!;
  }
  // An exam whose drugs come one per event 2 may still get the drug this shipment is for.
  const open = confirmed.filter(
    (e) => e.prescriptions.some((rx) => rx.tracking === null) || (byDrug && e.oneDrugPerEvent2 === true),
  );
  if (open.length === 1) return open[0]!;
  if (open.length > 1)
    return { kind: 'hold', why: 'no patient_exam_id, and several prescription exams await tracking' };
  const waiting = partner.some(
    (e) => e.status === 'pending' || (e.status === 'Approved' && e.prescriptionConfirmedAt === null),
  );
  if (waiting || state.inviteInFlight || state.meetings.length === 0) {
    return { kind: 'wait', why: 'event 3 without patient_exam_id before its event 2' };
  }
  if (confirmed.length > 0) return { kind: 'hold', why: 'no patient_exam_id, and every prescription has shipped' };
  return { kind: 'hold', why: 'no patient_exam_id, and no partner pharmacy prescription exam in this journey' };
}

/** Applies one callback when its causal predecessor is there; otherwise says why it must wait or be dropped. */
function applyCallback(state: JourneyState, p: PendingCallback): Applied {
  const cb = p.callback;
  if (cb.event === 3 && cb.patientExamId === undefined) {
    const exam = trackingExam(state, cb);
    if ('kind' in exam) return exam;
    return applyTracking(state, p, exam, cb);
  }
  const exam = findExam(state, cb.patientExamId!);
  if (!exam) return { kind: 'wait', why: 'unknown patient exam' };
  if (cb.event === 1) {
    if (!VERDICTS.includes(cb.examStatus)) return { kind: 'hold', why: 'exam_status is not one of the five verdicts' };
    const verdict = cb.examStatus as Verdict;
    if (exam.status === 'cancelled' || exam.status === 'expired') {
      return { kind: 'reject', why: `exam already ${exam.status}` };
    }
    // A deferred exam may still get its final verdict; any other verdict stands.
    const mayChange = exam.status === 'pending' || exam.status === 'Deferred to Medical Director';
    if (!mayChange && exam.verdictSource === 'callback')
      return { kind: 'reject', why: `verdict already ${exam.status}` };
    return {
      kind: 'applied',
      state: updateExam(state, exam.patientExamId, (e) => ({
        ...e,
        status: verdict,
        rxStatus: cb.rxStatus ?? e.rxStatus,
        verdictAt: e.verdictSource === 'cancel_response' && e.status === verdict ? e.verdictAt : p.at,
        verdictSource: 'callback',
        examUrl: cb.examUrl,
        reason: cb.reason,
        providerName: cb.providerName,
      })),
    };
  }
  if (cb.event === 2) {
    if (exam.rxType !== 2) return { kind: 'reject', why: 'not a prescription exam' };
    if (exam.status !== 'Approved') return { kind: 'wait', why: 'event 2 before the approval of event 1' };
    if (cb.partial && exam.prescriptionConfirmedAt !== null) {
      // A further drug of an exam already confirmed (one drug per callback).
      const known = new Set(exam.prescriptions.map((rx) => rx.prescriptionId));
      const added = cb.prescriptions.filter((rx) => !known.has(rx.prescriptionId));
      if (added.length === 0) return { kind: 'reject', why: 'prescription already confirmed' };
      const grown = updateExam(state, exam.patientExamId, (e) => ({
        ...e,
        oneDrugPerEvent2: true,
        lastDrugAt: p.at,
        prescriptions: [...e.prescriptions, ...added.map((rx) => ({ ...rx, tracking: null }))],
      }));
      return {
        kind: 'applied',
        state: state.callbackRules === 2 ? moveShipmentsToTheirDrugs(grown, exam.patientExamId) : grown,
      };
    }
    return {
      kind: 'applied',
      state: updateExam(state, exam.patientExamId, (e) => ({
        ...e,
        rxStatus: cb.rxStatus ?? 'Pharmacy Confirmed',
        prescriptionConfirmedAt: p.at,
        prescriptions: cb.prescriptions.map((rx) => ({ ...rx, tracking: null })),
        ...(cb.partial ? { oneDrugPerEvent2: true, lastDrugAt: p.at } : {}),
      })),
    };
  }
  if (exam.fulfilment === 'custom') return { kind: 'reject', why: 'no tracking for a custom pharmacy' };
  if (exam.prescriptionConfirmedAt === null) return { kind: 'wait', why: 'event 3 before event 2' };
  return applyTracking(state, p, exam, cb);
}

/**
 * A shipment paired with a prescription by event 2's order (its rx number named no prescription the journey knew)
 * moves to the drug its rx number names once that drug's own event 2 has come; the received events follow it.
 */
function moveShipmentsToTheirDrugs(state: JourneyState, patientExamId: number): JourneyState {
  const exam = findExam(state, patientExamId)!;
  const moves = new Map<number, Tracking>();
  const freed = new Set<number>();
  for (const rx of exam.prescriptions) {
    const t = rx.tracking;
    if (!t?.rxNumber) continue;
    const owner = prescriptionByRxNumber(exam, t.rxNumber);
    if (owner === undefined || owner === rx.prescriptionId || moves.has(owner)) continue;
    const target = exam.prescriptions.find((x) => x.prescriptionId === owner)!;
    if (target.tracking !== null && !freed.has(owner)) continue;
    moves.set(owner, t);
    freed.add(rx.prescriptionId);
  }
  if (moves.size === 0) return state;
  const moved = updateExam(state, patientExamId, (e) => ({
    ...e,
    prescriptions: e.prescriptions.map((rx) => ({
      ...rx,
      tracking: moves.get(rx.prescriptionId) ?? (freed.has(rx.prescriptionId) ? null : rx.tracking),
    })),
  }));
  const ownerOf = new Map([...moves].map(([id, t]) => [t.trackingNumber, id]));
  return {
    ...moved,
    received: moved.received.map((r) =>
      r.event === 3 && r.trackingNumber !== undefined && ownerOf.has(r.trackingNumber)
        ? { ...r, patientExamId, prescriptionId: ownerOf.get(r.trackingNumber)! }
        : r,
    ),
  };
}

/**
 * Event 3 on a confirmed partner exam: the named prescription; without an id, the prescription its rx number names,
 * else the next unshipped ones in event 2's order.
 */
function applyTracking(
  state: JourneyState,
  p: PendingCallback,
  exam: PatientExamState,
  cb: Extract<JourneyCallback, { event: 3 }>,
): Applied {
  const shipments = shipmentsOf(cb);
  // Rule 2: an exam whose drugs come one per event 2 may not know this shipment's drug yet: wait for it.
  const mayGrow = state.callbackRules === 2 && exam.oneDrugPerEvent2 === true;
  let targets: number[];
  if (cb.prescriptionId !== undefined) {
    if (!exam.prescriptions.some((rx) => rx.prescriptionId === cb.prescriptionId)) {
      if (mayGrow) return { kind: 'wait', why: 'event 3 before the event 2 of its drug' };
      return { kind: 'reject', why: 'prescription_id not in event 2' };
    }
    targets = [cb.prescriptionId];
  } else if (state.callbackRules === 2) {
    const named = shipments.map((s) => prescriptionByRxNumber(exam, s.rxNumber));
    const shipped = named.find(
      (id) => id !== undefined && exam.prescriptions.find((rx) => rx.prescriptionId === id)!.tracking !== null,
    );
    if (
      shipped !== undefined ||
      new Set(named.filter((id) => id !== undefined)).size < named.filter((id) => id !== undefined).length
    ) {
      // The prescription it names has a shipment already: one paired by order may move away once its drug comes.
      if (mayGrow) return { kind: 'wait', why: 'event 3 for a prescription paired with another shipment' };
      return { kind: 'hold', why: 'no prescription_id, and its rx number names a prescription that has shipped' };
    }
    // The others in event 2's order, among the unshipped prescriptions no rx number of theirs rules out.
    const free = exam.prescriptions.filter((rx) => rx.tracking === null && !named.includes(rx.prescriptionId));
    targets = [];
    for (const [i, s] of shipments.entries()) {
      const id =
        named[i] ??
        free.find((rx) => !targets.includes(rx.prescriptionId) && !(rx.rxNumber && s.rxNumber))?.prescriptionId;
      if (id === undefined) {
        if (mayGrow) return { kind: 'wait', why: 'event 3 before the event 2 of its drug' };
        const unshipped = exam.prescriptions.filter((rx) => rx.tracking === null).length;
        if (unshipped === 0) return { kind: 'reject', why: 'every prescription has shipped' };
        return {
          kind: 'hold',
          why: `no prescription_id, and ${shipments.length} shipments for ${unshipped} unshipped prescriptions`,
        };
      }
      targets.push(id);
    }
  } else {
    const unshipped = exam.prescriptions.filter((rx) => rx.tracking === null).map((rx) => rx.prescriptionId);
    if (unshipped.length === 0) return { kind: 'reject', why: 'every prescription has shipped' };
    if (shipments.length > unshipped.length) {
      return {
        kind: 'hold',
        why: `no prescription_id, and ${shipments.length} shipments for ${unshipped.length} unshipped prescriptions`,
      };
    }
    targets = unshipped.slice(0, shipments.length);
  }
  const tracking = new Map(
    targets.map((id, i) => {
      const s = shipments[i]!;
      const t: Tracking = {
        trackingNumber: s.trackingNumber,
        deliveryService: s.deliveryService,
        pharmacyLocation: s.pharmacyLocation,
        orderId: s.orderId,
        shippedAt: p.at,
        ...(cb.prescriptionId === undefined && s.rxNumber ? { rxNumber: s.rxNumber } : {}),
      };
      return [id, t];
    }),
  );
  return {
    kind: 'applied',
    state: updateExam(state, exam.patientExamId, (e) => ({
      ...e,
      prescriptions: e.prescriptions.map((rx) => ({ ...rx, tracking: tracking.get(rx.prescriptionId) ?? rx.tracking })),
    })),
    ...(cb.patientExamId === undefined || cb.prescriptionId === undefined
      ? { resolved: { patientExamId: exam.patientExamId, prescriptionId: targets[0]! } }
      : {}),
  };
}

/** The exam and prescription that already have the first shipment of an event 3 (its tracking number), if any. */
function shipmentOwner(
  state: JourneyState,
  cb: Extract<JourneyCallback, { event: 3 }>,
): { patientExamId: number; prescriptionId: number } | undefined {
  for (const e of state.exams) {
    if (cb.patientExamId !== undefined && e.patientExamId !== cb.patientExamId) continue;
    const rx = e.prescriptions.find(
      (x) =>
        x.tracking?.trackingNumber === cb.trackingNumber &&
        (cb.prescriptionId === undefined || x.prescriptionId === cb.prescriptionId),
    );
    if (rx) return { patientExamId: e.patientExamId, prescriptionId: rx.prescriptionId };
  }
  return undefined;
}

/**
 * Whether an event 3 only repeats shipments the journey already has: the same tracking numbers, on a prescription of
 * the exam it names (or of any exam when it names none). A copy of a shipment in another layout (with or without its
 * ids) is a duplicate, not a new shipment to hold for a person.
 */
function shipmentAlreadyApplied(state: JourneyState, cb: JourneyCallback): boolean {
  if (cb.event !== 3) return false;
  const exams =
    cb.patientExamId === undefined ? state.exams : state.exams.filter((e) => e.patientExamId === cb.patientExamId);
  const known = new Set(
    exams.flatMap((e) =>
      e.prescriptions
        .filter((rx) => cb.prescriptionId === undefined || rx.prescriptionId === cb.prescriptionId)
        .flatMap((rx) => (rx.tracking ? [rx.tracking.trackingNumber] : [])),
    ),
  );
  return [cb, ...(cb.moreTracking ?? [])].every((t) => known.has(t.trackingNumber));
}

/** Whether a buffered callback names a patient exam this journey never created (and so cannot be its own). */
function namesUnknownExam(state: JourneyState, cb: JourneyCallback): boolean {
  return cb.patientExamId !== undefined && !findExam(state, cb.patientExamId);
}

/** A patient exam the service created, waiting for its consultation. */
function newExam(
  state: JourneyState,
  pe: { patientExamId: number; examId: number; examTitle: string },
  meetingUuid: string,
  replaced?: PatientExamState,
): PatientExamState {
  const rxType = state.catalog?.find((c) => c.examId === pe.examId)?.rxType ?? 1;
  return {
    patientExamId: pe.patientExamId,
    examId: pe.examId,
    examTitle: pe.examTitle,
    rxType,
    fulfilment: fulfilmentOf(state.scenario, rxType),
    meetingUuid,
    status: 'pending',
    rxStatus: null,
    verdictAt: null,
    verdictSource: null,
    examUrl: null,
    reason: null,
    providerName: null,
    prescriptionConfirmedAt: null,
    prescriptions: [],
    prescriptionOverdue: false,
    trackingOverdue: false,
    gaveUpWaiting: null,
    attachmentsUploaded: [],
    answersSubmitted: 0,
    reinviteOf: replaced?.patientExamId ?? null,
    reinvitedAs: null,
    reinviteAttempt: replaced ? replaced.reinviteAttempt + 1 : 0,
    cancelledAt: null,
  };
}

/**
 * The exams a callback naming an unknown patient exam may prove created: those of the invite in doubt, or those of a
 * meeting known from evidence that still lack their patient exam. Undefined when the callback proves nothing.
 */
function evidenceFor(
  state: JourneyState,
  cb: JourneyCallback,
): { examIds: number[]; meeting?: MeetingState } | undefined {
  if (!state.adoptsEvidence || !namesUnknownExam(state, cb)) return undefined;
  if (state.ambiguousInvite) return { examIds: state.ambiguousInvite };
  for (const m of state.meetings) {
    if (!m.evidenceOf) continue;
    const have = new Set(m.patientExamIds.map((id) => findExam(state, id)?.examId));
    const missing = m.evidenceOf.filter((id) => !have.has(id));
    if (missing.length > 0) return { examIds: missing, meeting: m };
  }
  return undefined;
}

/**
 * Adopts the patient exam a callback names: the invite in doubt was created (the journey's URL went to the service in
 * that invite only). Its exam is the one the callback names, or the only one the invite asked for; otherwise the
 * callback is for a person. The attention the doubt raised is settled, with why.
 */
function adopt(state: JourneyState, cb: JourneyCallback, at: string): { state: JourneyState } | { why: string } {
  const evidence = evidenceFor(state, cb)!;
  const named = cb.event === 3 ? undefined : cb.examId;
  const examId =
    named !== undefined && evidence.examIds.includes(named)
      ? named
      : evidence.examIds.length === 1 && (named === undefined || !state.examIds.includes(named))
        ? evidence.examIds[0]
        : undefined;
  if (examId === undefined) {
    return {
      why: `proves the invite in doubt was created, but not which of its exams (${evidence.examIds.join(', ')}) patient exam ${cb.patientExamId} is`,
    };
  }
  const title = state.catalog?.find((c) => c.examId === examId)?.title ?? `exam ${examId}`;
  const exam = newExam(state, { patientExamId: cb.patientExamId!, examId, examTitle: title }, '');
  const meetings = evidence.meeting
    ? state.meetings.map((m) =>
        m === evidence.meeting ? { ...m, patientExamIds: [...m.patientExamIds, exam.patientExamId] } : m,
      )
    : [
        ...state.meetings,
        {
          meetingUuid: '',
          meetingUrl: '',
          createdAt: at,
          patientExamIds: [exam.patientExamId],
          remindersSent: 0,
          expiryHandled: false,
          evidenceOf: evidence.examIds,
        },
      ];
  const why = `a callback on the journey's own URL named patient exam ${exam.patientExamId} (exam ${examId}): the invite was created`;
  const settled = state.attention.filter((a) => a.code === 'invite_ambiguous');
  return {
    state: {
      ...state,
      exams: [...state.exams, exam],
      meetings,
      ambiguousInvite: null,
      attention: state.attention.filter((a) => a.code !== 'invite_ambiguous'),
      resolvedAttention: [
        ...state.resolvedAttention,
        ...settled.map((a) => ({
          code: a.code,
          since: a.since,
          resolvedAt: at,
          why,
          patientExamId: exam.patientExamId,
        })),
      ],
    },
  };
}

/** Applies buffered callbacks whose predecessors have now arrived, until nothing moves. */
function drainPending(state: JourneyState): JourneyState {
  let s = state;
  for (let moved = true; moved;) {
    moved = false;
    for (const p of s.pending) {
      const without = { ...s, pending: s.pending.filter((q) => q !== p) };
      const r = applyCallback(without, p);
      if (r.kind === 'wait') continue;
      if (r.kind === 'applied') s = record(r.state, p, 'applied', undefined, r.resolved);
      else if (r.kind === 'hold') s = hold(without, p, r.why);
      else s = record(without, p, 'ignored', r.why);
      moved = true;
      break;
    }
  }
  // Once no invite is on the wire, a callback for a patient exam we never created is not ours, unless it proves an
  // invite in doubt was created.
  if (!s.inviteInFlight) {
    for (const p of s.pending.filter((q) => namesUnknownExam(s, q.callback))) {
      if (!namesUnknownExam(s, p.callback)) continue;
      if (evidenceFor(s, p.callback)) {
        const a = adopt(s, p.callback, p.at);
        s = 'state' in a ? drainPending(a.state) : hold({ ...s, pending: s.pending.filter((q) => q !== p) }, p, a.why);
        continue;
      }
      s = record(
        { ...s, pending: s.pending.filter((q) => q !== p) },
        p,
        'foreign',
        'not a patient exam of this journey',
      );
    }
  }
  return s;
}

function receiveCallback(state: JourneyState, p: { deliveryId: string; at: string; callback: AnyCallback }) {
  // The same HTTP delivery again (the webhook's signal landed although it spooled a copy): nothing new happened.
  if (state.received.some((r) => r.deliveryId === p.deliveryId)) return state;
  const cb = p.callback;
  if (isUnread(cb)) return hold(state, p, cb.reason);
  const pending: PendingCallback = { ...p, callback: cb };
  const key = callbackKey(cb);
  if (state.seen.includes(key) || shipmentAlreadyApplied(state, cb)) {
    // A copy of a shipment the journey has: recorded against the prescription that has it, whatever ids it lacks.
    const owner = cb.event === 3 ? shipmentOwner(state, cb) : undefined;
    return record(state, p, 'duplicate', undefined, owner);
  }
  let s = { ...state, seen: [...state.seen, key] };
  if (!s.inviteInFlight && evidenceFor(s, cb)) {
    const a = adopt(s, cb, p.at);
    if ('why' in a) return hold(s, p, a.why);
    s = a.state;
  }
  const r = applyCallback(s, pending);
  if (r.kind === 'applied') return drainPending(record(r.state, p, 'applied', undefined, r.resolved));
  if (r.kind === 'reject') return record(s, p, 'ignored', r.why);
  if (r.kind === 'hold') return hold(s, p, r.why);
  if (namesUnknownExam(s, cb) && !s.inviteInFlight && s.meetings.length > 0) {
    return record(s, p, 'foreign', 'not a patient exam of this journey');
  }
  return record({ ...s, pending: [...s.pending, pending] }, p, 'buffered', r.why);
}

export function reduce(state: JourneyState, ev: JourneyEvent): JourneyState {
  const next = step(state, ev);
  return next === state ? state : { ...next, updatedAt: ev.at, version: state.version + 1 };
}

function step(state: JourneyState, ev: JourneyEvent): JourneyState {
  switch (ev.type) {
    case 'catalog_checked':
      return { ...state, catalog: ev.exams };
    case 'invite_started':
      return {
        ...state,
        inviteInFlight: true,
        inviteAttempts: state.inviteAttempts + 1,
        ...(state.ambiguousInvite ? { ambiguousInvite: null } : {}),
      };
    case 'invite_not_created':
      return drainPending({
        ...state,
        inviteInFlight: false,
        ...(state.adoptsEvidence && ev.ambiguousExams ? { ambiguousInvite: ev.ambiguousExams } : {}),
      });
    case 'invite_created': {
      const replaced = ev.reinviteOf !== undefined ? findExam(state, ev.reinviteOf) : undefined;
      const exams = ev.patientExams.map((pe) => newExam(state, pe, ev.meetingUuid, replaced));
      let s: JourneyState = {
        ...state,
        inviteInFlight: false,
        meetings: [
          ...state.meetings,
          {
            meetingUuid: ev.meetingUuid,
            meetingUrl: ev.meetingUrl,
            createdAt: ev.at,
            patientExamIds: exams.map((e) => e.patientExamId),
            remindersSent: 0,
            expiryHandled: false,
          },
        ],
        exams: [...state.exams, ...exams],
      };
      if (replaced) {
        s = updateExam(s, replaced.patientExamId, (e) => ({ ...e, reinvitedAs: exams[0]?.patientExamId ?? null }));
      }
      return drainPending(s);
    }
    case 'preparation_started':
      return { ...state, preparing: true };
    case 'preparation_finished':
      return { ...state, preparing: false };
    case 'attachment_uploaded':
      return updateExam(state, ev.patientExamId, (e) => ({
        ...e,
        attachmentsUploaded: [...e.attachmentsUploaded, ev.kind],
      }));
    case 'answers_submitted':
      return updateExam(state, ev.patientExamId, (e) => ({ ...e, answersSubmitted: e.answersSubmitted + ev.count }));
    case 'callback':
      return settleFinalVerdictWaits(
        receiveCallback(state, { deliveryId: ev.deliveryId, at: ev.at, callback: ev.callback }),
      );
    case 'reminder_sent':
      return {
        ...state,
        meetings: state.meetings.map((m) =>
          m.meetingUuid === ev.meetingUuid ? { ...m, remindersSent: m.remindersSent + 1 } : m,
        ),
      };
    case 'exam_cancelled':
      return updateExam(state, ev.patientExamId, (e) =>
        e.status === 'pending' ? { ...e, status: ev.by === 'clinic' ? 'cancelled' : 'expired', cancelledAt: ev.at } : e,
      );
    case 'expiry_found_verdict':
      // The cancel at the deadline says the provider acted: the verdict's callback was lost on the way.
      return updateExam(state, ev.patientExamId, (e) =>
        e.status === 'pending' ? { ...e, status: ev.status, verdictAt: ev.at, verdictSource: 'cancel_response' } : e,
      );
    case 'expiry_handled':
      return {
        ...state,
        meetings: state.meetings.map((m) => (m.meetingUuid === ev.meetingUuid ? { ...m, expiryHandled: true } : m)),
      };
    case 'prescription_overdue':
      return updateExam(state, ev.patientExamId, (e) => ({ ...e, prescriptionOverdue: true }));
    case 'tracking_overdue':
      return updateExam(state, ev.patientExamId, (e) => ({ ...e, trackingOverdue: true }));
    case 'gave_up_waiting':
      return updateExam(state, ev.patientExamId, (e) => ({ ...e, gaveUpWaiting: ev.what }));
    case 'attention_needed':
      return { ...state, attention: [...state.attention, { ...ev.attention, since: ev.at }] };
    case 'attention_resolved': {
      if (!state.attention.length) return state;
      // A retry of an overdue final verdict waits again, a whole deadline from now.
      const waitAgain = new Set(
        state.attention.filter((a) => a.code === 'final_verdict_overdue').map((a) => a.patientExamId),
      );
      const exams = waitAgain.size
        ? state.exams.map((e) => (waitAgain.has(e.patientExamId) ? { ...e, finalVerdictWaitFrom: ev.at } : e))
        : state.exams;
      return { ...state, exams, attention: [] };
    }
    case 'error_recorded':
      return { ...state, lastError: ev.error };
    case 'journey_failed':
      return { ...state, outcome: 'failed', lastError: ev.error, attention: [], inviteInFlight: false };
    case 'journey_cancelled':
      return { ...state, outcome: 'cancelled', attention: [] };
    case 'journey_abandoned':
      return { ...state, outcome: 'abandoned', attention: [] };
    case 'action_recorded':
      return { ...state, actions: [...state.actions, ev.action] };
    case 'drugs_settled':
      return updateExam(state, ev.patientExamId, (e) => ({ ...e, drugsSettled: true }));
  }
}

/** A final verdict that came for a deferred exam settles the attention its overdue wait raised. */
function settleFinalVerdictWaits(state: JourneyState): JourneyState {
  const settled = (a: Attention) =>
    a.code === 'final_verdict_overdue' &&
    findExam(state, a.patientExamId ?? -1)?.status !== 'Deferred to Medical Director';
  return state.attention.some(settled) ? { ...state, attention: state.attention.filter((a) => !settled(a)) } : state;
}

/** The final verdict's deadline when the journey's input has none (an API older than it started the journey). */
export const FINAL_VERDICT_DEADLINE_DEFAULT_MS = 3 * 86_400_000;

// ---- derived views ----------------------------------------------------------------------------------------------

export type ExamPhase =
  | 'awaiting_consultation'
  | 'awaiting_final_verdict'
  | 'awaiting_reinvite'
  | 'awaiting_prescription'
  | 'awaiting_tracking'
  | 'final';

export function examPhase(state: JourneyState, e: PatientExamState): ExamPhase {
  if (e.status === 'pending') return 'awaiting_consultation';
  if (e.status === 'Deferred to Medical Director' && state.deferredWaits) return 'awaiting_final_verdict';
  if ((e.status === 'Missed' || e.status === 'NA') && e.reinvitedAs === null && reinviteDue(state, e) !== null) {
    return 'awaiting_reinvite';
  }
  if (e.status !== 'Approved' || e.rxType !== 2 || e.gaveUpWaiting) return 'final';
  if (e.prescriptionConfirmedAt === null) return 'awaiting_prescription';
  // A shipment waits for its drug's event 2 (drugs one per event 2): that drug is still to come.
  if (e.fulfilment === 'partner' && e.oneDrugPerEvent2 && state.callbackRules === 2 && awaitsDrug(state, e)) {
    return 'awaiting_prescription';
  }
  if (e.fulfilment === 'partner' && e.prescriptions.some((rx) => rx.tracking === null)) return 'awaiting_tracking';
  if (moreDrugsMayCome(state, e)) return 'awaiting_prescription';
  return 'final';
}

/** Drugs one per event 2, and the grace after the last one has not run out: another drug may still come. */
function moreDrugsMayCome(state: JourneyState, e: PatientExamState): boolean {
  return state.drugsGrace && e.oneDrugPerEvent2 === true && e.lastDrugAt !== undefined && e.drugsSettled !== true;
}

/** How long an exam whose drugs come one per event 2 waits for more after the last (when its input has none). */
export const MORE_DRUGS_GRACE_DEFAULT_MS = 15 * 60_000;

/** Whether an event 3 that may be this exam's is buffered (it waits for the event 2 of its drug). */
function awaitsDrug(state: JourneyState, e: PatientExamState): boolean {
  return state.pending.some(
    (p) =>
      p.callback.event === 3 &&
      (p.callback.patientExamId === undefined || p.callback.patientExamId === e.patientExamId),
  );
}

function reinviteDue(state: JourneyState, e: PatientExamState): number | null {
  if (e.reinviteAttempt >= state.timings.reinviteMaxAttempts || e.verdictAt === null) return null;
  return Date.parse(e.verdictAt) + state.timings.reinviteCoolDownMs;
}

const PHASE_ORDER: ExamPhase[] = [
  'awaiting_consultation',
  'awaiting_final_verdict',
  'awaiting_reinvite',
  'awaiting_prescription',
  'awaiting_tracking',
  'final',
];

export function stageOf(state: JourneyState): JourneyStage {
  if (state.outcome) return state.outcome;
  if (state.attention.length > 0) return 'needs_attention';
  if (state.catalog === null) return 'validating';
  if (state.meetings.length === 0) return 'inviting';
  if (state.preparing) return 'preparing';
  const phases = state.exams.map((e) => examPhase(state, e));
  const first = PHASE_ORDER.find((p) => phases.includes(p)) ?? 'final';
  if (first !== 'final') return first;
  return state.exams.every((e) => e.status === 'cancelled') ? 'cancelled' : 'completed';
}

export function isFinished(state: JourneyState): boolean {
  return TERMINAL_STAGES.includes(stageOf(state));
}

/** Patient exams the service may still cancel, as far as we know. */
export function cancellableExams(state: JourneyState): PatientExamState[] {
  return state.exams.filter((e) => e.status === 'pending');
}

// ---- timers -----------------------------------------------------------------------------------------------------

export type DueAction =
  | { type: 'send_reminder'; meetingUuid: string; patientExamId: number }
  | { type: 'expire_meeting'; meetingUuid: string; patientExamIds: number[] }
  | { type: 'reinvite'; patientExamId: number; examId: number }
  | { type: 'prescription_overdue'; patientExamId: number }
  | { type: 'tracking_overdue'; patientExamId: number }
  | { type: 'final_verdict_overdue'; patientExamId: number }
  | { type: 'drugs_settled'; patientExamId: number }
  | { type: 'give_up'; patientExamId: number; what: 'prescription' | 'tracking' };

interface Scheduled {
  at: number;
  action: DueAction;
}

/** Every timer the journey is running, with the action due when it fires. */
export function schedule(state: JourneyState): Scheduled[] {
  if (state.outcome || state.attention.length > 0) return [];
  const t = state.timings;
  const out: Scheduled[] = [];
  for (const m of state.meetings) {
    const pending = m.patientExamIds.filter((id) => findExam(state, id)?.status === 'pending');
    if (pending.length === 0 || m.expiryHandled) continue;
    const created = Date.parse(m.createdAt);
    const nextReminder = t.remindersMs[m.remindersSent];
    // (A meeting known only from evidence has no uuid to resend with: its expiry still runs.)
    if (nextReminder !== undefined && nextReminder < t.consultationDeadlineMs && m.meetingUuid !== '') {
      out.push({
        at: created + nextReminder,
        action: { type: 'send_reminder', meetingUuid: m.meetingUuid, patientExamId: pending[0]! },
      });
    }
    out.push({
      at: created + t.consultationDeadlineMs,
      action: { type: 'expire_meeting', meetingUuid: m.meetingUuid, patientExamIds: pending },
    });
  }
  for (const e of state.exams) {
    const phase = examPhase(state, e);
    if (phase === 'awaiting_final_verdict') {
      const from = e.finalVerdictWaitFrom ?? e.verdictAt;
      if (from) {
        out.push({
          at: Date.parse(from) + (t.finalVerdictDeadlineMs ?? FINAL_VERDICT_DEADLINE_DEFAULT_MS),
          action: { type: 'final_verdict_overdue', patientExamId: e.patientExamId },
        });
      }
    } else if (phase === 'awaiting_reinvite') {
      out.push({
        at: reinviteDue(state, e)!,
        action: { type: 'reinvite', patientExamId: e.patientExamId, examId: e.examId },
      });
    } else if (phase === 'awaiting_prescription' && e.prescriptionConfirmedAt && moreDrugsMayCome(state, e)) {
      out.push({
        at: Date.parse(e.lastDrugAt!) + (t.moreDrugsGraceMs ?? MORE_DRUGS_GRACE_DEFAULT_MS),
        action: { type: 'drugs_settled', patientExamId: e.patientExamId },
      });
    } else if (phase === 'awaiting_prescription' && e.verdictAt) {
      out.push(...waitFor('prescription', e, Date.parse(e.verdictAt), t));
    } else if (phase === 'awaiting_tracking' && e.prescriptionConfirmedAt) {
      out.push(...waitFor('tracking', e, Date.parse(e.prescriptionConfirmedAt), t));
    }
  }
  return out.sort((a, b) => a.at - b.at);
}

/** The overdue mark (once) and the hard limit of a wait for event 2 (prescription) or event 3 (tracking). */
function waitFor(
  what: 'prescription' | 'tracking',
  e: PatientExamState,
  since: number,
  t: JourneyTimings,
): Scheduled[] {
  const out: Scheduled[] = [];
  const overdue = what === 'prescription' ? e.prescriptionOverdue : e.trackingOverdue;
  if (!overdue) {
    const deadline = what === 'prescription' ? t.prescriptionDeadlineMs : t.trackingDeadlineMs;
    out.push({ at: since + deadline, action: { type: `${what}_overdue`, patientExamId: e.patientExamId } });
  }
  const limit = what === 'prescription' ? t.prescriptionHardLimitMs : t.trackingHardLimitMs;
  out.push({ at: since + limit, action: { type: 'give_up', patientExamId: e.patientExamId, what } });
  return out;
}

export function dueActions(state: JourneyState, now: number): DueAction[] {
  return schedule(state)
    .filter((s) => s.at <= now)
    .map((s) => s.action);
}

/** The line the Temporal UI shows for the journey's timer: what is due when it fires, by ids only (never PHI). */
export function timerSummary(action: DueAction): string {
  switch (action.type) {
    case 'send_reminder':
      return `reminder to the patient (patient exam ${action.patientExamId})`;
    case 'expire_meeting':
      return `consultation deadline (patient exams ${action.patientExamIds.join(', ')})`;
    case 'reinvite':
      return `missed wait over: invite again (patient exam ${action.patientExamId})`;
    case 'prescription_overdue':
      return `prescription overdue (patient exam ${action.patientExamId})`;
    case 'tracking_overdue':
      return `tracking overdue (patient exam ${action.patientExamId})`;
    case 'final_verdict_overdue':
      return `medical director's verdict overdue (patient exam ${action.patientExamId})`;
    case 'drugs_settled':
      return `no more drugs expected (patient exam ${action.patientExamId})`;
    case 'give_up':
      return `give up waiting for the ${action.what} (patient exam ${action.patientExamId})`;
  }
}

export function nextDeadline(state: JourneyState): number | null {
  return schedule(state)[0]?.at ?? null;
}

// ---- what the outside sees ---------------------------------------------------------------------------------------

export interface ExamSnapshot {
  patientExamId: number;
  examId: number;
  examTitle: string;
  rxType: 1 | 2;
  fulfilment: Fulfilment;
  phase: ExamPhase;
  status: ExamStatus;
  rxStatus: string | null;
  verdictAt: string | null;
  verdictSource: PatientExamState['verdictSource'];
  examUrl: string | null;
  reason: string | null;
  providerName: string | null;
  prescriptionOverdue: boolean;
  trackingOverdue: boolean;
  gaveUpWaiting: PatientExamState['gaveUpWaiting'];
  prescriptions: PrescriptionState[];
  attachmentsUploaded: string[];
  answersSubmitted: number;
  reinviteOf: number | null;
  reinvitedAs: number | null;
  cancelledAt: string | null;
}

export interface JourneySnapshot {
  journeyId: string;
  clinicId: string;
  scenario: ScenarioType;
  stage: JourneyStage;
  startedAt: string;
  updatedAt: string;
  meetings: { meetingUuid: string; meetingUrl: string; createdAt: string; remindersSent: number }[];
  exams: ExamSnapshot[];
  deadlines: { at: string; action: DueAction['type']; patientExamId?: number; meetingUuid?: string }[];
  events: ReceivedEvent[];
  attention: Attention[];
  lastError: ErrorFacts | null;
  actions: OperatorAction[];
  /** Attention settled by evidence rather than by an operator, with why. */
  resolvedAttention: ResolvedAttention[];
}

export function snapshot(state: JourneyState): JourneySnapshot {
  return {
    journeyId: state.journeyId,
    clinicId: state.clinicId,
    scenario: state.scenario,
    stage: stageOf(state),
    startedAt: state.startedAt,
    updatedAt: state.updatedAt,
    meetings: state.meetings.map(({ meetingUuid, meetingUrl, createdAt, remindersSent }) => ({
      meetingUuid,
      meetingUrl,
      createdAt,
      remindersSent,
    })),
    exams: state.exams.map((e) => ({
      patientExamId: e.patientExamId,
      examId: e.examId,
      examTitle: e.examTitle,
      rxType: e.rxType,
      fulfilment: e.fulfilment,
      phase: examPhase(state, e),
      status: e.status,
      rxStatus: e.rxStatus,
      verdictAt: e.verdictAt,
      verdictSource: e.verdictSource,
      examUrl: e.examUrl,
      reason: e.reason,
      providerName: e.providerName,
      prescriptionOverdue: e.prescriptionOverdue,
      trackingOverdue: e.trackingOverdue,
      gaveUpWaiting: e.gaveUpWaiting,
      prescriptions: e.prescriptions,
      attachmentsUploaded: e.attachmentsUploaded,
      answersSubmitted: e.answersSubmitted,
      reinviteOf: e.reinviteOf,
      reinvitedAs: e.reinvitedAs,
      cancelledAt: e.cancelledAt,
    })),
    deadlines: schedule(state).map((s) => ({
      at: new Date(s.at).toISOString(),
      action: s.action.type,
      ...('patientExamId' in s.action ? { patientExamId: s.action.patientExamId } : {}),
      ...('meetingUuid' in s.action ? { meetingUuid: s.action.meetingUuid } : {}),
    })),
    events: state.received,
    attention: state.attention,
    lastError: state.lastError,
    actions: state.actions,
    resolvedAttention: state.resolvedAttention,
  };
}

/** The workflow's result: what happened, without PHI. */
export type JourneySummary = Omit<JourneySnapshot, 'events' | 'deadlines'> & {
  endedAt: string;
  eventsApplied: number;
  eventsIgnored: number;
};

export function summary(state: JourneyState, endedAt: string): JourneySummary {
  const { events: _events, deadlines: _deadlines, ...rest } = snapshot(state);
  return {
    ...rest,
    endedAt,
    eventsApplied: state.received.filter((r) => r.disposition === 'applied').length,
    eventsIgnored: state.received.filter((r) => r.disposition !== 'applied').length,
  };
}

/** Search attribute values: no PHI, only ids, stages and statuses. */
export function searchAttributesOf(state: JourneyState) {
  const uniq = (xs: string[]) => [...new Set(xs)].sort();
  return {
    JourneyStage: stageOf(state),
    ExamStatus: uniq(state.exams.map((e) => e.status)),
    RxStatus: uniq(state.exams.flatMap((e) => (e.rxStatus ? [e.rxStatus] : []))),
    NeedsAttention: state.attention.length > 0,
  };
}
