// Every error the API answers is an RFC 9457 problem (application/problem+json) that names what is wrong; bad input
// is a 4xx, never a 500. The error handler turns framework and validation errors into problems once, here.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { isUnavailable, STORE_TITLES, unavailableStoreOf } from '../audit/store-unavailable';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';
// A URN rather than a web address we would have to own and serve: stable, and never dereferenced by clients.
const TYPE_BASE = 'urn:patient-journeys:problem:';

export const FieldError = z.object({
  field: z.string().describe('dotted path of the failing field, e.g. patient.dob or exams.0; "(body)" for the body'),
  message: z.string().describe('What is wrong with it'),
  rule: z
    .string()
    .optional()
    .describe("The operation's rule it breaks (its `x-rules`), when the schema alone cannot say it"),
});
export type FieldError = z.infer<typeof FieldError>;

export const Problem = z
  .object({
    type: z.string().describe('A URN naming the kind of problem, e.g. urn:patient-journeys:problem:validation'),
    title: z.string().describe("The HTTP status's title"),
    status: z.number().int().describe('The HTTP status'),
    detail: z.string().describe('What went wrong, for a person'),
    instance: z.string().optional().describe('The path of the request'),
    errors: z.array(FieldError).optional().describe('Each field at fault, for input errors'),
  })
  .meta({ id: 'Problem', description: 'RFC 9457 problem details' });
export type Problem = z.infer<typeof Problem>;

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  409: 'Conflict',
  413: 'Content Too Large',
  414: 'URI Too Long',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  428: 'Precondition Required',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

/** An error that is answered as the problem it describes. */
export class ApiProblem extends Error {
  readonly status: number;
  readonly slug: string;
  readonly errors: FieldError[] | undefined;
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    slug: string,
    detail: string,
    options: { errors?: FieldError[]; headers?: Record<string, string> } = {},
  ) {
    super(detail);
    this.name = 'ApiProblem';
    this.status = status;
    this.slug = slug;
    this.errors = options.errors;
    this.headers = options.headers ?? {};
  }
}

export function problemBody(status: number, slug: string, detail: string, errors?: FieldError[]): Problem {
  const once = errors ? onceEach(errors) : [];
  return {
    type: `${TYPE_BASE}${slug}`,
    title: TITLES[status] ?? (status >= 500 ? 'Server Error' : 'Client Error'),
    status,
    detail,
    ...(once.length > 0 ? { errors: once } : {}),
  };
}

/** Each field error once (a schema and a refinement may both name the same fault), in the order first named. */
function onceEach(errors: FieldError[]): FieldError[] {
  const seen = new Set<string>();
  return errors.filter((e) => {
    const key = `${e.field}\u0000${e.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

export function sendProblem(reply: FastifyReply, problem: Problem, headers: Record<string, string> = {}) {
  return reply
    .code(problem.status)
    .headers(headers)
    .type(PROBLEM_CONTENT_TYPE)
    .send({ ...problem, instance: reply.request.url.split('?')[0] });
}

/** `/patient/dob` -> `patient.dob`; with the part of the request it came from for params and headers. */
function fieldOf(instancePath: string, context: string | undefined): string {
  const path = instancePath.replace(/^\//, '').split('/').filter(Boolean).join('.');
  const prefix = context === 'body' || context === undefined ? '' : `${context}.`;
  if (path === '') return context === 'body' || context === undefined ? '(body)' : context;
  return `${prefix}${path}`;
}

export function validationProblem(errors: FieldError[], detail?: string): ApiProblem {
  const summary = errors
    .slice(0, 5)
    .map((e) => `${e.field}: ${e.message}`)
    .join('; ');
  return new ApiProblem(400, 'validation', detail ?? `the request is invalid: ${summary}`, { errors });
}

/** The document's rule a zod issue names (its params.rule), if any. */
function ruleOf(issue: unknown): string | undefined {
  const rule = (issue as { params?: { rule?: unknown } } | undefined)?.params?.rule;
  return typeof rule === 'string' ? rule : undefined;
}

/** Issues of a zod error as field errors (used where a schema is checked by hand, not by the route). */
export function fieldErrorsOf(error: z.ZodError, prefix = ''): FieldError[] {
  return error.issues.map((i) => {
    const rule = ruleOf(i);
    return {
      field: [prefix, ...i.path.map(String)].filter(Boolean).join('.') || '(body)',
      message: i.message,
      ...(rule ? { rule } : {}),
    };
  });
}

function fromFastifyError(err: FastifyError): Problem | undefined {
  // Errors from elsewhere (gRPC, undici) may carry a numeric code: only Fastify's string codes are read here.
  const code = typeof err.code === 'string' ? err.code : '';
  if (hasZodFastifySchemaValidationErrors(err)) {
    const context = err.validationContext;
    const errors = err.validation.map((v) => {
      const rule = ruleOf(v.params);
      return { field: fieldOf(v.instancePath, context), message: v.message ?? 'is invalid', ...(rule ? { rule } : {}) };
    });
    const p = validationProblem(errors);
    return problemBody(400, p.slug, p.message, errors);
  }
  switch (code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return problemBody(413, 'body-too-large', 'the request body is larger than this API accepts', [
        { field: '(body)', message: 'too large' },
      ]);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return problemBody(415, 'unsupported-media-type', 'send application/json (or multipart/form-data for uploads)');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return problemBody(400, 'validation', 'the JSON body is empty', [{ field: '(body)', message: 'required' }]);
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return problemBody(400, 'malformed-json', 'the body is not valid JSON', [
        { field: '(body)', message: 'malformed JSON' },
      ]);
    case 'FST_ERR_RESPONSE_SERIALIZATION':
      return undefined;
  }
  if (err instanceof SyntaxError && err.statusCode === 400) {
    return problemBody(400, 'malformed-json', `the body is not valid JSON: ${err.message}`, [
      { field: '(body)', message: 'malformed JSON' },
    ]);
  }
  if (code === 'FST_REQ_FILE_TOO_LARGE' || code === 'FST_PARTS_LIMIT' || code === 'FST_FILES_LIMIT') {
    return problemBody(413, 'body-too-large', err.message, [{ field: 'file', message: 'too large or too many parts' }]);
  }
  if (code.startsWith('FST_') && err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500) {
    return problemBody(err.statusCode, 'bad-request', err.message);
  }
  return undefined;
}

const isGrpc = (err: unknown) => typeof (err as { code?: unknown }).code === 'number';

/** Seconds a client waits before it sends a request again that a store could not take (a failover takes a few). */
export const STORE_RETRY_AFTER_S = 2;

/**
 * A store the request writes to (or reads) that could not be reached or may not write now, after its own retries (a
 * failover: audit/store-unavailable.ts): 503 `store-unavailable` with Retry-After, naming the store and nothing else
 * (no host, no SQL, no patient data). Undefined for any other error.
 */
export function storeUnavailableProblem(err: unknown): ApiProblem | undefined {
  const store = unavailableStoreOf(err);
  if (!store && !isUnavailable(err)) return undefined;
  const title = store ? STORE_TITLES[store] : 'a store this request needs';
  return new ApiProblem(
    503,
    'store-unavailable',
    `${title} is unavailable (it could not be reached or may not write now, as during a database failover): send the ` +
      'request again after Retry-After (a start or an erasure with the same Idempotency-Key: it does not act twice)',
    { headers: { 'retry-after': String(STORE_RETRY_AFTER_S) } },
  );
}

export function registerProblemHandlers(app: FastifyInstance) {
  const served = servedMethods(app);
  app.setErrorHandler((err: FastifyError | ApiProblem, request: FastifyRequest, reply: FastifyReply) => {
    // A method the address does not serve is that first, whatever its body (QUERY without a Content-Type, say).
    if (request.is404 && methodNotAllowed(served, request, reply)) return reply;
    if (err instanceof ApiProblem) {
      return sendProblem(reply, problemBody(err.status, err.slug, err.message, err.errors), err.headers);
    }
    const problem = fromFastifyError(err);
    if (problem) return sendProblem(reply, problem);
    // Rate limit errors and other plugin errors with a client status keep it.
    if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500 && !isGrpc(err)) {
      return sendProblem(reply, problemBody(err.statusCode, 'client-error', err.message));
    }
    const away = storeUnavailableProblem(err);
    if (away) {
      request.log.warn({ err, problem: away.slug }, 'a store was unavailable');
      return sendProblem(reply, problemBody(503, away.slug, away.message), away.headers);
    }
    request.log.error({ err }, 'unhandled error');
    return sendProblem(reply, problemBody(500, 'internal', 'an unexpected error occurred; it has been logged'));
  });
  app.setNotFoundHandler((request, reply) => {
    if (methodNotAllowed(served, request, reply)) return reply;
    // The same answer as a wrong webhook token, so a probe learns nothing from the difference.
    return sendProblem(reply, NOT_FOUND);
  });
}

/** A path served with other methods: 405 naming them in Allow (RFC 9110), not a 404 that says nothing is there. */
function methodNotAllowed(served: (path: string) => string[], request: FastifyRequest, reply: FastifyReply): boolean {
  const allow = served(request.url.split('?')[0] ?? '/');
  if (allow.length === 0) return false;
  void sendProblem(
    reply,
    problemBody(405, 'method-not-allowed', `this address takes ${allow.join(', ')}, not ${request.method}`),
    { allow: allow.join(', ') },
  );
  return true;
}

/** The methods each route pattern is served with, from the routes as they are added; matched against a request path. */
function servedMethods(app: FastifyInstance): (path: string) => string[] {
  const routes: { pattern: RegExp; methods: Set<string> }[] = [];
  const toRegExp = (url: string) =>
    new RegExp(
      `^${url
        .split('/')
        .map((part) =>
          part.startsWith(':') ? '[^/]+' : part === '*' ? '.*' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
        )
        .join('/')}/?$`,
    );
  app.addHook('onRoute', (route) => {
    const methods = (Array.isArray(route.method) ? route.method : [route.method]).map((m) => m.toUpperCase());
    if (methods.includes('GET')) methods.push('HEAD');
    const known = routes.find((r) => r.pattern.source === toRegExp(route.url).source);
    if (known) methods.forEach((m) => known.methods.add(m));
    else routes.push({ pattern: toRegExp(route.url), methods: new Set(methods) });
  });
  return (path) => {
    const allow = new Set<string>();
    for (const r of routes) if (r.pattern.test(path)) r.methods.forEach((m) => allow.add(m));
    return [...allow].sort();
  };
}

/**
 * Fastify's `frameworkErrors`: what the router refuses before any route runs (a URL with malformed percent-encoding,
 * a path parameter over its length limit) is a problem too, not Fastify's own JSON.
 */
export function frameworkErrorProblem(err: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  if (err.code === 'FST_ERR_BAD_URL') {
    void sendProblem(reply, problemBody(400, 'bad-url', 'the URL is not valid (malformed percent-encoding)'));
  } else if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    void sendProblem(reply, problemBody(414, 'uri-too-long', 'a part of the URL path is longer than this API accepts'));
  } else {
    reply.log.error({ err }, 'unhandled framework error');
    void sendProblem(reply, problemBody(500, 'internal', 'an unexpected error occurred; it has been logged'));
  }
  // Refused before any route ran, so no hook logs its outcome: the answer is logged here, as every other one is.
  reply.log.info({ res: { statusCode: reply.statusCode }, code: err.code }, 'request completed');
}

export const NOT_FOUND: Problem = problemBody(404, 'not-found', 'there is nothing at this address');

export const notFound = (what: string) => new ApiProblem(404, 'not-found', `${what} not found`);

/** What each error status means on the clinic API, for the document (a route may say more of its own). */
const WHY: Record<number, string> = {
  400:
    "The request breaks the operation's schema (`validation`, each field in `errors`), or one of its `x-rules`, " +
    'which the schema cannot say (`errors[].rule` names it); `malformed-json`; `bad-url` (malformed percent-encoding)',
  401: 'No bearer token, or one the API does not know (`unauthorized`); the connection is closed',
  403: 'The token is known but may not do this (`forbidden`)',
  404: 'Nothing of this clinic at this address (`not-found`): another clinic’s journey answers the same',
  409: 'The request conflicts with the state of what it names',
  413: 'The body is larger than the API takes (`body-too-large`; `API_BODY_LIMIT_BYTES`, 8 MiB by default)',
  414: 'A part of the path is longer than the API reads (`uri-too-long`)',
  415: 'A body in another media type than the operation takes (`unsupported-media-type`)',
  422: 'The exam service refused the request (`exam-service-refused`; `errors` names its field in the API’s words)',
  429:
    'More requests than the clinic’s rate limit (`rate-limited`, `Retry-After`), or too many refused sign-ins from ' +
    'this address (`too-many-refused-sign-ins`, `Retry-After`)',
  502:
    'The exam service refused the clinic’s key (`exam-service-unauthorized`), asks for account setup ' +
    '(`exam-service-account-setup`) or answered outside its contract (`exam-service-bad-response`)',
  503:
    'The exam service (`exam-service-unavailable`) or Temporal (`temporal-unavailable`) did not answer, or a store the ' +
    'request needs (the patient key store, the audit trail) could not be reached or may not write now, as during a ' +
    'database failover (`store-unavailable`, `detail` names the store); retry after `Retry-After` (a start with the ' +
    'same Idempotency-Key)',
  504:
    'Temporal did not answer within the API’s deadline (`temporal-timeout`, `Retry-After`); the request may have ' +
    'taken effect',
};

/** What each error status means on the operator routes (/admin), signed in with the admin token or an access token. */
const OPERATOR_WHY: Record<number, string> = {
  400:
    "The request breaks the operation's schema (`validation`, each field in `errors`), or one of its `x-rules` " +
    '(`errors[].rule` names it); with the admin token, an `X-Actor` that is not one line of text free of patient data ' +
    '(field `X-Actor`)',
  401:
    'No bearer token, or one that is neither the admin token nor a valid access token of the identity provider ' +
    '(`unauthorized`, `WWW-Authenticate`); the connection is closed and the refusal is on the audit trail',
  403: 'Signed in with an access token whose roles do not allow this (`forbidden`; on the audit trail)',
  404:
    'The operator routes are off: neither `ADMIN_TOKEN_SHA256` nor `OIDC_ISSUER` is set, and every /admin address ' +
    'answers `not-found`',
  409: 'The request conflicts with the state of what it names',
  413: 'The body is larger than the API takes (`body-too-large`; `API_BODY_LIMIT_BYTES`, 8 MiB by default)',
  414: 'A part of the path is longer than the API reads (`uri-too-long`)',
  415: 'A body in another media type than application/json (`unsupported-media-type`)',
  429:
    'Too many refused sign-ins from this address within the minute (`too-many-refused-sign-ins`, `Retry-After`), ' +
    'answered to a request without a valid token (a valid one is served all the same)',
  503:
    'The audit trail could not record the request, so nothing was served or done (`audit-unavailable`, ' +
    '`Retry-After`); or a store the request needs could not be reached or may not write now (`store-unavailable`, ' +
    '`Retry-After`, `detail` names the store)',
  504:
    'Temporal did not answer within the API’s deadline (`temporal-timeout`, `Retry-After`); the request may have ' +
    'taken effect',
};

/**
 * The error answers of an operation for its schema and the document: each status a problem (application/problem+json)
 * with what it means here. `operator`: the meanings of the operator routes (/admin) instead of the clinic API's.
 */
export function problemResponses(
  statuses: number[],
  why: Partial<Record<number, string>> = {},
  o: { operator?: boolean } = {},
) {
  const meanings = o.operator ? OPERATOR_WHY : WHY;
  return Object.fromEntries(
    statuses.map((status) => [
      status,
      {
        description: why[status] ?? meanings[status] ?? TITLES[status] ?? 'Error',
        content: { [PROBLEM_CONTENT_TYPE]: { schema: Problem } },
      },
    ]),
  );
}

/** The error answers of an operator route (/admin): problemResponses with the operator routes' meanings. */
export const operatorProblems = (statuses: number[], why: Partial<Record<number, string>> = {}) =>
  problemResponses(statuses, why, { operator: true });
