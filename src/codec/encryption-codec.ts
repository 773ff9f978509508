// Encrypts every Temporal payload with AES-256-GCM so that PHI never reaches the server in the clear. The key id
// travels in the payload's metadata: after a rotation, payloads written under an older key still decrypt as long
// as that key stays configured.
import { createCipheriv, createDecipheriv, createSecretKey, type KeyObject } from 'node:crypto';
import { freshIv, IV_BYTES } from '../nonces';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { EncryptionKey } from '../encryption-keys';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const METADATA_KEY_ID = 'encryption-key-id';
export const METADATA_CIPHER = 'encryption-cipher';
const CIPHER = 'AES-256-GCM';
const TAG_BYTES = 16;

const utf8 = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array | null | undefined) => (b ? new TextDecoder().decode(b) : undefined);

export class EncryptionCodec implements PayloadCodec {
  /** As ciphers take them, made once (raw key bytes are prepared anew for every cipher: docs/cpu-profiles.md). */
  readonly #keys: Map<string, KeyObject>;
  readonly #active: EncryptionKey;

  /** The first key encrypts; every key decrypts. */
  constructor(keys: EncryptionKey[]) {
    if (keys.length === 0) throw new Error('EncryptionCodec needs at least one key');
    for (const k of keys) {
      if (k.key.length !== 32) throw new Error(`encryption key ${k.id} must be 32 bytes, got ${k.key.length}`);
    }
    this.#keys = new Map(keys.map((k) => [k.id, createSecretKey(k.key)]));
    this.#active = keys[0]!;
  }

  get activeKeyId(): string {
    return this.#active.id;
  }

  // Built with the Promise constructor so that a throw becomes a rejection, as callers of a codec expect.
  encode(payloads: Payload[]): Promise<Payload[]> {
    return new Promise((resolve) =>
      resolve(
        payloads.map((payload) => {
          const plain = temporal.api.common.v1.Payload.encode(payload).finish();
          const iv = freshIv();
          const cipher = createCipheriv('aes-256-gcm', this.#keys.get(this.#active.id)!, iv);
          const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
          return {
            metadata: {
              encoding: utf8(ENCRYPTED_ENCODING),
              [METADATA_KEY_ID]: utf8(this.#active.id),
              [METADATA_CIPHER]: utf8(CIPHER),
            },
            data: sealed,
          };
        }),
      ),
    );
  }

  decode(payloads: Payload[]): Promise<Payload[]> {
    return new Promise((resolve) =>
      resolve(
        payloads.map((payload) => {
          if (text(payload.metadata?.encoding) !== ENCRYPTED_ENCODING) return payload;
          const keyId = text(payload.metadata?.[METADATA_KEY_ID]);
          const key = keyId === undefined ? undefined : this.#keys.get(keyId);
          if (!key)
            throw new Error(`payload encrypted under unknown key id "${keyId ?? ''}": configure that key to read it`);
          const data = Buffer.from(payload.data ?? new Uint8Array());
          if (data.length < IV_BYTES + TAG_BYTES) throw new Error('encrypted payload is truncated');
          const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
          decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
          const plain = Buffer.concat([
            decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)),
            decipher.final(),
          ]);
          return temporal.api.common.v1.Payload.decode(plain);
        }),
      ),
    );
  }
}
