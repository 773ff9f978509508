// Group commit: items that arrive while a write is under way wait for the next write and share it, so a burst of
// N callbacks costs about one fsync (or one transaction) instead of N. One write at a time; each waiter learns the
// outcome of the write that carried its item. A batch that fails for something its items carry (not the store) is
// split and written again, so one bad item fails alone and never its neighbours.

export interface GroupCommitOptions {
  /** The largest batch one write takes (the rest waits for the next). */
  maxBatch?: number;
  /** After each write that succeeded: how many items it stored, and how long it took (seconds). */
  onBatch?: (size: number, seconds: number) => void;
  /**
   * Whether a failed write may be the fault of one of its items (a value the store refused), rather than of the store
   * (down, full, too slow): such a batch is halved and each half written again, down to single items. A store-wide
   * failure fails the batch at once (writing its halves would only wait for the same failure again).
   */
  itemFault?: (err: unknown) => boolean;
}

export class GroupCommit<T> {
  #pending: { item: T; resolve: () => void; reject: (err: unknown) => void }[] = [];
  #writing = false;
  readonly #maxBatch: number;

  /** @param write durably stores a batch (in arrival order) or throws; nothing of a failed batch counts as stored. */
  constructor(
    private readonly write: (batch: T[]) => Promise<void>,
    private readonly options: GroupCommitOptions = {},
  ) {
    this.#maxBatch = options.maxBatch ?? 1_000;
  }

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
      while (this.#pending.length > 0) await this.#commit(this.#pending.splice(0, this.#maxBatch));
    } finally {
      this.#writing = false;
    }
  }

  async #commit(batch: { item: T; resolve: () => void; reject: (err: unknown) => void }[]): Promise<void> {
    try {
      const started = performance.now();
      await this.write(batch.map((p) => p.item));
      this.options.onBatch?.(batch.length, (performance.now() - started) / 1000);
      for (const p of batch) p.resolve();
    } catch (err) {
      if (batch.length > 1 && this.options.itemFault?.(err)) {
        const half = Math.ceil(batch.length / 2);
        await this.#commit(batch.slice(0, half));
        await this.#commit(batch.slice(half));
        return;
      }
      for (const p of batch) p.reject(err);
    }
  }
}
