// What activities take and give back: plain, serializable, free of secrets. The workflow defines this contract;
// src/activities implements it (so the workflows never import from the activities).
import type { AttachmentRef, JourneyInput, PrefilledAnswer } from './journey-request';
import type { CatalogEntry } from './catalog-rules';
import type { JourneyStage } from './journey-types';

/** ApplicationFailure type names raised by activities; the workflow decides from these alone. */
export const FailureType = {
  unauthorized: 'ExamService.unauthorized',
  account_setup: 'ExamService.account_setup',
  validation: 'ExamService.validation',
  already_final: 'ExamService.already_final',
  server: 'ExamService.server',
  not_sent: 'ExamService.not_sent',
  ambiguous: 'ExamService.ambiguous',
  bad_response: 'ExamService.bad_response',
  attachment_missing: 'Journey.attachment_missing',
  notification_rejected: 'Journey.notification_rejected',
} as const;
export type FailureTypeName = (typeof FailureType)[keyof typeof FailureType];

/** Facts an activity failure carries in its details (no PHI, no secret). */
export interface FailureFacts {
  kind: string;
  operation: string;
  httpStatus?: number;
  field?: string;
  setupCode?: string;
  finalStatus?: string;
}

export interface CreateInviteInput {
  input: JourneyInput;
  examIds: number[];
}
export interface CreateInviteResult {
  meetingUuid: string;
  meetingUrl: string;
  patientExams: { patientExamId: number; examId: number; examTitle: string }[];
}

export interface CancelInviteResult {
  outcome: 'cancelled' | 'already_cancelled' | 'already_final';
  finalStatus?: 'Approved' | 'Rejected' | 'Deferred to Medical Director';
  cancelledAt?: string;
}

export interface SubmitAnswersInput {
  clinicId: string;
  meetingUuid: string;
  patientExamId: number;
  answers: PrefilledAnswer[];
}

export interface UploadAttachmentInput {
  clinicId: string;
  patientExamId: number;
  attachment: AttachmentRef;
}

export interface ExamNotification {
  type: 'journey.updated';
  journeyId: string;
  clinicId: string;
  sequence: number;
  stage: JourneyStage;
  occurredAt: string;
  exams: {
    patientExamId: number;
    examId: number;
    status: string;
    rxStatus: string | null;
    prescriptionOverdue: boolean;
    trackingOverdue: boolean;
    gaveUpWaiting: string | null;
    prescriptions: { prescriptionId: number; shipped: boolean }[];
  }[];
  attention: { code: string; message: string }[];
  lastError: { kind: string; operation: string; message: string } | null;
}

export interface NotifyClinicInput {
  url: string;
  notification: ExamNotification;
}

/**
 * What `sendInvite` has Temporal record before the invite goes out. An attempt that timed out without it never reached
 * the service (its task was lost on the way to a worker, or the worker stopped first): sending again is safe.
 */
export const INVITE_SENDING = 'sending the invite';

/**
 * Who holds a patient exam. Holders are found by their PatientExamIds, or read from a journey that holds patient exams
 * without naming them (one on earlier rules); empty `workflowIds` proves nothing while `unknown` is set.
 */
export interface PatientExamHolders {
  workflowIds: string[];
  /**
   * Why the check could not tell (no patient data, no other journey's id: it may be another clinic's), and when asking
   * again may tell: visibility could not be read, or journeys that hold patient exams have not named them yet.
   */
  unknown?: { reason: string; retryAfterMs: number };
}

export interface JourneyActivities {
  getExamCatalog(clinicId: string): Promise<CatalogEntry[]>;
  /** The invite as journeys started before INVITE_SENDING call it (no record before sending). */
  createInvite(req: CreateInviteInput): Promise<CreateInviteResult>;
  /** The invite, once Temporal has recorded INVITE_SENDING for this attempt (see there). */
  sendInvite(req: CreateInviteInput): Promise<CreateInviteResult>;
  /** attachmentId: the service's id for the upload, null when its answer named none. */
  uploadAttachment(req: UploadAttachmentInput): Promise<{ attachmentId: string | null }>;
  submitAnswers(req: SubmitAnswersInput): Promise<{ answered: number }>;
  /** meetingUuid: the invite's meeting, sent beside the patient exam as the live service expects (absent in old histories). */
  resendInvite(req: {
    clinicId: string;
    patientExamId: number;
    meetingUuid?: string;
  }): Promise<{ deliveries: number | null }>;
  cancelInvite(req: { clinicId: string; patientExamId: number }): Promise<CancelInviteResult>;
  notifyClinic(req: NotifyClinicInput): Promise<{ status: number }>;
  /**
   * The journeys other than the asking one (its workflow id) that hold a patient exam, running or closed: asked before
   * a journey in doubt adopts the patient exam a callback names. `unknown` when that cannot be told yet.
   */
  findPatientExamHolders(req: { patientExamId: number; workflowId: string }): Promise<PatientExamHolders>;
  /** Retention: the journey's uploaded documents deleted from the attachment store (after the journey's grace). */
  deleteAttachments(req: { journeyId: string; refs: string[] }): Promise<{ deleted: number }>;
}
