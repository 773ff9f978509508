/**
 * The exam service as a test scripts it: every call goes on to a real `ExamServiceApi` (the client, pointed at the
 * sandbox) and is recorded first; a test can make the next calls of an operation fail with the `ExamServiceError` the
 * client raises for such an answer, or hold an answer back as if it were still on the wire. No service logic here:
 * what the service holds and answers is the sandbox's.
 */
import { ExamServiceError, type AccountSetupCode, type ExamServiceErrorKind } from '../../src/exam-service/errors';
import type { ExamServiceApi } from '../../src/exam-service/client';
import type {
  CustomPharmacySearchInput,
  ExamInviteInput,
  ExamQuestionsInput,
  ExamServiceOperation,
  InviteCancelInput,
  InviteResendInput,
  SubmitAnswersInput,
  TreatmentPackagesInput,
  UploadAttachmentInput,
} from '../../src/exam-service/schemas';

export interface ServiceCall {
  operation: ExamServiceOperation;
  input: unknown;
}

const HTTP_STATUS: Partial<Record<ExamServiceErrorKind, number>> = {
  unauthorized: 401,
  account_setup: 401,
  validation: 400,
  server: 500,
};

/** An ExamServiceError as the client classifies the matching answer (or transport failure). */
export function serviceError(
  kind: ExamServiceErrorKind,
  operation: ExamServiceOperation,
  extra: { field?: string; setupCode?: AccountSetupCode } = {},
): ExamServiceError {
  const httpStatus = HTTP_STATUS[kind];
  return new ExamServiceError({
    kind,
    operation,
    ...(httpStatus !== undefined ? { httpStatus } : {}),
    ...extra,
    ...(kind === 'not_sent' ? { causeCode: 'ECONNREFUSED' } : {}),
    ...(kind === 'ambiguous' ? { causeCode: 'UND_ERR_SOCKET' } : {}),
  });
}

export class ScriptedExamService implements ExamServiceApi {
  readonly calls: ServiceCall[] = [];
  readonly #once = new Map<ExamServiceOperation, ExamServiceError[]>();
  readonly #always = new Map<ExamServiceOperation, ExamServiceError>();
  readonly #held = new Map<ExamServiceOperation, Promise<void>>();

  constructor(private readonly service: ExamServiceApi) {}

  /** The next `times` calls of the operation fail with this error (after any already scripted), sending nothing. */
  failNext(operation: ExamServiceOperation, error: ExamServiceError, times = 1): this {
    this.#once.set(operation, [...(this.#once.get(operation) ?? []), ...Array<ExamServiceError>(times).fill(error)]);
    return this;
  }

  /** Every call of the operation fails with this error, sending nothing, until `stopFailing`. */
  failAlways(operation: ExamServiceOperation, error: ExamServiceError): this {
    this.#always.set(operation, error);
    return this;
  }

  stopFailing(operation: ExamServiceOperation): this {
    this.#always.delete(operation);
    this.#once.delete(operation);
    return this;
  }

  /**
   * Holds back the service's answers to the operation (it has done its work) until the returned function is
   * called: the answer is still on the wire.
   */
  hold(operation: ExamServiceOperation): () => void {
    let release!: () => void;
    this.#held.set(operation, new Promise<void>((resolve) => (release = resolve)));
    return () => {
      this.#held.delete(operation);
      release();
    };
  }

  callsOf(operation: ExamServiceOperation): unknown[] {
    return this.calls.filter((c) => c.operation === operation).map((c) => c.input);
  }

  count(operation: ExamServiceOperation): number {
    return this.callsOf(operation).length;
  }

  /** The patient exam ids each call of an operation carried (resend, cancel, upload, submit answers). */
  patientExamIdsOf(operation: ExamServiceOperation): number[] {
    return this.callsOf(operation).map((i) => (i as { patient_exam_id: number }).patient_exam_id);
  }

  examList() {
    return this.#call('exam_list', {}, () => this.service.examList());
  }
  examInvite(input: ExamInviteInput) {
    return this.#call('exam_invite', input, () => this.service.examInvite(input));
  }
  uploadAttachment(input: UploadAttachmentInput) {
    return this.#call('exam_upload_attachment', input, () => this.service.uploadAttachment(input));
  }
  examQuestions(input: ExamQuestionsInput) {
    return this.#call('exam_questions', input, () => this.service.examQuestions(input));
  }
  submitAnswers(input: SubmitAnswersInput) {
    return this.#call('exam_submit_answers', input, () => this.service.submitAnswers(input));
  }
  resendInvite(input: InviteResendInput) {
    return this.#call('exam_invite_resend', input, () => this.service.resendInvite(input));
  }
  cancelInvite(input: InviteCancelInput) {
    return this.#call('exam_invite_cancel', input, () => this.service.cancelInvite(input));
  }
  partnerPharmacyList() {
    return this.#call('partner_pharmacy_list', {}, () => this.service.partnerPharmacyList());
  }
  treatmentPackages(input: TreatmentPackagesInput) {
    return this.#call('partner_pharmacy_treatment_packages', input, () => this.service.treatmentPackages(input));
  }
  customPharmacySearch(input: CustomPharmacySearchInput) {
    return this.#call('custom_pharmacy_search', input, () => this.service.customPharmacySearch(input));
  }

  /** Records the call, throws what is scripted for it, else asks the service (and holds its answer if told to). */
  async #call<T>(operation: ExamServiceOperation, input: unknown, send: () => Promise<T>): Promise<T> {
    this.calls.push({ operation, input });
    await Promise.resolve(); // answers come on a later tick, as over the wire
    const failure = this.#once.get(operation)?.shift() ?? this.#always.get(operation);
    if (failure) throw failure;
    const held = this.#held.get(operation);
    try {
      return await send();
    } finally {
      await held;
    }
  }
}
