// Whether the webhook is under a surge (a few slow answers within a second; it lasts while callbacks keep coming at
// half that rate, at most `holdMs`): the forwarder holds new signals (docs/design-notes.md#acknowledgement-pressure).
// Fed only the answers to callbacks the webhook took, so no refusal, however slow or many, starts or keeps a surge.
export class AckPressure {
  /** When the latest slow answers came (performance.now()), oldest first, at most `minSlow` of them. */
  readonly #slowAt: number[] = [];
  /** Answers per tenth of the window, a ring over the last window: the current answer rate. */
  readonly #counts = new Array<number>(10).fill(0);
  /** The tenth of the window (a count since the clock's origin) the ring's latest slot is for. */
  #tenth = Number.NEGATIVE_INFINITY;
  /** Answers per window when the surge under way began (the highest seen while answers were slow); 0 if none. */
  #surgeRate = 0;
  /** When the answers were last slow (a surge's evidence). */
  #lastSlowAt = Number.NEGATIVE_INFINITY;

  /**
   * @param thresholdMs an acknowledgement slower than this is slow; 0 turns the pacing off.
   * @param holdMs how long a surge lasts after the answers were last slow, while the callbacks keep coming.
   * @param minSlow slow answers within `windowMs` that begin a surge.
   */
  constructor(
    readonly thresholdMs: number,
    private readonly holdMs = 10_000,
    private readonly windowMs = 1_000,
    private readonly minSlow = 3,
  ) {}

  /** The answer to one taken callback and how long it took. */
  record(elapsedMs: number, now = performance.now()): void {
    if (this.thresholdMs <= 0) return;
    this.#advance(now);
    this.#counts[this.#tenth % 10]! += 1;
    if (elapsedMs <= this.thresholdMs) return;
    this.#slowAt.push(now);
    if (this.#slowAt.length > this.minSlow) this.#slowAt.shift();
    if (this.#slow(now)) this.#surge(now);
  }

  underPressure(now = performance.now()): boolean {
    if (this.thresholdMs <= 0) return false;
    this.#advance(now);
    if (this.#slow(now)) {
      this.#surge(now);
      return true;
    }
    if (this.#surgeRate > 0 && this.#rate() * 2 >= this.#surgeRate && now - this.#lastSlowAt < this.holdMs) return true;
    this.#surgeRate = 0;
    return false;
  }

  #surge(now: number): void {
    this.#surgeRate = Math.max(this.#surgeRate, this.#rate());
    this.#lastSlowAt = now;
  }

  /** Answers within the last window. */
  #rate(): number {
    let sum = 0;
    for (const n of this.#counts) sum += n;
    return sum;
  }

  #slow(now: number): boolean {
    return this.#slowAt.length >= this.minSlow && now - this.#slowAt[0]! < this.windowMs;
  }

  /** Moves the ring to `now`, emptying the slots of the tenths that passed without an answer. */
  #advance(now: number): void {
    const tenth = Math.floor(now / (this.windowMs / 10));
    if (tenth === this.#tenth) return;
    if (tenth - this.#tenth >= 10) this.#counts.fill(0);
    else for (let t = this.#tenth + 1; t <= tenth; t++) this.#counts[t % 10] = 0;
    this.#tenth = tenth;
  }
}
