// Whether the webhook is answering slowly right now: the forwarder yields to acknowledgements while it is (see
// InboxForwarder's `pressure`). A callback answered slower than the threshold marks pressure for a window of a
// second: long enough to span the gaps between slow answers of a surge (at 500/s a slow one comes every few hundred
// milliseconds), so the forwarder stays quiet for the whole surge instead of waking the Temporal server between them.
export class AckPressure {
  #lastSlowAt = -Infinity;

  /** @param thresholdMs an acknowledgement slower than this is pressure; 0 turns the pacing off. */
  constructor(
    readonly thresholdMs: number,
    private readonly windowMs = 1_000,
  ) {}

  record(elapsedMs: number): void {
    if (this.thresholdMs > 0 && elapsedMs > this.thresholdMs) this.#lastSlowAt = performance.now();
  }

  underPressure(): boolean {
    return performance.now() - this.#lastSlowAt < this.windowMs;
  }
}
