// Throttling before identity: requests whose token is missing or refused are counted per source address. Past the
// limit a source is answered 429 (with Retry-After) before its token is looked at or its body read, and its refusals
// go on the audit trail in aggregate, one record per source and window, instead of one record each.
import type { AuditEvent } from '../audit/types';
import { ApiProblem } from './problem';

export interface SourceGuardOptions {
  /** Refused sign-ins a source may have in a window before it is answered 429 until the window ends. */
  maxFailures: number;
  windowMs: number;
  /** Refusals of a source audited one by one in a window; past them, counted into the window's aggregate record. */
  auditEach: number;
  /** Sources remembered at once; the one with the oldest window is forgotten first (its aggregate written). */
  maxSources?: number;
  audit?: (event: AuditEvent) => unknown;
  now?: () => number;
}

interface Window {
  start: number;
  failures: number;
  /** Refusals not audited one by one, and requests answered 429: the aggregate record's counts. */
  unrecorded: number;
  throttled: number;
}

export class SourceGuard {
  readonly #o: Required<Omit<SourceGuardOptions, 'audit'>> & Pick<SourceGuardOptions, 'audit'>;
  readonly #windows = new Map<string, Window>();
  readonly #timer: NodeJS.Timeout;

  constructor(o: SourceGuardOptions) {
    this.#o = { maxSources: 100_000, now: Date.now, ...o };
    // Windows that ended are written out even if their source never comes back.
    this.#timer = setInterval(() => void this.sweep(), Math.max(1_000, o.windowMs)).unref();
  }

  /** Throws 429 while the source is past its limit (its request is not authenticated, its body not read). */
  admit(source: string): void {
    const w = this.#current(source);
    if (!w || w.failures < this.#o.maxFailures) return;
    w.throttled++;
    const retryAfter = Math.max(1, Math.ceil((w.start + this.#o.windowMs - this.#o.now()) / 1000));
    throw new ApiProblem(
      429,
      'too-many-refused-sign-ins',
      `more than ${this.#o.maxFailures} requests from this address were refused sign-in within ` +
        `${Math.round(this.#o.windowMs / 1000)} s; retry in ${retryAfter} s`,
      { headers: { 'retry-after': String(retryAfter), connection: 'close' } },
    );
  }

  /** Counts a refused sign-in; true when it is to be audited on its own (else it goes into the aggregate). */
  failed(source: string): boolean {
    let w = this.#current(source);
    if (!w) {
      if (this.#windows.size >= this.#o.maxSources) this.#evictOldest();
      w = { start: this.#o.now(), failures: 0, unrecorded: 0, throttled: 0 };
      this.#windows.set(source, w);
    }
    w.failures++;
    if (w.failures <= this.#o.auditEach) return true;
    w.unrecorded++;
    return false;
  }

  /** Writes the aggregate of every window that ended; called by the timer and on close. */
  async sweep(all = false): Promise<void> {
    const now = this.#o.now();
    for (const [source, w] of [...this.#windows]) {
      if (!all && now < w.start + this.#o.windowMs) continue;
      this.#windows.delete(source);
      await this.#record(source, w);
    }
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.sweep(true);
  }

  /** The source's open window; one that ended is written out and forgotten. */
  #current(source: string): Window | undefined {
    const w = this.#windows.get(source);
    if (!w || this.#o.now() < w.start + this.#o.windowMs) return w;
    this.#windows.delete(source);
    void this.#record(source, w);
    return undefined;
  }

  #evictOldest(): void {
    const [source, w] = this.#windows.entries().next().value as [string, Window];
    this.#windows.delete(source);
    void this.#record(source, w);
  }

  async #record(source: string, w: Window): Promise<void> {
    if (w.unrecorded === 0 && w.throttled === 0) return;
    try {
      await this.#o.audit?.({
        action: 'sign-in.refused-in-bulk',
        subject: 'anonymous',
        roles: [],
        outcome: 'refused: flood',
        details: {
          source,
          from: new Date(w.start).toISOString(),
          windowSeconds: Math.round(this.#o.windowMs / 1000),
          refused: w.failures,
          notRecordedAlone: w.unrecorded,
          throttled: w.throttled,
        },
      });
    } catch {
      // The trail is down: the refusals were answered all the same; nothing else to do with the count.
    }
  }
}
