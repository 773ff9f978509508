// What a patient key store is and promises: each patient's data key, stored only wrapped by the master key ring, and
// the keys that were destroyed (an erasure's tombstone: who, which key, which erasure, when; no key, no patient data).
// The file store (file-store.ts) and the PostgreSQL tables (postgres-store.ts) implement it; the erasure log that
// outlives a restore of either is erasure-log.ts.
import type { PatientRef } from './envelope';

/** A patient's data key as stored: wrapped (AES-256-GCM) by one key of the master key ring, named beside it. */
export interface WrappedKey {
  patientRef: PatientRef;
  /** The data key's id, `dk_...`: what envelopes name; unchanged by a rewrap. */
  dekId: string;
  /** The master key that wrapped it (its id in the ring). */
  wrapKeyId: string;
  /** iv | wrapped key | tag. */
  wrapped: Buffer;
  createdAt: string;
}

/** A data key destroyed by an erasure: what the store keeps of it (and what the erasure log holds). */
export interface ErasedKey {
  patientRef: PatientRef;
  dekId: string;
  erasureId: string;
  erasedAt: string;
}

/**
 * A journey (its workflow id), the patient its payloads are sealed for and the data key they are sealed under. Set
 * once, never changed: a later key of the same patient (after an erasure) never seals anything of this journey.
 */
export interface JourneyBinding {
  workflowId: string;
  patientRef: PatientRef;
  /**
   * The patient's data key when the journey was bound. Bindings made before journeys named their key are read with
   * the key the patient had then: the first key destroyed after `boundAt`, else the patient's key now.
   */
  dekId?: string;
  boundAt: string;
  /** Until when the start that made the binding may still reach Temporal (cleared once it has answered). */
  startingUntil?: string;
}

/**
 * What binding a journey gave: the binding the store holds (this one, or the first one made under the workflow id); a
 * refusal while an erasure of the patient is pending (nothing new joins it); or `stale-key` when the key the caller
 * named is no longer the patient's (destroyed meanwhile: read it again).
 */
export type BindResult =
  { state: 'bound'; binding: JourneyBinding } | { state: 'fenced'; erasureId: string } | { state: 'stale-key' };

/**
 * A request to erase a patient, kept until it is done and after (its status is asked for): who asked and when, which
 * journeys it covered. No patient data: the patient by ref, the request's Idempotency-Key by a keyed hash.
 */
export interface ErasureRequest {
  erasureId: string;
  clinicId: string;
  patientRef: PatientRef;
  /** A keyed hash of the clinic and the request's Idempotency-Key: the same key names the same erasure. */
  requestKey: string;
  requestedBy: string;
  requestedRoles: string[];
  requestedAt: string;
  status: 'pending' | 'done';
  /** The journeys (ids) it ended and erased, once done. */
  journeys: string[];
  completedAt?: string;
}

export interface PatientKeyStore {
  readonly kind: 'file' | 'postgres';
  /** A store that reads only (the file store in a process beside its writer): every change is refused. */
  readonly readOnly: boolean;
  /** Makes the store ready (the tables created or checked; the file locked and read). */
  init(): Promise<void>;
  /** A setting the store keeps for the key ring (the id of the key patient refs are derived under). */
  setting(name: string): Promise<string | undefined>;
  /** Sets a setting unless it is set; answers the value it holds (the first writer's). */
  settleSetting(name: string, value: string): Promise<string>;
  /** The patient's data key, if one is stored. */
  get(patientRef: PatientRef): Promise<WrappedKey | undefined>;
  /** Stores a new key unless the patient has one; answers the key the store holds (the first writer's). */
  insert(key: WrappedKey): Promise<WrappedKey>;
  /** The tombstone of a destroyed data key. */
  erased(dekId: string): Promise<ErasedKey | undefined>;
  /**
   * Deletes the data key `e.dekId` (the row or entry gone, not flagged) and keeps its tombstone, at once. True when a
   * key was deleted; false when it was not there (the tombstone is kept all the same).
   */
  destroy(e: ErasedKey): Promise<boolean>;
  /** Up to `limit` keys wrapped by another master key than `wrapKeyId`, in key id order, after the key id `after`. */
  wrappedByOther(wrapKeyId: string, limit: number, after?: string): Promise<WrappedKey[]>;
  /** Replaces a key's wrap if it is still `from` (another process may have rewrapped it); true when replaced. */
  rewrap(dekId: string, from: string, to: { wrapKeyId: string; wrapped: Buffer }): Promise<boolean>;
  /**
   * Binds a journey to its patient and the data key `b.dekId` unless it is bound (then answers the binding it holds: a
   * workflow id is never bound to two patients). Atomic with addErasureRequest: while an erasure of the patient is
   * pending nothing new is bound to them (`fenced`), so the journeys an erasure lists once it is kept are all it
   * will ever have to end. `stale-key` when `b.dekId` is not the patient's key any more.
   */
  bind(b: JourneyBinding & { dekId: string }): Promise<BindResult>;
  /** Marks the start that bound a journey as answered: an erasure no longer waits for it. */
  settleStart(workflowId: string): Promise<void>;
  /** The binding of a journey, its data key resolved (see JourneyBinding.dekId). */
  bindingOf(workflowId: string): Promise<JourneyBinding | undefined>;
  /** The journeys bound to a patient, oldest first. */
  journeysOf(patientRef: PatientRef): Promise<JourneyBinding[]>;
  /** Which of these workflow ids are bound to a patient. */
  boundAmong(workflowIds: readonly string[]): Promise<Set<string>>;
  /** The tombstones of those of these data keys that were destroyed (a process's cached keys, checked). */
  erasedAmong(dekIds: readonly string[]): Promise<ErasedKey[]>;
  /**
   * Keeps a new erasure request unless the clinic has one under the same key; answers the one it holds. Atomic with
   * bind (see there).
   */
  addErasureRequest(r: ErasureRequest): Promise<ErasureRequest>;
  erasureRequest(erasureId: string): Promise<ErasureRequest | undefined>;
  /** The requests not done yet, oldest first. */
  pendingErasureRequests(): Promise<ErasureRequest[]>;
  /**
   * Takes, or renews, the right to carry out a pending request for `leaseMs` from now (the store's clock): true when
   * it is `holder`'s (it was unclaimed, its last holder's lease ran out, or `holder` held it already); false when
   * another holder's lease still runs or the request is done or unknown. Replicas sharing the store carry out each
   * request once at a time: the holder renews the lease while it works, and one that stopped lets it run out.
   */
  claimErasureRequest(erasureId: string, holder: string, leaseMs: number): Promise<boolean>;
  /** Gives up `holder`'s lease on a request (it stops), so that another replica takes it up at its next look. */
  releaseErasureRequest(erasureId: string, holder: string): Promise<void>;
  /** Marks a request done, with the journeys it covered. */
  completeErasureRequest(erasureId: string, journeys: string[], completedAt: string): Promise<void>;
  /** How many keys and tombstones it holds. */
  counts(): Promise<{ keys: number; erased: number }>;
  close(): Promise<void>;
}

/** Where erasures are recorded so that restoring the key store from an older backup does not undo them. */
export interface ErasureLog {
  /** Where it is, for errors and reports (no secret). */
  readonly where: string;
  /** Checks it can be written as promised (a bucket with Object Lock); throws naming what is wrong. */
  init(): Promise<void>;
  /** Durable before it resolves. */
  append(e: ErasedKey): Promise<void>;
  list(): Promise<ErasedKey[]>;
}

/** The store could not be read or written: what a caller may show (never a URL, a key or a patient's data). */
export class PatientKeyStoreError extends Error {
  override name = 'PatientKeyStoreError';
}

/** An envelope that cannot be opened for another reason than an erasure: altered, foreign, or its key lost. */
export class SealedValueError extends Error {
  override name = 'SealedValueError';
  constructor(
    readonly reason: 'malformed' | 'altered' | 'unknown-key' | 'unknown-master-key',
    message: string,
  ) {
    super(message);
  }
}

/** A patient's data key was destroyed (or is not in the store): nothing is sealed for them any more. */
export class PatientErasedError extends Error {
  override name = 'PatientErasedError';
}

/** An erasure of the patient is under way: nothing new is bound to them until it is done. */
export class PatientErasureInProgressError extends Error {
  override name = 'PatientErasureInProgressError';
  constructor(readonly erasureId: string) {
    super(`an erasure of this patient (${erasureId}) is under way: nothing new is bound to them until it is done`);
  }
}
