/** The sandbox's in-memory state: invites (meetings), patient exams, callback deliveries. reset() restores the seed. */
import type { ScheduledHandle } from './clock';
import type { CallbackLayout, ServiceLayout } from './layouts';
import { SEED_CLINICS, type SeedClinic } from './seed';

/** `pending` is our name for "before the provider acted" (the spec does not name it). */
export type PatientExamStatus =
  'pending' | 'Approved' | 'Rejected' | 'Deferred to Medical Director' | 'NA' | 'Missed' | 'cancelled';

export type Verdict = 'Approved' | 'Rejected' | 'Deferred to Medical Director' | 'NA';
export const VERDICTS: readonly Verdict[] = ['Approved', 'Rejected', 'Deferred to Medical Director', 'NA'];

export type TestOutcome = 'Approve' | 'Reject' | 'N/A' | 'Prescription Approve' | 'Prescription Reject';

/** How a prescription exam is fulfilled: decides which events follow event 1. */
export type Fulfilment = 'none' | 'partner' | 'urgent_care' | 'own_pharmacy';

export interface CustomPharmacyChoice {
  ncpdpid: string;
  name: string | null;
  address_line_1: string | null;
  address_line_2: string | null;
  city: string | null;
  state: string | null;
  zip_code: string | null;
  phone: string | null;
  type: string | null;
}

export interface StoredAnswer {
  question_id: number;
  no: number;
  question: string;
  /** Text answers and radio answers are strings; checkbox answers are kept as the selected entries. */
  answer: string | string[];
}

export interface StoredAttachment {
  attachment_id: string;
  kind: string;
  file_name: string;
  content_type: string;
  size_bytes: number;
  uploaded_at: string;
}

export interface StoredPrescription {
  prescription_id: number;
  drug_name: string;
  /** The full event 2 item, as sent. */
  item: Record<string, unknown>;
  shipped_at: string | null;
  tracking_number: string | null;
  order_id: string | null;
}
export interface Meeting {
  meeting_uuid: string;
  meeting_url: string;
  clinic_id: number;
  created_at: string;
  patient_exam_ids: number[];
  test_mode: boolean;
  /** Keyword read from the patient's name in test mode; null when none was recognised. */
  test_outcome: TestOutcome | null;
  patient: {
    first_name: string;
    last_name: string;
    email: string;
    phone_number: string;
    dob: string;
    tele_state: string;
    state: string | null;
  };
  webhook_url: string | null;
  additional_data: string | null;
  redirects: { approve: string | null; reject: string | null; na: string | null; missed: string | null };
  /** When the patient started waiting for a provider (control surface); null before. */
  waiting_since: string | null;
  wait_handle?: ScheduledHandle;
  /** The layout this invite's callbacks use (control surface, or `rotate`); the faults' setting when absent. */
  callback_layout?: CallbackLayout;
  /** The layout the operations on this invite answer in (control surface); the faults' setting when absent. */
  service_layout?: ServiceLayout;
}

export interface PatientExamRecord {
  patient_exam_id: number;
  exam_id: number;
  exam_title: string;
  rx_type: number;
  meeting_uuid: string;
  clinic_id: number;
  created_at: string;
  status: PatientExamStatus;
  rx_status: string | null;
  fulfilment: Fulfilment;
  partner_pharmacy_id: number | null;
  order_set_id: string | null;
  provider_pos_selection: number | null;
  custom_pharmacy: CustomPharmacyChoice | null;
  provider_name: string | null;
  reason: string | null;
  exam_url: string | null;
  decided_at: string | null;
  cancelled_at: string | null;
  redirected_to: string | null;
  /** Invite e-mails/texts sent: 1 at invite, +1 per resend. */
  invite_deliveries: number;
  answers: Map<number, StoredAnswer>;
  questionnaire_skipped: boolean;
  attachments: StoredAttachment[];
  prescribed_os_id: number | null;
  prescriptions: StoredPrescription[];
  /** Events emitted for this exam, in emission order (duplicates and retries are in the deliveries log). */
  events_emitted: number[];
  /** Test provider's pending steps, cancelled when the exam is cancelled. */
  handles: ScheduledHandle[];
}

export interface DeliveryAttempt {
  attempt: number;
  at: string;
  /** The receiver's HTTP status; null when no answer came (refused, reset, timeout). */
  status: number | null;
  latency_ms: number;
  /** Slower than the spec's 100 ms acknowledgment limit (configurable). */
  slow: boolean;
  error?: string;
}

export interface DeliveryRecord {
  delivery_id: number;
  receiver: string;
  event: number;
  /** The patient exam the callback is about, whether or not its layout carries the id. */
  patient_exam_id: number;
  /** The prescription it is about (event 3's, or the one drug of a flat event 2), whatever its layout carries. */
  prescription_id?: number;
  /** The layout it was sent in. */
  layout: CallbackLayout;
  /** 1 normally; 2..n for copies sent by the duplicate-callbacks fault. */
  copy: number;
  state: 'scheduled' | 'in_flight' | 'retrying' | 'delivered' | 'failed';
  created_at: string;
  attempts: DeliveryAttempt[];
  payload: Record<string, unknown>;
}

export class SandboxStore {
  readonly clinics: readonly SeedClinic[] = SEED_CLINICS;
  readonly meetings = new Map<string, Meeting>();
  readonly patientExams = new Map<number, PatientExamRecord>();
  readonly deliveries: DeliveryRecord[] = [];
  private nextPatientExamId = 90_001;
  private nextPrescriptionId = 60_001;
  private nextDeliveryId = 1;
  private nextAttachmentId = 1;

  clinicByKey(apiKey: unknown): SeedClinic | undefined {
    return typeof apiKey === 'string' ? this.clinics.find((c) => c.api_key === apiKey) : undefined;
  }

  clinicById(clinicId: number): SeedClinic | undefined {
    return this.clinics.find((c) => c.clinic_id === clinicId);
  }

  patientExam(patientExamId: number): PatientExamRecord | undefined {
    return this.patientExams.get(patientExamId);
  }

  meetingOf(record: PatientExamRecord): Meeting {
    const meeting = this.meetings.get(record.meeting_uuid);
    if (!meeting) throw new Error(`patient exam ${record.patient_exam_id} has no meeting`);
    return meeting;
  }

  allocatePatientExamId(): number {
    return this.nextPatientExamId++;
  }

  allocatePrescriptionId(): number {
    return this.nextPrescriptionId++;
  }

  allocateDeliveryId(): number {
    return this.nextDeliveryId++;
  }

  allocateAttachmentId(): string {
    return `att_${String(this.nextAttachmentId++).padStart(6, '0')}`;
  }

  reset(): void {
    this.meetings.clear();
    this.patientExams.clear();
    this.deliveries.length = 0;
    this.nextPatientExamId = 90_001;
    this.nextPrescriptionId = 60_001;
    this.nextDeliveryId = 1;
    this.nextAttachmentId = 1;
  }
}
