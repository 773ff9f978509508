// How the command-line tools (`npm run demo`, `npm run ops`) talk to the clinic API: a JSON request with a bearer
// token and a deadline, its problem+json answer read once; nothing answering at all is an UnreachableError.

/** A problem+json answer of the API (RFC 9457), with the fields a validation problem names. */
export interface Problem {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  errors?: { field: string; message: string }[];
}

/** Nothing answered at all (refused, DNS, timeout). */
export class UnreachableError extends Error {
  override name = 'UnreachableError';
  constructor(
    readonly url: string,
    readonly reason: string,
  ) {
    super(`nothing answers at ${url} (${reason})`);
  }
}

export interface JsonRequest {
  /** Sent as `Authorization: Bearer <token>` when given. */
  token?: string;
  /** Sent as JSON when given. */
  body?: unknown;
  headers?: Record<string, string>;
  timeoutMs: number;
}

export interface JsonAnswer {
  status: number;
  ok: boolean;
  /** The body parsed as JSON; undefined when empty or not JSON. */
  body: unknown;
  text: string;
  /** The problem the API sent with a non-2xx answer, if any. */
  problem: Problem | undefined;
  /** Retry-After, when the answer has a positive one. */
  retryAfterMs: number | undefined;
}

function networkReason(err: unknown, timeoutMs: number): string {
  if (err instanceof Error && err.name === 'TimeoutError') return `no answer in ${timeoutMs / 1000} s`;
  const cause = err instanceof Error ? (err.cause as { code?: string; message?: string } | undefined) : undefined;
  return cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
}

/** One request; any answer resolves (the caller decides on its status), no answer at all throws UnreachableError. */
export async function requestJson(
  base: string,
  method: 'GET' | 'POST',
  route: string,
  request: JsonRequest,
): Promise<JsonAnswer> {
  let res: Response;
  try {
    res = await fetch(`${base}${route}`, {
      method,
      headers: {
        accept: 'application/json, application/problem+json',
        ...(request.token === undefined ? {} : { authorization: `Bearer ${request.token}` }),
        ...(request.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...request.headers,
      },
      ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
      signal: AbortSignal.timeout(request.timeoutMs),
    });
  } catch (err) {
    throw new UnreachableError(base, networkReason(err, request.timeoutMs));
  }
  const text = await res.text();
  let body: unknown;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    body = undefined;
  }
  const problem = !res.ok && body !== null && typeof body === 'object' ? (body as Problem) : undefined;
  const retryAfter = Number(res.headers.get('retry-after'));
  return {
    status: res.status,
    ok: res.ok,
    body,
    text,
    problem,
    retryAfterMs: Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : undefined,
  };
}

/** Waits `ms` (at once for 0 or less), or until `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal?.aborted || ms <= 0) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
