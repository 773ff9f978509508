// The 96-bit nonces of every AES-256-GCM seal (the payload codec, the at-rest sealer, the patient keys): random, as
// before, but taken from a pool the CSPRNG fills 4 KiB at a time. Drawing 12 random bytes for each seal cost the
// webhook about 10 µs of its event loop per draw (docs/cpu-profiles.md); a pool slice is a copy. Each nonce is
// handed out once and the pool is refilled from the CSPRNG, never reused, so nonces stay as unpredictable and as
// unlikely to repeat as before.
import { randomFillSync } from 'node:crypto';

export const IV_BYTES = 12;
const POOL_BYTES = 4096 - (4096 % IV_BYTES);

let pool = Buffer.alloc(0);
let at = POOL_BYTES;

/** A fresh random 12-byte nonce (a buffer of its own). */
export function freshIv(): Buffer {
  if (at >= POOL_BYTES) {
    pool = randomFillSync(Buffer.allocUnsafeSlow(POOL_BYTES));
    at = 0;
  }
  const iv = Buffer.from(pool.subarray(at, at + IV_BYTES));
  pool.fill(0, at, at + IV_BYTES);
  at += IV_BYTES;
  return iv;
}
