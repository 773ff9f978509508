/**
 * The exam service's failures, classified once. Everything downstream (retries, the journey, the clinic API) decides
 * from `kind` alone:
 *
 * - unauthorized    401 `Unauthorized access.` (or 403): the api_key is wrong. Needs a person.
 * - account_setup   401 onboarding messages (`setupCode`): the clinic must finish setup in the portal. Needs a person.
 * - validation      400 (and other 4xx): the request was refused; `field` names the culprit when known. Not retryable.
 * - already_final   cancel refused because the exam has a verdict (`finalStatus`). Not retryable.
 * - server          5xx (and 408/429): the service failed or shed load. Retryable.
 * - not_sent        the request never left this process for a socket. Retrying cannot duplicate anything.
 * - ambiguous       the request may have reached the service but no usable answer came back. Retrying may duplicate.
 * - bad_response    a success status whose body breaks the contract (`field` names the first bad field).
 */
import { requestFieldNames, type ExamServiceOperation } from './schemas';

export const EXAM_SERVICE_ERROR_KINDS = [
  'unauthorized',
  'account_setup',
  'validation',
  'already_final',
  'server',
  'not_sent',
  'ambiguous',
  'bad_response',
] as const;
export type ExamServiceErrorKind = (typeof EXAM_SERVICE_ERROR_KINDS)[number];

export type AccountSetupCode = 'no_provider_for_state' | 'agreements_unsigned' | 'prescriptive_contract_unsigned';
export type FinalExamStatus = 'Approved' | 'Rejected' | 'Deferred to Medical Director';

/** The spec's onboarding 401 messages, verbatim. */
export const ACCOUNT_SETUP_MESSAGES: Readonly<Record<AccountSetupCode, string>> = {
  no_provider_for_state: 'Need to add Patient Care Provider via the service Portal!',
  agreements_unsigned: 'You need to signed docusign and signed rx',
  prescriptive_contract_unsigned: 'Need to sign Prescriptive Services Contract via the service Portal!',
};

/** The spec's cancel refusals for exams that already have a verdict, verbatim. */
export const CANCEL_FINAL_MESSAGES: Readonly<Record<FinalExamStatus, string>> = {
  Approved: 'Exam status is already approved.',
  Rejected: 'Exam status is already rejected.',
  'Deferred to Medical Director': 'Exam status is already Deferred to Medical Director.',
};

export const UNAUTHORIZED_MESSAGE = 'Unauthorized access.';

// Matched as case-insensitive substrings: the distinctive part survives rewording, punctuation and typo fixes.
const ACCOUNT_SETUP_MARKERS: readonly (readonly [AccountSetupCode, string])[] = [
  ['no_provider_for_state', 'patient care provider'],
  ['agreements_unsigned', 'docusign'],
  ['prescriptive_contract_unsigned', 'prescriptive services contract'],
];
const CANCEL_FINAL_MARKERS: readonly (readonly [FinalExamStatus, string])[] = [
  ['Approved', 'already approved'],
  ['Rejected', 'already rejected'],
  ['Deferred to Medical Director', 'deferred to medical director'],
];
// "already cancelled", "has already been canceled", "status is cancelled"; never "cannot be cancelled".
const ALREADY_CANCELLED =
  /already\s+(?:been\s+)?cancel{1,2}ed|status\s+is\s+(?:already\s+)?cancel{1,2}ed|^\s*cancel{1,2}ed\.?\s*$/i;

export interface ExamServiceErrorDetails {
  kind: ExamServiceErrorKind;
  operation: ExamServiceOperation;
  /** Defaults to a description built from the other details. Must never contain the api_key. */
  message?: string;
  httpStatus?: number;
  field?: string;
  setupCode?: AccountSetupCode;
  finalStatus?: FinalExamStatus;
  serviceMessage?: string;
  /** Code of the transport failure (ECONNREFUSED, UND_ERR_HEADERS_TIMEOUT, ...). */
  causeCode?: string;
  cause?: unknown;
}

/**
 * A failed exam service call. The message carries the classification, never the service's own text (which may hold
 * PHI): that is in `serviceMessage`, with the api_key removed.
 */
export class ExamServiceError extends Error {
  readonly kind: ExamServiceErrorKind;
  readonly operation: ExamServiceOperation;
  readonly httpStatus?: number;
  readonly field?: string;
  readonly setupCode?: AccountSetupCode;
  readonly finalStatus?: FinalExamStatus;
  readonly serviceMessage?: string;
  readonly causeCode?: string;

  constructor(details: ExamServiceErrorDetails) {
    super(details.message ?? describe(details), details.cause === undefined ? undefined : { cause: details.cause });
    this.kind = details.kind;
    this.operation = details.operation;
    // Only defined details become properties, so serialized errors stay small.
    if (details.httpStatus !== undefined) this.httpStatus = details.httpStatus;
    if (details.field !== undefined) this.field = details.field;
    if (details.setupCode !== undefined) this.setupCode = details.setupCode;
    if (details.finalStatus !== undefined) this.finalStatus = details.finalStatus;
    if (details.serviceMessage !== undefined) this.serviceMessage = details.serviceMessage;
    if (details.causeCode !== undefined) this.causeCode = details.causeCode;
  }

  get retryable(): boolean {
    return isRetryable(this);
  }

  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      message: this.message,
      kind: this.kind,
      operation: this.operation,
      httpStatus: this.httpStatus,
      field: this.field,
      setupCode: this.setupCode,
      finalStatus: this.finalStatus,
      serviceMessage: this.serviceMessage,
      causeCode: this.causeCode,
    };
  }
}
ExamServiceError.prototype.name = 'ExamServiceError';

function describe(d: ExamServiceErrorDetails): string {
  const facts = [
    d.httpStatus !== undefined ? `HTTP ${d.httpStatus}` : undefined,
    d.field !== undefined ? `field ${d.field}` : undefined,
    d.setupCode,
    d.finalStatus !== undefined ? `exam already ${d.finalStatus}` : undefined,
    d.causeCode,
  ].filter((f): f is string => f !== undefined);
  return `exam service ${d.operation}: ${d.kind}${facts.length > 0 ? ` (${facts.join(', ')})` : ''}`;
}

export function isExamServiceError(err: unknown): err is ExamServiceError {
  return err instanceof ExamServiceError;
}

/** Safe to try again: nothing was sent, or the service failed on its side. Ambiguous needs idempotency first. */
export function isRetryable(err: unknown): boolean {
  return err instanceof ExamServiceError && (err.kind === 'not_sent' || err.kind === 'server');
}

// ---------------------------------------------------------------------------------------------------------------
// Service answers

/** What a response means before its body is checked against the success schema. */
export type ServiceOutcome =
  | { type: 'success' }
  | { type: 'already_cancelled'; serviceMessage?: string }
  | { type: 'failure'; error: ExamServiceError };

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

function statusFromBody(body: Record<string, unknown> | undefined): number | undefined {
  const code = body?.http_code;
  if (typeof code === 'number' && Number.isInteger(code)) return code;
  if (typeof code === 'string' && /^\d{3}$/.test(code)) return Number(code);
  return undefined;
}

/** The service's own words: error_message, else message/error, else the non-JSON text. */
function messageFromBody(body: Record<string, unknown> | undefined, text: string | undefined): string | undefined {
  for (const key of ['error_message', 'message', 'error']) {
    const value = body?.[key];
    if (typeof value === 'string' && value.trim() !== '') return value;
  }
  if (body === undefined && text !== undefined && text.trim() !== '') return text;
  return undefined;
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The field a refusal blames: a `field` property, the first key of an `errors` object, or a request field named in
 * the message (longest names first, so pharmacy_state wins over state; "phone number" matches phone_number).
 */
export function fieldFromBody(
  body: Record<string, unknown> | undefined,
  message: string | undefined,
  knownFields: readonly string[],
): string | undefined {
  for (const key of ['field', 'error_field']) {
    const value = body?.[key];
    if (typeof value === 'string' && value.trim() !== '') return value;
  }
  const errors = asRecord(body?.errors);
  const firstKey = errors === undefined ? undefined : Object.keys(errors)[0];
  if (firstKey !== undefined) return firstKey;
  if (message === undefined) return undefined;
  const candidates = [...knownFields].filter((f) => f !== 'api_key').sort((a, b) => b.length - a.length);
  for (const name of candidates) {
    const pattern = new RegExp(`(?<![A-Za-z0-9_])${escapeRegExp(name).replace(/_/g, '[_ ]')}(?![A-Za-z0-9_])`, 'i');
    if (pattern.test(message)) return name;
  }
  return undefined;
}

export interface ServiceAnswer {
  operation: ExamServiceOperation;
  /** The HTTP status line's code. */
  httpStatus: number;
  /** The parsed JSON body, or undefined when the body was not JSON. */
  body: unknown;
  /** The raw body text (read only when the body was not JSON). */
  text?: string;
}

/**
 * Classifies an answer from both the HTTP status and the body: some integrations answer HTTP 200 with an error in
 * the body, so a body http_code >= 400 counts as the status. Callers must pass a body already cleared of the api_key.
 */
export function classifyServiceAnswer(answer: ServiceAnswer): ServiceOutcome {
  const body = asRecord(answer.body);
  const bodyStatus = statusFromBody(body);
  const status =
    answer.httpStatus >= 400
      ? answer.httpStatus
      : bodyStatus !== undefined && bodyStatus >= 400
        ? bodyStatus
        : answer.httpStatus;
  if (status >= 200 && status < 300) return { type: 'success' };

  const { operation } = answer;
  const serviceMessage = messageFromBody(body, answer.text);
  const lower = serviceMessage?.toLowerCase() ?? '';
  const base = { operation, httpStatus: status, ...(serviceMessage !== undefined ? { serviceMessage } : {}) };
  const fail = (details: Omit<ExamServiceErrorDetails, 'operation'>): ServiceOutcome => ({
    type: 'failure',
    error: new ExamServiceError({ ...base, ...details }),
  });

  if (status === 401 || status === 403) {
    // Onboarding messages come with 401 on the invite; matched on every operation, they can only mean setup.
    const setup = ACCOUNT_SETUP_MARKERS.find(([, marker]) => lower.includes(marker));
    if (setup !== undefined) return fail({ kind: 'account_setup', setupCode: setup[0] });
    return fail({ kind: 'unauthorized' });
  }
  if (operation === 'exam_invite_cancel' && status === 400) {
    const final = CANCEL_FINAL_MARKERS.find(([, marker]) => lower.includes(marker));
    if (final !== undefined) return fail({ kind: 'already_final', finalStatus: final[0] });
    // Cancelling twice answers 400 with the status; the exam is cancelled, which is what the caller wanted.
    if (serviceMessage !== undefined && ALREADY_CANCELLED.test(serviceMessage)) {
      return { type: 'already_cancelled', serviceMessage };
    }
  }
  // 408: the service gave up waiting for the request; 429: it shed load. Neither acted, both invite a retry.
  if (status >= 500 || status === 408 || status === 429) return fail({ kind: 'server' });
  if (status >= 400) {
    const field = fieldFromBody(body, serviceMessage, requestFieldNames(operation));
    return fail({ kind: 'validation', ...(field !== undefined ? { field } : {}) });
  }
  // 1xx/3xx: not part of the contract (redirects are not followed), so the answer is unusable.
  return fail({ kind: 'bad_response' });
}

// ---------------------------------------------------------------------------------------------------------------
// Transport failures

/**
 * How far a request got in undici, as observed by the client's handler wrapper:
 * queued (not yet on a socket), dispatched (handed to a connected socket: undici calls onConnect right before it
 * writes), sent (undici finished writing it), responded (status line and headers arrived).
 */
export type RequestPhase = 'queued' | 'dispatched' | 'sent' | 'responded';

/**
 * Codes that can only arise before a connection exists, used when the phase is unknown. With a known phase the phase
 * decides: a retrying dispatcher can fail at connect after an earlier attempt was written, which is ambiguous.
 */
export const NOT_SENT_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED', // nothing listens: the TCP handshake was refused
  'ENOTFOUND', // DNS: the name does not exist, no address to connect to
  'EAI_AGAIN', // DNS: temporary resolver failure, no address to connect to
  'EAI_FAIL', // DNS: permanent resolver failure
  'EHOSTUNREACH', // no route to the host: no handshake took place
  'ENETUNREACH', // no route to the network: no handshake took place
  'EADDRNOTAVAIL', // no local address/port to connect from
  'UND_ERR_CONNECT_TIMEOUT', // undici ConnectTimeoutError: handshake (TCP or TLS) not finished in time
  'UND_ERR_DESTROYED', // undici ClientDestroyedError: dispatcher destroyed, request refused before dispatch
  'UND_ERR_CLOSED', // undici ClientClosedError: dispatcher closed, request refused before dispatch
  'UND_ERR_INVALID_ARG', // undici InvalidArgumentError: the request was rejected while being built
  'ERR_TLS_CERT_ALTNAME_INVALID', // TLS: the certificate does not match, refused during the handshake
  'CERT_HAS_EXPIRED', // TLS: refused during the handshake
  'DEPTH_ZERO_SELF_SIGNED_CERT', // TLS: refused during the handshake
  'SELF_SIGNED_CERT_IN_CHAIN', // TLS: refused during the handshake
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE', // TLS: refused during the handshake
]);

// Any code not in NOT_SENT_CODES means the request may have been read: a timeout, reset or close of a written request,
// our deadline, a broken answer (the codes: docs/design-notes.md#transport-errors-not-sent-or-ambiguous).

/** The code of a transport error (Node system errors, undici errors), or its name when it has no string code. */
export function transportErrorCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const { code, name } = err as { code?: unknown; name?: unknown };
  if (typeof code === 'string' && code !== '') return code;
  if (typeof name === 'string' && name !== '' && name !== 'Error') return name;
  return undefined;
}

/**
 * not_sent only when no byte of the request can have reached the service: a queued request, or with no phase a code of
 * NOT_SENT_CODES; everything else is ambiguous (docs/design-notes.md#transport-errors-not-sent-or-ambiguous).
 */
export function classifyTransportError(err: unknown, phase?: RequestPhase): 'not_sent' | 'ambiguous' {
  if (phase === 'queued') return 'not_sent';
  if (phase !== undefined) return 'ambiguous';
  const code = transportErrorCode(err);
  return code !== undefined && NOT_SENT_CODES.has(code) ? 'not_sent' : 'ambiguous';
}
