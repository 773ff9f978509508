// Refusals counted per source address, so an anonymous caller cannot fill the trail: in each window a source's first
// refusals are recorded one by one, the rest in one aggregate record per source and window; past the limit the source
// is throttled (its requests answered 429 before their token is looked at). The API's sign-ins (api/source-guard.ts)
// and the codec server's callers count their refusals here.
import type { AuditEvent } from './types';

export interface RefusalCounterOptions {
  /** The action of the aggregate record: `sign-in.refused-in-bulk`, `codec.refused-in-bulk`. */
  bulkAction: string;
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

export class RefusalCounter {
  readonly #o: Required<Omit<RefusalCounterOptions, 'audit'>> & Pick<RefusalCounterOptions, 'audit'>;
  readonly #windows = new Map<string, Window>();
  readonly #timer: NodeJS.Timeout;

  constructor(o: RefusalCounterOptions) {
    this.#o = { maxSources: 100_000, now: Date.now, ...o };
    // Windows that ended are written out even if their source never comes back.
    this.#timer = setInterval(() => void this.sweep(), Math.max(1_000, o.windowMs)).unref();
  }

  /** While the source is past its limit: the seconds until its window ends (its requests are answered 429). */
  throttled(source: string): number | undefined {
    const w = this.#current(source);
    if (!w || w.failures < this.#o.maxFailures) return undefined;
    w.throttled++;
    return Math.max(1, Math.ceil((w.start + this.#o.windowMs - this.#o.now()) / 1000));
  }

  get maxFailures(): number {
    return this.#o.maxFailures;
  }

  get windowMs(): number {
    return this.#o.windowMs;
  }

  /** Counts a refusal; true when it is to be audited on its own (else it goes into the aggregate). */
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
        action: this.#o.bulkAction,
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
