// Group commit: items that arrive while a write is under way wait for the next write and share it, so a burst of
// N callbacks costs about one fsync (or one transaction) instead of N. One write at a time; each waiter learns the
// outcome of the write that carried its item.

export class GroupCommit<T> {
  #pending: { item: T; resolve: () => void; reject: (err: unknown) => void }[] = [];
  #writing = false;

  /**
   * @param write durably stores a batch (in arrival order) or throws; nothing of a failed batch counts as stored.
   * @param maxBatch the largest batch one write takes (the rest waits for the next).
   */
  constructor(
    private readonly write: (batch: T[]) => Promise<void>,
    private readonly maxBatch = 1_000,
    /** After each write that succeeded: how many items it stored, and how long it took (seconds). */
    private readonly onBatch?: (size: number, seconds: number) => void,
  ) {}

  add(item: T): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#pending.push({ item, resolve, reject });
      if (!this.#writing) void this.#drain();
    });
  }

  /** Resolves once no write is under way and nothing waits for one. */
  async idle(): Promise<void> {
    while (this.#writing || this.#pending.length > 0) await new Promise((r) => setTimeout(r, 5));
  }

  get waiting(): number {
    return this.#pending.length;
  }

  async #drain(): Promise<void> {
    this.#writing = true;
    try {
      while (this.#pending.length > 0) {
        const batch = this.#pending.splice(0, this.maxBatch);
        try {
          const started = performance.now();
          await this.write(batch.map((p) => p.item));
          this.onBatch?.(batch.length, (performance.now() - started) / 1000);
          for (const p of batch) p.resolve();
        } catch (err) {
          for (const p of batch) p.reject(err);
        }
      }
    } finally {
      this.#writing = false;
    }
  }
}
