// PHI at rest: what the engine keeps outside Temporal (callback inbox entries, dead letters, attachments) is sealed
// with the same key ring as the payloads: AES-256-GCM, the first key seals, every key opens, the key id beside each
// record. `purpose` is bound into the tag (additional authenticated data), so a record of one kind cannot be passed
// off as another. Without keys (PAYLOAD_ENCRYPTION_DISABLED, throwaway setups) records are stored as they are.
import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  createSecretKey,
  hkdfSync,
  type KeyObject,
} from 'node:crypto';
import type { EncryptionKey } from '../encryption-keys';
import { freshIv, IV_BYTES } from '../nonces';

const TAG_BYTES = 16;

export type SealPurpose = 'callback-inbox' | 'dead-letter' | 'attachment' | 'attachment-meta' | 'attachment-owner';
/** What a blind name names: the clinic of the attachment store's usage folders. */
export type BlindNamePurpose = 'attachment-clinic';

export interface Sealed {
  /** The key that sealed the data; null when the record is stored as it is (encryption disabled). */
  keyId: string | null;
  /** iv | ciphertext | tag, or the plain bytes when keyId is null. */
  data: Buffer;
}

export class RecordSealer {
  readonly #keys: Map<string, Buffer>;
  readonly #cipherKeys: Map<string, KeyObject>;
  readonly #active: EncryptionKey | undefined;

  /** The first key seals; every key opens. An empty list stores records unsealed. */
  constructor(keys: readonly EncryptionKey[]) {
    for (const k of keys) {
      if (k.key.length !== 32) throw new Error(`encryption key ${k.id} must be 32 bytes, got ${k.key.length}`);
    }
    this.#keys = new Map(keys.map((k) => [k.id, k.key]));
    // Made once: a cipher given raw key bytes prepares them anew each time (docs/cpu-profiles.md).
    this.#cipherKeys = new Map(keys.map((k) => [k.id, createSecretKey(k.key)]));
    this.#active = keys[0];
  }

  /** A sealer that stores records as they are: tests and PAYLOAD_ENCRYPTION_DISABLED. */
  static plain(): RecordSealer {
    return new RecordSealer([]);
  }

  get sealing(): boolean {
    return this.#active !== undefined;
  }

  seal(plain: Uint8Array | string, purpose: SealPurpose): Sealed {
    const bytes = typeof plain === 'string' ? Buffer.from(plain, 'utf8') : Buffer.from(plain);
    if (!this.#active) return { keyId: null, data: bytes };
    const iv = freshIv();
    const cipher = createCipheriv('aes-256-gcm', this.#cipherKeys.get(this.#active.id)!, iv);
    cipher.setAAD(Buffer.from(purpose));
    return {
      keyId: this.#active.id,
      data: Buffer.concat([iv, cipher.update(bytes), cipher.final(), cipher.getAuthTag()]),
    };
  }

  /** Throws (naming the key id, never the data) when the key is not configured or the record was altered. */
  open(sealed: Sealed, purpose: SealPurpose): Buffer {
    if (sealed.keyId === null) return sealed.data;
    const key = this.#cipherKeys.get(sealed.keyId);
    if (!key) throw new Error(`record sealed under unknown key id "${sealed.keyId}": configure that key to read it`);
    const { data } = sealed;
    if (data.length < IV_BYTES + TAG_BYTES) throw new Error('sealed record is truncated');
    const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(purpose));
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    return Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
  }

  openText(sealed: Sealed, purpose: SealPurpose): string {
    return this.open(sealed, purpose).toString('utf8');
  }

  /** As a JSON-safe object for file records: `{ keyId, data: base64 }`. */
  sealToJson(plain: Uint8Array | string, purpose: SealPurpose): SealedJson {
    const s = this.seal(plain, purpose);
    return { keyId: s.keyId, data: s.data.toString('base64') };
  }

  openJson(sealed: SealedJson, purpose: SealPurpose): Buffer {
    return this.open({ keyId: sealed.keyId, data: Buffer.from(sealed.data, 'base64') }, purpose);
  }

  /**
   * Names for a value that say nothing of it without a key (a folder named for a clinic): an HMAC under a key derived
   * from each configured key, the sealing key's first, so a name written before a rotation is still found. Without
   * keys, a plain digest (the records themselves are then in the clear).
   */
  blindNames(value: string, purpose: BlindNamePurpose): string[] {
    const message = `${purpose}\n${value}`;
    if (!this.#active) return [createHash('sha256').update(message).digest('base64url').slice(0, 22)];
    const ids = [this.#active.id, ...[...this.#keys.keys()].filter((id) => id !== this.#active!.id)];
    return ids.map((id) => {
      const key = Buffer.from(hkdfSync('sha256', this.#keys.get(id)!, '', `blind-name:${purpose}`, 32));
      return createHmac('sha256', key).update(message).digest('base64url').slice(0, 22);
    });
  }
}

export interface SealedJson {
  keyId: string | null;
  data: string;
}
