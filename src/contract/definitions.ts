// Messages and search attributes of the patient journey, imported by the workflow and by every client alike.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type { AttachmentRef, PrefilledAnswer } from './journey-request';
import type { JourneyCallback, JourneySnapshot, UnreadCallback } from './journey-types';

export const TASK_QUEUE_DEFAULT = 'patient-journeys';

/** Opaque workflow id: never derived from patient data. */
export function journeyWorkflowId(journeyId: string): string {
  return `journey-${journeyId}`;
}

export const SearchAttr = {
  ClinicId: defineSearchAttributeKey('ClinicId', SearchAttributeType.KEYWORD),
  JourneyStage: defineSearchAttributeKey('JourneyStage', SearchAttributeType.KEYWORD),
  Scenario: defineSearchAttributeKey('Scenario', SearchAttributeType.KEYWORD),
  ExamStatus: defineSearchAttributeKey('ExamStatus', SearchAttributeType.KEYWORD_LIST),
  RxStatus: defineSearchAttributeKey('RxStatus', SearchAttributeType.KEYWORD_LIST),
  NeedsAttention: defineSearchAttributeKey('NeedsAttention', SearchAttributeType.BOOL),
  /** The service's ids of the journey's patient exams: who holds a patient exam, asked before one is adopted. */
  PatientExamIds: defineSearchAttributeKey('PatientExamIds', SearchAttributeType.KEYWORD_LIST),
} as const;
export const SEARCH_ATTRIBUTE_KEYS = Object.values(SearchAttr);

/**
 * A callback as the webhook received it: normalized for the journey (bounded), with the size and digest of the body it
 * was read from. The parsed body (`raw`) stays in the inbox and its dead letters; a journey's history gets it only for
 * a callback held for a person (unread, and small), so a sender cannot grow a history with what it sends.
 */
export interface CallbackSignal {
  /** Unique per received HTTP delivery (the webhook's own id), for the audit trail. */
  deliveryId: string;
  receivedAt: string;
  /** Normalized to the interface's events whatever layout the service used; `unread` is held for a person. */
  callback: JourneyCallback | UnreadCallback;
  /** The body as received: its size in bytes and its SHA-256 (hex). Absent from signals of earlier versions. */
  body?: { bytes: number; sha256: string };
  /** The parsed body: in the inbox always; in a signal only as forJourney leaves it (earlier versions: always). */
  raw?: unknown;
}

/** What a journey's history may take of an unread callback's body, so a person can read it there. */
export const HELD_BODY_MAX_BYTES = 16 * 1024;

/**
 * The signal a journey gets for an inbox entry: without the body, except an unread callback's body of at most
 * HELD_BODY_MAX_BYTES (what a person needs to read it; the webhook keeps larger ones as dead letters instead).
 */
export function forJourney(signal: CallbackSignal): CallbackSignal {
  const { raw, ...rest } = signal;
  const unread = 'unread' in signal.callback;
  if (!unread || raw === undefined || (signal.body?.bytes ?? Infinity) > HELD_BODY_MAX_BYTES) return rest;
  return { ...rest, raw };
}

export const callbackReceived = defineSignal<[CallbackSignal]>('callbackReceived');
/**
 * Asks a journey to publish the ids of the patient exams it holds (PatientExamIds), which journeys on rules before
 * journey-rules-2026-12 did not: the ownership check sends it to those it finds holding patient exams unnamed, and an
 * operator may send it to all of them at once (`temporal workflow signal --name namePatientExams --query ...`).
 */
export const namePatientExams = defineSignal('namePatientExams');
export const snapshotQuery = defineQuery<JourneySnapshot>('snapshot');

export interface CancelRequest extends OperatorRequest {
  /** Cancel only this patient exam; every cancellable one when absent. */
  patientExamId?: number;
  reason?: string;
}
export interface CancelResult {
  cancelled: number[];
  alreadyFinal: { patientExamId: number; status: string }[];
}
export interface ResendRequest extends OperatorRequest {
  patientExamId?: number;
}
export interface ResendResult {
  resent: number[];
}
export interface SubmitAnswersRequest {
  patientExamId: number;
  answers: PrefilledAnswer[];
}
export interface AddAttachmentRequest {
  patientExamId: number;
  attachment: AttachmentRef;
}
export interface OperatorRequest {
  /** Who acted, for the audit trail (an operator name or a ticket; never patient data). */
  actor?: string;
  note?: string;
}

export const cancelUpdate = defineUpdate<CancelResult, [CancelRequest]>('cancel');
export const resendUpdate = defineUpdate<ResendResult, [ResendRequest]>('resend');
export const submitAnswersUpdate = defineUpdate<{ answered: number }, [SubmitAnswersRequest]>('submitAnswers');
export const addAttachmentUpdate = defineUpdate<{ attachmentId: string | null }, [AddAttachmentRequest]>(
  'addAttachment',
);
/** Operator: try again what parked the journey in needs_attention (invite, account setup, lost verdict). */
export const retryUpdate = defineUpdate<{ stage: string }, [OperatorRequest]>('retry');
/** Operator: give up on a parked journey; it ends as abandoned. */
export const abandonUpdate = defineUpdate<{ stage: string }, [OperatorRequest]>('abandon');
