// The journey's state and the events that change it: the types every part of the state machine shares.
import type { JourneyTimings, ScenarioType } from './journey-request';

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
      /** The patient the service names (patient_email): what proves a patient exam of an invite in doubt is ours. */
      patientEmail?: string;
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
      /** As in event 1. */
      patientEmail?: string;
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
  /** Far more callbacks than an exam sends came on the journey's URL; further ones wait as dead letters. */
  | 'callback_flood'
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

export interface PendingCallback {
  deliveryId: string;
  at: string;
  callback: JourneyCallback;
}

export type AnyCallback = JourneyCallback | UnreadCallback;

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
   * 2: event 3 pairs by rx number first, and a drug-per-event-2 exam waits for the drug a shipment points to.
   */
  callbackRules: 1 | 2;
  /**
   * Deferred to Medical Director is a wait for the final verdict, with its own deadline (false: final, as for
   * journeys started before; their histories replay with it).
   */
  deferredWaits: boolean;
  /**
   * A callback naming an unknown patient exam while the invite is in doubt proves it was created: the exam is adopted
   * (false: such callbacks are foreign, as for journeys started before; their histories replay with it).
   */
  adoptsEvidence: boolean;
  /**
   * Drugs one per event 2: the exam waits a grace period after the last drug before it is final, so a drug whose
   * callback an outage delayed still joins it (false: final at once, as for journeys started before).
   */
  drugsGrace: boolean;
  /**
   * A patient exam of an invite in doubt is adopted only once the workflow proved it this journey's own: the callback
   * names this journey's patient and one of the exams in doubt, and no other journey holds that patient exam (false:
   * adopted on the callback alone, as for journeys started before; their histories replay with it).
   */
  provesOwnership: boolean;
  /**
   * A shipment (event 3) naming a patient exam of the invite in doubt, come before any callback that can prove it this
   * journey's own (the out-of-order delivery: 3, 2, 1), waits for that proof and is applied once it comes (false: held
   * for a person at once, as for journeys started before; their histories replay with it).
   */
  shipmentsAwaitProof: boolean;
  /** The patient exams a callback claims for the invite in doubt, each waiting for the workflow's proof. */
  ownershipChecks: OwnershipCheck[];
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
  | { type: 'drugs_settled'; at: string; patientExamId: number }
  /** The workflow's answer to an ownership check: proven (no `refused`), or why not (the callbacks go to a person). */
  | { type: 'ownership_checked'; at: string; patientExamId: number; refused?: string };

/** A patient exam a callback claims for the invite in doubt: the callback that claims it waits for the proof. */
export interface OwnershipCheck {
  patientExamId: number;
  examId: number;
  deliveryId: string;
}

/** The rules a journey runs by: today's, or those its history was made with (each a patch of the workflow). */
export interface JourneyRules {
  callbackRules: 1 | 2;
  deferredWaits: boolean;
  adoptsEvidence: boolean;
  drugsGrace: boolean;
  provesOwnership: boolean;
  shipmentsAwaitProof: boolean;
}

/** Where an exam is in its journey. */
export type ExamPhase =
  | 'awaiting_consultation'
  | 'awaiting_final_verdict'
  | 'awaiting_reinvite'
  | 'awaiting_prescription'
  | 'awaiting_tracking'
  | 'final';

/** What a journey's timers do when they fire. */
export type DueAction =
  | { type: 'send_reminder'; meetingUuid: string; patientExamId: number }
  | { type: 'expire_meeting'; meetingUuid: string; patientExamIds: number[] }
  | { type: 'reinvite'; patientExamId: number; examId: number }
  | { type: 'prescription_overdue'; patientExamId: number }
  | { type: 'tracking_overdue'; patientExamId: number }
  | { type: 'final_verdict_overdue'; patientExamId: number }
  | { type: 'drugs_settled'; patientExamId: number }
  | { type: 'give_up'; patientExamId: number; what: 'prescription' | 'tracking' };

/** An exam as the outside sees it (the snapshot query, the clinic API). */
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

/** The journey as the outside sees it: the snapshot query's answer. */
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

/** The workflow's result: what happened, without PHI. */
export type JourneySummary = Omit<JourneySnapshot, 'events' | 'deadlines'> & {
  endedAt: string;
  eventsApplied: number;
  eventsIgnored: number;
};
