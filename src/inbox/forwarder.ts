// From the inbox to the journeys, in the background: nothing the webhook answers waits for this. The forwarder
// claims whole journeys, signals each journey's entries one at a time in arrival order (several journeys at once,
// bounded), removes what was signalled and backs off while Temporal does not answer. At least once: an entry
// signalled just before a crash is signalled again with the same delivery id, which the journey ignores.
import { isGrpcDeadlineError, isGrpcServiceError, type Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import {
  callbackReceived,
  forJourney,
  journeyWorkflowId,
  snapshotQuery,
  type CallbackSignal,
} from '../contract/definitions';
import type { ForwarderPolicy } from '../config';
import { FloodWatch, type FloodWatchOptions } from './flood-watch';
import type { CallbackInbox, DeadLetterReason, DeadLetterSettlement, InboxEntry } from './types';

/** gRPC status codes of a Temporal that did not answer (down, shedding load) rather than refused the call. */
const UNREACHABLE_CODES = new Set([4, 8, 14]); // DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, UNAVAILABLE

/** A signal that failed because Temporal did not answer (as opposed to refusing it). */
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
export function journeyGone(err: unknown): 'journey_finished' | 'journey_not_found' | undefined {
  if (!(err instanceof WorkflowNotFoundError)) return undefined;
  return /complet|closed|finished/i.test(err.message) ? 'journey_finished' : 'journey_not_found';
}

export const GONE_DETAIL: Record<'journey_finished' | 'journey_not_found' | 'journey_flooded', string> = {
  journey_finished: 'the journey has already finished; it takes no more callbacks',
  journey_not_found: 'no journey with this id exists',
  journey_flooded:
    'the journey was sent far more callbacks than an exam sends and waits for a person (attention callback_flood); ' +
    'replay this letter once the journey has been looked at',
};

export type SignalOutcome =
  | {
      ok: true;
      /**
       * The signal met a finished journey that had already recorded this delivery: an earlier attempt was applied
       * but its answer was lost (a deadline passed as Temporal came back), and the journey finished on it.
       */
      alreadyApplied?: true;
    }
  | {
      ok: false;
      gone?: 'journey_finished' | 'journey_not_found';
      /** Temporal did not answer (as opposed to refusing): classified where the error was raised. */
      unreachable?: boolean;
      err: unknown;
    };

/** One signal of a callback to its journey, bounded by a deadline. */
export async function signalJourney(
  temporal: Client,
  journeyId: string,
  signal: CallbackSignal,
  timeoutMs: number,
): Promise<SignalOutcome> {
  const handle = temporal.workflow.getHandle(journeyWorkflowId(journeyId));
  try {
    await temporal.connection.withDeadline(Date.now() + timeoutMs, () =>
      handle.signal(callbackReceived, forJourney(signal)),
    );
    return { ok: true };
  } catch (err) {
    const gone = journeyGone(err);
    if (gone === 'journey_finished' && (await journeyHad(temporal, handle, signal.deliveryId, timeoutMs))) {
      return { ok: true, alreadyApplied: true };
    }
    return gone ? { ok: false, gone, err } : { ok: false, err };
  }
}

/**
 * Whether a finished journey recorded this delivery (its snapshot lists every delivery it took, whatever it did with
 * it). A callback is retried when its signal's answer did not come back in time, and the journey may have finished on
 * that very signal: such a callback was applied, not late. Any failure to ask (no worker to answer the query, the
 * history gone) answers no, and the callback goes to the dead letters as before, where nothing is lost.
 */
async function journeyHad(
  temporal: Client,
  handle: ReturnType<Client['workflow']['getHandle']>,
  deliveryId: string,
  timeoutMs: number,
): Promise<boolean> {
  try {
    const snapshot = await temporal.connection.withDeadline(Date.now() + timeoutMs, () => handle.query(snapshotQuery));
    return snapshot.events.some((e) => e.deliveryId === deliveryId);
  } catch {
    return false;
  }
}

/** Whether the journey says it is flooded (attention callback_flood); undefined when it could not be asked. */
async function journeyFlooded(temporal: Client, journeyId: string, timeoutMs: number): Promise<boolean | undefined> {
  try {
    const handle = temporal.workflow.getHandle(journeyWorkflowId(journeyId));
    const snapshot = await temporal.connection.withDeadline(Date.now() + timeoutMs, () => handle.query(snapshotQuery));
    return snapshot.attention.some((a) => a.code === 'callback_flood');
  } catch {
    return undefined;
  }
}

export interface ForwarderMetrics {
  forwarded(entry: InboxEntry, delaySeconds: number): void;
  deadLettered(reason: DeadLetterReason): void;
  failedAttempt(unreachable: boolean): void;
}

export interface InboxForwarderOptions {
  inbox: CallbackInbox;
  temporal: Client;
  /**
   * How a signal is sent: by default from this thread with `temporal`; the API sends them from a thread of its own
   * (signaller.ts), so its event loop keeps to the webhook.
   */
  signal?: (journeyId: string, signal: CallbackSignal, timeoutMs: number) => Promise<SignalOutcome>;
  /** Deadline of one signal. */
  signalTimeoutMs: number;
  /** Signals in flight at once (one per journey): what this replica asks of Temporal at most. */
  concurrency?: number;
  /** Journeys per claim, and entries per journey. */
  claimJourneys?: number;
  claimPerJourney?: number;
  minBackoffMs?: number;
  maxBackoffMs: number;
  /** While idle, the inbox is looked at this often even without a wake-up (another replica's append missed). */
  idlePollMs?: number;
  /**
   * How long the forwarder lets callbacks gather before a claim that would be small: after it wakes for an append, and
   * after a claim that took fewer than GATHER_BELOW entries. Each claim costs its round trips and their parsing on
   * the webhook's event loop whatever it carries; one taken at each append would carry one or two callbacks. 20 ms
   * unless set (0: claim at once); a backlog is claimed without a pause.
   */
  gatherMs?: number;
  /**
   * Acknowledgements first: true while the webhook answers slowly; the forwarder then sends nothing new (callbacks wait
   * durably, at most `maxDeferMs`) and halves its signals in flight (docs/design-notes.md#acknowledgement-pressure).
   */
  pressure?: () => boolean;
  /**
   * True while the webhook is taking callbacks in numbers (a burst: many requests read and waiting for their durable
   * write at once). The forwarder then neither claims nor starts a signal until they are answered, at most `yieldMaxMs`
   * at a time: its claims, the opening of sealed records and its signals run on the webhook's event loop and cores.
   */
  webhookBusy?: () => boolean;
  /** The longest the forwarder yields to one burst before it goes on anyway: 1 s. */
  yieldMaxMs?: number;
  /**
   * True through a burst the webhook feels: callbacks at twice the rate of the ten seconds before they rose, or more,
   * its answers slow now or slow in all at some time through it (AckPressure.burst). The adaptive policy holds new
   * signals through it.
   */
  burst?: () => boolean;
  /**
   * What pressure does. `adaptive` (the default): through a burst new signals wait, each at most `maxDeferMs` (the
   * journeys could not have kept up with it anyway, and the Temporal server and the worker stay off the webhook's
   * cores); otherwise nothing waits: the limit halves under pressure down to `minConcurrency` and grows back by one
   * every `recoverMs`, so under a steady run the journeys keep getting their callbacks at what the machine has left
   * beside the webhook. `steady`: the same without the burst's hold (the default before 2026-11-30). `surge`: new
   * signals wait under any pressure (at most `maxDeferMs`, then one at a time) and the limit halves down to 1 (under a
   * steady run it holds the journeys back for as long as the run lasts: docs/performance.md).
   */
  policy?: ForwarderPolicy;
  /** The adaptive policy's floor of signals in flight. Default 2. */
  minConcurrency?: number;
  recoverMs?: number;
  /** Under pressure, a callback that has waited this long since it was received goes anyway: 10 s unless set. */
  maxDeferMs?: number;
  /** Such overdue callbacks go one at a time, at least this long apart: 20 ms, at most 50 a second. */
  pressureIntervalMs?: number;
  /** While backing off longer than a second, Temporal is asked once a second whether it answers again. */
  probe?: () => Promise<boolean>;
  metrics?: ForwarderMetrics;
  log: {
    info?(obj: object, msg: string): void;
    warn(obj: object, msg: string): void;
    error(obj: object, msg: string): void;
  };
  now?: () => Date;
  /** When a journey sent many callbacks is asked whether it is flooded (flood-watch.ts); `ask` defaults to its snapshot. */
  flood?: Partial<FloodWatchOptions>;
}

export type { ForwarderPolicy };

/**
 * A claim with fewer entries than this (and not full) is followed by a pause of `gatherMs` before the next: the inbox
 * held no more than it took, and the next would take what arrived since (see gatherMs).
 */
export const GATHER_BELOW = 64;

export class InboxForwarder {
  readonly #o: InboxForwarderOptions;
  #running: Promise<void> | undefined;
  #stopping = false;
  #wake: (() => void) | undefined;
  /** Ends the sleep under way, whatever it waits for (stop). */
  #endSleep: (() => void) | undefined;
  /** Entries the last claim took (a small one is followed by a pause to gather more). */
  #lastClaimed = 0;
  /** Appends seen while the loop was busy: look again at once. */
  #pendingWake = false;
  #backoffMs = 0;
  #unsubscribe: (() => void) | undefined;
  #busy = false;
  /** Signals allowed in flight now (ack-first pacing), and how many are. */
  #limit: number;
  #inFlight = 0;
  #lastChange = 0;
  #lastSignalAt = 0;
  #ticking: Promise<void> | undefined;
  /**
   * Since when the signals find Temporal unreachable, how many failed so, and whether that was logged (undefined while
   * they reach it).
   */
  #unreachable: { since: number; failed: number; logged: boolean } | undefined;
  #unreachableLoggedAt = -Infinity;

  readonly #flood: FloodWatch;

  constructor(options: InboxForwarderOptions) {
    this.#o = options;
    this.#limit = options.concurrency ?? 16;
    this.#flood = new FloodWatch({
      ask: (journeyId) => journeyFlooded(options.temporal, journeyId, options.signalTimeoutMs),
      ...options.flood,
    });
  }

  /** Signals the forwarder allows itself in flight at the moment (for metrics and tests). */
  get currentLimit(): number {
    return this.#limit;
  }

  /**
   * Waits for a signal slot for `entry` under the current limit, adjusting the limit to the webhook's pressure first.
   * Under pressure only an entry received `maxDeferMs` ago or more goes, one at a time and spaced.
   */
  async #slot(entry: InboxEntry): Promise<void> {
    const max = this.#o.concurrency ?? 16;
    const policy = this.#o.policy ?? 'adaptive';
    const paced = policy !== 'surge';
    const floor = paced ? Math.min(max, this.#o.minConcurrency ?? 2) : 1;
    const maxDeferMs = this.#o.maxDeferMs ?? 10_000;
    await this.#yieldToWebhook();
    for (;;) {
      const now = Date.now();
      const pressed = this.#o.pressure?.() ?? false;
      const overdue = now - Date.parse(entry.signal.receivedAt) >= maxDeferMs;
      // Through a burst (adaptive) the limit stays as it was: nothing goes, and the inbox drains at full pace after. A
      // burst the webhook felt holds while it lasts, its answers fast again or not (AckPressure.burst).
      const held = policy === 'adaptive' && !overdue && (this.#o.burst?.() ?? false);
      if (held && !this.#stopping) {
        await this.#tick();
        continue;
      }
      if (pressed) {
        if (this.#limit > floor && now - this.#lastChange >= 100) {
          this.#limit = Math.max(floor, Math.floor(this.#limit / 2));
          this.#lastChange = now;
        }
      } else if (this.#limit < max && now - this.#lastChange >= (this.#o.recoverMs ?? 1_000)) {
        this.#limit += 1;
        this.#lastChange = now;
      }
      const allowed =
        !pressed ||
        paced ||
        (this.#inFlight === 0 && overdue && now - this.#lastSignalAt >= (this.#o.pressureIntervalMs ?? 20));
      if ((allowed && this.#inFlight < this.#limit) || this.#stopping) {
        this.#inFlight++;
        this.#lastSignalAt = now;
        return;
      }
      await this.#tick();
    }
  }

  /** Waits while the webhook is taking a burst of callbacks (webhookBusy), at most `yieldMaxMs`. */
  async #yieldToWebhook(): Promise<void> {
    const busy = this.#o.webhookBusy;
    if (!busy?.()) return;
    const until = Date.now() + (this.#o.yieldMaxMs ?? 1_000);
    while (!this.#stopping && busy() && Date.now() < until) await this.#tick();
  }

  /** One timer for every lane that waits for a slot (not one each): the event loop wakes 200 times a second at most. */
  #tick(): Promise<void> {
    this.#ticking ??= new Promise<void>((resolve) =>
      setTimeout(() => {
        this.#ticking = undefined;
        resolve();
      }, 5),
    );
    return this.#ticking;
  }

  /** Starts the loop: it forwards what the inbox holds (also from before a restart), then waits for more. */
  start(): void {
    if (this.#running) return;
    this.#stopping = false;
    this.#unsubscribe = this.#o.inbox.onAppend(() => this.#nudge());
    this.#running = this.#run().catch((err: unknown) => this.#o.log.error({ err }, 'inbox forwarder stopped'));
  }

  /** Lets the claim under way finish (each signal is bounded by its deadline), then stops. */
  async stop(): Promise<void> {
    this.#stopping = true;
    this.#unsubscribe?.();
    this.#endSleep?.();
    await this.#running;
    this.#running = undefined;
  }

  /** Resolves true once the inbox is empty and no claim is under way (false at the timeout). Tests and reports. */
  async drained(timeoutMs: number): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
      if (!this.#busy && (await this.#o.inbox.stats()).depth === 0) return true;
      await new Promise((r) => setTimeout(r, 25));
    }
    return false;
  }

  #nudge(): void {
    // An append does not cut a backoff short: Temporal is what a backoff waits for.
    if (this.#backoffMs > 0) return;
    this.#pendingWake = true;
    this.#wake?.();
  }

  async #run(): Promise<void> {
    while (!this.#stopping) {
      this.#pendingWake = false;
      let outcome: 'idle' | 'progress' | 'retry';
      try {
        outcome = await this.#once();
      } catch (err) {
        // The inbox itself failed (PostgreSQL away, a folder unreadable): log and try again after a backoff.
        this.#o.log.error({ err }, 'inbox forwarder: claim or settle failed');
        outcome = 'retry';
      }
      if (this.#stopping) return;
      if (outcome === 'progress') {
        this.#backoffMs = 0;
        const full = (this.#o.claimJourneys ?? 64) * (this.#o.claimPerJourney ?? 32);
        if (this.#lastClaimed < Math.min(GATHER_BELOW, full)) await this.#gather();
        continue;
      }
      if (outcome === 'idle') {
        this.#backoffMs = 0;
        if (!this.#pendingWake) await this.#sleep(this.#o.idlePollMs ?? 1_000);
        await this.#gather();
        continue;
      }
      const min = this.#o.minBackoffMs ?? 100;
      this.#backoffMs = Math.min(this.#o.maxBackoffMs, this.#backoffMs === 0 ? min : this.#backoffMs * 2);
      await this.#backOff(this.#backoffMs);
    }
  }

  /** One claim, forwarded and settled. */
  async #once(): Promise<'idle' | 'progress' | 'retry'> {
    await this.#yieldToWebhook();
    const claim = await this.#o.inbox.claim(this.#o.claimJourneys ?? 64, this.#o.claimPerJourney ?? 32);
    this.#lastClaimed = claim?.entries.length ?? 0;
    if (!claim) return 'idle';
    this.#busy = true;
    try {
      const lanes = new Map<string, InboxEntry[]>();
      for (const entry of claim.entries) {
        const lane = lanes.get(entry.journeyId);
        if (lane) lane.push(entry);
        else lanes.set(entry.journeyId, [entry]);
      }
      const done: string[] = [];
      const deadLetters: DeadLetterSettlement[] = [];
      let retryLater = false;
      const queue = [...lanes.values()];
      const runLane = async (entries: InboxEntry[]) => {
        for (const entry of entries) {
          if (retryLater || this.#stopping) return;
          if (await this.#flood.flooded(entry.journeyId)) {
            deadLetters.push({ entryId: entry.id, letter: letterFor(entry, 'journey_flooded') });
            this.#o.metrics?.deadLettered('journey_flooded');
            continue;
          }
          await this.#slot(entry);
          let r: Awaited<ReturnType<typeof signalJourney>>;
          try {
            r = this.#o.signal
              ? await this.#o.signal(entry.journeyId, forJourney(entry.signal), this.#o.signalTimeoutMs)
              : await signalJourney(this.#o.temporal, entry.journeyId, entry.signal, this.#o.signalTimeoutMs);
          } finally {
            this.#inFlight--;
          }
          if (r.ok || r.gone) this.#reached();
          if (r.ok) {
            done.push(entry.id);
            this.#flood.signalled(entry.journeyId);
            const delay = (this.#now().getTime() - Date.parse(entry.signal.receivedAt)) / 1000;
            this.#o.metrics?.forwarded(entry, Math.max(0, delay));
            if (r.alreadyApplied) {
              this.#o.log.warn(
                { journeyId: entry.journeyId, deliveryId: entry.signal.deliveryId },
                'callback retried after its signal went unanswered: the journey had taken it and finished since',
              );
            }
          } else if (r.gone) {
            deadLetters.push({ entryId: entry.id, letter: letterFor(entry, r.gone) });
            this.#o.metrics?.deadLettered(r.gone);
          } else {
            // Temporal did not take it (away, overloaded, or refused for a reason that may pass): this journey's
            // later entries wait behind it, and no new journey starts until the backoff.
            const unreachable = r.unreachable ?? temporalUnreachable(r.err);
            this.#o.metrics?.failedAttempt(unreachable);
            if (unreachable) this.#unreachableNow(r.err);
            else this.#o.log.warn({ err: r.err, journeyId: entry.journeyId }, 'callback signal failed');
            retryLater = true;
            return;
          }
        }
      };
      const workers = Array.from({ length: Math.min(this.#o.concurrency ?? 16, queue.length) }, async () => {
        for (let lane = queue.shift(); lane; lane = queue.shift()) await runLane(lane);
      });
      await Promise.all(workers);
      await claim.settle(done, deadLetters);
      return retryLater ? 'retry' : 'progress';
    } finally {
      this.#busy = false;
    }
  }

  /**
   * A signal found Temporal unreachable: said once per outage, and at most once a minute (a server overloaded after
   * a restart answers some signals and lets others run out of time); each failure is counted in the metrics.
   */
  #unreachableNow(err: unknown): void {
    if (this.#unreachable) {
      this.#unreachable.failed += 1;
      return;
    }
    const now = Date.now();
    const logged = now - this.#unreachableLoggedAt >= 60_000;
    this.#unreachable = { since: now, failed: 1, logged };
    if (!logged) return;
    this.#unreachableLoggedAt = now;
    this.#o.log.warn({ err }, 'Temporal unreachable: callbacks wait in the inbox and are signalled once it answers');
  }

  /** A signal reached Temporal: the end of an outage that was logged is said, with how long it lasted. */
  #reached(): void {
    const outage = this.#unreachable;
    if (!outage) return;
    this.#unreachable = undefined;
    if (!outage.logged) return;
    (this.#o.log.info ?? this.#o.log.warn).call(
      this.#o.log,
      { unreachableSeconds: Math.round((Date.now() - outage.since) / 100) / 10, failedSignals: outage.failed },
      'Temporal answers the signals again: the forwarder signals the callbacks the inbox kept',
    );
  }

  /** The backoff, cut short when the probe finds Temporal answering again (checked once a second). */
  async #backOff(ms: number): Promise<void> {
    const until = Date.now() + ms;
    while (!this.#stopping && Date.now() < until) {
      await this.#sleep(Math.min(1_000, until - Date.now()));
      if (this.#stopping || Date.now() >= until || !this.#o.probe) continue;
      if (await this.#o.probe().catch(() => false)) {
        this.#backoffMs = 0;
        return;
      }
    }
  }

  /** A pause of `gatherMs` that appends do not cut short (stop does): the callbacks arriving meanwhile share a claim. */
  async #gather(): Promise<void> {
    const ms = this.#o.gatherMs ?? 20;
    if (ms > 0 && !this.#stopping) await this.#sleep(ms, false);
  }

  /** Sleeps `ms`; an append ends it early when `byAppend` (the idle wait), stop() always. */
  #sleep(ms: number, byAppend = true): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#wake = undefined;
        this.#endSleep = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      if (byAppend) this.#wake = done;
      this.#endSleep = done;
    });
  }

  #now(): Date {
    return this.#o.now?.() ?? new Date();
  }
}

function letterFor(entry: InboxEntry, reason: 'journey_finished' | 'journey_not_found' | 'journey_flooded') {
  const cb = entry.signal.callback;
  return {
    journeyId: entry.journeyId,
    reason,
    detail: GONE_DETAIL[reason],
    event: cb.event,
    // A layout without the patient exam id (resolved by the journey) leaves it out here.
    ...(cb.patientExamId != null ? { patientExamId: cb.patientExamId } : {}),
    deliveryId: entry.signal.deliveryId,
    receivedAt: entry.signal.receivedAt,
    rawBody: JSON.stringify(entry.signal.raw),
  };
}
