// When a PostgreSQL store (the audit trail, the patient keys) cannot be reached, or reached a server that may not write
// now, the request that wrote to it is told "unavailable", retried a few times, then answered 503 with Retry-After:
// never a 500, which a clinic cannot tell from a bug. One classifier for every store, read from node-postgres's error
// shapes. It lives here, in the lowest layer that holds a store, so that the audit trail and the patient keys (and the
// API above them) all read the same one.

/** The stores whose unavailability the API names in its answer. */
export type StoreName = 'patient-keys' | 'audit-trail';

/** What a person reads for each store (never a URL, a host, a query or a patient's data). */
export const STORE_TITLES: Record<StoreName, string> = {
  'patient-keys': 'the patient key store',
  'audit-trail': 'the audit trail',
};

/**
 * SQLSTATEs of a server that is going away or may not write now: 57P01 admin shutdown, 57P02 crash shutdown, 57P03
 * cannot connect now (starting, or in recovery), 25006 a read-only transaction (a demoted primary behind the balancer).
 * Class 08, connection exceptions, is matched as a class. 40001 and 40P01 (serialization, deadlock) are not here: they
 * are conflicts between writers, handled where they happen, not a server away.
 */
const SQLSTATES = new Set(['57P01', '57P02', '57P03', '25006']);
/** Socket errors of a connection refused, cut or timed out. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT']);
/** node-postgres's own messages for a connection lost or never made (they carry no code). */
const MESSAGES = [
  /^Connection terminated unexpectedly$/,
  /^Connection terminated due to connection timeout$/,
  // A lone client's connection timeout (the pool's says the line above).
  /^timeout expired$/,
  /timeout exceeded when trying to connect/,
  /^Client has encountered a connection error and is not queryable$/,
];

const MAX_DEPTH = 8;

/**
 * Whether an error (or one it was caused by, or one of an AggregateError's errors) says the database is away or may not
 * write now: connection exceptions (SQLSTATE class 08), 57P01, 57P02, 57P03, 25006, a socket refused, reset, broken or
 * timed out, and node-postgres's connection lost or pool connect timeout.
 */
export function isUnavailable(err: unknown, depth = 0): boolean {
  if (depth > MAX_DEPTH || err === null || typeof err !== 'object') return false;
  if (err instanceof StoreUnavailableError) return true;
  const e = err as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown; $metadata?: unknown };
  // The object store answering a server error after the S3 client's own retries (503 while it starts or stops).
  const http = (e.$metadata as { httpStatusCode?: unknown } | undefined)?.httpStatusCode;
  if (typeof http === 'number' && http >= 500 && http <= 504) return true;
  if (typeof e.code === 'string') {
    if (/^08[0-9A-Z]{3}$/.test(e.code) || SQLSTATES.has(e.code) || SOCKET_CODES.has(e.code)) return true;
  }
  if (typeof e.message === 'string' && MESSAGES.some((m) => m.test(e.message as string))) return true;
  // Node.js connects to each address of a name in turn and reports every refusal together.
  if (Array.isArray(e.errors) && e.errors.some((x) => isUnavailable(x, depth + 1))) return true;
  return isUnavailable(e.cause, depth + 1);
}

/**
 * A store could not be reached (or may not write now) even after the retries: what the API answers 503 for, naming the
 * store. The message is the store's own words (no URL, no SQL); the driver's error is its cause, for the log.
 */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
  constructor(
    readonly store: StoreName,
    message = `${STORE_TITLES[store]} is unavailable`,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The store an error (or one it was caused by) says is unavailable; undefined for any other error. */
export function unavailableStoreOf(err: unknown): StoreName | undefined {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth <= MAX_DEPTH; e = e.cause, depth++) {
    if (e instanceof StoreUnavailableError) return e.store;
  }
  return undefined;
}

/** How an operation that met an unavailable store is tried again. */
export interface RetryPolicy {
  /** Tries in all, the first included (4). */
  attempts?: number;
  /** The first wait, doubled after each try, each with full jitter (100 ms). */
  firstBackoffMs?: number;
  /** No try starts later than this after the first began (2,000 ms): the request waits that long at most, plus one try. */
  budgetMs?: number;
  /** Sleeps (tests make it instant). */
  sleep?: (ms: number) => Promise<void>;
}

export const DEFAULT_RETRY: Required<Omit<RetryPolicy, 'sleep'>> = {
  attempts: 4,
  firstBackoffMs: 100,
  budgetMs: 2_000,
};

const sleepFor = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Runs `attempt`, and again while what it throws is unavailability (isUnavailable) and the policy allows: a bounded few
 * tries with a short, jittered, doubling wait. Only for operations that are safe to repeat (each store's writes are:
 * inserts that keep the first writer's row, updates to a state). Anything else, or the last failure, is thrown as it
 * came.
 */
export async function retryWhileUnavailable<T>(attempt: () => Promise<T>, policy: RetryPolicy = {}): Promise<T> {
  const attempts = Math.max(1, policy.attempts ?? DEFAULT_RETRY.attempts);
  const first = policy.firstBackoffMs ?? DEFAULT_RETRY.firstBackoffMs;
  const budget = policy.budgetMs ?? DEFAULT_RETRY.budgetMs;
  const sleep = policy.sleep ?? sleepFor;
  const began = Date.now();
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (err) {
      if (n >= attempts || !isUnavailable(err)) throw err;
      const wait = Math.round(Math.random() * first * 2 ** (n - 1));
      if (Date.now() + wait - began > budget) throw err;
      await sleep(wait);
    }
  }
}
