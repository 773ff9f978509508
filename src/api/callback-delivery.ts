// From an acknowledged callback to its journey, without ever losing it. The webhook tries the signal within a short
// budget; when that is not enough (Temporal slow or down) the callback goes to the spool, durably, before the 200,
// and the forwarder signals it later with backoff. A callback whose journey is unknown or finished becomes a dead
// letter. A signal that landed although we stopped waiting may arrive twice: same deliveryId, and the journey
// deduplicates by patient exam and event anyway.
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { callbackReceived, journeyWorkflowId, type CallbackSignal } from '../workflows/definitions';
import type { CallbackSpool, DeadLetterReason, DeadLetterStore } from './callback-files';
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
    const attempt = this.#signal(journeyId, signal);
    let timer: NodeJS.Timeout | undefined;
    const first = await Promise.race([
      attempt,
      new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), this.#o.budgetMs))),
    ]);
    clearTimeout(timer);
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
          this.#wakeForWork();
        }
      });
      this.#late.add(settled);
    } else {
      this.#o.log.warn({ err: first.err, journeyId }, 'callback signal failed; spooled for the forwarder');
    }
    this.#wakeForWork();
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
      for (const name of names) {
        if (this.#stopping) return;
        if (this.#inflight.has(name)) continue;
        const done = await this.#forward(name);
        if (done) {
          this.#backoffMs = 0;
          continue;
        }
        const min = this.#o.minBackoffMs ?? 100;
        this.#backoffMs = Math.min(this.#o.maxBackoffMs, this.#backoffMs === 0 ? min : this.#backoffMs * 2);
        // New callbacks do not cut a backoff short: Temporal is what we are waiting for.
        await this.#sleep(this.#backoffMs, false);
        break;
      }
    }
  }

  /** True when the entry is settled (signalled, dead-lettered or gone); false to retry later. */
  async #forward(name: string): Promise<boolean> {
    let entry;
    try {
      entry = await this.#o.spool.read(name);
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
      return true;
    }
    if (!entry) return true;
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

  #signal(journeyId: string, signal: CallbackSignal): Promise<Attempt> {
    const { temporal, signalTimeoutMs } = this.#o;
    const handle = temporal.workflow.getHandle(journeyWorkflowId(journeyId));
    return temporal.connection
      .withDeadline(Date.now() + signalTimeoutMs, () => handle.signal(callbackReceived, signal))
      .then(
        (): Attempt => ({ ok: true }),
        (err: unknown): Attempt => ({ ok: false, err }),
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
