/**
 * A programmable in-memory exam service for workflow tests: it implements the client's `ExamServiceApi`, so the real
 * activities run against it. It keeps a catalog and the patient exams its invites created, records every call, and
 * fails the way the real client does (by throwing classified `ExamServiceError`s) when a test scripts it to.
 */
import {
  ExamInviteRequest,
  formatIssues,
  firstIssueField,
  type Exam,
  type ExamInviteInput,
  type ExamInviteResponse,
  type ExamListResponse,
  type ExamQuestionsInput,
  type ExamQuestionsResponse,
  type ExamServiceOperation,
  type InviteCancelInput,
  type InviteResendInput,
  type InviteResendResponse,
  type PartnerPharmacyListResponse,
  type SubmitAnswersInput,
  type SubmitAnswersResponse,
  type TreatmentPackagesResponse,
  type CustomPharmacySearchResponse,
  type UploadAttachmentInput,
  type UploadAttachmentResponse,
} from '../../src/exam-service/schemas';
import {
  ExamServiceError,
  type AccountSetupCode,
  type ExamServiceErrorKind,
  type FinalExamStatus,
} from '../../src/exam-service/errors';
import type { CancelInviteResult, ExamServiceApi } from '../../src/exam-service/client';

export const GFE_EXAM: Exam = {
  id: 101,
  title: 'Good Faith Exam',
  rx_type: 1,
  price: null,
  attachments_required: 1,
  attachments: [],
};
export const GFE_EXAM_2: Exam = {
  id: 102,
  title: 'IV Therapy Clearance',
  rx_type: 1,
  price: '25.00',
  attachments_required: 1,
  attachments: [],
};
/** A GFE that needs a lab result uploaded (attachments_required 2). */
export const GFE_WITH_LAB: Exam = {
  id: 103,
  title: 'Hormone Therapy Clearance',
  rx_type: 1,
  price: null,
  attachments_required: 2,
  attachments: ['Lab'],
};
export const RX_EXAM: Exam = {
  id: 201,
  title: 'Weight Loss Prescription',
  rx_type: 2,
  price: '49.00',
  attachments_required: 1,
  attachments: [],
};
/** A second prescription exam; not in the default catalog (tests add it to check the one-rx-exam rule). */
export const RX_EXAM_2: Exam = {
  id: 202,
  title: 'Urgent Care Visit',
  rx_type: 2,
  price: null,
  attachments_required: 1,
  attachments: [],
};

export const QUESTIONS = [
  { id: 9001, no: 1, question: 'Do you have any allergies?', response_type: 1 as const, responses: [] },
  { id: 9002, no: 2, question: 'Which medications do you take?', response_type: 1 as const, responses: [] },
];

/** What the fake holds for a patient exam; `state` is what cancel answers from (tests move it). */
export type FakeExamState = 'pending' | 'cancelled' | FinalExamStatus;

export interface FakePatientExam {
  patientExamId: number;
  examId: number;
  examTitle: string;
  meetingUuid: string;
  state: FakeExamState;
}

export interface FakeCall {
  operation: ExamServiceOperation;
  input: unknown;
}

/** A scripted failure: an error to throw, or a function building it from the call's input. */
type Failure = ExamServiceError | ((input: unknown) => ExamServiceError);

/** Builds an ExamServiceError the way the real client classifies the matching answer. */
export function serviceError(
  kind: ExamServiceErrorKind,
  operation: ExamServiceOperation,
  extra: { field?: string; setupCode?: AccountSetupCode; finalStatus?: FinalExamStatus; httpStatus?: number } = {},
): ExamServiceError {
  const httpStatus =
    extra.httpStatus ??
    (
      {
        unauthorized: 401,
        account_setup: 401,
        validation: 400,
        already_final: 400,
        server: 500,
        bad_response: 200,
        not_sent: undefined,
        ambiguous: undefined,
      } as const
    )[kind];
  return new ExamServiceError({
    kind,
    operation,
    ...(httpStatus !== undefined ? { httpStatus } : {}),
    ...(extra.field !== undefined ? { field: extra.field } : {}),
    ...(extra.setupCode !== undefined ? { setupCode: extra.setupCode } : {}),
    ...(extra.finalStatus !== undefined ? { finalStatus: extra.finalStatus } : {}),
    ...(kind === 'not_sent' ? { causeCode: 'ECONNREFUSED' } : {}),
    ...(kind === 'ambiguous' ? { causeCode: 'UND_ERR_SOCKET' } : {}),
  });
}

export class FakeExamService implements ExamServiceApi {
  /** The clinic's exam list; tests may push or remove entries before the journey starts. */
  readonly catalog: Exam[] = [GFE_EXAM, GFE_EXAM_2, GFE_WITH_LAB, RX_EXAM];
  readonly calls: FakeCall[] = [];
  readonly exams = new Map<number, FakePatientExam>();

  #nextPatientExamId = 5001;
  #meetings = 0;
  #attachments = 0;
  readonly #once = new Map<ExamServiceOperation, Failure[]>();
  readonly #always = new Map<ExamServiceOperation, Failure>();
  readonly #gates = new Map<ExamServiceOperation, Promise<void>>();

  // ---- programming ----------------------------------------------------------------------------------------------

  /** The next `times` calls of the operation fail with this error (after any already scripted). */
  failNext(operation: ExamServiceOperation, error: Failure, times = 1): this {
    const queue = this.#once.get(operation) ?? [];
    for (let i = 0; i < times; i++) queue.push(error);
    this.#once.set(operation, queue);
    return this;
  }

  /** Every call of the operation fails with this error until `stopFailing`. */
  failAlways(operation: ExamServiceOperation, error: Failure): this {
    this.#always.set(operation, error);
    return this;
  }

  stopFailing(operation: ExamServiceOperation): this {
    this.#always.delete(operation);
    this.#once.delete(operation);
    return this;
  }

  /**
   * Holds every call of the operation (after recording it) until the returned function is called: the request is
   * "on the wire". Scripted failures apply when it is released.
   */
  hold(operation: ExamServiceOperation): () => void {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    this.#gates.set(operation, gate);
    return () => {
      if (this.#gates.get(operation) === gate) this.#gates.delete(operation);
      release();
    };
  }

  /** The patient exam id the next invite will hand out for its first exam. */
  get nextPatientExamId(): number {
    return this.#nextPatientExamId;
  }

  /** Moves a patient exam at the service (as the provider or an earlier cancel would), without any callback. */
  setExamState(patientExamId: number, state: FakeExamState): void {
    const exam = this.exams.get(patientExamId);
    if (!exam) throw new Error(`the fake has no patient exam ${patientExamId}`);
    exam.state = state;
  }

  // ---- reading --------------------------------------------------------------------------------------------------

  callsOf(operation: ExamServiceOperation): unknown[] {
    return this.calls.filter((c) => c.operation === operation).map((c) => c.input);
  }

  count(operation: ExamServiceOperation): number {
    return this.calls.filter((c) => c.operation === operation).length;
  }

  /** The patient exam ids each call of an operation carried (resend, cancel, upload, submit answers). */
  patientExamIdsOf(operation: ExamServiceOperation): number[] {
    return this.callsOf(operation).map((i) => (i as { patient_exam_id: number }).patient_exam_id);
  }

  // ---- the operations -------------------------------------------------------------------------------------------

  async examList(): Promise<ExamListResponse> {
    await this.#enter('exam_list', {});
    return { exams: this.catalog.map((e) => ({ ...e, attachments: [...e.attachments] })), clinic_id: 77 };
  }

  async examInvite(input: ExamInviteInput): Promise<ExamInviteResponse> {
    this.calls.push({ operation: 'exam_invite', input });
    // The real client refuses a request that breaks the contract before sending it.
    const parsed = ExamInviteRequest.safeParse({ ...input, api_key: 'fake-key' });
    if (!parsed.success) {
      const field = firstIssueField(parsed.error);
      throw new ExamServiceError({
        kind: 'validation',
        operation: 'exam_invite',
        ...(field !== undefined ? { field } : {}),
        message: `exam service exam_invite: validation (refused before sending: ${formatIssues(parsed.error)[0]})`,
      });
    }
    await (this.#gates.get('exam_invite') ?? Promise.resolve());
    this.#throwScripted('exam_invite', input);
    const meetingUuid = `meeting-${++this.#meetings}`;
    const patientExams = input.exams.map((examId) => {
      const entry = this.catalog.find((e) => e.id === examId);
      if (!entry) throw serviceError('validation', 'exam_invite', { field: 'exams' });
      const exam: FakePatientExam = {
        patientExamId: this.#nextPatientExamId++,
        examId,
        examTitle: entry.title,
        meetingUuid,
        state: 'pending',
      };
      this.exams.set(exam.patientExamId, exam);
      return { patient_exam_id: exam.patientExamId, exam_id: examId, exam_title: entry.title };
    });
    return {
      http_code: 200,
      meeting_url: `https://meet.example.test/${meetingUuid}`,
      meeting_uuid: meetingUuid,
      patient_exams: patientExams,
    };
  }

  async uploadAttachment(input: UploadAttachmentInput): Promise<UploadAttachmentResponse> {
    await this.#enter('exam_upload_attachment', input);
    this.#known(input.patient_exam_id, 'exam_upload_attachment');
    return {
      http_code: 200,
      patient_exam_id: input.patient_exam_id,
      attachment_id: `attachment-${++this.#attachments}`,
      kind: input.kind,
    };
  }

  async examQuestions(input: ExamQuestionsInput): Promise<ExamQuestionsResponse> {
    await this.#enter('exam_questions', input);
    if (!('patient_exam_id' in input)) {
      return { exam_id: input.exam_id, questions: QUESTIONS.map(({ no, question }) => ({ no, question })) };
    }
    const exam = this.#known(input.patient_exam_id, 'exam_questions');
    return {
      http_code: 200,
      exam_id: exam.examId,
      meeting_uuid: exam.meetingUuid,
      patient_exam_id: exam.patientExamId,
      questions: QUESTIONS.map((q) => ({ ...q, responses: [] })),
      answers: [],
    };
  }

  async submitAnswers(input: SubmitAnswersInput): Promise<SubmitAnswersResponse> {
    await this.#enter('exam_submit_answers', input);
    this.#known(input.patient_exam_id, 'exam_submit_answers');
    return {
      http_code: 200,
      patient_exam_id: input.patient_exam_id,
      answered: input.answers.length,
      questionnaire_skipped: input.answers.length >= QUESTIONS.length,
    };
  }

  async resendInvite(input: InviteResendInput): Promise<InviteResendResponse> {
    await this.#enter('exam_invite_resend', input);
    this.#known(input.patient_exam_id, 'exam_invite_resend');
    return { http_code: 200, patient_exam_id: input.patient_exam_id, deliveries: 2 };
  }

  async cancelInvite(input: InviteCancelInput): Promise<CancelInviteResult> {
    await this.#enter('exam_invite_cancel', input);
    const exam = this.#known(input.patient_exam_id, 'exam_invite_cancel');
    if (exam.state === 'cancelled') {
      return {
        status: 'cancelled',
        patient_exam_id: exam.patientExamId,
        alreadyCancelled: true,
        serviceMessage: 'Exam status is already cancelled.',
      };
    }
    if (exam.state !== 'pending') {
      throw serviceError('already_final', 'exam_invite_cancel', { finalStatus: exam.state });
    }
    exam.state = 'cancelled';
    return {
      http_code: 200,
      patient_exam_id: exam.patientExamId,
      status: 'cancelled',
      cancelled_at: new Date().toISOString(),
      alreadyCancelled: false,
    };
  }

  async partnerPharmacyList(): Promise<PartnerPharmacyListResponse> {
    await this.#enter('partner_pharmacy_list', {});
    return { pharmacies: [{ pharmacy_id: 7, name: 'Partner Compounding', type: 'compounding' }] };
  }

  async treatmentPackages(): Promise<TreatmentPackagesResponse> {
    await this.#enter('partner_pharmacy_treatment_packages', {});
    return { treatment_packages: [] };
  }

  async customPharmacySearch(): Promise<CustomPharmacySearchResponse> {
    await this.#enter('custom_pharmacy_search', {});
    return { pharmacies: [] };
  }

  // ---- internals ------------------------------------------------------------------------------------------------

  /** Records the call and throws what is scripted for it. Async so every operation answers on a later tick. */
  async #enter(operation: ExamServiceOperation, input: unknown): Promise<void> {
    this.calls.push({ operation, input });
    await (this.#gates.get(operation) ?? Promise.resolve());
    this.#throwScripted(operation, input);
  }

  #throwScripted(operation: ExamServiceOperation, input: unknown): void {
    const failure = this.#once.get(operation)?.shift() ?? this.#always.get(operation);
    if (failure) throw typeof failure === 'function' ? failure(input) : failure;
  }

  /** The service refuses an operation on a patient exam it never created (400 naming the field). */
  #known(patientExamId: number, operation: ExamServiceOperation): FakePatientExam {
    const exam = this.exams.get(patientExamId);
    if (!exam) throw serviceError('validation', operation, { field: 'patient_exam_id' });
    return exam;
  }
}
