// What both attachment stores share: records sealed with the payload key ring (src/codec/at-rest.ts), so neither the
// content nor the file name sits in a store in the clear; put, get and delete in the same order (the metadata written
// last marks a record complete); each clinic's usage (ledger.ts) for its quota and the sweep of uploads no journey
// took. A backend (files.ts, s3.ts) only reads, writes and removes the two parts of a record and the ledger's entries.
import { createHash } from 'node:crypto';
import type { RecordSealer, SealedJson } from '../codec/at-rest';
import type { AttachmentRef } from '../contract/journey-request';
import {
  UsageLedger,
  type AttachmentUsage,
  type LedgerBackend,
  type OrphanSweepOptions,
  type OrphanSweepResult,
} from './ledger';
import {
  isAttachmentRef,
  newAttachmentRef,
  type AttachmentMeta,
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
  const stored: StoredAttachmentMeta = {
    ...meta,
    ref,
    size: bytes.byteLength,
    sha256: sha256Hex(bytes),
    storedAt: new Date().toISOString(),
  };
  const sealedBytes = sealer.seal(bytes, 'attachment');
  const record: SealedMetaRecord = {
    version: 2,
    keyId: sealedBytes.keyId,
    sealed: sealer.sealToJson(JSON.stringify(stored), 'attachment-meta'),
  };
  return { ref, bytes: sealedBytes.data, metaRecord: JSON.stringify(record) };
}

export function attachmentRefOf(ref: string, meta: AttachmentMeta, size: number): AttachmentRef {
  return { ref, kind: meta.kind, fileName: meta.fileName, contentType: meta.contentType, size };
}

/**
 * Opens what a backend stored. Throws (naming the ref and at most a key id, never the content) when a record cannot
 * be opened: its key is not configured, it was altered, or its bytes do not match the checksum in its metadata.
 */
export function decodeAttachment(sealer: RecordSealer, ref: string, metaText: string, raw: Buffer): StoredAttachment {
  const { meta, bytesKeyId } = openMetaRecord(sealer, ref, metaText);
  let bytes: Buffer;
  try {
    bytes = bytesKeyId === undefined ? raw : sealer.open({ keyId: bytesKeyId, data: raw }, 'attachment');
  } catch (err) {
    throw new Error(`attachment ${ref} cannot be opened: ${err instanceof Error ? err.message : 'unknown error'}`);
  }
  // Also catches the bytes of another record (sealed under the same key) put in place of this one's.
  if (typeof meta.sha256 !== 'string' || sha256Hex(bytes) !== meta.sha256) {
    throw new Error(`attachment ${ref} does not match its recorded checksum`);
  }
  return { bytes, meta: meta as unknown as StoredAttachmentMeta };
}

/** The metadata of a stored record, and the key of its bytes (undefined: a plain record of before sealing). */
function openMetaRecord(
  sealer: RecordSealer,
  ref: string,
  metaText: string,
): { meta: Record<string, unknown>; bytesKeyId: string | null | undefined } {
  const record = parseJson(metaText, ref);
  if (isObject(record) && 'version' in record) {
    if (!isSealedMetaRecord(record)) throw new Error(`attachment ${ref} has unreadable metadata`);
    let openedMeta: string;
    try {
      openedMeta = sealer.openJson(record.sealed, 'attachment-meta').toString('utf8');
    } catch (err) {
      // The sealer's messages name a key id at most; the ref tells operators which record.
      throw new Error(`attachment ${ref} cannot be opened: ${err instanceof Error ? err.message : 'unknown error'}`);
    }
    const meta = parseJson(openedMeta, ref);
    // The metadata is authenticated; another ref in it means the parts were swapped with another record's.
    if (!isObject(meta) || meta.ref !== ref) throw new Error(`attachment ${ref} holds another record's metadata`);
    return { meta, bytesKeyId: record.keyId };
  }
  // Written before sealing: plain bytes and plain metadata.
  if (!isObject(record)) throw new Error(`attachment ${ref} does not match its recorded checksum`);
  return { meta: record, bytesKeyId: undefined };
}

/**
 * What both backends share: records sealed the same way, put, get and delete in the same order (the metadata written
 * last marks a record complete), and each clinic's usage kept beside the records (ledger.ts). A backend reads, writes
 * and removes the two parts of a record and the ledger's entries.
 */
export abstract class AttachmentStoreBase implements AttachmentStore {
  protected readonly sealer: RecordSealer;
  readonly #ledger: UsageLedger;

  constructor(sealer: RecordSealer, ledger: LedgerBackend) {
    this.sealer = sealer;
    this.#ledger = new UsageLedger(ledger, (clinicId) => sealer.blindNames(clinicId, 'attachment-clinic'));
  }

  /** Writes the sealed bytes, then the metadata record. */
  protected abstract writeRecord(encoded: EncodedAttachment): Promise<void>;
  protected abstract readPart(ref: string, part: 'bytes' | 'json'): Promise<Buffer | undefined>;
  /** Removes both parts; whether there was a record. */
  protected abstract removeRecord(ref: string): Promise<boolean>;

  async put(bytes: Uint8Array, meta: AttachmentMeta, options: PutOptions = {}): Promise<AttachmentRef> {
    const ref = newAttachmentRef();
    const size = bytes.byteLength;
    const clinicId = meta.clinicId;
    if (clinicId !== undefined) await this.#ledger.reserve(clinicId, ref, size, options.quota);
    try {
      await this.writeRecord(encodeAttachment(this.sealer, bytes, meta, ref));
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
    return decodeAttachment(this.sealer, ref, metaText.toString('utf8'), raw);
  }

  async delete(ref: string): Promise<void> {
    if (!isAttachmentRef(ref)) return;
    const owner = await this.#ownerOf(ref);
    await this.removeRecord(ref);
    // A record whose metadata cannot be read leaves its entry to the sweep (it finds the record gone).
    if (owner) await this.#ledger.release(owner.clinicId, ref, owner.size);
  }

  usage(clinicId: string): Promise<AttachmentUsage> {
    return this.#ledger.usage(clinicId);
  }

  async claim(attachment: { ref: string; clinicId: string; size: number }, journeyId: string): Promise<void> {
    if (!isAttachmentRef(attachment.ref)) return;
    await this.#ledger.claim(attachment.clinicId, attachment.ref, attachment.size, journeyId);
  }

  takenBy(clinicId: string, journeyId: string): Promise<string[]> {
    return this.#ledger.takenBy(clinicId, journeyId);
  }

  sweepOrphans(options: OrphanSweepOptions): Promise<OrphanSweepResult> {
    return this.#ledger.sweep(async (ref, before) => {
      const owner = await this.#ownerOf(ref);
      await before(owner?.clinicId);
      const existed = await this.removeRecord(ref);
      return { existed, ...(owner ? { clinicId: owner.clinicId } : {}) };
    }, options);
  }

  /** The clinic and size of a record from its metadata; undefined when it is missing or cannot be read. */
  async #ownerOf(ref: string): Promise<{ clinicId: string; size: number } | undefined> {
    const metaText = await this.readPart(ref, 'json');
    if (metaText === undefined) return undefined;
    try {
      const { meta } = openMetaRecord(this.sealer, ref, metaText.toString('utf8'));
      const { clinicId, size } = meta;
      return typeof clinicId === 'string' && typeof size === 'number' ? { clinicId, size } : undefined;
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

function isSealedMetaRecord(value: Record<string, unknown>): value is Record<string, unknown> & SealedMetaRecord {
  const { version, keyId, sealed } = value;
  return (
    version === 2 && isKeyId(keyId) && isObject(sealed) && isKeyId(sealed.keyId) && typeof sealed.data === 'string'
  );
}
