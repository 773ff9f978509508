// The payload key ring as configuration gives it (`id:base64key,...`), used by the codec and the at-rest sealer.

export interface EncryptionKey {
  id: string;
  /** 32 bytes. */
  key: Buffer;
}

/**
 * Keys from configuration: `id:base64key` entries separated by commas, the first one active, e.g.
 * `2026-11:3q2+7w...=,2026-05:...`. Each key is 32 random bytes (`openssl rand -base64 32`).
 */
export function parseEncryptionKeys(spec: string): EncryptionKey[] {
  return spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((entry, i) => {
      const at = entry.indexOf(':');
      if (at <= 0) throw new Error(`encryption key ${i + 1}: expected id:base64key`);
      const id = entry.slice(0, at);
      const key = Buffer.from(entry.slice(at + 1), 'base64');
      if (key.length !== 32) throw new Error(`encryption key ${id}: must decode to 32 bytes, got ${key.length}`);
      return { id, key };
    });
}
