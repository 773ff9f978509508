import type { KeyObject } from 'node:crypto';

// Unwrapped data keys held in memory, bounded in number and in time: the least recently used goes first once the
// cache is full, and an entry older than its time is unwrapped again. Each entry also says when the store last showed
// its key alive (`checkedAt`): its reader checks the keys it holds against the store's tombstones before it uses one
// checked too long ago, so a key another process destroyed is out of use here within that check's time. A key is held
// as a KeyObject, which cannot be zeroed: one dropped from the cache is freed by the collector (a seal may still hold
// it between an await and its use).

export interface CachedKey {
  dekId: string;
  /** The data key, as ciphers take it (its unwrapped bytes zeroed once it is made). */
  dek: KeyObject;
}

export interface CachedEntry extends CachedKey {
  expires: number;
  /** When the store last showed the key alive (a read begun then, or a check of the tombstones). */
  checkedAt: number;
}

export class KeyCache {
  /** Map order is use order: the first entry is the least recently used. */
  readonly #entries = new Map<string, CachedEntry>();

  constructor(
    readonly maxEntries: number,
    readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {
    if (!(maxEntries >= 1) || !(ttlMs >= 0)) throw new Error('the key cache needs at least one entry and a time >= 0');
  }

  get size(): number {
    return this.#entries.size;
  }

  get(patientRef: string): CachedEntry | undefined {
    const e = this.#entries.get(patientRef);
    if (!e) return undefined;
    if (e.expires <= this.now()) {
      this.delete(patientRef);
      return undefined;
    }
    this.#entries.delete(patientRef);
    this.#entries.set(patientRef, e);
    return e;
  }

  /** Keeps a key read from the store; `checkedAt` is when that read began (now by default). */
  set(patientRef: string, key: CachedKey, checkedAt = this.now()): void {
    this.delete(patientRef);
    this.#entries.set(patientRef, { dekId: key.dekId, dek: key.dek, expires: this.now() + this.ttlMs, checkedAt });
    while (this.#entries.size > this.maxEntries) {
      const oldest = this.#entries.keys().next().value as string;
      this.delete(oldest);
    }
  }

  /** Each entry's patient and key id (its use order unchanged). */
  keys(): { patientRef: string; dekId: string }[] {
    return [...this.#entries].map(([patientRef, e]) => ({ patientRef, dekId: e.dekId }));
  }

  /** The store showed these keys alive at `at` (a check begun then). */
  markChecked(dekIds: ReadonlySet<string>, at: number): void {
    for (const e of this.#entries.values()) if (dekIds.has(e.dekId) && e.checkedAt < at) e.checkedAt = at;
  }

  delete(patientRef: string): void {
    this.#entries.delete(patientRef);
  }

  clear(): void {
    this.#entries.clear();
  }
}
