// The clinic API as the demo calls it: JSON requests with the clinic's token (a 429 waits for Retry-After), errors
// that say what the API answered, and the parts of its answers the demo reads.
import { requestJson, sleep, UnreachableError, type Problem } from '../lib/http';

export { UnreachableError };

/** An answer that is not 2xx, with the problem+json details when the API sent them. */
export class HttpError extends Error {
  override name = 'HttpError';
  constructor(
    readonly method: string,
    readonly route: string,
    readonly status: number,
    readonly problem: Problem | undefined,
    bodyText: string,
  ) {
    super(HttpError.describe(method, route, status, problem, bodyText));
  }

  static describe(method: string, route: string, status: number, problem: Problem | undefined, text: string) {
    const head = `${method} ${route} answered ${status}${problem?.title ? ` ${problem.title}` : ''}`;
    const errors = problem?.errors ?? [];
    const fields = errors.map((e) => `\n    - ${e.field}: ${e.message}`).join('');
    const body = text.trim();
    const detail =
      problem?.detail ??
      (body === '' ? '(no body)' : body.startsWith('<') ? '(an HTML page)' : body.split('\n')[0]!.slice(0, 200));
    // A validation detail usually lists the fields already: then the list alone says it better.
    if (errors.length > 0 && detail.includes(errors[0]!.field)) return `${head}:${fields}`;
    return `${head}: ${detail}${fields}`;
  }
}

export class ApiClient {
  constructor(
    readonly base: string,
    private readonly token: string,
  ) {}

  /** JSON request; 429 is retried after Retry-After (a few times), other non-2xx answers throw HttpError. */
  async request<T>(
    method: 'GET' | 'POST',
    route: string,
    options: { body?: unknown; headers?: Record<string, string>; auth?: boolean; timeoutMs?: number } = {},
  ): Promise<{ status: number; body: T }> {
    for (let attempt = 1; ; attempt++) {
      const res = await requestJson(this.base, method, route, {
        ...(options.auth === false ? {} : { token: this.token }),
        body: options.body,
        ...(options.headers ? { headers: options.headers } : {}),
        timeoutMs: options.timeoutMs ?? 20_000,
      });
      if (res.status === 429 && attempt < 5) {
        await sleep(Math.min(res.retryAfterMs ?? 1_000, 10_000));
        continue;
      }
      if (!res.ok) throw new HttpError(method, route.split('?')[0]!, res.status, res.problem, res.text);
      return { status: res.status, body: res.body as T };
    }
  }
}

// ---- what the API answers (the parts the demo reads) -----------------------------------------------------------

export interface CatalogExam {
  examId: number;
  title: string;
  rxType: 1 | 2;
  attachmentsRequired: number;
  attachments: string[];
}

export interface AttachmentRef {
  ref: string;
  kind: string;
  fileName: string;
  contentType: string;
  size: number;
}

export interface ReceivedEvent {
  deliveryId?: string;
  event: number;
  patientExamId: number;
  prescriptionId?: number;
  receivedAt?: string;
  disposition: string;
}

export interface ExamView {
  patientExamId: number;
  examId: number;
  status: string;
  rxStatus: string | null;
  prescriptions: { prescriptionId: number; drugName: string; tracking?: { trackingNumber: string } | null }[];
  prescriptionOverdue?: boolean;
  trackingOverdue?: boolean;
}

export interface JourneyView {
  journeyId: string;
  workflowStatus: string;
  startedAt: string;
  closedAt: string | null;
  source: 'query' | 'result' | 'visibility';
  journey: {
    stage: string;
    exams?: ExamView[];
    events?: ReceivedEvent[];
    attention?: { code: string; message: string }[];
    lastError?: { kind: string; operation: string; message: string } | null;
    examStatus?: string[];
  };
}

export interface StartResponse {
  journeyId: string;
  created: boolean;
}
