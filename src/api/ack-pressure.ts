// Whether the webhook is answering slowly right now: the forwarder sends no new signal while it is (see
// InboxForwarder's `pressure`). Pressure is a few answers slower than the threshold within a second: one slow answer
// now and then (a disk hiccup, a collector pause) is not a surge and must not hold the callbacks back, while a surge
// (at 500/s a slow answer comes every few hundred milliseconds) keeps the forwarder quiet from its start to its end
// instead of letting it wake the Temporal server in the gaps between slow answers.
export class AckPressure {
  /** When the latest slow answers came (performance.now()), oldest first, at most `minSlow` of them. */
  readonly #slowAt: number[] = [];

  /**
   * @param thresholdMs an acknowledgement slower than this is slow; 0 turns the pacing off.
   * @param minSlow slow answers within `windowMs` that make pressure.
   */
  constructor(
    readonly thresholdMs: number,
    private readonly windowMs = 1_000,
    private readonly minSlow = 3,
  ) {}

  record(elapsedMs: number, now = performance.now()): void {
    if (this.thresholdMs <= 0 || elapsedMs <= this.thresholdMs) return;
    this.#slowAt.push(now);
    if (this.#slowAt.length > this.minSlow) this.#slowAt.shift();
  }

  underPressure(now = performance.now()): boolean {
    return this.#slowAt.length >= this.minSlow && now - this.#slowAt[0]! < this.windowMs;
  }
}
