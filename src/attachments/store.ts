// Claim check for attachments: the bytes live here, workflow histories carry only the AttachmentRef. The API writes
// (put), the upload activity reads (get). The local folder store is the default; any other backend implements the
// same two calls. Attachments are PHI (ID cards, lab results): the local store seals the bytes and the metadata with
// the payload key ring (src/codec/at-rest.ts), so neither the content nor the file name sits on disk in the clear.
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { RecordSealer, type SealedJson } from '../codec/at-rest';
import type { AttachmentRef } from '../workflows/journey-request';

export interface AttachmentMeta {
  /** File-kind label the exam expects (ID, Lab, a picture name). */
  kind: string;
  fileName: string;
  contentType: string;
  /** The clinic that uploaded it: a clinic may only use its own attachments. */
  clinicId?: string;
}

export interface StoredAttachmentMeta extends AttachmentMeta {
  ref: string;
  size: number;
  sha256: string;
  storedAt: string;
}

export interface AttachmentStore {
  put(bytes: Uint8Array, meta: AttachmentMeta): Promise<AttachmentRef>;
  /** Undefined when the ref is unknown (or not a ref at all). */
  get(ref: string): Promise<StoredAttachment | undefined>;
  /** Removes an attachment (retention); an unknown ref is no error. */
  delete(ref: string): Promise<void>;
}

export interface StoredAttachment {
  bytes: Buffer;
  meta: StoredAttachmentMeta;
}

const REF = /^att_[A-Za-z0-9_-]{8,64}$/;

export function isAttachmentRef(ref: string): boolean {
  return REF.test(ref);
}

export function newAttachmentRef(): string {
  return `att_${randomBytes(18).toString('base64url')}`;
}

/** Writes a file so that it is either absent or complete, also after a crash: temp file, fsync, rename, fsync dir. */
export async function writeFileDurably(file: string, data: Uint8Array | string): Promise<void> {
  const dir = path.dirname(file);
  const tmp = path.join(dir, `.tmp-${path.basename(file)}-${randomBytes(4).toString('hex')}`);
  const handle = await open(tmp, 'w');
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(tmp, file);
  const dirHandle = await open(dir, 'r');
  try {
    await dirHandle.sync();
  } finally {
    await dirHandle.close();
  }
}

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
export function encodeAttachment(sealer: RecordSealer, bytes: Uint8Array, meta: AttachmentMeta): EncodedAttachment {
  const ref = newAttachmentRef();
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
  const record = parseJson(metaText, ref);
  let meta: unknown;
  let bytes: Buffer;
  if (isObject(record) && 'version' in record) {
    if (!isSealedMetaRecord(record)) throw new Error(`attachment ${ref} has unreadable metadata`);
    let openedMeta: string;
    try {
      openedMeta = sealer.openJson(record.sealed, 'attachment-meta').toString('utf8');
      bytes = sealer.open({ keyId: record.keyId, data: raw }, 'attachment');
    } catch (err) {
      // The sealer's messages name a key id at most; the ref tells operators which record.
      throw new Error(`attachment ${ref} cannot be opened: ${err instanceof Error ? err.message : 'unknown error'}`);
    }
    meta = parseJson(openedMeta, ref);
    // The metadata is authenticated; another ref in it means the parts were swapped with another record's.
    if (!isObject(meta) || meta.ref !== ref) throw new Error(`attachment ${ref} holds another record's metadata`);
  } else {
    // Written before sealing: plain bytes and plain metadata.
    meta = record;
    bytes = raw;
  }
  // Also catches the bytes of another record (sealed under the same key) put in place of this one's.
  if (!isObject(meta) || typeof meta.sha256 !== 'string' || sha256Hex(bytes) !== meta.sha256) {
    throw new Error(`attachment ${ref} does not match its recorded checksum`);
  }
  return { bytes, meta: meta as unknown as StoredAttachmentMeta };
}

/**
 * One folder: `<ref>` holds the bytes (sealed), `<ref>.json` the sealed metadata (written last, so it marks
 * completeness). The sealer's first key seals; every configured key opens, so records survive a key rotation.
 */
export class LocalFolderAttachmentStore implements AttachmentStore {
  #ready: Promise<unknown> | undefined;
  readonly #sealer: RecordSealer;

  constructor(
    readonly dir: string,
    sealer: RecordSealer = RecordSealer.plain(),
  ) {
    this.#sealer = sealer;
  }

  async put(bytes: Uint8Array, meta: AttachmentMeta): Promise<AttachmentRef> {
    await (this.#ready ??= mkdir(this.dir, { recursive: true }));
    const encoded = encodeAttachment(this.#sealer, bytes, meta);
    await writeFileDurably(this.#file(encoded.ref, 'bytes'), encoded.bytes);
    await writeFileDurably(this.#file(encoded.ref, 'json'), encoded.metaRecord);
    return attachmentRefOf(encoded.ref, meta, bytes.byteLength);
  }

  async get(ref: string): Promise<StoredAttachment | undefined> {
    if (!isAttachmentRef(ref)) return undefined;
    let metaText: string;
    let raw: Buffer;
    try {
      metaText = await readFile(this.#file(ref, 'json'), 'utf8');
      raw = await readFile(this.#file(ref, 'bytes'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    return decodeAttachment(this.#sealer, ref, metaText, raw);
  }

  /** Removes an attachment (retention jobs, tests); unknown refs are ignored. */
  async delete(ref: string): Promise<void> {
    if (!isAttachmentRef(ref)) return;
    await rm(this.#file(ref, 'json'), { force: true });
    await rm(this.#file(ref, 'bytes'), { force: true });
  }

  #file(ref: string, part: 'bytes' | 'json'): string {
    return path.join(this.dir, part === 'bytes' ? ref : `${ref}.json`);
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
