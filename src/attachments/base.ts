// What both attachment stores share: records sealed with the payload key ring (src/codec/at-rest.ts), so neither the
// content nor the file name sits in a store in the clear, or, once the patient is known, under the patient's own data
// key (src/patient-keys), so that an erasure leaves nothing of the document readable; put, get and delete in the same
// order (the metadata written last marks a record complete); each clinic's usage (ledger.ts) for its quota and the
// sweep of uploads no journey took. A backend (files.ts, s3.ts) only reads, writes and removes the two parts of a
// record and the ledger's entries.
import { createHash } from 'node:crypto';
import type { RecordSealer, SealedJson } from '../codec/at-rest';
import type { AttachmentRef } from '../contract/journey-request';
import { isUnavailable } from '../audit/store-unavailable';
import { isDataKeyId, isPatientRef, type PatientRef } from '../patient-keys/envelope';
import {
  UsageLedger,
  type AttachmentUsage,
  type LedgerBackend,
  type OrphanSweepOptions,
  type OrphanSweepResult,
} from './ledger';
import {
  AttachmentOfAnotherPatientError,
  isAttachmentRef,
  newAttachmentRef,
  type AttachmentMeta,
  type AttachmentPatientKeys,
  type AttachmentStore,
  type PutOptions,
  type StoredAttachment,
  type StoredAttachmentMeta,
} from './types';

/**
 * What `<ref>.json` holds since attachments are sealed. `keyId` is the key that sealed the bytes file (null when the
 * store runs without keys); `sealed` is the metadata JSON, sealed as well. Records without `version: 2` are the
 * plain ones written before, still read so that an upgraded deployment keeps its attachments.
 */
interface SealedMetaRecord {
  version: 2;
  keyId: string | null;
  sealed: SealedJson;
}

/**
 * A record sealed for its patient: the bytes file and `meta` (the metadata JSON, base64) under the patient's data key
 * `dataKeyId`; `owner` (the ref, the clinic and the size: no patient data) under the payload keys, so that retention
 * and the sweep still release a clinic's usage once the patient's key is destroyed.
 */
interface PatientMetaRecord {
  version: 3;
  patient: PatientRef;
  dataKeyId: string;
  meta: string;
  owner: SealedJson;
}

interface Owner {
  ref: string;
  clinicId?: string;
  size: number;
}

/** The two parts of a stored attachment: the (sealed) bytes and the metadata record that marks it complete. */
export interface EncodedAttachment {
  ref: string;
  bytes: Buffer;
  metaRecord: string;
}

/** Seals an attachment for any backend: the bytes, and the metadata (file name included) as a sealed record. */
export function encodeAttachment(
  sealer: RecordSealer,
  bytes: Uint8Array,
  meta: AttachmentMeta,
  ref = newAttachmentRef(),
): EncodedAttachment {
  const stored = storedMetaOf(bytes, meta, ref);
  const sealedBytes = sealer.seal(bytes, 'attachment');
  const record: SealedMetaRecord = {
    version: 2,
    keyId: sealedBytes.keyId,
    sealed: sealer.sealToJson(JSON.stringify(stored), 'attachment-meta'),
  };
  return { ref, bytes: sealedBytes.data, metaRecord: JSON.stringify(record) };
}

/**
 * Seals an attachment for its patient: the bytes and the metadata under the patient's data key (which must exist: the
 * journey's start made it), the owner under the payload keys.
 */
export async function encodeForPatient(
  keys: AttachmentPatientKeys,
  sealer: RecordSealer,
  bytes: Uint8Array,
  stored: StoredAttachmentMeta,
  patient: PatientRef,
  dekId?: string,
): Promise<EncodedAttachment> {
  const sealedBytes = await keys.sealBytes(patient, 'attachment', bytes, dekId);
  const sealedMeta = await keys.sealBytes(
    patient,
    'attachment-meta',
    Buffer.from(JSON.stringify(stored), 'utf8'),
    dekId,
  );
  // One key per patient: both parts name it (a key made between the two calls is not possible, an erasure is).
  if (sealedMeta.dekId !== sealedBytes.dekId) throw new Error(`attachment ${stored.ref}: its patient's key changed`);
  const owner: Owner = {
    ref: stored.ref,
    size: stored.size,
    ...(stored.clinicId !== undefined ? { clinicId: stored.clinicId } : {}),
  };
  const record: PatientMetaRecord = {
    version: 3,
    patient,
    dataKeyId: sealedBytes.dekId,
    meta: sealedMeta.data.toString('base64'),
    owner: sealer.sealToJson(JSON.stringify(owner), 'attachment-owner'),
  };
  return { ref: stored.ref, bytes: sealedBytes.data, metaRecord: JSON.stringify(record) };
}

function storedMetaOf(bytes: Uint8Array, meta: AttachmentMeta, ref: string): StoredAttachmentMeta {
  return { ...meta, ref, size: bytes.byteLength, sha256: sha256Hex(bytes), storedAt: new Date().toISOString() };
}

export function attachmentRefOf(ref: string, meta: AttachmentMeta, size: number): AttachmentRef {
  return { ref, kind: meta.kind, fileName: meta.fileName, contentType: meta.contentType, size };
}

/**
 * Why a record could not be opened, naming the ref and at most a key id. A store that could not be reached (the patient
 * key store during a failover) is thrown as it came: the record is not at fault, and the API answers it 503 with
 * Retry-After, never 500; an activity is retried.
 */
function cannotOpen(ref: string, err: unknown): unknown {
  if (isUnavailable(err)) return err;
  return new Error(`attachment ${ref} cannot be opened: ${err instanceof Error ? err.message : 'unknown error'}`);
}

/**
 * Opens what a backend stored under the payload keys. Throws (naming the ref and at most a key id, never the content)
 * when a record cannot be opened: its key is not configured, it was altered, its bytes do not match the checksum in its
 * metadata, or it is sealed for a patient (openAttachment opens those).
 */
export function decodeAttachment(sealer: RecordSealer, ref: string, metaText: string, raw: Buffer): StoredAttachment {
  const opened = openMetaRecord(sealer, ref, metaText);
  if (opened.kind === 'patient') throw new Error(`attachment ${ref} is sealed for a patient`);
  const { meta, bytesKeyId } = opened;
  let bytes: Buffer;
  try {
    bytes = bytesKeyId === undefined ? raw : sealer.open({ keyId: bytesKeyId, data: raw }, 'attachment');
  } catch (err) {
    throw cannotOpen(ref, err);
  }
  return checked(ref, meta, bytes);
}

/**
 * Opens a record of any kind; undefined when it was sealed for a patient whose data key has been destroyed (erased:
 * the document is gone for everyone). Throws as decodeAttachment does, and for a patient's record in a process
 * without patient keys.
 */
export async function openAttachment(
  sealer: RecordSealer,
  keys: AttachmentPatientKeys | undefined,
  ref: string,
  metaText: string,
  raw: Buffer,
): Promise<StoredAttachment | undefined> {
  const opened = openMetaRecord(sealer, ref, metaText);
  if (opened.kind !== 'patient') return decodeAttachment(sealer, ref, metaText, raw);
  if (!keys) {
    throw new Error(
      `attachment ${ref} is sealed for a patient, and this process has no patient keys (PATIENT_KEY_STORE=off)`,
    );
  }
  const { patient, dataKeyId, meta } = opened.record;
  const openPart = async (purpose: 'attachment' | 'attachment-meta', data: Buffer) => {
    try {
      return await keys.openBytes(patient, dataKeyId, purpose, data);
    } catch (err) {
      throw cannotOpen(ref, err);
    }
  };
  const metaPart = await openPart('attachment-meta', Buffer.from(meta, 'base64'));
  if (metaPart.state === 'erased') return undefined;
  const bytes = await openPart('attachment', raw);
  if (bytes.state === 'erased') return undefined;
  const plainMeta = parseJson(metaPart.value.toString('utf8'), ref);
  if (!isObject(plainMeta) || plainMeta.ref !== ref)
    throw new Error(`attachment ${ref} holds another record's metadata`);
  return { ...checked(ref, plainMeta, bytes.value), patient };
}

/** The bytes with their metadata, once the checksum holds. */
function checked(ref: string, meta: Record<string, unknown>, bytes: Buffer): StoredAttachment {
  // Also catches the bytes of another record (sealed under the same key) put in place of this one's.
  if (typeof meta.sha256 !== 'string' || sha256Hex(bytes) !== meta.sha256) {
    throw new Error(`attachment ${ref} does not match its recorded checksum`);
  }
  return { bytes, meta: meta as unknown as StoredAttachmentMeta };
}

type OpenedRecord =
  /** Sealed under the payload keys (bytesKeyId; null unsealed) or written before sealing (undefined). */
  | { kind: 'payload'; meta: Record<string, unknown>; bytesKeyId: string | null | undefined }
  /** Sealed for a patient: opened with the patient keys; its owner under the payload keys. */
  | { kind: 'patient'; record: PatientMetaRecord; owner: () => Owner };

/** The metadata of a stored record, or the record sealed for its patient. */
function openMetaRecord(sealer: RecordSealer, ref: string, metaText: string): OpenedRecord {
  const record = parseJson(metaText, ref);
  const open = (sealed: SealedJson, purpose: 'attachment-meta' | 'attachment-owner') => {
    let opened: string;
    try {
      opened = sealer.openJson(sealed, purpose).toString('utf8');
    } catch (err) {
      // The sealer's messages name a key id at most; the ref tells operators which record.
      throw cannotOpen(ref, err);
    }
    const value = parseJson(opened, ref);
    // Authenticated; another ref in it means the parts were swapped with another record's.
    if (!isObject(value) || value.ref !== ref) throw new Error(`attachment ${ref} holds another record's metadata`);
    return value;
  };
  if (isObject(record) && record.version === 3) {
    if (!isPatientMetaRecord(record)) throw new Error(`attachment ${ref} has unreadable metadata`);
    return { kind: 'patient', record, owner: () => open(record.owner, 'attachment-owner') as unknown as Owner };
  }
  if (isObject(record) && 'version' in record) {
    if (!isSealedMetaRecord(record)) throw new Error(`attachment ${ref} has unreadable metadata`);
    return { kind: 'payload', meta: open(record.sealed, 'attachment-meta'), bytesKeyId: record.keyId };
  }
  // Written before sealing: plain bytes and plain metadata.
  if (!isObject(record)) throw new Error(`attachment ${ref} does not match its recorded checksum`);
  return { kind: 'payload', meta: record, bytesKeyId: undefined };
}

/**
 * What both backends share: records sealed the same way, put, get and delete in the same order (the metadata written
 * last marks a record complete), and each clinic's usage kept beside the records (ledger.ts). A backend reads, writes
 * and removes the two parts of a record and the ledger's entries.
 */
export abstract class AttachmentStoreBase implements AttachmentStore {
  protected readonly sealer: RecordSealer;
  readonly #ledger: UsageLedger;
  #patientKeys: AttachmentPatientKeys | undefined;

  constructor(sealer: RecordSealer, ledger: LedgerBackend, patientKeys?: AttachmentPatientKeys) {
    this.sealer = sealer;
    this.#ledger = new UsageLedger(ledger, (clinicId) => sealer.blindNames(clinicId, 'attachment-clinic'));
    this.#patientKeys = patientKeys;
  }

  /** The patient keys documents are sealed and opened with (a process that opens them after the store is made). */
  usePatientKeys(keys: AttachmentPatientKeys | undefined): this {
    this.#patientKeys = keys;
    return this;
  }

  /** Writes the sealed bytes, then the metadata record. */
  protected abstract writeRecord(encoded: EncodedAttachment): Promise<void>;
  protected abstract readPart(ref: string, part: 'bytes' | 'json'): Promise<Buffer | undefined>;
  /** Removes both parts; whether there was a record. */
  protected abstract removeRecord(ref: string): Promise<boolean>;
  /** Removes what a record held before it was written again (a versioned bucket's earlier versions). */
  protected abstract removeEarlierVersions(ref: string): Promise<void>;

  async put(bytes: Uint8Array, meta: AttachmentMeta, options: PutOptions = {}): Promise<AttachmentRef> {
    const ref = newAttachmentRef();
    const size = bytes.byteLength;
    const clinicId = meta.clinicId;
    const keys = options.patient ? this.#patientKeys : undefined;
    if (clinicId !== undefined) await this.#ledger.reserve(clinicId, ref, size, options.quota);
    try {
      await this.writeRecord(
        keys && options.patient
          ? await encodeForPatient(
              keys,
              this.sealer,
              bytes,
              storedMetaOf(bytes, meta, ref),
              options.patient,
              options.dekId,
            )
          : encodeAttachment(this.sealer, bytes, meta, ref),
      );
    } catch (err) {
      // Nothing of an upload that failed stays behind, not even a part.
      await this.removeRecord(ref).catch(() => undefined);
      if (clinicId !== undefined) await this.#ledger.release(clinicId, ref, size).catch(() => undefined);
      throw err;
    }
    return attachmentRefOf(ref, meta, size);
  }

  async get(ref: string): Promise<StoredAttachment | undefined> {
    if (!isAttachmentRef(ref)) return undefined;
    const metaText = await this.readPart(ref, 'json');
    if (metaText === undefined) return undefined;
    const raw = await this.readPart(ref, 'bytes');
    if (raw === undefined) return undefined;
    return openAttachment(this.sealer, this.#patientKeys, ref, metaText.toString('utf8'), raw);
  }

  async sealForPatient(ref: string, patient: PatientRef, dekId?: string): Promise<void> {
    const keys = this.#patientKeys;
    if (!keys || !isAttachmentRef(ref)) return;
    const metaText = await this.readPart(ref, 'json');
    if (metaText === undefined) return;
    const opened = openMetaRecord(this.sealer, ref, metaText.toString('utf8'));
    if (opened.kind === 'patient') {
      if (opened.record.patient !== patient) throw new AttachmentOfAnotherPatientError(ref);
      // Sealed for them already (a start retried): what an earlier attempt may have left is removed all the same.
      return this.removeEarlierVersions(ref);
    }
    const raw = await this.readPart(ref, 'bytes');
    if (raw === undefined) return;
    const stored = decodeAttachment(this.sealer, ref, metaText.toString('utf8'), raw);
    await this.writeRecord(await encodeForPatient(keys, this.sealer, stored.bytes, stored.meta, patient, dekId));
    // Nothing of it stays under the payload keys alone: the record before, in any version a bucket kept.
    await this.removeEarlierVersions(ref);
  }

  async delete(ref: string): Promise<void> {
    if (!isAttachmentRef(ref)) return;
    const owner = await this.#ownerOf(ref);
    await this.removeRecord(ref);
    // A record whose metadata cannot be read leaves its entry to the sweep (it finds the record gone).
    if (owner?.clinicId !== undefined) await this.#ledger.release(owner.clinicId, ref, owner.size);
  }

  usage(clinicId: string): Promise<AttachmentUsage> {
    return this.#ledger.usage(clinicId);
  }

  async claim(attachment: { ref: string; clinicId: string; size: number }, journeyId: string): Promise<void> {
    if (!isAttachmentRef(attachment.ref)) return;
    await this.#ledger.claim(attachment.clinicId, attachment.ref, attachment.size, journeyId);
  }

  takerOf(clinicId: string, ref: string): Promise<string | undefined> {
    return isAttachmentRef(ref) ? this.#ledger.takerOf(clinicId, ref) : Promise.resolve(undefined);
  }

  takenBy(clinicId: string, journeyId: string): Promise<string[]> {
    return this.#ledger.takenBy(clinicId, journeyId);
  }

  sweepOrphans(options: OrphanSweepOptions): Promise<OrphanSweepResult> {
    return this.#ledger.sweep(async (ref, before) => {
      const owner = await this.#ownerOf(ref);
      await before(owner?.clinicId);
      const existed = await this.removeRecord(ref);
      return { existed, ...(owner?.clinicId !== undefined ? { clinicId: owner.clinicId } : {}) };
    }, options);
  }

  /**
   * The clinic and size of a record from its metadata (a patient's record: from its owner, which needs no patient
   * key); undefined when it is missing or cannot be read.
   */
  async #ownerOf(ref: string): Promise<{ clinicId?: string; size: number } | undefined> {
    const metaText = await this.readPart(ref, 'json');
    if (metaText === undefined) return undefined;
    try {
      const opened = openMetaRecord(this.sealer, ref, metaText.toString('utf8'));
      const { clinicId, size } = opened.kind === 'patient' ? opened.owner() : opened.meta;
      return typeof size === 'number' && (clinicId === undefined || typeof clinicId === 'string')
        ? { ...(clinicId !== undefined ? { clinicId } : {}), size }
        : undefined;
    } catch {
      return undefined;
    }
  }
}

function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** JSON.parse's own message quotes the input, which for a plain record holds the file name: keep it out. */
function parseJson(text: string, ref: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new Error(`attachment ${ref} has unreadable metadata`);
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const isKeyId = (v: unknown): v is string | null => typeof v === 'string' || v === null;

const isSealedJson = (v: unknown): v is SealedJson => isObject(v) && isKeyId(v.keyId) && typeof v.data === 'string';

function isPatientMetaRecord(value: Record<string, unknown>): value is Record<string, unknown> & PatientMetaRecord {
  const { patient, dataKeyId, meta, owner } = value;
  return isPatientRef(patient) && isDataKeyId(dataKeyId) && typeof meta === 'string' && isSealedJson(owner);
}

function isSealedMetaRecord(value: Record<string, unknown>): value is Record<string, unknown> & SealedMetaRecord {
  const { version, keyId, sealed } = value;
  return (
    version === 2 && isKeyId(keyId) && isObject(sealed) && isKeyId(sealed.keyId) && typeof sealed.data === 'string'
  );
}
