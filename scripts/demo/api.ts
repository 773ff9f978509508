// The clinic API as the demo calls it: the typed client generated from the API's OpenAPI document
// (clients/typescript), so every path, parameter, body and answer the demo uses is the document's; a 429 waits for
// Retry-After, other errors say what the API answered. /readyz, an operation of the deployment rather than of the
// clinic API, is a plain request.
import { createClinicClient, type ClinicClient, type components } from '../../clients/typescript';
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

/** What an openapi-fetch call resolves to (the parts the demo reads). */
interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

const retryAfterMs = (res: Response) => {
  const seconds = Number(res.headers.get('retry-after'));
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : undefined;
};

export class ApiClient {
  /** The generated client, with the clinic's token. */
  readonly api: ClinicClient;

  constructor(
    readonly base: string,
    private readonly token: string,
  ) {
    this.api = createClinicClient({ baseUrl: base, token });
  }

  /**
   * Runs one call of the generated client (given the request's signal); 429 is retried after Retry-After (a few
   * times). A call that is safe to send again is also sent again on 500, 502, 503 and 504 and when no answer came (a
   * connection closed or reset, a timeout), with backoff and jitter for about a failover's minute: a GET or one with an
   * Idempotency-Key (`idempotent`: the same request again is the same journey), unless `resend` is false (a caller
   * that asks again itself); and one with `resend` true (an upload: a repeat costs at most an unused document, which
   * the API sweeps). Another non-2xx answer throws HttpError, no answer to another call (or after the last attempt)
   * UnreachableError.
   */
  async call<T>(
    what: { method: 'GET' | 'POST'; route: string; idempotent?: boolean; resend?: boolean },
    send: (signal: AbortSignal) => Promise<Answer<T>>,
    timeoutMs = 20_000,
  ): Promise<{ status: number; body: T }> {
    const safe = what.resend ?? (what.method === 'GET' || what.idempotent === true);
    for (let attempt = 1; ; attempt++) {
      let answer: Answer<T>;
      try {
        answer = await send(AbortSignal.timeout(timeoutMs));
      } catch (err) {
        const timedOut = err instanceof Error && err.name === 'TimeoutError';
        const cause = err instanceof Error ? (err.cause as { code?: string } | undefined) : undefined;
        const reason = timedOut ? `no answer in ${timeoutMs / 1000} s` : (cause?.code ?? (err as Error).message);
        if (safe && attempt < IDEMPOTENT_ATTEMPTS) {
          this.#retried(NO_ANSWER);
          await sleep(backoffMs(attempt));
          continue;
        }
        throw new UnreachableError(this.base, reason);
      }
      const { response } = answer;
      if (response.status === 429 && attempt < 5) {
        this.#retried(429);
        await sleep(Math.min(retryAfterMs(response) ?? 1_000, 10_000));
        continue;
      }
      if (safe && retriable(response.status, attempt)) {
        this.#retried(response.status);
        await sleep(backoffMs(attempt, retryAfterMs(response)));
        continue;
      }
      if (!response.ok || answer.data === undefined) {
        const problem =
          typeof answer.error === 'object' && answer.error !== null ? (answer.error as Problem) : undefined;
        const text = typeof answer.error === 'string' ? answer.error : JSON.stringify(answer.error ?? '');
        throw new HttpError(what.method, what.route, response.status, problem, text);
      }
      return { status: response.status, body: answer.data };
    }
  }

  /**
   * A JSON request by path, for the tools that call other routes with this client (npm run journeys:park, the
   * deployment drill); 429 is retried after Retry-After (a few times), and one with an Idempotency-Key header also as
   * `call` retries it; other non-2xx answers throw HttpError.
   */
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
        this.#retried(429);
        await sleep(Math.min(res.retryAfterMs ?? 1_000, 10_000));
        continue;
      }
      const idempotent = Object.keys(options.headers ?? {}).some((h) => h.toLowerCase() === 'idempotency-key');
      if (idempotent && retriable(res.status, attempt)) {
        this.#retried(res.status);
        await sleep(backoffMs(attempt, res.retryAfterMs));
        continue;
      }
      if (!res.ok) throw new HttpError(method, route.split('?')[0]!, res.status, res.problem, res.text);
      return { status: res.status, body: res.body as T };
    }
  }

  /**
   * How many requests were sent again after each status (429 after Retry-After; 5xx for a request safe to send
   * again), and after no answer at all (NO_ANSWER).
   */
  readonly retriedAnswers = new Map<number, number>();

  #retried(status: number): void {
    this.retriedAnswers.set(status, (this.retriedAnswers.get(status) ?? 0) + 1);
  }

  /** A line saying what was sent again, by status, or that nothing was. */
  retriedSummary(): string {
    if (this.retriedAnswers.size === 0) return 'No request had to be sent again.';
    const counts = [...this.retriedAnswers.entries()]
      .sort(([a], [b]) => a - b)
      .map(([s, n]) => `${s === NO_ANSWER ? 'no answer' : s} x${n}`);
    return `Requests sent again after answers: ${counts.join(', ')} (429 after Retry-After; 5xx or no answer only for a read, the same Idempotency-Key or an upload).`;
  }

  /** GET /readyz: resolves when the API is ready, throws HttpError (503 while not) or UnreachableError. */
  async ready(timeoutMs: number): Promise<void> {
    const res = await requestJson(this.base, 'GET', '/readyz', { timeoutMs });
    if (!res.ok) throw new HttpError('GET', '/readyz', res.status, res.problem, res.text);
  }
}

// ---- what the API answers (the parts the demo reads), in the document's own types ------------------------------

type Schemas = components['schemas'];
type Journey = Schemas['Journey'];

export type CatalogExam = Schemas['CatalogExams']['exams'][number];
export type StartBody = Schemas['StartJourneyRequestInput'];
export type AttachmentRef = NonNullable<StartBody['attachments']>[number]['attachment'];
export type StartResponse = Schemas['StartJourneyResponse'];
type Prescription = NonNullable<Journey['journey']['exams']>[number]['prescriptions'][number];
export type ExamView = Pick<
  NonNullable<Journey['journey']['exams']>[number],
  'patientExamId' | 'examId' | 'status' | 'rxStatus' | 'prescriptionOverdue' | 'trackingOverdue'
> & {
  prescriptions: (Pick<Prescription, 'prescriptionId' | 'drugName'> & {
    tracking?: Pick<NonNullable<Prescription['tracking']>, 'trackingNumber'> | null;
  })[];
};
export type ReceivedEvent = Pick<
  NonNullable<Journey['journey']['events']>[number],
  'event' | 'patientExamId' | 'prescriptionId' | 'disposition'
> &
  Partial<Pick<NonNullable<Journey['journey']['events']>[number], 'deliveryId' | 'receivedAt'>>;
export interface JourneyView extends Pick<
  Journey,
  'journeyId' | 'workflowStatus' | 'startedAt' | 'closedAt' | 'source'
> {
  journey: Pick<Journey['journey'], 'stage' | 'attention' | 'lastError' | 'examStatus'> & {
    exams?: ExamView[];
    events?: ReceivedEvent[];
  };
}

/** Answers a request with an Idempotency-Key is sent again on: the server (or what is behind it) failing for now. */
const RETRIED_STATUSES = new Set([500, 502, 503, 504]);
const IDEMPOTENT_ATTEMPTS = 10;
/** The key of retriedAnswers for a request that got no answer (its connection closed or reset, or it timed out). */
const NO_ANSWER = 0;

const retriable = (status: number, attempt: number) => RETRIED_STATUSES.has(status) && attempt < IDEMPOTENT_ATTEMPTS;

/** 0.5 s doubling to 8 s (about a minute over the attempts), or Retry-After; with jitter so clients do not align. */
const backoffMs = (attempt: number, retryAfter?: number) =>
  (retryAfter ?? Math.min(500 * 2 ** (attempt - 1), 8_000)) * (0.75 + Math.random() * 0.5);
