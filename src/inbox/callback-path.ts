// The callback path, whole: a webhook body read and stored durably before it is acknowledged (in the inbox, or kept as
// a dead letter when no journey can take it), the forwarder that signals each stored callback to its journey (from
// the signal thread when the process has one), the acknowledgement pressure that paces the forwarder, a dead letter's
// replay, and the dead letters' retention. Behind accept / replay / start / stop; the API's webhook and admin routes
// speak HTTP around it (docs/design-notes.md#the-webhook).
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { PatientSealedInbox, type InboxPatientKeys } from './patient-sealing';
import type { AuditEvent } from '../audit/types';
import { RecordSealer } from '../codec/at-rest';
import type { Config } from '../config';
import { isUnread } from '../workflows/journey-state';
import { AckPressure } from './ack-pressure';
import { InboxForwarder, signalJourney, type InboxForwarderOptions } from './forwarder';
import { createInbox } from './create';
import type { CallbackSeries } from './metrics';
import { callbackSignal, readCallback } from './reading';
import { expireDeadLetters } from './retention';
import { UnstorableCallbackError, type CallbackInbox, type DeadLetter } from './types';

/** A callback is a few kilobytes; a body over this is not one, but it is kept (up to WEBHOOK_MAX_BODY_BYTES). */
export const CALLBACK_MAX_BYTES = 1024 * 1024;

type Log = InboxForwarderOptions['log'] & { info(obj: object, msg: string): void };

export interface CallbackPathOptions {
  config: Pick<Config, 'inbox' | 'forwarder' | 'api' | 'codec'>;
  temporal: Client;
  sealer: RecordSealer;
  metrics: CallbackSeries;
  log: Log;
  now: () => Date;
  /** An inbox of the caller's (tests); it stays open when the path stops. By default the configuration's. */
  inbox?: CallbackInbox;
  /** How the forwarder sends a signal (from a thread of its own in the API process); by default inline. */
  signal?: InboxForwarderOptions['signal'];
  /** First wait of the forwarder after a failed attempt; doubles up to config.forwarder.maxBackoffMs. */
  forwarderMinBackoffMs?: number;
  /** Dead-letter retention's deletions go on the audit trail. */
  audit?: (event: AuditEvent) => unknown;
  /**
   * Per-patient keys: each callback (in the inbox, as a dead letter) sealed for its journey's patient, so an erasure
   * reaches it (patient-sealing.ts). Around the injected inbox too.
   */
  patientKeys?: InboxPatientKeys;
  /**
   * Layers of the acknowledgement left out, to measure what each costs (bench/ack-layers.ts); never set by a
   * deployment (server.ts does not pass it, and no setting reaches it).
   */
  measureWithout?: ReadonlySet<AckLayer>;
}

/**
 * The acknowledgement's layers that only a measurement leaves out (the others are settings): the token check, reading
 * the body into the interface's event (left out: each distinct body read once), sealing the inbox's entries under
 * the payload keys (which the patient keys need, so no setting leaves it out alone), the acknowledgement-pressure
 * bookkeeping, and the answer's serialization by its response schema.
 */
export type AckLayer = 'token' | 'reading' | 'payload-sealing' | 'pressure' | 'response-schema';

/** Why a body was kept as a dead letter instead of going to its journey. */
export type Refusal =
  /** Not JSON, not an object, no event number, nested too deep. */
  | 'unreadable'
  /** Over the size a callback may be, or more than a journey keeps of one. */
  | 'too-large'
  /** Read, but the inbox cannot store this entry (its own fault, not the store's). */
  | 'unstorable';

export type Acceptance =
  | { ok: true; deliveryId: string; event: number; held: boolean }
  | { ok: false; refusal: Refusal; detail: string; issues?: string[] };

/** The inbox or the dead letters could not store a callback: nothing was accepted (the sender sends it again). */
export class CallbackNotStoredError extends Error {
  constructor(
    readonly store: 'inbox' | 'dead_letters',
    options: { cause: unknown },
  ) {
    super(`the callback could not be stored (${store})`, options);
    this.name = 'CallbackNotStoredError';
  }
}

export type ReplayOutcome =
  | { ok: true; outcome: 'queued' | 'already_recorded' | 'signalled' }
  | { ok: false; refusal: 'unreadable' | 'too-large'; detail: string; issues?: string[] }
  | { ok: false; refusal: 'journey-gone'; detail: string };

/** A body on its way through accept: what its durable writes and a dead letter of it need. */
interface Delivery {
  journeyId: string;
  rawBody: string;
  receivedAt: string;
  bodyBytes: number;
  storeWait: ((ms: number) => void) | undefined;
}

/** The event label of the callback metrics: 1, 2, 3, or `other` (so a sender cannot grow the label set). */
function metricEvent(event: number): string {
  return event >= 1 && event <= 3 ? String(event) : 'other';
}

/** Callbacks being taken at once (read, waiting for their durable write) from which the forwarder yields to them. */
export const BURST_TAKING = 16;

export class CallbackPath {
  readonly inbox: CallbackInbox;
  readonly forwarder: InboxForwarder;
  /** Whether the webhook answers taken callbacks slowly (the forwarder holds back then); fed by `answered`. */
  pressure: AckPressure;
  readonly #o: CallbackPathOptions;
  /** The largest body read as a callback (the API's own body limit when lower), and the largest kept at all. */
  readonly callbackMaxBytes: number;
  readonly keptMaxBytes: number;
  #retentionTimer: NodeJS.Timeout | undefined;
  /** The layers left out for a measurement (empty in a deployment). */
  readonly measureWithout: ReadonlySet<AckLayer>;
  /** Callbacks in accept() now: read and waiting for their durable write (the forwarder yields while many are). */
  #taking = 0;
  readonly #readOnce = new Map<string, ReturnType<typeof readCallback>>();

  constructor(o: CallbackPathOptions) {
    this.#o = o;
    this.measureWithout = o.measureWithout ?? new Set();
    const { config, metrics } = o;
    this.callbackMaxBytes = Math.min(config.api.bodyLimitBytes, CALLBACK_MAX_BYTES);
    this.keptMaxBytes = Math.max(config.api.webhookMaxBodyBytes, this.callbackMaxBytes);
    const store =
      o.inbox ??
      createInbox(config, this.measureWithout.has('payload-sealing') ? RecordSealer.plain() : o.sealer, {
        onBatch: (size, seconds) => {
          metrics.inboxAppendBatch.observe(size);
          metrics.inboxWriteSeconds.observe(seconds);
        },
        onListenError: (err) => o.log.warn({ err }, 'inbox LISTEN connection lost; reconnecting'),
        now: o.now,
      });
    this.inbox = o.patientKeys
      ? new PatientSealedInbox(store, o.patientKeys, {
          // Ids only: a callback whose patient was erased is neither kept nor read.
          droppedErased: (journeyId) => {
            metrics.droppedErased.inc();
            o.log.info({ journeyId }, "callback of an erased patient's journey dropped unread");
          },
        })
      : store;
    this.pressure = new AckPressure(config.forwarder.ackPressureMs, config.forwarder.maxDeferMs);
    const temporal = o.temporal;
    this.forwarder = new InboxForwarder({
      inbox: this.inbox,
      temporal,
      ...(o.signal ? { signal: o.signal } : {}),
      signalTimeoutMs: config.forwarder.signalTimeoutMs,
      concurrency: config.forwarder.concurrency,
      maxBackoffMs: config.forwarder.maxBackoffMs,
      pressure: () => this.pressure.underPressure(),
      burst: () => this.pressure.burst(),
      webhookBusy: () => this.#taking >= BURST_TAKING,
      policy: config.forwarder.policy,
      maxDeferMs: config.forwarder.maxDeferMs,
      probe: () =>
        temporal.connection
          .withDeadline(Date.now() + 1_000, () => temporal.workflowService.getSystemInfo({}))
          .then(() => true),
      ...(o.forwarderMinBackoffMs !== undefined ? { minBackoffMs: o.forwarderMinBackoffMs } : {}),
      metrics: {
        forwarded: (_entry, delay) => {
          metrics.forwarded.inc();
          metrics.forwardDelaySeconds.observe(delay);
        },
        deadLettered: (reason) => metrics.deadLettered.inc({ reason }),
        failedAttempt: (unreachable) => metrics.forwardFailures.inc({ kind: unreachable ? 'unreachable' : 'refused' }),
      },
      log: o.log,
      now: o.now,
    });
  }

  /** Opens the inbox (the configuration's; an injected one is the caller's to open). */
  async init(): Promise<void> {
    await this.inbox.init();
  }

  /**
   * A webhook body for a journey, stored durably before this returns: in the inbox when it can be read as a callback
   * (held for a person when it cannot be read as one of the interface's events), as a dead letter when it cannot.
   * Throws CallbackNotStoredError when the store fails: then nothing was accepted. `storeWait` is told how long the
   * durable writes took (acknowledgement pressure counts the webhook's own time, not the storage's).
   */
  async accept(journeyId: string, rawBody: string, storeWait?: (ms: number) => void): Promise<Acceptance> {
    this.#taking++;
    try {
      return await this.#accept(journeyId, rawBody, storeWait);
    } finally {
      this.#taking--;
    }
  }

  async #accept(journeyId: string, rawBody: string, storeWait?: (ms: number) => void): Promise<Acceptance> {
    const { metrics, now } = this.#o;
    const receivedAt = now().toISOString();
    const bodyBytes = Buffer.byteLength(rawBody);
    const delivery: Delivery = { journeyId, rawBody, receivedAt, bodyBytes, storeWait };
    if (bodyBytes > this.callbackMaxBytes) {
      return this.#keep(
        delivery,
        'too-large',
        `the body is ${bodyBytes} bytes, over the ${this.callbackMaxBytes} a callback may be`,
      );
    }
    const parsed = this.measureWithout.has('reading') ? this.#readMemo(rawBody) : readCallback(rawBody);
    if (!parsed.ok) {
      await this.#keep(delivery, 'unreadable', 'the body is not JSON, or JSON without an event number', parsed.issues);
      return {
        ok: false,
        refusal: 'unreadable',
        detail: `the callback could not be read (${parsed.issues.slice(0, 3).join('; ')})`,
        issues: parsed.issues,
      };
    }
    const made = callbackSignal(parsed, { deliveryId: randomUUID(), receivedAt, rawBody });
    if (!made.ok) return this.#keep(delivery, 'too-large', `the callback is too large for its journey: ${made.over}`);
    const { signal } = made;
    try {
      await this.#stored(delivery, 'inbox', () => this.inbox.append(journeyId, signal));
    } catch (err) {
      // This callback alone cannot be written as an inbox entry: its body still can, as a dead letter.
      if (!(err instanceof UnstorableCallbackError)) throw err;
      return this.#keep(delivery, 'unstorable', err.message);
    }
    const held = isUnread(parsed.callback);
    metrics.callbacks.inc({ event: metricEvent(parsed.event), outcome: held ? 'held' : 'accepted' });
    return { ok: true, deliveryId: signal.deliveryId, event: parsed.event, held };
  }

  /**
   * A durable write of the callback path: how long it took told to `storeWait`; a failure of the store (not the
   * entry's own) counted and logged (the store and its code only: no body, no URL token) and thrown as
   * CallbackNotStoredError.
   */
  async #stored<T>(d: Delivery, what: 'inbox' | 'dead_letters', write: () => Promise<T>): Promise<T> {
    const { metrics } = this.#o;
    const started = performance.now();
    try {
      return await write();
    } catch (err) {
      // The entry's own fault, not the store's: the caller keeps the body another way.
      if (err instanceof UnstorableCallbackError) throw err;
      metrics.inboxFailures.inc({ store: what });
      metrics.callbacks.inc({ event: 'unknown', outcome: 'refused' });
      this.#o.log.error({ err, journeyId: d.journeyId, store: what }, 'callback NOT stored: answered 503');
      throw new CallbackNotStoredError(what, { cause: err });
    } finally {
      d.storeWait?.(performance.now() - started);
    }
  }

  /** Keeps the body for operators as a dead letter. */
  async #keep(d: Delivery, refusal: Refusal, detail: string, issues?: string[]): Promise<Acceptance> {
    const { metrics, now } = this.#o;
    const { journeyId, receivedAt, bodyBytes, rawBody } = d;
    const reason = refusal === 'too-large' ? 'oversized' : 'unparseable';
    await this.#stored(d, 'dead_letters', () =>
      this.inbox.deadLetters.add(
        { journeyId, reason, detail, ...(issues ? { issues } : {}), receivedAt, bodyBytes, rawBody },
        now(),
      ),
    );
    metrics.deadLettered.inc({ reason });
    metrics.callbacks.inc({ event: 'unknown', outcome: 'dead_lettered' });
    return { ok: false, refusal, detail, ...(issues ? { issues } : {}) };
  }

  /** A measurement without the reading's cost: each distinct body read once (a few hundred at most). */
  #readMemo(rawBody: string): ReturnType<typeof readCallback> {
    let parsed = this.#readOnce.get(rawBody);
    if (!parsed) {
      parsed = readCallback(rawBody);
      if (this.#readOnce.size < 1_000) this.#readOnce.set(rawBody, parsed);
    }
    return parsed;
  }

  /**
   * The answer to a callback the webhook took (its 200) and how long it took, less its durable write: the
   * acknowledgement figures and pressure. Never a refusal's: a wrong address is anyone's to send, however slowly.
   */
  answered(elapsedMs: number, storeWaitMs: number): void {
    this.#o.metrics.ackSeconds.observe(elapsedMs / 1000);
    if (this.measureWithout.has('pressure')) return;
    // A surge counts the webhook's own time (a durable write the storage was slow with, a disk's flush stall, is not
    // something holding the journeys' signals back could make faster); a burst also the time in all (AckPressure).
    this.pressure.record(elapsedMs, performance.now(), storeWaitMs);
  }

  /**
   * A dead letter delivered to its journey again: signalled now when Temporal answers (so the operator learns at
   * once whether the journey takes it), queued in the inbox for the forwarder when it does not. The letter is removed
   * once signalled or queued; a refused replay counts on the letter and leaves it.
   */
  async replay(letter: DeadLetter): Promise<ReplayOutcome> {
    const { metrics, now, temporal, config } = this.#o;
    const counted = () =>
      this.inbox.deadLetters.update({ ...letter, replays: letter.replays + 1, lastReplayAt: now().toISOString() });
    const parsed = readCallback(letter.rawBody);
    if (!parsed.ok) {
      await counted();
      return {
        ok: false,
        refusal: 'unreadable',
        detail: 'the body still is not JSON with an event number',
        issues: parsed.issues,
      };
    }
    const made = callbackSignal(parsed, {
      // The original delivery when it had one, so the journey's audit trail shows one delivery.
      deliveryId: letter.deliveryId ?? randomUUID(),
      receivedAt: letter.receivedAt,
      rawBody: letter.rawBody,
    });
    if (!made.ok) {
      await counted();
      return { ok: false, refusal: 'too-large', detail: `the callback is too large for its journey: ${made.over}` };
    }
    const { signal } = made;
    const sent = await signalJourney(temporal, letter.journeyId, signal, config.api.temporalTimeoutMs);
    if (!sent.ok && sent.gone) {
      await counted();
      return {
        ok: false,
        refusal: 'journey-gone',
        detail:
          sent.gone === 'journey_finished'
            ? `journey ${letter.journeyId} has finished; it takes no more callbacks`
            : `no journey ${letter.journeyId} exists`,
      };
    }
    if (!sent.ok) await this.inbox.append(letter.journeyId, signal);
    const outcome = !sent.ok ? 'queued' : sent.alreadyApplied ? 'already_recorded' : 'signalled';
    await this.inbox.deadLetters.remove(letter.id);
    metrics.callbacks.inc({ event: metricEvent(parsed.event), outcome: `replayed_${outcome}` });
    return { ok: true, outcome };
  }

  /** The inbox's gauges as of now (before a scrape); false when the store could not be read (they keep the last). */
  async refreshGauges(): Promise<{ ok: true } | { ok: false; err: unknown }> {
    try {
      const stats = await this.inbox.stats();
      Object.assign(this.#o.metrics.inbox, {
        depth: stats.depth,
        oldestAgeSeconds: stats.oldestReceivedAt
          ? Math.max(0, (this.#o.now().getTime() - stats.oldestReceivedAt.getTime()) / 1000)
          : 0,
        deadLetters: stats.deadLetters,
      });
      return { ok: true };
    } catch (err) {
      return { ok: false, err };
    }
  }

  /**
   * The forwarder, and the dead letters' retention: those past DEAD_LETTER_RETENTION_DAYS are deleted now and every
   * hour (any replica; each deletion once, on the audit trail).
   */
  start(): void {
    this.forwarder.start();
    const days = this.#o.config.api.deadLetterRetentionDays;
    if (days <= 0) return;
    const { log, now, audit } = this.#o;
    const sweep = () =>
      expireDeadLetters(this.inbox.deadLetters, {
        olderThan: new Date(now().getTime() - days * 86_400_000),
        ...(audit ? { audit } : {}),
      }).then(
        ({ removed }) => {
          if (removed > 0) log.info({ removed, retentionDays: days }, 'dead letters past their retention deleted');
        },
        (err: unknown) => log.warn({ err }, 'dead-letter retention sweep failed; the next one tries again'),
      );
    void sweep();
    this.#retentionTimer = setInterval(() => void sweep(), 3_600_000).unref();
  }

  /** Lets the forwarder finish its claim, then closes the inbox (an injected one stays open: it is the caller's). */
  async stop(): Promise<void> {
    clearInterval(this.#retentionTimer);
    await this.forwarder.stop();
    if (!this.#o.inbox) await this.inbox.close();
  }
}
