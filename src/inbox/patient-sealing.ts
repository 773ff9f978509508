// The callback inbox and its dead letters with each callback sealed for its journey's patient (src/patient-keys):
// what a callback carries of the patient (the body as received, the callback as read) is kept under the patient's
// data key, inside the store's own sealing by the payload keys. An erasure thus reaches the callbacks too: one still
// waiting for its erased journey is dropped unread when it is claimed, and a dead letter of an erased journey reads
// `[erased]`. A callback for a journey bound to no patient (one started before patients had keys, or no journey at
// all) is kept as before.
//
// A decorator over either store (files, PostgreSQL): the stores keep an entry's delivery id and receipt time in the
// clear beside the sealed value, and nothing else of it.
import { journeyWorkflowId, type CallbackSignal } from '../contract/definitions';
import { ERASED_MARKER, isSealedEnvelope, type SealedEnvelope } from '../patient-keys/envelope';
import type { JourneyKey, PatientKeys } from '../patient-keys/patient-keys';
import { PatientErasedError } from '../patient-keys/types';
import type {
  CallbackInbox,
  DeadLetter,
  DeadLetterInput,
  DeadLetterPage,
  DeadLetterSettlement,
  DeadLetterStore,
  InboxClaim,
  InboxEntry,
  InboxStats,
} from './types';
import { eachYielding } from './yielding';

/** The patient keys the inbox uses. */
export type InboxPatientKeys = Pick<PatientKeys, 'journeyKey' | 'sealForPatient' | 'openSealed'>;

const ENTRY_PURPOSE = 'callback-inbox';
const LETTER_PURPOSE = 'dead-letter';

/** An inbox entry sealed for its patient, as the store keeps it (in place of the signal). */
interface SealedSignal {
  deliveryId: string;
  receivedAt: string;
  sealed: SealedEnvelope;
}

/**
 * Sealed under the journey's own key, never made here: a callback of a journey whose key was destroyed is not kept
 * under the patient's later key (a new invite after an erasure), it is dropped.
 */
const sealingFor = (journey: JourneyKey) => ({ create: false, ...(journey.dekId ? { dekId: journey.dekId } : {}) });

const isSealedSignal = (s: unknown): s is SealedSignal =>
  typeof s === 'object' && s !== null && isSealedEnvelope((s as { sealed?: unknown }).sealed);

/** How many callbacks were dropped unread because their patient had been erased (for the metrics and the log). */
export interface PatientSealingEvents {
  droppedErased?: (journeyId: string, erasureId: string) => void;
}

export class PatientSealedInbox implements CallbackInbox {
  readonly deadLetters: PatientSealedDeadLetters;

  constructor(
    readonly inner: CallbackInbox,
    readonly keys: InboxPatientKeys,
    readonly events: PatientSealingEvents = {},
  ) {
    this.deadLetters = new PatientSealedDeadLetters(inner.deadLetters, keys);
  }

  get kind(): CallbackInbox['kind'] {
    return this.inner.kind;
  }

  init(): Promise<void> {
    return this.inner.init();
  }

  /**
   * Stores the callback sealed for its journey's patient. A callback for a journey whose patient was erased is not
   * stored at all (the patient asked that nothing of theirs be kept): acknowledged, and counted.
   */
  async append(journeyId: string, signal: CallbackSignal): Promise<void> {
    const journey = await this.keys.journeyKey(journeyWorkflowId(journeyId));
    if (!journey) return this.inner.append(journeyId, signal);
    let sealed: SealedEnvelope;
    try {
      sealed = await this.keys.sealForPatient(journey.patientRef, ENTRY_PURPOSE, signal, sealingFor(journey));
    } catch (err) {
      if (!(err instanceof PatientErasedError)) throw err;
      this.events.droppedErased?.(journeyId, 'after its erasure');
      return;
    }
    const kept: SealedSignal = { deliveryId: signal.deliveryId, receivedAt: signal.receivedAt, sealed };
    return this.inner.append(journeyId, kept as unknown as CallbackSignal, { sealed: true });
  }

  async claim(maxJourneys: number, maxPerJourney: number): Promise<InboxClaim | undefined> {
    const claim = await this.inner.claim(maxJourneys, maxPerJourney);
    if (!claim) return undefined;
    const entries: InboxEntry[] = [];
    const erased: string[] = [];
    // Opened a slice at a time: the webhook's acknowledgements are answered between slices (yielding.ts).
    await eachYielding(claim.entries, async (entry) => {
      const stored: unknown = entry.signal;
      if (!isSealedSignal(stored)) {
        entries.push(entry);
        return;
      }
      const opened = await this.keys.openSealed<CallbackSignal>(stored.sealed, ENTRY_PURPOSE);
      if (opened.state === 'open') entries.push({ ...entry, signal: opened.value });
      else {
        // The patient was erased while the callback waited: nothing of it may be read, nor reach the journey.
        erased.push(entry.id);
        this.events.droppedErased?.(entry.journeyId, opened.erasureId);
      }
    });
    const deadLetters = this.deadLetters;
    return {
      entries,
      async settle(done: readonly string[], letters: readonly DeadLetterSettlement[]): Promise<void> {
        const sealed = await Promise.all(
          letters.map(async (l) => ({ entryId: l.entryId, letter: await deadLetters.sealInput(l.letter) })),
        );
        await claim.settle([...done, ...erased], sealed);
      },
    };
  }

  stats(): Promise<InboxStats> {
    return this.inner.stats();
  }

  onAppend(listener: () => void): () => void {
    return this.inner.onAppend(listener);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

export class PatientSealedDeadLetters implements DeadLetterStore {
  constructor(
    readonly inner: DeadLetterStore,
    readonly keys: InboxPatientKeys,
  ) {}

  /** The letter with its body sealed for its journey's patient (as it is when the journey is bound to none). */
  async sealInput(input: DeadLetterInput): Promise<DeadLetterInput> {
    const journey = await this.keys.journeyKey(journeyWorkflowId(input.journeyId));
    if (!journey) return input;
    try {
      const sealedBody = await this.keys.sealForPatient(
        journey.patientRef,
        LETTER_PURPOSE,
        input.rawBody,
        sealingFor(journey),
      );
      return { ...input, rawBody: '', sealedBody };
    } catch (err) {
      if (!(err instanceof PatientErasedError)) throw err;
      // The patient was erased: the letter keeps what it is (reason, event, size), not the body.
      return { ...input, rawBody: ERASED_MARKER };
    }
  }

  /** The letter as operators read it: its body opened, or `[erased]` once its patient's key is destroyed. */
  async #open(letter: DeadLetter): Promise<DeadLetter> {
    const { sealedBody, ...rest } = letter;
    if (!sealedBody) return letter;
    const opened = await this.keys.openSealed<string>(sealedBody, LETTER_PURPOSE);
    return { ...rest, rawBody: opened.state === 'open' ? opened.value : ERASED_MARKER };
  }

  async add(input: DeadLetterInput, now?: Date): Promise<DeadLetter> {
    return this.#open(await this.inner.add(await this.sealInput(input), now));
  }

  async list(options: { limit: number; after?: string }): Promise<DeadLetterPage> {
    const page = await this.inner.list(options);
    return { ...page, letters: await Promise.all(page.letters.map((l) => this.#open(l))) };
  }

  async get(id: string): Promise<DeadLetter | undefined> {
    const letter = await this.inner.get(id);
    return letter && this.#open(letter);
  }

  /** Updates a letter (its replays): the body as the store keeps it, never the opened one. */
  async update(letter: DeadLetter): Promise<void> {
    const sealedBody = (await this.inner.get(letter.id))?.sealedBody;
    await this.inner.update(sealedBody ? { ...letter, rawBody: '', sealedBody } : letter);
  }

  remove(id: string): Promise<boolean> {
    return this.inner.remove(id);
  }

  count(): Promise<number> {
    return this.inner.count();
  }
}
