// Per-patient data keys (docs/design-notes.md#per-patient-data-keys): each patient's values are sealed under a data key
// of their own, stored only wrapped by the master key ring; destroying that key (an erasure) makes every copy of those
// values unreadable, histories and backups included, and they then open as a clear `erased`, not as an error.
//
// Every key created, destroyed, destroyed again after a restore, and rewrapped is on the audit trail before it happens
// (a trail that cannot be written stops the act): patient refs and key ids only, never a patient's data.
import { randomUUID } from 'node:crypto';
import type { AuditEvent } from '../audit/types';
import type { EncryptionKey } from '../encryption-keys';
import { KeyCache, type CachedKey } from './cache';
import { KeyWrapper, newDataKey, openValue, PatientRefs, sealValue } from './crypto';
import {
  isPatientRef,
  isSealedEnvelope,
  isSealPurpose,
  type Opened,
  type PatientRef,
  type SealedEnvelope,
} from './envelope';
import { PatientKeyStoreError, SealedValueError, type ErasedKey, type ErasureLog, type PatientKeyStore } from './types';

/** The store's setting that names the master key patient refs are derived under (fixed at the first start). */
export const REF_KEY_SETTING = 'patient-ref-key-id';

export interface PatientKeysOptions {
  /** The master key ring (PAYLOAD_ENCRYPTION_KEYS): the first key wraps new data keys, every key unwraps. */
  ring: readonly EncryptionKey[];
  store: PatientKeyStore;
  erasureLog: ErasureLog;
  /** The audit trail's append; each key change is recorded before it happens. */
  audit: (event: AuditEvent) => Promise<unknown>;
  /** Unwrapped keys kept in memory: at most `maxEntries` (10,000), each at most `ttlMs` (30 s). */
  cache?: { maxEntries?: number; ttlMs?: number };
  /** Who the records of the engine's own acts name (creation, re-destruction, rewrap): `patient-keys`. */
  subject?: string;
  now?: () => Date;
}

/** Who asked for an erasure, as the trail names them. */
export interface Actor {
  subject: string;
  roles: readonly string[];
}

export type EraseResult = { state: 'erased'; erasure: ErasedKey } | { state: 'no-key'; patientRef: PatientRef };

/** What the start found: keys a restore brought back, destroyed again; tombstones it put back. */
export interface ErasureReapplied {
  reDestroyed: ErasedKey[];
  tombstonesRestored: number;
}

const ERASED_MEMORY = 10_000;

export class PatientKeys {
  readonly #o: PatientKeysOptions;
  readonly #wrapper: KeyWrapper;
  readonly #cache: KeyCache;
  /** Loads under way, one per patient, shared by the seals and opens that wait for it. */
  readonly #loading = new Map<string, Promise<CachedKey | undefined>>();
  /** Tombstones read lately (an erasure is final): a replay of an erased history asks for the same key again and again. */
  readonly #erased = new Map<string, ErasedKey>();
  #refs: PatientRefs | undefined;

  constructor(options: PatientKeysOptions) {
    this.#o = options;
    this.#wrapper = new KeyWrapper(options.ring);
    this.#cache = new KeyCache(options.cache?.maxEntries ?? 10_000, options.cache?.ttlMs ?? 30_000);
  }

  get #subject(): string {
    return this.#o.subject ?? 'patient-keys';
  }

  #now(): string {
    return (this.#o.now?.() ?? new Date()).toISOString();
  }

  /** Unwrapped keys held now. */
  get cachedKeys(): number {
    return this.#cache.size;
  }

  /**
   * Opens the store and the erasure log, fixes the master key patient refs are derived under (the active key at the
   * first start; it must stay in the ring), and re-applies the erasure log.
   */
  async init(): Promise<ErasureReapplied> {
    await this.#o.store.init();
    await this.#o.erasureLog.init();
    const refKeyId = await this.#o.store.settleSetting(REF_KEY_SETTING, this.#o.ring[0]!.id);
    const refKey = this.#o.ring.find((k) => k.id === refKeyId);
    if (!refKey) {
      throw new Error(
        `patient refs are derived under master key "${refKeyId}", which is not in the key ring: keep it configured ` +
          '(it need not be the first)',
      );
    }
    this.#refs = new PatientRefs(refKey);
    return this.reapplyErasures();
  }

  /** The patient of a clinic, by e-mail (trimmed, lower-cased), as a keyed hash. */
  patientRef(clinicId: string, email: string): PatientRef {
    if (!this.#refs) throw new Error('patient keys are not ready (init)');
    return this.#refs.of(clinicId, email);
  }

  /** A value (anything JSON can hold) sealed under the patient's data key, made on first use, for one purpose. */
  async sealForPatient(patientRef: PatientRef, purpose: string, value: unknown): Promise<SealedEnvelope> {
    if (!isPatientRef(patientRef)) throw new TypeError('not a patient ref');
    if (!isSealPurpose(purpose)) throw new TypeError('a seal purpose is lower-case letters, digits, dots and dashes');
    const json = JSON.stringify(value);
    if (json === undefined) throw new TypeError('a sealed value must be one JSON can hold');
    const key = (await this.#keyFor(patientRef, true))!;
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
    let key = this.#cache.get(p);
    if (key?.dekId !== k) {
      const known = this.#erased.get(k);
      if (known) return erasedOf(known);
      key = await this.#keyFor(p, false);
    }
    if (key?.dekId !== k) {
      const tomb = this.#erased.get(k) ?? (await this.#o.store.erased(k));
      if (tomb) {
        this.#remember(tomb);
        return erasedOf(tomb);
      }
      throw new SealedValueError(
        'unknown-key',
        `data key ${k} is not in the patient key store and was not erased: the store may be older than the value`,
      );
    }
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

  /** The patient's key, from the cache or the store; created when `create` and the patient has none. */
  #keyFor(patientRef: PatientRef, create: boolean): Promise<CachedKey | undefined> {
    const cached = this.#cache.get(patientRef);
    if (cached) return Promise.resolve(cached);
    const loading = this.#loading.get(patientRef);
    if (loading) {
      return create ? loading.then((k) => k ?? this.#keyFor(patientRef, true)) : loading;
    }
    const load = this.#load(patientRef, create).finally(() => this.#loading.delete(patientRef));
    this.#loading.set(patientRef, load);
    return load;
  }

  async #load(patientRef: PatientRef, create: boolean): Promise<CachedKey | undefined> {
    let held = await this.#o.store.get(patientRef);
    if (!held && create) held = await this.#create(patientRef);
    if (!held) return undefined;
    if (this.#erased.has(held.dekId)) {
      // Logged as erased, still in the store: an erasure under way, or cut short (the next start finishes it). Nothing
      // is sealed under it, and what it sealed reads as erased.
      if (create) throw new PatientKeyStoreError("the patient's key is being erased: try again once it is done");
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
    const key = { dekId: held.dekId, dek };
    // A key erased while it was being read is not kept (and not used: the caller checks again).
    if (this.#erased.has(held.dekId)) return create ? this.#load(patientRef, create) : undefined;
    this.#cache.set(patientRef, key);
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
    await this.#o.audit(event('ok'));
    const held = await this.#o.store.insert({ patientRef, dekId, wrapKeyId, wrapped, createdAt: this.#now() });
    // Another process made the patient's key first: its key is the patient's, and the trail says this one is not.
    if (held.dekId !== dekId) await this.#o.audit(event('superseded')).catch(() => undefined);
    return held;
  }

  /**
   * Destroys the patient's data key: on the record first, then in the erasure log (where a restore of the store does
   * not reach), then deleted from the store and from this process's cache. Other processes drop it from theirs within
   * the cache's time (`ttlMs`).
   */
  async erase(patientRef: PatientRef, o: { erasureId?: string; actor?: Actor } = {}): Promise<EraseResult> {
    if (!isPatientRef(patientRef)) throw new TypeError('not a patient ref');
    const held = await this.#o.store.get(patientRef);
    this.#cache.delete(patientRef);
    if (!held) return { state: 'no-key', patientRef };
    const erasure: ErasedKey = {
      patientRef,
      dekId: held.dekId,
      erasureId: o.erasureId ?? `er_${randomUUID()}`,
      erasedAt: this.#now(),
    };
    await this.#o.audit({
      action: 'patient-key.erase',
      subject: o.actor?.subject ?? this.#subject,
      roles: [...(o.actor?.roles ?? [])],
      outcome: 'ok',
      details: { patientRef, dekId: erasure.dekId, erasureId: erasure.erasureId },
    });
    await this.#o.erasureLog.append(erasure);
    this.#remember(erasure);
    this.#cache.delete(patientRef);
    await this.#o.store.destroy(erasure);
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
      const held = await this.#o.store.get(e.patientRef);
      if (held?.dekId === e.dekId) {
        await this.#o.audit({
          action: 'patient-key.re-destroy',
          subject: this.#subject,
          roles: [],
          outcome: 'ok',
          details: { patientRef: e.patientRef, dekId: e.dekId, erasureId: e.erasureId, erasedAt: e.erasedAt },
        });
        this.#cache.delete(e.patientRef);
        await this.#o.store.destroy(e);
        out.reDestroyed.push(e);
      } else if (!(await this.#o.store.erased(e.dekId))) {
        await this.#o.store.destroy(e);
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
      const page = await this.#o.store.wrappedByOther(to, o.batch ?? 100, after);
      if (page.length === 0) return { rewrapped, unreadable };
      for (const k of page) {
        after = k.dekId;
        if (!this.#wrapper.has(k.wrapKeyId)) {
          unreadable++;
          continue;
        }
        const dek = this.#wrapper.unwrap(k.patientRef, k.dekId, k.wrapKeyId, k.wrapped);
        const next = this.#wrapper.wrap(k.patientRef, k.dekId, dek);
        await this.#o.audit({
          action: 'patient-key.rewrap',
          subject: this.#subject,
          roles: [],
          outcome: 'ok',
          details: { patientRef: k.patientRef, dekId: k.dekId, from: k.wrapKeyId, to },
        });
        if (await this.#o.store.rewrap(k.dekId, k.wrapKeyId, next)) rewrapped++;
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
    await this.#o.store.close();
  }
}

const erasedOf = (e: ErasedKey): Opened<never> => ({
  state: 'erased',
  patientRef: e.patientRef,
  erasureId: e.erasureId,
  erasedAt: e.erasedAt,
});
