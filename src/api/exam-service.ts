// The exam service as the API uses it: one client per clinic, the clinic's exam list cached briefly (starts check
// against it), and the service's classified failures turned into problems a clinic can act on.
import type { ClinicConfig } from '../config';
import type { ExamServiceApi } from '../exam-service/client';
import { isExamServiceError } from '../exam-service/errors';
import type { Exam } from '../exam-service/schemas';
import { ExamCatalogCache } from '../activities/exam-catalog';
import { FAILURES, type FailureKind } from '../contract/failures';
import { ApiProblem } from './problem';

export type ExamServiceFor = (clinic: ClinicConfig) => ExamServiceApi;

export { catalogEntry } from '../activities/exam-catalog';

const camel = (field: string) => field.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());

/** A failure of the exam service as the clinic's API answers it, the same on every route (contract/failures.ts). */
export function serviceProblem(
  kind: FailureKind,
  facts: { operation?: string; field?: string; setupCode?: string; httpStatus?: number },
): ApiProblem {
  const { status, slug, say, retryAfterSeconds } = FAILURES[kind].http;
  const detail = [
    say,
    facts.setupCode && `(${facts.setupCode})`,
    facts.field && `field ${camel(facts.field)}`,
    facts.operation && `in ${facts.operation}`,
    facts.httpStatus && `HTTP ${facts.httpStatus}`,
  ]
    .filter(Boolean)
    .join(', ')
    .replace(', (', ' (');
  return new ApiProblem(status, slug, detail, {
    ...(facts.field ? { errors: [{ field: camel(facts.field), message: say }] } : {}),
    ...(retryAfterSeconds ? { headers: { 'retry-after': String(retryAfterSeconds) } } : {}),
  });
}

export function examServiceProblem(err: unknown): unknown {
  if (!isExamServiceError(err)) return err;
  return serviceProblem(err.kind, {
    operation: err.operation,
    ...(err.field !== undefined ? { field: err.field } : {}),
    ...(err.setupCode !== undefined ? { setupCode: err.setupCode } : {}),
    ...(err.httpStatus !== undefined ? { httpStatus: err.httpStatus } : {}),
  });
}

export class ClinicExamService {
  readonly #catalogs: ExamCatalogCache;

  constructor(
    private readonly examServiceFor: ExamServiceFor,
    catalogTtlMs: number,
    now: () => number = Date.now,
  ) {
    this.#catalogs = new ExamCatalogCache(catalogTtlMs, now);
  }

  client(clinic: ClinicConfig): ExamServiceApi {
    return this.examServiceFor(clinic);
  }

  /** The clinic's exam list, at most catalogTtlMs old. */
  async exams(clinic: ClinicConfig): Promise<Exam[]> {
    return this.#catalogs.exams(clinic.clinicId, () => this.call(() => this.examServiceFor(clinic).examList()));
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
