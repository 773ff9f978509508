// Unwrapped data keys held in memory, bounded in number and in time: the least recently used goes first once the
// cache is full, and an entry older than its time is unwrapped again (so a key another process destroyed is gone from
// this one within that time). A key dropped from the cache is not zeroed: a seal may still hold it between an await
// and its use, and a zeroed key would seal under a key everyone knows. The collector frees it.

export interface CachedKey {
  dekId: string;
  /** The data key, in a buffer of its own. */
  dek: Buffer;
}

interface Entry extends CachedKey {
  expires: number;
}

export class KeyCache {
  /** Map order is use order: the first entry is the least recently used. */
  readonly #entries = new Map<string, Entry>();

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

  get(patientRef: string): CachedKey | undefined {
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

  set(patientRef: string, key: CachedKey): void {
    this.delete(patientRef);
    this.#entries.set(patientRef, { ...key, expires: this.now() + this.ttlMs });
    while (this.#entries.size > this.maxEntries) {
      const oldest = this.#entries.keys().next().value as string;
      this.delete(oldest);
    }
  }

  delete(patientRef: string): void {
    this.#entries.delete(patientRef);
  }

  clear(): void {
    this.#entries.clear();
  }
}
