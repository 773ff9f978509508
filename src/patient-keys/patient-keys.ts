// Per-patient data keys (docs/design-notes.md#per-patient-data-keys): each patient's values are sealed under a data key
// of their own, stored only wrapped by the master key ring; destroying that key (an erasure) makes every copy of those
// values unreadable, histories and backups included, and they then open as a clear `erased`, not as an error.
//
// Every key created, destroyed, destroyed again after a restore, and rewrapped is on the audit trail before it happens
// (a trail that cannot be written stops the act): patient refs and key ids only, never a patient's data.
import { randomUUID } from 'node:crypto';
import { isUnavailable, StoreUnavailableError, type RetryPolicy } from '../audit/store-unavailable';
import type { AuditEvent } from '../audit/types';
import type { EncryptionKey } from '../encryption-keys';
import { KeyCache, type CachedKey } from './cache';
import { retryingStore } from './retrying-store';
import { cipherKey, KeyWrapper, newDataKey, openValue, PatientRefs, sealValue } from './crypto';
import {
  isDataKeyId,
  isPatientRef,
  isSealedEnvelope,
  isSealPurpose,
  type Opened,
  type PatientRef,
  type SealedEnvelope,
} from './envelope';
import {
  PatientErasedError,
  PatientErasureInProgressError,
  PatientKeyStoreError,
  SealedValueError,
  type ErasedKey,
  type ErasureLog,
  type ErasureRequest,
  type PatientKeyStore,
} from './types';

/**
 * The store's setting that says since when journeys are bound to their patients (the first writer's start): a journey
 * started before may be bound to none, its payloads under the master key ring alone.
 */
export const KEYS_SINCE_SETTING = 'patient-keys-since';

/** The store's setting that names the master key patient refs are derived under (fixed at the first start). */
export const REF_KEY_SETTING = 'patient-ref-key-id';

export interface PatientKeysOptions {
  /** The master key ring (PAYLOAD_ENCRYPTION_KEYS): the first key wraps new data keys, every key unwraps. */
  ring: readonly EncryptionKey[];
  store: PatientKeyStore;
  erasureLog: ErasureLog;
  /** The audit trail's append; each key change is recorded before it happens. */
  audit: (event: AuditEvent) => Promise<unknown>;
  /**
   * Unwrapped keys kept in memory: at most `maxEntries` (10,000), each at most `ttlMs` (30 s), and none used unless the
   * store showed it alive within `checkMs` (1 s): the keys held are checked against the tombstones at most that often.
   */
  cache?: { maxEntries?: number; ttlMs?: number; checkMs?: number };
  /**
   * A process that only reads (the worker and the codec server beside the API's file store): it seals and opens with
   * the keys there are, makes none, erases none, and leaves the erasure log's re-application to the writer (it reads
   * the log, so what it names reads as erased here too).
   */
  readOnly?: boolean;
  /**
   * How a read or write of the store that finds it unavailable (a failover) is tried again before it is refused as
   * StoreUnavailableError (retrying-store.ts): 4 tries within 2 s by default.
   */
  retry?: RetryPolicy;
  /** Who the records of the engine's own acts name (creation, re-destruction, rewrap): `patient-keys`. */
  subject?: string;
  now?: () => Date;
}

/** Who asked for an erasure, as the trail names them. */
export interface Actor {
  subject: string;
  roles: readonly string[];
}

export type EraseResult =
  | { state: 'erased'; erasure: ErasedKey }
  | { state: 'no-key'; patientRef: PatientRef }
  /** The erasure request named was done already (by another runner): the patient's key now is not its to destroy. */
  | { state: 'already-done'; erasureId: string };

/** What the start found: keys a restore brought back, destroyed again; tombstones it put back. */
export interface ErasureReapplied {
  reDestroyed: ErasedKey[];
  tombstonesRestored: number;
}

const ERASED_MEMORY = 10_000;
/** How long a process keeps an unwrapped key at most (the default): a destroyed key is nowhere in use after it. */
export const KEY_CACHE_TTL_MS = 30_000;
/** How long a cached key is used after the store last showed it alive (the default). */
export const KEY_CHECK_MS = 1_000;
/** Journeys' patients remembered (a binding never changes). */
const JOURNEY_MEMORY = 10_000;

/** The patient a journey's payloads are sealed for, and the data key (absent only for a patient never given one). */
export interface JourneyKey {
  patientRef: PatientRef;
  dekId?: string;
}

export class PatientKeys {
  readonly #o: PatientKeysOptions;
  /** The store, each operation tried again while it is unavailable. */
  readonly #store: PatientKeyStore;
  readonly #wrapper: KeyWrapper;
  readonly #cache: KeyCache;
  /** Loads under way, one per patient, shared by the seals and opens that wait for it. */
  readonly #loading = new Map<string, Promise<CachedKey | undefined>>();
  /** Tombstones read lately (an erasure is final): a replay of an erased history asks for the same key again and again. */
  readonly #erased = new Map<string, ErasedKey>();
  /** Journeys' patients and keys read lately (workflow id -> binding). */
  readonly #journeys = new Map<string, JourneyKey>();
  /** Workflow ids found bound to no patient, until when that answer is kept. */
  readonly #unbound = new Map<string, number>();
  #refs: PatientRefs | undefined;
  /** The check of the cached keys against the tombstones under way, shared by whoever waits for it. */
  #checking: Promise<void> | undefined;

  constructor(options: PatientKeysOptions) {
    this.#o = options;
    this.#store = retryingStore(options.store, options.retry);
    this.#wrapper = new KeyWrapper(options.ring);
    this.#cache = new KeyCache(options.cache?.maxEntries ?? 10_000, options.cache?.ttlMs ?? KEY_CACHE_TTL_MS);
  }

  get #subject(): string {
    return this.#o.subject ?? 'patient-keys';
  }

  /**
   * On the record first. A trail that cannot be reached (it retried on its own) stops the act as unavailable, naming
   * the trail; any other failure as it came.
   */
  async #audit(event: AuditEvent): Promise<void> {
    try {
      await this.#o.audit(event);
    } catch (err) {
      if (err instanceof StoreUnavailableError || !isUnavailable(err)) throw err;
      throw new StoreUnavailableError('audit-trail', 'the audit trail is unavailable: nothing was done', {
        cause: err,
      });
    }
  }

  #now(): string {
    return (this.#o.now?.() ?? new Date()).toISOString();
  }

  /** Unwrapped keys held now. */
  get cachedKeys(): number {
    return this.#cache.size;
  }

  get #checkMs(): number {
    return this.#o.cache?.checkMs ?? KEY_CHECK_MS;
  }

  /**
   * How long after a key's destruction no process (each checking as this one does) can still use it: an erasure is
   * done only once this has passed.
   */
  get destroyedEverywhereAfterMs(): number {
    return this.#checkMs + 250;
  }

  /**
   * Opens the store and the erasure log, fixes the master key patient refs are derived under (the active key at the
   * first start; it must stay in the ring), and re-applies the erasure log.
   */
  async init(): Promise<ErasureReapplied> {
    await this.#store.init();
    await this.#o.erasureLog.init();
    const refKeyId = this.#o.readOnly
      ? await this.#store.setting(REF_KEY_SETTING)
      : await this.#store.settleSetting(REF_KEY_SETTING, this.#o.ring[0]!.id);
    if (refKeyId !== undefined) {
      const refKey = this.#o.ring.find((k) => k.id === refKeyId);
      if (!refKey) {
        throw new Error(
          `patient refs are derived under master key "${refKeyId}", which is not in the key ring: keep it configured ` +
            '(it need not be the first)',
        );
      }
      this.#refs = new PatientRefs(refKey);
    }
    if (!this.#o.readOnly) await this.#store.settleSetting(KEYS_SINCE_SETTING, this.#now());
    if (this.#o.readOnly) {
      for (const e of await this.#o.erasureLog.list()) this.#remember(e);
      return { reDestroyed: [], tombstonesRestored: 0 };
    }
    return this.reapplyErasures();
  }

  /** The patient of a clinic, by e-mail (trimmed, lower-cased), as a keyed hash. */
  patientRef(clinicId: string, email: string): PatientRef {
    if (!this.#refs) throw new Error('patient keys are not ready (init; a reader needs its writer to have started)');
    return this.#refs.of(clinicId, email);
  }

  /**
   * Binds a journey (its workflow id) to its patient and to the patient's data key, before anything of it is sealed,
   * making the key if the patient has none. Answers the binding the journey has: the first one's, so a caller whose
   * patient differs must not go on (a workflow id is never bound to two patients), and one whose key was destroyed
   * names an erased journey. While an erasure of the patient is pending nothing is bound to them: a
   * PatientErasureInProgressError. `startingUntil` is when the caller's start gives up reaching Temporal: an erasure
   * waits for it (or for settleStart) before it ends the patient's journeys.
   */
  async bindJourney(workflowId: string, patientRef: PatientRef, o: { startingUntil?: Date } = {}): Promise<JourneyKey> {
    if (!isPatientRef(patientRef)) throw new TypeError('not a patient ref');
    const known = await this.journeyKey(workflowId);
    if (known) return known;
    for (let attempt = 0; attempt < 5; attempt++) {
      const key = await this.#keyFor(patientRef, true);
      if (!key) break;
      const r = await this.#store.bind({
        workflowId,
        patientRef,
        dekId: key.dekId,
        boundAt: this.#now(),
        ...(o.startingUntil ? { startingUntil: o.startingUntil.toISOString() } : {}),
      });
      if (r.state === 'fenced') throw new PatientErasureInProgressError(r.erasureId);
      if (r.state === 'bound') {
        const bound = { patientRef: r.binding.patientRef, ...(r.binding.dekId ? { dekId: r.binding.dekId } : {}) };
        this.#rememberJourney(workflowId, bound);
        return bound;
      }
      // The key was destroyed since it was read (an erasure done meanwhile): read the patient's key again.
      this.#cache.delete(patientRef);
    }
    throw new PatientKeyStoreError("the journey could not be bound: the patient's key kept changing");
  }

  /** The start that bound a journey has answered: an erasure no longer waits for it. */
  settleStart(workflowId: string): Promise<void> {
    return this.#store.settleStart(workflowId);
  }

  /** The patient a journey's payloads are sealed for; undefined for a journey bound to none (one from before). */
  async patientOfJourney(workflowId: string): Promise<PatientRef | undefined> {
    return (await this.journeyKey(workflowId))?.patientRef;
  }

  /**
   * The patient and data key a journey's payloads are sealed under; undefined for a journey bound to none. Whatever is
   * sealed for the journey is sealed under that key or not at all: never under a later key of the same patient.
   */
  async journeyKey(workflowId: string): Promise<JourneyKey | undefined> {
    const known = this.#journeys.get(workflowId);
    if (known) return known;
    const unbound = this.#unbound.get(workflowId);
    if (unbound !== undefined && unbound > Date.now()) return undefined;
    const bound = await this.#store.bindingOf(workflowId);
    if (bound) {
      const key = { patientRef: bound.patientRef, ...(bound.dekId ? { dekId: bound.dekId } : {}) };
      // A binding from before bindings named their key, whose patient has no key yet, is not remembered: its key
      // is the one the patient gets.
      if (key.dekId) this.#rememberJourney(workflowId, key);
      return key;
    }
    // Bound to none (a journey from before per-patient keys, or no journey): remembered for the key cache's time
    // only, so a callback's acknowledgement does not read the store each time. A journey is bound before it
    // starts, so anything of it comes after its binding; this process's own bindings replace the entry at once.
    this.#unbound.delete(workflowId);
    this.#unbound.set(workflowId, Date.now() + (this.#o.cache?.ttlMs ?? KEY_CACHE_TTL_MS));
    if (this.#unbound.size > JOURNEY_MEMORY) this.#unbound.delete(this.#unbound.keys().next().value as string);
    return undefined;
  }

  /** The journeys bound to a patient, oldest first. */
  journeysOf(patientRef: PatientRef) {
    return this.#store.journeysOf(patientRef);
  }

  /** Which of these workflow ids are bound to a patient. */
  boundAmong(workflowIds: readonly string[]): Promise<Set<string>> {
    return this.#store.boundAmong(workflowIds);
  }

  /**
   * Records a request to erase a patient, on the audit trail first (who asked, which clinic, which patient by ref);
   * a second request of the clinic under the same Idempotency-Key answers the first (`created` false).
   */
  async requestErasure(o: {
    clinicId: string;
    patientRef: PatientRef;
    idempotencyKey: string;
    actor: Actor;
  }): Promise<{ request: ErasureRequest; created: boolean }> {
    if (!this.#refs) throw new Error('patient keys are not ready (init)');
    const requestKey = this.#refs.requestKey(o.clinicId, o.idempotencyKey);
    const request: ErasureRequest = {
      erasureId: `er_${randomUUID()}`,
      clinicId: o.clinicId,
      patientRef: o.patientRef,
      requestKey,
      requestedBy: o.actor.subject,
      requestedRoles: [...o.actor.roles],
      requestedAt: this.#now(),
      status: 'pending',
      journeys: [],
    };
    const held = (await this.#store.pendingErasureRequests()).find(
      (r) => r.clinicId === o.clinicId && r.requestKey === requestKey,
    );
    if (held) return { request: held, created: false };
    await this.#audit({
      action: 'patient-erasure.request',
      subject: o.actor.subject,
      roles: [...o.actor.roles],
      outcome: 'ok',
      details: { clinicId: o.clinicId, patientRef: o.patientRef, erasureId: request.erasureId },
    });
    const kept = await this.#store.addErasureRequest(request);
    return { request: kept, created: kept.erasureId === request.erasureId };
  }

  erasureRequest(erasureId: string): Promise<ErasureRequest | undefined> {
    return this.#store.erasureRequest(erasureId);
  }

  pendingErasureRequests(): Promise<ErasureRequest[]> {
    return this.#store.pendingErasureRequests();
  }

  /** Takes or renews `holder`'s lease on carrying out a pending request (see PatientKeyStore.claimErasureRequest). */
  claimErasureRequest(erasureId: string, holder: string, leaseMs: number): Promise<boolean> {
    return this.#store.claimErasureRequest(erasureId, holder, leaseMs);
  }

  releaseErasureRequest(erasureId: string, holder: string): Promise<void> {
    return this.#store.releaseErasureRequest(erasureId, holder);
  }

  /** Marks an erasure done, on the record with the journeys it covered (ids only). */
  async completeErasureRequest(r: ErasureRequest, journeys: string[]): Promise<void> {
    await this.#audit({
      action: 'patient-erasure.done',
      subject: r.requestedBy,
      roles: [...r.requestedRoles],
      outcome: 'ok',
      // The journeys by id, space-separated (a record's details are flat).
      details: {
        clinicId: r.clinicId,
        patientRef: r.patientRef,
        erasureId: r.erasureId,
        journeys: journeys.join(' '),
        journeyCount: journeys.length,
      },
    });
    await this.#store.completeErasureRequest(r.erasureId, journeys, this.#now());
  }

  #rememberJourney(workflowId: string, key: JourneyKey): void {
    this.#unbound.delete(workflowId);
    this.#journeys.set(workflowId, key);
    if (this.#journeys.size > JOURNEY_MEMORY) this.#journeys.delete(this.#journeys.keys().next().value as string);
  }

  /**
   * Bytes sealed under the patient's data key for one purpose (a Temporal payload, a stored document). The key must
   * exist (bindJourney made it): a patient whose key was destroyed is refused with PatientErasedError, never given a
   * new key here, so nothing written after an erasure is readable again. With `dekId` (a journey's key), only under
   * that key: a later key of the patient is refused the same way.
   */
  async sealBytes(
    patientRef: PatientRef,
    purpose: string,
    plain: Uint8Array,
    dekId?: string,
  ): Promise<{ dekId: string; data: Buffer }> {
    if (!isSealPurpose(purpose)) throw new TypeError('a seal purpose is lower-case letters, digits, dots and dashes');
    const key = await this.#keyFor(patientRef, false);
    if (!key || (dekId !== undefined && key.dekId !== dekId)) {
      throw new PatientErasedError(
        `patient ${patientRef} has no data key ${dekId ?? ''}: erased, or the key store is older than the journey`,
      );
    }
    return { dekId: key.dekId, data: sealValue(key.dek, purpose, patientRef, key.dekId, Buffer.from(plain)) };
  }

  /** Bytes sealBytes sealed; `erased` when the patient's data key was destroyed (else as openSealed throws). */
  async openBytes(patientRef: PatientRef, dekId: string, purpose: string, data: Buffer): Promise<Opened<Buffer>> {
    if (!isPatientRef(patientRef) || !isDataKeyId(dekId)) throw new SealedValueError('malformed', 'not a sealed value');
    const key = await this.#openingKey(patientRef, dekId);
    if (key.state === 'erased') return key;
    try {
      return { state: 'open', value: openValue(key.value.dek, purpose, patientRef, dekId, data) };
    } catch {
      throw new SealedValueError(
        'altered',
        `a value sealed under data key ${dekId} was altered or is not for "${purpose}"`,
      );
    }
  }

  /**
   * Whether the data key `dekId` of the patient was destroyed: its erasure, or undefined while it opens. Throws (a
   * SealedValueError) for a key the store neither has nor destroyed.
   */
  async erasureOfKey(patientRef: PatientRef, dekId: string): Promise<Opened<never> | undefined> {
    const key = await this.#openingKey(patientRef, dekId);
    return key.state === 'erased' ? key : undefined;
  }

  /** The key that sealed under `dekId`, or the erasure that destroyed it; throws when it is neither. */
  async #openingKey(p: PatientRef, k: string): Promise<Opened<CachedKey>> {
    let key = await this.#cached(p);
    if (key?.dekId !== k) {
      const known = this.#erased.get(k);
      if (known) return erasedOf(known);
      key = await this.#keyFor(p, false);
    }
    if (key?.dekId !== k) {
      const tomb = this.#erased.get(k) ?? (await this.#store.erased(k));
      if (tomb) {
        this.#remember(tomb);
        return erasedOf(tomb);
      }
      throw new SealedValueError(
        'unknown-key',
        `data key ${k} is not in the patient key store and was not erased: the store may be older than the value`,
      );
    }
    return { state: 'open', value: key };
  }

  /**
   * A value (anything JSON can hold) sealed under the patient's data key for one purpose; the key made on first use
   * unless `create` is false. With `dekId` (a journey's key), only under that key, never made: a later key of the
   * patient is refused with PatientErasedError.
   */
  async sealForPatient(
    patientRef: PatientRef,
    purpose: string,
    value: unknown,
    o: { create?: boolean; dekId?: string } = {},
  ): Promise<SealedEnvelope> {
    if (!isPatientRef(patientRef)) throw new TypeError('not a patient ref');
    if (!isSealPurpose(purpose)) throw new TypeError('a seal purpose is lower-case letters, digits, dots and dashes');
    const json = JSON.stringify(value);
    if (json === undefined) throw new TypeError('a sealed value must be one JSON can hold');
    const key = await this.#keyFor(patientRef, o.dekId === undefined && (o.create ?? true));
    // Without `create`, a patient whose key is gone (erased) is refused: nothing is sealed for them again.
    if (!key || (o.dekId !== undefined && key.dekId !== o.dekId)) {
      throw new PatientErasedError(`patient ${patientRef} has no data key ${o.dekId ?? ''}: erased, or not made yet`);
    }
    const sealed = sealValue(key.dek, purpose, patientRef, key.dekId, Buffer.from(json, 'utf8'));
    return { $sealed: 1, p: patientRef, k: key.dekId, d: sealed.toString('base64') };
  }

  /**
   * The value of an envelope sealed for `purpose`; `erased` when the patient's data key was destroyed. Throws a
   * SealedValueError for anything else: not an envelope, altered, sealed for another purpose, or a key the store does
   * not have and never destroyed (a store restored from a backup older than the key).
   */
  async openSealed<T = unknown>(envelope: unknown, purpose: string): Promise<Opened<T>> {
    if (!isSealedEnvelope(envelope)) throw new SealedValueError('malformed', 'not a sealed value');
    const { p, k } = envelope;
    const opened = await this.#openingKey(p, k);
    if (opened.state === 'erased') return opened;
    const key = opened.value;
    let plain: Buffer;
    try {
      plain = openValue(key.dek, purpose, p, k, Buffer.from(envelope.d, 'base64'));
    } catch {
      throw new SealedValueError(
        'altered',
        `a value sealed under data key ${k} was altered or is not for "${purpose}"`,
      );
    }
    return { state: 'open', value: JSON.parse(plain.toString('utf8')) as T };
  }

  /**
   * The patient's cached key, if the store showed it alive within `checkMs`; the keys held are checked against the
   * tombstones first when it was longer ago (one read for all of them). A key destroyed elsewhere is thus out of use
   * here `checkMs` after its destruction at the latest, whatever the cache's time.
   */
  async #cached(patientRef: PatientRef): Promise<CachedKey | undefined> {
    const entry = this.#cache.get(patientRef);
    if (!entry) return undefined;
    const age = Date.now() - entry.checkedAt;
    if (age <= this.#checkMs) {
      // Checked again in the background from half its time on: under steady use a seal (a callback's acknowledgement)
      // never waits for the check.
      if (age > this.#checkMs / 2) this.#checkCached().catch(() => undefined);
      return entry;
    }
    await this.#checkCached();
    const again = this.#cache.get(patientRef);
    return again && Date.now() - again.checkedAt <= this.#checkMs ? again : undefined;
  }

  #checkCached(): Promise<void> {
    this.#checking ??= (async () => {
      const at = Date.now();
      const held = this.#cache.keys();
      const tombs = await this.#store.erasedAmong(held.map((k) => k.dekId));
      const destroyed = new Set<string>();
      for (const t of tombs) {
        destroyed.add(t.dekId);
        this.#remember(t);
      }
      for (const k of held) if (destroyed.has(k.dekId)) this.#cache.delete(k.patientRef);
      this.#cache.markChecked(new Set(held.map((k) => k.dekId).filter((k) => !destroyed.has(k))), at);
    })().finally(() => (this.#checking = undefined));
    return this.#checking;
  }

  /** The patient's key, from the cache or the store; created when `create` and the patient has none. */
  async #keyFor(patientRef: PatientRef, create: boolean): Promise<CachedKey | undefined> {
    const cached = await this.#cached(patientRef);
    if (cached) return cached;
    const loading = this.#loading.get(patientRef);
    if (loading) {
      return create ? loading.then((k) => k ?? this.#keyFor(patientRef, true)) : loading;
    }
    const load = this.#load(patientRef, create).finally(() => this.#loading.delete(patientRef));
    this.#loading.set(patientRef, load);
    return load;
  }

  async #load(patientRef: PatientRef, create: boolean): Promise<CachedKey | undefined> {
    const readAt = Date.now();
    let held = await this.#store.get(patientRef);
    if (!held && create) held = await this.#create(patientRef);
    if (!held) return undefined;
    if (this.#erased.has(held.dekId)) {
      // Logged as erased, still in the store: an erasure under way, or cut short (the next start finishes it). Nothing
      // is sealed under it, and what it sealed reads as erased.
      if (create) throw new PatientErasureInProgressError(this.#erased.get(held.dekId)!.erasureId);
      return undefined;
    }
    let dek: Buffer;
    try {
      dek = this.#wrapper.unwrap(held.patientRef, held.dekId, held.wrapKeyId, held.wrapped);
    } catch (err) {
      throw new SealedValueError(
        this.#wrapper.has(held.wrapKeyId) ? 'altered' : 'unknown-master-key',
        err instanceof Error ? err.message : `data key ${held.dekId} could not be unwrapped`,
      );
    }
    const key = { dekId: held.dekId, dek: cipherKey(dek) };
    dek.fill(0);
    // A key erased while it was being read is not kept (and not used: the caller checks again).
    if (this.#erased.has(held.dekId)) return create ? this.#load(patientRef, create) : undefined;
    this.#cache.set(patientRef, key, readAt);
    return key;
  }

  async #create(patientRef: PatientRef) {
    const { dekId, dek } = newDataKey();
    const { wrapKeyId, wrapped } = this.#wrapper.wrap(patientRef, dekId, dek);
    const event = (outcome: string): AuditEvent => ({
      action: 'patient-key.create',
      subject: this.#subject,
      roles: [],
      outcome,
      details: { patientRef, dekId, wrapKeyId },
    });
    await this.#audit(event('ok'));
    const held = await this.#store.insert({ patientRef, dekId, wrapKeyId, wrapped, createdAt: this.#now() });
    // Another process made the patient's key first: its key is the patient's, and the trail says this one is not.
    if (held.dekId !== dekId) await this.#audit(event('superseded')).catch(() => undefined);
    return held;
  }

  /**
   * Destroys the patient's data key: on the record first, then in the erasure log (where a restore of the store does
   * not reach), then deleted from the store and from this process's cache. Other processes drop it from theirs within
   * the time of their check (`destroyedEverywhereAfterMs`).
   */
  async erase(patientRef: PatientRef, o: { erasureId?: string; actor?: Actor } = {}): Promise<EraseResult> {
    if (!isPatientRef(patientRef)) throw new TypeError('not a patient ref');
    const held = await this.#store.get(patientRef);
    this.#cache.delete(patientRef);
    if (!held) return { state: 'no-key', patientRef };
    // Read after the key: a request done by now was done before any key bound after it (the request fences the
    // patient until it is done), so a key read before this answer is one the request may destroy; once it is done,
    // whatever key the patient holds is a later journey's and stays. Another replica carrying out the same request
    // at the same time (each takes up pending requests) thus never destroys a key the patient got after it.
    if (o.erasureId && (await this.#store.erasureRequest(o.erasureId))?.status === 'done') {
      return { state: 'already-done', erasureId: o.erasureId };
    }
    const erasure: ErasedKey = {
      patientRef,
      dekId: held.dekId,
      erasureId: o.erasureId ?? `er_${randomUUID()}`,
      erasedAt: this.#now(),
    };
    await this.#audit({
      action: 'patient-key.erase',
      subject: o.actor?.subject ?? this.#subject,
      roles: [...(o.actor?.roles ?? [])],
      outcome: 'ok',
      details: { patientRef, dekId: erasure.dekId, erasureId: erasure.erasureId },
    });
    await this.#o.erasureLog.append(erasure);
    this.#remember(erasure);
    this.#cache.delete(patientRef);
    await this.#store.destroy(erasure);
    this.#cache.delete(patientRef);
    return { state: 'erased', erasure };
  }

  /**
   * The erasure log applied to the store: a key it names that the store holds again (a backup from before the
   * erasure was restored) is destroyed again, on the record; a tombstone the store lacks is put back.
   */
  async reapplyErasures(): Promise<ErasureReapplied> {
    const seen = new Set<string>();
    const out: ErasureReapplied = { reDestroyed: [], tombstonesRestored: 0 };
    for (const e of await this.#o.erasureLog.list()) {
      if (seen.has(e.dekId)) continue;
      seen.add(e.dekId);
      this.#remember(e);
      const held = await this.#store.get(e.patientRef);
      if (held?.dekId === e.dekId) {
        await this.#audit({
          action: 'patient-key.re-destroy',
          subject: this.#subject,
          roles: [],
          outcome: 'ok',
          details: { patientRef: e.patientRef, dekId: e.dekId, erasureId: e.erasureId, erasedAt: e.erasedAt },
        });
        this.#cache.delete(e.patientRef);
        await this.#store.destroy(e);
        out.reDestroyed.push(e);
      } else if (!(await this.#store.erased(e.dekId))) {
        await this.#store.destroy(e);
        out.tombstonesRestored++;
      }
    }
    return out;
  }

  /**
   * Every data key not wrapped by the active master key wrapped again by it, each on the record first; after it, an
   * older master key may leave the ring (unless patient refs are derived under it). Keys wrapped by a master key the
   * ring no longer has are counted, not moved.
   */
  async rewrap(o: { batch?: number } = {}): Promise<{ rewrapped: number; unreadable: number }> {
    const to = this.#wrapper.activeId;
    let rewrapped = 0;
    let unreadable = 0;
    let after: string | undefined;
    for (;;) {
      const page = await this.#store.wrappedByOther(to, o.batch ?? 100, after);
      if (page.length === 0) return { rewrapped, unreadable };
      for (const k of page) {
        after = k.dekId;
        if (!this.#wrapper.has(k.wrapKeyId)) {
          unreadable++;
          continue;
        }
        const dek = this.#wrapper.unwrap(k.patientRef, k.dekId, k.wrapKeyId, k.wrapped);
        const next = this.#wrapper.wrap(k.patientRef, k.dekId, dek);
        await this.#audit({
          action: 'patient-key.rewrap',
          subject: this.#subject,
          roles: [],
          outcome: 'ok',
          details: { patientRef: k.patientRef, dekId: k.dekId, from: k.wrapKeyId, to },
        });
        if (await this.#store.rewrap(k.dekId, k.wrapKeyId, next)) rewrapped++;
      }
    }
  }

  #remember(e: ErasedKey): void {
    this.#erased.delete(e.dekId);
    this.#erased.set(e.dekId, e);
    if (this.#erased.size > ERASED_MEMORY) this.#erased.delete(this.#erased.keys().next().value as string);
  }

  /** Drops the cached keys and closes the store. */
  async close(): Promise<void> {
    this.#cache.clear();
    await this.#store.close();
  }
}

const erasedOf = (e: ErasedKey): Opened<never> => ({
  state: 'erased',
  patientRef: e.patientRef,
  erasureId: e.erasureId,
  erasedAt: e.erasedAt,
});
