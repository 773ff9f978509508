// The exam service as the API uses it: one client per clinic, the clinic's exam list cached briefly (starts check
// against it), and the service's classified failures turned into problems a clinic can act on.
import type { ClinicConfig } from '../config';
import type { ExamServiceApi } from '../exam-service/client';
import { isExamServiceError } from '../exam-service/errors';
import type { Exam } from '../exam-service/schemas';
import type { CatalogEntry } from '../workflows/catalog-rules';
import { ApiProblem } from './problem';

export type ExamServiceFor = (clinic: ClinicConfig) => ExamServiceApi;

export function catalogEntry(e: Exam): CatalogEntry {
  return {
    examId: e.id,
    title: e.title,
    rxType: e.rx_type,
    attachmentsRequired: e.attachments_required,
    attachments: e.attachments,
  };
}

const camel = (field: string) => field.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());

export function examServiceProblem(err: unknown): unknown {
  if (!isExamServiceError(err)) return err;
  switch (err.kind) {
    case 'validation':
    case 'already_final':
      return new ApiProblem(
        400,
        'exam-service-refused',
        `the exam service refused the request${err.field ? ` (field ${camel(err.field)})` : ''}`,
        err.field ? { errors: [{ field: camel(err.field), message: 'refused by the exam service' }] } : {},
      );
    case 'unauthorized':
      return new ApiProblem(502, 'exam-service-unauthorized', "the exam service refused the clinic's api key");
    case 'account_setup':
      return new ApiProblem(
        502,
        'exam-service-account-setup',
        `the clinic's account at the exam service needs setting up (${err.setupCode ?? 'unknown'})`,
      );
    case 'bad_response':
      return new ApiProblem(502, 'exam-service-bad-response', 'the exam service answered outside its contract');
    case 'server':
    case 'not_sent':
    case 'ambiguous':
      return new ApiProblem(503, 'exam-service-unavailable', `the exam service is unavailable (${err.kind}); retry`, {
        headers: { 'retry-after': '10' },
      });
  }
}

export class ClinicExamService {
  readonly #catalogs = new Map<string, { at: number; exams: Exam[] }>();

  constructor(
    private readonly examServiceFor: ExamServiceFor,
    private readonly catalogTtlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  client(clinic: ClinicConfig): ExamServiceApi {
    return this.examServiceFor(clinic);
  }

  /** The clinic's exam list, at most catalogTtlMs old. */
  async exams(clinic: ClinicConfig): Promise<Exam[]> {
    const cached = this.#catalogs.get(clinic.clinicId);
    if (cached && this.now() - cached.at < this.catalogTtlMs) return cached.exams;
    const { exams } = await this.call(() => this.examServiceFor(clinic).examList());
    this.#catalogs.set(clinic.clinicId, { at: this.now(), exams });
    return exams;
  }

  /** Runs a service call; failures become problems. */
  async call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw examServiceProblem(err);
    }
  }
}
