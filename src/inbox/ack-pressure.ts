// Whether the webhook is under a surge (a few slow answers within a second; it lasts while callbacks keep coming at
// half that rate, at most `holdMs`), and whether it comes in a burst (callbacks at twice the rate or more of the ten
// seconds before they rose): the forwarder yields to it as its policy says
// (docs/design-notes.md#acknowledgement-pressure). Fed only the answers to callbacks the webhook took, so no refusal,
// however slow or many, starts or keeps a surge.
/**
 * A burst: callbacks at this many times the rate of the BASELINE_SECONDS before they rose, or more (and at least
 * BURST_MIN within the window). It lasts while they keep coming at that, at most BURST_MAX_MS: a rate held longer is
 * the steady run.
 */
export const BURST_RISE = 2;
/**
 * Fewer callbacks a second are no burst, however quiet it was before: each signal costs the Temporal server and the
 * worker about 4 ms of CPU (measured 2026-11-30: 88 % of a core for 226 signals a second), so 50 a second take a fifth
 * of a core, and a rise below it (a clinic's journeys completing at 20 a second) is not worth delaying them for.
 */
export const BURST_MIN = 50;
export const BURST_MAX_MS = 30_000;
/** The seconds a rise is measured against, before the window the rate is counted over. */
export const BASELINE_SECONDS = 10;
/**
 * Through a rise, an answer this many times the threshold in all, its durable write included, is slow too. The write
 * waits for the cores the journeys' signals take (the Temporal server and the worker beside the webhook), which the
 * webhook's own time does not show: a files inbox's flush slowed by them leaves its own time fast and its answers slow.
 */
export const BURST_SLOW_FACTOR = 2;

function sum(ring: number[]): number {
  let n = 0;
  for (const x of ring) n += x;
  return n;
}

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
  /** Answers per second, a ring over the baseline and the window after it (a slot per second since the clock's origin). */
  readonly #perSecond = new Array<number>(BASELINE_SECONDS + 2).fill(0);
  /** The second the ring's latest slot is for. */
  #second = Number.NEGATIVE_INFINITY;
  /** The burst under way: the rate per window it rose from, when, and whether its answers turned slow in all. */
  #rise: { from: number; at: number; felt: boolean } | undefined;
  /** When the latest answers slow in all (BURST_SLOW_FACTOR) came through the rise under way, oldest first. */
  readonly #slowInAllAt: number[] = [];

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

  /**
   * The answer to one taken callback: how long it took in all, and how much of that it waited for its durable write
   * (a surge counts the webhook's own time: a slow disk is not something holding the signals back makes faster).
   */
  record(elapsedMs: number, now = performance.now(), storeWaitMs = 0): void {
    if (this.thresholdMs <= 0) return;
    this.#advance(now);
    this.#counts[this.#tenth % 10]! += 1;
    this.#perSecond[this.#second % this.#perSecond.length]! += 1;
    const rate = this.#rate();
    // A surge whose callbacks eased off has passed, whether or not the forwarder asked in the meantime.
    if (this.#surgeRate > 0 && rate * 2 < this.#surgeRate) this.#surgeRate = 0;
    if (this.#riseOver(rate, now)) this.#rise = undefined;
    if (!this.#rise && rate >= BURST_MIN) {
      const from = this.#baseline();
      if (rate >= BURST_RISE * from) {
        this.#rise = { from, at: now, felt: false };
        this.#slowInAllAt.length = 0;
      }
    }
    if (this.#rise && !this.#rise.felt && elapsedMs > BURST_SLOW_FACTOR * this.thresholdMs) {
      if (this.#noteSlow(this.#slowInAllAt, now)) this.#rise.felt = true;
    }
    if (elapsedMs - storeWaitMs <= this.thresholdMs) return;
    if (this.#noteSlow(this.#slowAt, now)) this.#surge(now);
  }

  /**
   * A burst the webhook feels: the callbacks rose to BURST_RISE times the rate of the BASELINE_SECONDS before or more,
   * and still come at that (at most BURST_MAX_MS), and its answers are slow (under pressure), or were slow in all
   * (`minSlow` within a window over BURST_SLOW_FACTOR times the threshold, the durable write included) at any time
   * through it: then it lasts as long as the rise does, however fast the answers are once the signals wait. The
   * answers may turn slow seconds into it, once the journeys' signals keep the Temporal server and the worker busy. A
   * steady run is no burst, even when its answers turn slow.
   */
  burst(now = performance.now()): boolean {
    if (!this.#rise) return false;
    // Callbacks that stopped coming end a burst as they end a surge (the rate is counted at each answer).
    this.#advance(now);
    if (this.#riseOver(this.#rate(), now)) {
      this.#rise = undefined;
      return false;
    }
    return this.#rise.felt || this.underPressure(now);
  }

  /** Whether the burst under way has passed: the callbacks fell below its rise, or it has lasted its longest. */
  #riseOver(rate: number, now: number): boolean {
    const rise = this.#rise;
    return rise !== undefined && (rate < BURST_MIN || rate < BURST_RISE * rise.from || now - rise.at > BURST_MAX_MS);
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
    if (now - this.#lastSlowAt >= this.holdMs) this.#surgeRate = 0; // the one before has passed: this one is new
    this.#surgeRate = Math.max(this.#surgeRate, this.#rate());
    this.#lastSlowAt = now;
  }

  /** Answers within the last window. */
  #rate(): number {
    return sum(this.#counts);
  }

  /** Answers per window over the BASELINE_SECONDS before the last window (the seconds it may reach into left out). */
  #baseline(): number {
    const n = this.#perSecond.length;
    let total = 0;
    for (let s = this.#second - n + 1; s <= this.#second - 2; s++) total += this.#perSecond[((s % n) + n) % n]!;
    return (total / BASELINE_SECONDS) * (this.windowMs / 1_000);
  }

  #slow(now: number): boolean {
    return this.#within(this.#slowAt, now);
  }

  /** Notes a slow answer among the latest `minSlow` of its kind; whether they now fall within the window. */
  #noteSlow(times: number[], now: number): boolean {
    times.push(now);
    if (times.length > this.minSlow) times.shift();
    return this.#within(times, now);
  }

  /** Whether `minSlow` of these times (the latest, oldest first) fall within the window before `now`. */
  #within(times: number[], now: number): boolean {
    return times.length >= this.minSlow && now - times[0]! < this.windowMs;
  }

  /** Moves the ring to `now`, emptying the slots of the tenths that passed without an answer. */
  #advance(now: number): void {
    const second = Math.floor(now / 1_000);
    if (second !== this.#second) {
      const n = this.#perSecond.length;
      if (second - this.#second >= n) this.#perSecond.fill(0);
      else for (let s = this.#second + 1; s <= second; s++) this.#perSecond[s % n] = 0;
      this.#second = second;
    }
    const tenth = Math.floor(now / (this.windowMs / 10));
    if (tenth === this.#tenth) return;
    if (tenth - this.#tenth >= 10) this.#counts.fill(0);
    else for (let t = this.#tenth + 1; t <= tenth; t++) this.#counts[t % 10] = 0;
    this.#tenth = tenth;
  }
}
