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

/** A journey (its workflow id) and the patient its payloads are sealed for. Set once, never changed. */
export interface JourneyBinding {
  workflowId: string;
  patientRef: PatientRef;
  boundAt: string;
}

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
   * Binds a journey to its patient unless it is bound; answers the patient the store holds for it (the first
   * binding's: a workflow id is never bound to two patients).
   */
  bind(b: JourneyBinding): Promise<PatientRef>;
  /** The patient a journey is bound to. */
  patientOf(workflowId: string): Promise<PatientRef | undefined>;
  /** The journeys bound to a patient, oldest first. */
  journeysOf(patientRef: PatientRef): Promise<JourneyBinding[]>;
  /** Keeps a new erasure request unless the clinic has one under the same key; answers the one it holds. */
  addErasureRequest(r: ErasureRequest): Promise<ErasureRequest>;
  erasureRequest(erasureId: string): Promise<ErasureRequest | undefined>;
  /** The requests not done yet, oldest first. */
  pendingErasureRequests(): Promise<ErasureRequest[]>;
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
