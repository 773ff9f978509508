// A journey's URL in the wrong hands can be sent callbacks without end, and each one signalled grows the journey's
// history towards Temporal's limit, where the server terminates the workflow. The journey itself raises attention
// `callback_flood` once it has received far more callbacks than an exam sends; the forwarder then stops signalling it
// and keeps its callbacks as dead letters (`journey_flooded`) until a person has looked. This is how the forwarder
// learns which journeys those are, asking a journey only once it has been sent many callbacks.

export interface FloodWatchOptions {
  /** Whether the journey is flooded (its attention says so); undefined when it could not be asked. */
  ask: (journeyId: string) => Promise<boolean | undefined>;
  /** Signals to one journey (in this process) before it is asked at all. */
  askAfter?: number;
  /** Once asking, a journey that is not flooded is asked again after this many more signals… */
  askEvery?: number;
  /** …or this long after the last answer, whichever is first. A flooded answer is kept this long too. */
  answerTtlMs?: number;
  /** Journeys remembered at most (the least recently signalled are forgotten). */
  maxJourneys?: number;
  now?: () => number;
}

interface Watched {
  signals: number;
  sinceAsked: number;
  askedAt: number;
  flooded: boolean;
}

export class FloodWatch {
  readonly #o: Required<Omit<FloodWatchOptions, 'now'>> & { now: () => number };
  readonly #journeys = new Map<string, Watched>();

  constructor(options: FloodWatchOptions) {
    this.#o = {
      askAfter: 50,
      askEvery: 10,
      answerTtlMs: 15_000,
      maxJourneys: 10_000,
      now: Date.now,
      ...options,
    };
  }

  /** Whether the journey's callbacks go to the dead letters instead of to it. */
  async flooded(journeyId: string): Promise<boolean> {
    const w = this.#journeys.get(journeyId);
    if (!w || w.signals < this.#o.askAfter) return false;
    const fresh = this.#o.now() - w.askedAt < this.#o.answerTtlMs;
    if (fresh && (w.flooded || w.sinceAsked < this.#o.askEvery)) return w.flooded;
    const answer = await this.#o.ask(journeyId);
    // A journey that could not be asked gets its callbacks: holding them back is for journeys that said so.
    w.flooded = answer === true;
    w.askedAt = this.#o.now();
    w.sinceAsked = 0;
    return w.flooded;
  }

  /** Counts a callback signalled to the journey. */
  signalled(journeyId: string): void {
    let w = this.#journeys.get(journeyId);
    if (w) this.#journeys.delete(journeyId);
    else w = { signals: 0, sinceAsked: 0, askedAt: -Infinity, flooded: false };
    w.signals += 1;
    w.sinceAsked += 1;
    this.#journeys.set(journeyId, w);
    if (this.#journeys.size > this.#o.maxJourneys) {
      this.#journeys.delete(this.#journeys.keys().next().value!);
    }
  }
}
