// Idempotent starts: the journey id is a keyed hash of (clinic, Idempotency-Key), so the same key always names the
// same workflow and nothing about the key (which a clinic might build from patient data) can be read back from it.
import { createHash, createHmac } from 'node:crypto';

const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

function base32(bytes: Uint8Array): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

/** `j` + 26 base32 characters (130 bits): matches the journey id rule and is opaque. */
export function deriveJourneyId(secret: string, clinicId: string, idempotencyKey: string): string {
  const mac = createHmac('sha256', secret).update(`journey-id\n${clinicId}\n${idempotencyKey}`).digest();
  return `j${base32(mac).slice(0, 26)}`;
}

/** JSON with object keys sorted at every level: the same request always gives the same text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v === undefined ? null : v)).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

export function requestSha256(body: unknown): string {
  return createHash('sha256').update(canonicalJson(body)).digest('hex');
}
