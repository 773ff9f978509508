/**
 * Typed client of the exam service on undici. One method per operation: the input is validated with the request
 * schema (a refused request never leaves the process), POSTed as JSON to `${baseUrl}/api/<operation>` with the
 * api_key in the body, and the answer is classified (errors.ts) and parsed with the response schema.
 *
 * The api_key lives in a private field and is removed from everything an error carries; the client does not log.
 */
import { SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { Agent, Dispatcher, request } from 'undici';
import type { z } from 'zod';
import {
  ExamInviteRequest,
  ExamInviteResponse,
  ExamListRequest,
  ExamListResponse,
  ExamQuestionsRequest,
  ExamQuestionsResponse,
  CustomPharmacySearchRequest,
  CustomPharmacySearchResponse,
  InviteCancelRequest,
  InviteCancelResponse,
  InviteResendRequest,
  InviteResendResponse,
  PartnerPharmacyListRequest,
  PartnerPharmacyListResponse,
  SubmitAnswersRequest,
  SubmitAnswersResponse,
  TreatmentPackagesRequest,
  TreatmentPackagesResponse,
  UploadAttachmentRequest,
  UploadAttachmentResponse,
  firstIssueField,
  formatIssues,
  type CustomPharmacySearchInput,
  type ExamInviteInput,
  type ExamQuestionsInput,
  type ExamServiceOperation,
  type InviteCancelInput,
  type InviteResendInput,
  type SubmitAnswersInput,
  type TreatmentPackagesInput,
  type UploadAttachmentInput,
} from './schemas';
import {
  ExamServiceError,
  classifyServiceAnswer,
  classifyTransportError,
  transportErrorCode,
  type RequestPhase,
} from './errors';

export const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

export interface ExamServiceClientOptions {
  /** e.g. https://exams.example.com; operations are POSTed to `${baseUrl}/api/<operation>`. */
  baseUrl: string;
  apiKey: string;
  /** TCP + TLS handshake limit of the client's own Agent (ignored when `dispatcher` is given). Default 5 s. */
  connectTimeoutMs?: number;
  /** Limit for the status line and headers, and for each pause in the body; default 30 s. */
  requestTimeoutMs?: number;
  /** An undici dispatcher to use instead of the client's own keep-alive Agent; the caller closes it. */
  dispatcher?: Dispatcher;
}

/** Cancel's outcome: the service's record, or (cancelled before) the fact that the exam already is cancelled. */
export type CancelInviteResult =
  | (InviteCancelResponse & { alreadyCancelled: false })
  | { status: 'cancelled'; patient_exam_id: number; alreadyCancelled: true; serviceMessage?: string };

/** The operations, as activities depend on them (tests pass fakes). Each rejects with ExamServiceError. */
export interface ExamServiceApi {
  examList(): Promise<ExamListResponse>;
  examInvite(input: ExamInviteInput): Promise<ExamInviteResponse>;
  uploadAttachment(input: UploadAttachmentInput): Promise<UploadAttachmentResponse>;
  /** Either request form; either response layout (see isPatientBoundQuestions). */
  examQuestions(input: ExamQuestionsInput): Promise<ExamQuestionsResponse>;
  submitAnswers(input: SubmitAnswersInput): Promise<SubmitAnswersResponse>;
  resendInvite(input: InviteResendInput): Promise<InviteResendResponse>;
  /** Resolves `alreadyCancelled: true` when the exam was cancelled before; rejects already_final after a verdict. */
  cancelInvite(input: InviteCancelInput): Promise<CancelInviteResult>;
  partnerPharmacyList(): Promise<PartnerPharmacyListResponse>;
  treatmentPackages(input: TreatmentPackagesInput): Promise<TreatmentPackagesResponse>;
  /** Either request form; either response layout (see searchResultPharmacies). */
  customPharmacySearch(input: CustomPharmacySearchInput): Promise<CustomPharmacySearchResponse>;
}

const PHASE_RANK: Record<RequestPhase, number> = { queued: 0, dispatched: 1, sent: 2, responded: 3 };

// Handler callbacks (legacy and current undici handler API) that tell how far the request got.
const PHASE_OF_CALLBACK: Readonly<Record<string, RequestPhase>> = {
  onConnect: 'dispatched',
  onRequestStart: 'dispatched',
  onRequestSent: 'sent',
  onResponseStarted: 'responded',
  onHeaders: 'responded',
  onResponseStart: 'responded',
  onUpgrade: 'responded',
  onRequestUpgrade: 'responded',
};

/**
 * Wraps one request's handler to record its phase, so a transport failure can be told apart: queued (never on a
 * socket: not sent) from dispatched or later (possibly read by the service: ambiguous).
 */
class PhaseRecorder extends Dispatcher {
  phase: RequestPhase = 'queued';

  constructor(private readonly inner: Dispatcher) {
    super();
  }

  override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    return this.inner.dispatch(options, this.observe(handler));
  }

  private advance(to: RequestPhase): void {
    if (PHASE_RANK[to] > PHASE_RANK[this.phase]) this.phase = to;
  }

  private observe(handler: Dispatcher.DispatchHandler): Dispatcher.DispatchHandler {
    return new Proxy(handler, {
      get: (target, key, receiver) => {
        const value: unknown = Reflect.get(target, key, receiver);
        const phase = typeof key === 'string' ? PHASE_OF_CALLBACK[key] : undefined;
        if (typeof value !== 'function') {
          // undici reports the end of the write only to handlers that define onRequestSent.
          return key === 'onRequestSent' ? () => this.advance('sent') : value;
        }
        return (...args: unknown[]): unknown => {
          if (phase !== undefined) this.advance(phase);
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
  }
}

interface Exchange {
  status: number;
  /** Parsed JSON, or undefined when the body is not JSON. */
  json: unknown;
  text: string;
}

const NOT_JSON = Symbol('not json');

export class ExamServiceClient implements ExamServiceApi {
  readonly #apiKey: string;
  readonly #baseUrl: string;
  readonly #dispatcher: Dispatcher;
  readonly #ownsDispatcher: boolean;
  readonly #connectTimeoutMs: number;
  readonly #requestTimeoutMs: number;

  constructor(options: ExamServiceClientOptions) {
    if (options.apiKey === '') throw new TypeError('ExamServiceClient: apiKey must not be empty');
    const base = new URL(options.baseUrl);
    if (base.protocol !== 'http:' && base.protocol !== 'https:') {
      throw new TypeError('ExamServiceClient: baseUrl must be http(s)');
    }
    this.#baseUrl = base.href.replace(/\/+$/, '');
    this.#apiKey = options.apiKey;
    this.#connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    this.#requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.#ownsDispatcher = options.dispatcher === undefined;
    this.#dispatcher =
      options.dispatcher ??
      new Agent({
        connect: { timeout: this.#connectTimeoutMs },
        headersTimeout: this.#requestTimeoutMs,
        bodyTimeout: this.#requestTimeoutMs,
        keepAliveTimeout: 4_000,
        keepAliveMaxTimeout: 60_000,
      });
  }

  /** Closes the client's own Agent (a dispatcher passed in stays open). */
  async close(): Promise<void> {
    if (this.#ownsDispatcher) await this.#dispatcher.close();
  }

  examList(): Promise<ExamListResponse> {
    return this.#call('exam_list', ExamListRequest, {}, ExamListResponse);
  }

  examInvite(input: ExamInviteInput): Promise<ExamInviteResponse> {
    return this.#call('exam_invite', ExamInviteRequest, input, ExamInviteResponse);
  }

  uploadAttachment(input: UploadAttachmentInput): Promise<UploadAttachmentResponse> {
    return this.#call('exam_upload_attachment', UploadAttachmentRequest, input, UploadAttachmentResponse);
  }

  examQuestions(input: ExamQuestionsInput): Promise<ExamQuestionsResponse> {
    return this.#call('exam_questions', ExamQuestionsRequest, input, ExamQuestionsResponse);
  }

  submitAnswers(input: SubmitAnswersInput): Promise<SubmitAnswersResponse> {
    return this.#call('exam_submit_answers', SubmitAnswersRequest, input, SubmitAnswersResponse);
  }

  /** Pass the invite's meeting_uuid when known: the live service expects it beside the patient exam. */
  resendInvite(input: InviteResendInput): Promise<InviteResendResponse> {
    return this.#call('exam_invite_resend', InviteResendRequest, input, InviteResendResponse);
  }

  async cancelInvite(input: InviteCancelInput): Promise<CancelInviteResult> {
    const outcome = await this.#exchange('exam_invite_cancel', InviteCancelRequest, input);
    const answer = classifyServiceAnswer({ operation: 'exam_invite_cancel', ...this.#errorView(outcome) });
    if (answer.type === 'already_cancelled') {
      return {
        status: 'cancelled',
        patient_exam_id: input.patient_exam_id,
        alreadyCancelled: true,
        ...(answer.serviceMessage !== undefined ? { serviceMessage: answer.serviceMessage } : {}),
      };
    }
    if (answer.type === 'failure') throw answer.error;
    const record = this.#parseSuccess('exam_invite_cancel', outcome, InviteCancelResponse);
    return { ...record, alreadyCancelled: false };
  }

  partnerPharmacyList(): Promise<PartnerPharmacyListResponse> {
    return this.#call('partner_pharmacy_list', PartnerPharmacyListRequest, {}, PartnerPharmacyListResponse);
  }

  /** Sends each id in both forms, the document's and the live list's (pharmacy_ids, exam_ids). */
  treatmentPackages(input: TreatmentPackagesInput): Promise<TreatmentPackagesResponse> {
    return this.#call(
      'partner_pharmacy_treatment_packages',
      TreatmentPackagesRequest,
      { pharmacy_ids: [input.pharmacy_id], exam_ids: [input.exam_id], ...input },
      TreatmentPackagesResponse,
    );
  }

  customPharmacySearch(input: CustomPharmacySearchInput): Promise<CustomPharmacySearchResponse> {
    return this.#call('custom_pharmacy_search', CustomPharmacySearchRequest, input, CustomPharmacySearchResponse);
  }

  async #call<T>(
    operation: ExamServiceOperation,
    requestSchema: z.ZodType,
    input: object,
    responseSchema: z.ZodType<T>,
  ): Promise<T> {
    const exchange = await this.#exchange(operation, requestSchema, input);
    const answer = classifyServiceAnswer({ operation, ...this.#errorView(exchange) });
    // already_cancelled is only produced for cancel, which handles it itself.
    if (answer.type !== 'success') {
      throw answer.type === 'failure' ? answer.error : new ExamServiceError({ kind: 'bad_response', operation });
    }
    return this.#parseSuccess(operation, exchange, responseSchema);
  }

  /** Validates, sends and reads one operation; transport failures become not_sent / ambiguous. */
  async #exchange(operation: ExamServiceOperation, requestSchema: z.ZodType, input: object): Promise<Exchange> {
    const parsed = requestSchema.safeParse({ ...input, api_key: this.#apiKey });
    if (!parsed.success) {
      const field = firstIssueField(parsed.error);
      const first = formatIssues(parsed.error)[0] ?? 'invalid request';
      throw new ExamServiceError({
        kind: 'validation',
        operation,
        ...(field !== undefined ? { field: this.#redact(field) } : {}),
        message: this.#redact(`exam service ${operation}: validation (refused before sending: ${first})`),
      });
    }

    const recorder = new PhaseRecorder(this.#dispatcher);
    const deadline = new AbortController();
    // Caps the whole exchange: undici's body timeout only bounds each pause, a trickling body could last forever.
    const timer = setTimeout(
      () => deadline.abort(new DeadlineExceeded()),
      this.#connectTimeoutMs + this.#requestTimeoutMs,
    );
    try {
      return await traced(operation, async (span) => {
        const response = await request(`${this.#baseUrl}/api/${operation}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json' },
          body: JSON.stringify(parsed.data),
          dispatcher: recorder,
          headersTimeout: this.#requestTimeoutMs,
          bodyTimeout: this.#requestTimeoutMs,
          signal: deadline.signal,
        });
        span.setAttribute('http.response.status_code', response.statusCode);
        const text = await response.body.text();
        return { status: response.statusCode, json: parseJson(text), text };
      });
    } catch (err) {
      throw this.#transportError(operation, err, recorder.phase);
    } finally {
      clearTimeout(timer);
    }
  }

  #transportError(operation: ExamServiceOperation, err: unknown, phase: RequestPhase): ExamServiceError {
    const kind = classifyTransportError(err, phase);
    const code = transportErrorCode(err);
    const detail = err instanceof Error ? err.message : String(err);
    return new ExamServiceError({
      kind,
      operation,
      ...(code !== undefined ? { causeCode: code } : {}),
      message: this.#redact(
        `exam service ${operation}: ${kind} (${code ?? 'transport error'} after ${phase}: ${detail})`,
      ),
      cause: err,
    });
  }

  /** The answer as the classifier sees it: the api_key removed from the body and the text. */
  #errorView(exchange: Exchange): { httpStatus: number; body: unknown; text?: string } {
    if (exchange.json === NOT_JSON)
      return { httpStatus: exchange.status, body: undefined, text: this.#redact(exchange.text) };
    return { httpStatus: exchange.status, body: this.#redactDeep(exchange.json) };
  }

  #parseSuccess<T>(operation: ExamServiceOperation, exchange: Exchange, schema: z.ZodType<T>): T {
    const parsed = exchange.json === NOT_JSON ? undefined : schema.safeParse(exchange.json);
    if (parsed?.success) return parsed.data;
    const field = parsed === undefined ? undefined : firstIssueField(parsed.error);
    const reason = parsed === undefined ? 'body is not JSON' : (formatIssues(parsed.error)[0] ?? 'invalid body');
    throw new ExamServiceError({
      kind: 'bad_response',
      operation,
      httpStatus: exchange.status,
      ...(field !== undefined ? { field: this.#redact(field) } : {}),
      message: this.#redact(`exam service ${operation}: bad_response (HTTP ${exchange.status}: ${reason})`),
    });
  }

  #redact(text: string): string {
    return text.split(this.#apiKey).join('[redacted]');
  }

  #redactDeep(value: unknown): unknown {
    if (typeof value === 'string') return this.#redact(value);
    if (Array.isArray(value)) return value.map((v) => this.#redactDeep(v));
    if (typeof value === 'object' && value !== null) {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [this.#redact(k), this.#redactDeep(v)] as const));
    }
    return value;
  }
}

/**
 * A client span around one call (a no-op without a tracer provider): method, route and status only, never the URL's
 * host or query, the api_key or a body. The operation names a fixed route.
 */
function traced<T>(operation: ExamServiceOperation, call: (span: Span) => Promise<T>): Promise<T> {
  const route = `/api/${operation}`;
  return trace
    .getTracer('patient-journey-engine/exam-service')
    .startActiveSpan(
      `POST ${route}`,
      { kind: SpanKind.CLIENT, attributes: { 'http.request.method': 'POST', 'url.template': route } },
      async (span) => {
        try {
          return await call(span);
        } catch (err) {
          // The error's class only: its message may quote the service.
          span.setStatus({ code: SpanStatusCode.ERROR });
          span.setAttribute('error.type', err instanceof Error ? err.name : 'Error');
          throw err;
        } finally {
          span.end();
        }
      },
    );
}

class DeadlineExceeded extends Error {
  readonly code = 'DEADLINE_EXCEEDED';
  constructor() {
    super('exam service call exceeded its deadline');
    this.name = 'DeadlineExceeded';
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return NOT_JSON;
  }
}
