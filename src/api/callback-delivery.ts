// From an acknowledged callback to its journey, without ever losing it. The webhook tries the signal within a short
// budget; when that is not enough (Temporal slow or down) the callback goes to the spool, durably, before the 200,
// and the forwarder signals it later with backoff; while Temporal is known to be slow or away the budget is not
// waited out (see #handOff). A callback whose journey is unknown or finished becomes a dead letter. A signal that landed although we stopped waiting may arrive twice: same deliveryId, and the journey
// deduplicates by patient exam and event anyway.
import { isGrpcDeadlineError, isGrpcServiceError, type Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { callbackReceived, journeyWorkflowId, type CallbackSignal } from '../workflows/definitions';
import type { CallbackSpool, DeadLetterReason, DeadLetterStore, SpooledCallback } from './callback-files';
import type { ApiMetrics } from './metrics';

export type DeliveryOutcome = 'signalled' | 'spooled' | 'dead_lettered';

export interface CallbackDeliveryOptions {
  temporal: Client;
  spool: CallbackSpool;
  deadLetters: DeadLetterStore;
  metrics: ApiMetrics;
  /** How long the webhook waits for the signal before it spools. */
  budgetMs: number;
  /** Deadline of one signal RPC. */
  signalTimeoutMs: number;
  minBackoffMs?: number;
  maxBackoffMs: number;
  log: {
    warn(obj: object, msg: string): void;
    error(obj: object, msg: string): void;
    info(obj: object, msg: string): void;
  };
  now?: () => Date;
}

type Attempt = { ok: true } | { ok: false; err: unknown };

/** How a callback is handed off: wait for the signal (budget), spool at once beside it, or spool alone. */
type HandOff = 'wait' | 'beside' | 'spool';

/**
 * Temporal is slow when this many first signals are still on the wire past their budget: waiting the budget for the
 * next one would only add the budget to its acknowledgement, so it is spooled at once while its signal goes out.
 */
const SLOW_WHEN_LATE = 4;
/** Temporal is swamped: no more first signals; new callbacks go to the spool alone, for the forwarder. */
const MAX_LATE = 512;
/** Spooled callbacks the forwarder signals at once (one at a time per journey). */
const FORWARD_CONCURRENCY = 16;
/** While Temporal is unreachable, one callback per interval still tries its signal first (a probe). */
const PROBE_INTERVAL_MS = 1_000;

/** gRPC status codes of a Temporal that did not answer (down, shedding load) rather than refused the call. */
const UNREACHABLE_CODES = new Set([4, 8, 14]); // DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, UNAVAILABLE

/** A signal that failed because Temporal did not answer: the next callbacks need not try before spooling. */
export function temporalUnreachable(err: unknown): boolean {
  if (isGrpcDeadlineError(err)) return true;
  const grpc = isGrpcServiceError(err)
    ? err
    : err instanceof Error && isGrpcServiceError(err.cause)
      ? err.cause
      : undefined;
  return grpc !== undefined && UNREACHABLE_CODES.has(Number(grpc.code));
}

/** A signal to a workflow that does not exist or has closed: retrying cannot help. */
export function journeyGone(err: unknown): DeadLetterReason | undefined {
  if (!(err instanceof WorkflowNotFoundError)) return undefined;
  return /complet|closed|finished/i.test(err.message) ? 'journey_finished' : 'journey_not_found';
}

export class CallbackDelivery {
  readonly #o: CallbackDeliveryOptions;
  /** Spool entries whose first signal is still on the wire: the forwarder leaves them alone. */
  readonly #inflight = new Set<string>();
  /** Late first signals still on the wire (each bounded by its deadline). */
  readonly #late = new Set<Promise<void>>();
  #running: Promise<void> | undefined;
  #stopping = false;
  #wake: { onWork: boolean; resolve: () => void } | undefined;
  #backoffMs = 0;
  /** The last signal (first or forwarded) failed because Temporal did not answer; no signal has landed since. */
  #unreachable = false;
  #lastProbeMs = 0;

  constructor(options: CallbackDeliveryOptions) {
    this.#o = options;
  }

  /** Delivers one parsed callback; resolves when it is signalled, durably spooled or kept as a dead letter. */
  async deliver(journeyId: string, signal: CallbackSignal, rawBody: string): Promise<DeliveryOutcome> {
    const outcome = await this.#deliver(journeyId, signal);
    if (outcome === 'signalled' || outcome === 'spooled') return outcome;
    await this.#deadLetter(journeyId, signal, rawBody, outcome);
    return 'dead_lettered';
  }

  /** An operator's replay of a dead letter: like deliver, but a journey still gone is reported, not kept again. */
  replay(journeyId: string, signal: CallbackSignal): Promise<'signalled' | 'spooled' | DeadLetterReason> {
    return this.#deliver(journeyId, signal);
  }

  async #deliver(journeyId: string, signal: CallbackSignal): Promise<'signalled' | 'spooled' | DeadLetterReason> {
    const handOff = this.#handOff();
    if (handOff === 'spool') {
      // Temporal is unreachable or swamped: a signal now would only wait (and retry) on the wire. The forwarder
      // sends it once Temporal answers again.
      const name = this.#o.spool.entryName(signal.deliveryId, this.#now().getTime());
      await this.#o.spool.write({ version: 1, journeyId, signal }, name);
      this.#o.metrics.spooled.inc();
      this.#wakeForWork();
      return 'spooled';
    }
    const attempt = this.#signal(journeyId, signal);
    let first: Attempt | 'late' = 'late';
    if (handOff === 'wait') {
      let timer: NodeJS.Timeout | undefined;
      first = await Promise.race([
        attempt,
        new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), this.#o.budgetMs))),
      ]);
      clearTimeout(timer);
    }
    if (first !== 'late') {
      if (first.ok) return 'signalled';
      const gone = journeyGone(first.err);
      if (gone) return gone;
    }
    const name = this.#o.spool.entryName(signal.deliveryId, this.#now().getTime());
    // While the first signal may still land, the forwarder leaves the entry alone (marked before it exists).
    if (first === 'late') this.#inflight.add(name);
    try {
      await this.#o.spool.write({ version: 1, journeyId, signal }, name);
    } catch (err) {
      this.#inflight.delete(name);
      throw err;
    }
    this.#o.metrics.spooled.inc();
    if (first === 'late') {
      // When the first signal lands after all, the spooled copy is not needed.
      const settled = attempt.then(async (late) => {
        try {
          if (late.ok) await this.#o.spool.remove(name);
        } catch (err) {
          this.#o.log.warn({ err, entry: name }, 'could not remove a spooled callback that was signalled');
        } finally {
          this.#inflight.delete(name);
          this.#late.delete(settled);
          // Only a copy whose first signal failed is the forwarder's work (each wake lists the spool folder).
          if (!late.ok) this.#wakeForWork();
        }
      });
      this.#late.add(settled);
    } else {
      this.#o.log.warn({ err: first.err, journeyId }, 'callback signal failed; spooled for the forwarder');
      this.#wakeForWork();
    }
    return 'spooled';
  }

  /** Starts the forwarder: it drains what the spool holds (also from before a restart), then waits for more. */
  start(): void {
    if (this.#running) return;
    this.#stopping = false;
    this.#running = this.#run().catch((err: unknown) => this.#o.log.error({ err }, 'spool forwarder stopped'));
  }

  /**
   * Lets the forwarder finish the entry it is on, then stops it; also waits for late first signals (each within its
   * deadline), so the Temporal connection can be closed after this without a call still retrying on it.
   */
  async stop(): Promise<void> {
    this.#stopping = true;
    this.#wake?.resolve();
    await this.#running;
    this.#running = undefined;
    await Promise.all([...this.#late]);
  }

  /** Resolves when nothing is spooled (or the timeout passes: false). For tests and shutdown reports. */
  async drained(timeoutMs: number): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
      if (this.#o.spool.depth === 0 && this.#inflight.size === 0) return true;
      await new Promise((r) => setTimeout(r, 25));
    }
    return this.#o.spool.depth === 0;
  }

  async #run(): Promise<void> {
    while (!this.#stopping) {
      const names = (await this.#o.spool.list()).filter((n) => !this.#inflight.has(n));
      if (names.length === 0) {
        await this.#sleep(1_000, true);
        continue;
      }
      if (await this.#forwardAll(names)) {
        this.#backoffMs = 0;
        continue;
      }
      if (this.#stopping) return;
      const min = this.#o.minBackoffMs ?? 100;
      this.#backoffMs = Math.min(this.#o.maxBackoffMs, this.#backoffMs === 0 ? min : this.#backoffMs * 2);
      // New callbacks do not cut a backoff short: Temporal is what we are waiting for.
      await this.#sleep(this.#backoffMs, false);
    }
  }

  /**
   * Forwards the entries in arrival order, FORWARD_CONCURRENCY at once but one at a time per journey, so each journey
   * still gets its callbacks in the order they came. False once one could not be signalled (Temporal away): nothing
   * more is started and the caller backs off.
   */
  async #forwardAll(names: string[]): Promise<boolean> {
    let retryLater = false;
    let failure: { err: unknown } | undefined;
    const lanes = new Map<string, Promise<void>>();
    const running = new Set<Promise<void>>();
    for (const name of names) {
      while (running.size >= FORWARD_CONCURRENCY) await Promise.race(running);
      if (retryLater || failure || this.#stopping) break;
      if (this.#inflight.has(name)) continue;
      const entry = await this.#read(name);
      if (!entry) continue;
      const task: Promise<void> = (lanes.get(entry.journeyId) ?? Promise.resolve())
        .then(async () => {
          if (retryLater || failure || this.#stopping) return;
          if (!(await this.#forward(name, entry))) retryLater = true;
        })
        .catch((err: unknown) => {
          failure ??= { err };
        })
        .finally(() => running.delete(task));
      lanes.set(entry.journeyId, task);
      running.add(task);
    }
    await Promise.all(running);
    if (failure) throw failure.err;
    return !retryLater;
  }

  /** The entry, or undefined when it is gone (forwarded meanwhile) or unreadable (then moved to the dead letters). */
  async #read(name: string): Promise<SpooledCallback | undefined> {
    try {
      return await this.#o.spool.read(name);
    } catch (err) {
      this.#o.log.error({ err, entry: name }, 'unreadable spool entry; moved to the dead letters');
      await this.#o.deadLetters.add({
        journeyId: 'unknown',
        reason: 'corrupt_spool_entry',
        detail: `spool entry ${name} could not be read`,
        receivedAt: this.#now().toISOString(),
        rawBody: '',
      });
      await this.#o.spool.remove(name);
      return undefined;
    }
  }

  /** True when the entry is settled (signalled, dead-lettered or gone); false to retry later. */
  async #forward(name: string, entry: SpooledCallback): Promise<boolean> {
    const r = await this.#signal(entry.journeyId, entry.signal);
    if (r.ok) {
      await this.#o.spool.remove(name);
      this.#o.metrics.forwarded.inc();
      return true;
    }
    const gone = journeyGone(r.err);
    if (gone) {
      await this.#deadLetter(entry.journeyId, entry.signal, JSON.stringify(entry.signal.raw), gone);
      await this.#o.spool.remove(name);
      return true;
    }
    return false;
  }

  /**
   * How the next callback is handed off. Normally its signal gets the budget. While several first signals are late
   * (Temporal slow), waiting would only add the budget to the acknowledgement: the callback is spooled at once and
   * its signal goes out beside it. While Temporal is unreachable (the last signal failed for it) or hundreds of
   * signals are already waiting, the callback is spooled alone; one callback a second still tries first (a probe).
   */
  #handOff(): HandOff {
    if (this.#unreachable) {
      const now = Date.now();
      if (now - this.#lastProbeMs < PROBE_INTERVAL_MS) return 'spool';
      this.#lastProbeMs = now;
      return 'wait';
    }
    if (this.#inflight.size >= MAX_LATE) return 'spool';
    return this.#inflight.size >= SLOW_WHEN_LATE ? 'beside' : 'wait';
  }

  #signal(journeyId: string, signal: CallbackSignal): Promise<Attempt> {
    const { temporal, signalTimeoutMs } = this.#o;
    const handle = temporal.workflow.getHandle(journeyWorkflowId(journeyId));
    return temporal.connection
      .withDeadline(Date.now() + signalTimeoutMs, () => handle.signal(callbackReceived, signal))
      .then(
        (): Attempt => {
          if (this.#unreachable) {
            // Temporal answers again: the forwarder need not sit out the rest of its backoff.
            this.#unreachable = false;
            this.#backoffMs = 0;
            this.#wake?.resolve();
          }
          return { ok: true };
        },
        (err: unknown): Attempt => {
          if (temporalUnreachable(err) && !this.#unreachable) {
            this.#unreachable = true;
            // This failure was as good as a probe: the next one is due in an interval.
            this.#lastProbeMs = Date.now();
          }
          return { ok: false, err };
        },
      );
  }

  async #deadLetter(journeyId: string, signal: CallbackSignal, rawBody: string, reason: DeadLetterReason) {
    const cb = signal.callback;
    await this.#o.deadLetters.add(
      {
        journeyId,
        reason,
        detail:
          reason === 'journey_finished'
            ? 'the journey has already finished; it takes no more callbacks'
            : 'no journey with this id exists',
        event: cb.event,
        patientExamId: cb.patientExamId,
        deliveryId: signal.deliveryId,
        receivedAt: signal.receivedAt,
        rawBody,
      },
      this.#now(),
    );
    this.#o.metrics.deadLettered.inc({ reason });
  }

  #sleep(ms: number, onWork: boolean): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#wake = { onWork, resolve: done };
    });
  }

  #wakeForWork(): void {
    if (this.#wake?.onWork) this.#wake.resolve();
  }

  #now(): Date {
    return this.#o.now?.() ?? new Date();
  }
}
