// Whether the webhook is answering slowly right now: the forwarder yields to acknowledgements while it is (see
// InboxForwarder's `pressure`). A callback answered slower than the threshold marks pressure for a short window.
export class AckPressure {
  #lastSlowAt = -Infinity;

  /** @param thresholdMs an acknowledgement slower than this is pressure; 0 turns the pacing off. */
  constructor(
    readonly thresholdMs: number,
    private readonly windowMs = 250,
  ) {}

  record(elapsedMs: number): void {
    if (this.thresholdMs > 0 && elapsedMs > this.thresholdMs) this.#lastSlowAt = performance.now();
  }

  underPressure(): boolean {
    return performance.now() - this.#lastSlowAt < this.windowMs;
  }
}
