// The crypto of per-patient keys: the keyed hash that names a patient, the wrap of a data key by a master key, and a
// value sealed under a data key. AES-256-GCM throughout (as the payload codec and the at-rest sealer); every derived
// key comes from a master key of the ring by HKDF-SHA-256 under a label of its own.
import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  createSecretKey,
  hkdfSync,
  randomBytes,
  randomFillSync,
  type KeyObject,
} from 'node:crypto';
import { freshIv, IV_BYTES } from '../nonces';
import type { EncryptionKey } from '../encryption-keys';
import type { PatientRef } from './envelope';

const TAG_BYTES = 16;
export const DATA_KEY_BYTES = 32;

const derive = (master: Buffer, label: string) => Buffer.from(hkdfSync('sha256', master, '', label, 32));

/**
 * A key as ciphers take it: made once per key, since Node.js otherwise prepares raw key bytes anew for every cipher
 * (about 13 µs of each seal's 20, measured: docs/cpu-profiles.md). The bytes are copied into it.
 */
export const cipherKey = (bytes: Buffer): KeyObject => createSecretKey(bytes);

/** The e-mail as it names a patient: trimmed and lower-cased. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/**
 * Names patients: HMAC-SHA-256, under a key derived from one master key (`patient-ref`), of the clinic id and the
 * normalized e-mail; `pt_` and the first 16 bytes in base64url. A keyed hash, because a plain one of an e-mail is
 * reversed by trying likely addresses.
 */
export class PatientRefs {
  readonly #key: Buffer;

  constructor(master: EncryptionKey) {
    this.#key = derive(master.key, 'patient-ref');
  }

  of(clinicId: string, email: string): PatientRef {
    const mac = createHmac('sha256', this.#key)
      .update(`${clinicId}\n${normalizeEmail(email)}`)
      .digest();
    return `pt_${mac.subarray(0, 16).toString('base64url')}`;
  }

  /** An erasure request's Idempotency-Key, which a clinic may build from patient data, as a keyed hash. */
  requestKey(clinicId: string, idempotencyKey: string): string {
    return createHmac('sha256', this.#key)
      .update(`erasure-request\n${clinicId}\n${idempotencyKey}`)
      .digest('base64url');
  }
}

/** What a wrap is bound to: the data key belongs to this patient under this id, and to nothing else. */
const wrapAad = (patientRef: string, dekId: string) => Buffer.from(`patient-data-key\n${patientRef}\n${dekId}`);

function encrypt(key: KeyObject, plain: Buffer, aad: Buffer): Buffer {
  const iv = freshIv();
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(aad);
  return Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
}

/** Throws when the data was altered, or was sealed under another key or for another AAD. */
function decrypt(key: KeyObject, sealed: Buffer, aad: Buffer): Buffer {
  if (sealed.length < IV_BYTES + TAG_BYTES) throw new Error('truncated');
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, IV_BYTES));
  decipher.setAAD(aad);
  decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
  return Buffer.concat([decipher.update(sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES)), decipher.final()]);
}

/** Wraps and unwraps data keys with the ring: the first key wraps, every key unwraps (each under a derived key). */
export class KeyWrapper {
  readonly #wrapKeys: Map<string, KeyObject>;
  readonly activeId: string;

  constructor(ring: readonly EncryptionKey[]) {
    if (ring.length === 0) throw new Error('per-patient keys need the master key ring (PAYLOAD_ENCRYPTION_KEYS)');
    for (const k of ring) {
      if (k.key.length !== 32) throw new Error(`encryption key ${k.id} must be 32 bytes, got ${k.key.length}`);
    }
    this.#wrapKeys = new Map(ring.map((k) => [k.id, cipherKey(derive(k.key, 'patient-data-key-wrap'))]));
    this.activeId = ring[0]!.id;
  }

  has(wrapKeyId: string): boolean {
    return this.#wrapKeys.has(wrapKeyId);
  }

  wrap(patientRef: string, dekId: string, dek: Buffer): { wrapKeyId: string; wrapped: Buffer } {
    return {
      wrapKeyId: this.activeId,
      wrapped: encrypt(this.#wrapKeys.get(this.activeId)!, dek, wrapAad(patientRef, dekId)),
    };
  }

  /** The data key in a buffer of its own (not a slice of a shared pool), so that it can be zeroed. */
  unwrap(patientRef: string, dekId: string, wrapKeyId: string, wrapped: Buffer): Buffer {
    const key = this.#wrapKeys.get(wrapKeyId);
    if (!key) throw new Error(`data key ${dekId} is wrapped by master key "${wrapKeyId}", which is not configured`);
    const plain = decrypt(key, wrapped, wrapAad(patientRef, dekId));
    if (plain.length !== DATA_KEY_BYTES) throw new Error(`data key ${dekId} is not ${DATA_KEY_BYTES} bytes`);
    const own = Buffer.alloc(DATA_KEY_BYTES);
    plain.copy(own);
    plain.fill(0);
    return own;
  }
}

/** A new data key and its id, `dk_` and 16 random bytes. */
export function newDataKey(): { dekId: string; dek: Buffer } {
  const dek = randomFillSync(Buffer.alloc(DATA_KEY_BYTES));
  return { dekId: `dk_${randomBytes(16).toString('base64url')}`, dek };
}

/** What a sealed value is bound to: its purpose, its patient and its data key. */
const valueAad = (purpose: string, patientRef: string, dekId: string) =>
  Buffer.from(`patient-sealed\n${purpose}\n${patientRef}\n${dekId}`);

export function sealValue(dek: KeyObject, purpose: string, patientRef: string, dekId: string, plain: Buffer): Buffer {
  return encrypt(dek, plain, valueAad(purpose, patientRef, dekId));
}

export function openValue(dek: KeyObject, purpose: string, patientRef: string, dekId: string, sealed: Buffer): Buffer {
  return decrypt(dek, sealed, valueAad(purpose, patientRef, dekId));
}
