// The callback inbox: every callback with a valid token is appended here, durably, before the webhook answers 200,
// and a forwarder signals the entries to their journeys in the background. Two stores implement it: files (the
// single-host default) and PostgreSQL (shared by several API replicas). Both keep the dead letters too: callbacks no
// journey could take, for operators. Entries and letters hold PHI and are sealed at rest (src/codec/at-rest.ts).
import type { CallbackSignal } from '../contract/definitions';
import type { SealedEnvelope } from '../patient-keys/envelope';

export interface InboxEntry {
  /** The store's own id: arrival order within the store. */
  id: string;
  journeyId: string;
  signal: CallbackSignal;
}

export type DeadLetterReason =
  | 'unparseable'
  | 'oversized'
  | 'journey_not_found'
  | 'journey_finished'
  /** The journey was sent far more callbacks than an exam sends: held for a person (flood-watch.ts). */
  | 'journey_flooded'
  | 'corrupt_inbox_entry'
  /** Kept for letters written by earlier versions (the spool's name for an unreadable entry). */
  | 'corrupt_spool_entry';

export interface DeadLetter {
  id: string;
  journeyId: string;
  reason: DeadLetterReason;
  /** What went wrong, in words an operator can act on (no payload values). */
  detail: string;
  /** Validation issues of an unparseable body ("field: message"). */
  issues?: string[];
  event?: number;
  patientExamId?: number;
  deliveryId?: string;
  receivedAt: string;
  deadLetteredAt: string;
  replays: number;
  lastReplayAt?: string;
  /** Size of the body as received, in bytes. */
  bodyBytes?: number;
  /** The body exactly as received (it may hold PHI: sealed at rest); empty when `sealedBody` holds it. */
  rawBody: string;
  /** The body sealed for its journey's patient (patient-sealing.ts), as the store keeps it. */
  sealedBody?: SealedEnvelope;
}

export type DeadLetterInput = Omit<DeadLetter, 'id' | 'deadLetteredAt' | 'replays'>;

export interface DeadLetterPage {
  letters: DeadLetter[];
  next?: string;
}

export interface DeadLetterStore {
  add(input: DeadLetterInput, now?: Date): Promise<DeadLetter>;
  /** Oldest first; `after` continues from the last id of the previous page. */
  list(options: { limit: number; after?: string }): Promise<DeadLetterPage>;
  get(id: string): Promise<DeadLetter | undefined>;
  update(letter: DeadLetter): Promise<void>;
  remove(id: string): Promise<boolean>;
  count(): Promise<number>;
}

/** What the forwarder decided for one claimed entry. */
export interface DeadLetterSettlement {
  entryId: string;
  letter: DeadLetterInput;
}

/**
 * Entries claimed by one forwarder: whole journeys (no other claim holds an entry of theirs until this one is
 * settled), each journey's entries in arrival order. A claim that is never settled (the process died) is released:
 * another forwarder takes its entries.
 */
export interface InboxClaim {
  readonly entries: readonly InboxEntry[];
  /**
   * Removes the entries that were signalled (`done`) and those that became dead letters (kept in the same store
   * first), and releases every other entry of the claim for a later attempt.
   */
  settle(done: readonly string[], deadLetters: readonly DeadLetterSettlement[]): Promise<void>;
}

export interface InboxStats {
  depth: number;
  /** When the oldest waiting entry was received; undefined when empty. */
  oldestReceivedAt?: Date;
  deadLetters: number;
}

export interface AppendOptions {
  sealed?: boolean;
}

export interface CallbackInbox {
  readonly kind: 'files' | 'postgres';
  readonly deadLetters: DeadLetterStore;
  init(): Promise<void>;
  /**
   * Durable when it resolves: the webhook answers 200 only after that. Appends that arrive while a write is under
   * way share the next one (group commit). Rejects when the store cannot take the entry (the webhook answers 503).
   * `sealed`: the entry holds nothing in the clear but its delivery id and receipt time (its callback is sealed for
   * its patient, patient-sealing.ts), so a store that seals each entry under the payload keys may keep it as it is:
   * sealing a sealed value again costs the acknowledgement and the forwarder a cipher each and hides nothing more.
   */
  append(journeyId: string, signal: CallbackSignal, options?: AppendOptions): Promise<void>;
  /** Up to `maxJourneys` journeys nobody else holds, at most `maxPerJourney` entries each; undefined when none. */
  claim(maxJourneys: number, maxPerJourney: number): Promise<InboxClaim | undefined>;
  stats(): Promise<InboxStats>;
  /** Called after each append that became durable, in this process or (PostgreSQL) another. */
  onAppend(listener: () => void): () => void;
  close(): Promise<void>;
}

/**
 * A callback that cannot be stored for what it carries (its JSON cannot be written), not for the store: refused alone,
 * and kept by the webhook as a dead letter of the body's text.
 */
export class UnstorableCallbackError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'UnstorableCallbackError';
  }
}

/**
 * The JSON text an inbox stores for a callback, made when it is appended (never inside a shared write, where one
 * entry that cannot be written would fail the others). Throws UnstorableCallbackError.
 */
export function encodeSignal(signal: CallbackSignal): string {
  try {
    return JSON.stringify(signal);
  } catch (err) {
    throw new UnstorableCallbackError(
      `the callback cannot be written as JSON (${err instanceof Error ? err.name : 'unknown error'})`,
      { cause: err },
    );
  }
}

export class InboxUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'InboxUnavailableError';
  }
}

/** Dead letter ids sort in time order: a zero-padded millisecond time, then a random part. */
export const DEAD_LETTER_ID = /^dl_[0-9]{15}_[A-Za-z0-9_-]{6,40}$/;

let letterSequence = 0;
/** A new dead letter id: time first, then a per-process sequence (letters of one millisecond keep their order). */
export function newDeadLetterId(now: Date, random: string): string {
  letterSequence = (letterSequence + 1) % 10_000;
  return `dl_${String(now.getTime()).padStart(15, '0')}_${String(letterSequence).padStart(4, '0')}${random}`;
}
