import { freshIv, IV_BYTES } from '../../src/nonces';

describe('freshIv', () => {
  it('hands out 12-byte nonces of their own, none repeated across many pool refills', () => {
    const seen = new Set<string>();
    const kept: Buffer[] = [];
    for (let i = 0; i < 20_000; i++) {
      const iv = freshIv();
      expect(iv.length).toBe(IV_BYTES);
      seen.add(iv.toString('hex'));
      kept.push(iv);
    }
    expect(seen.size).toBe(20_000);
    // Each is a copy: what the pool does afterwards (zeroing, refilling) does not change a nonce handed out.
    const first = kept[0]!.toString('hex');
    for (let i = 0; i < 1_000; i++) freshIv();
    expect(kept[0]!.toString('hex')).toBe(first);
  });

  it('are random: bytes spread over every value, no nonce all zeros', () => {
    const counts = new Array<number>(256).fill(0);
    for (let i = 0; i < 10_000; i++) {
      const iv = freshIv();
      expect(iv.equals(Buffer.alloc(IV_BYTES))).toBe(false);
      for (const b of iv) counts[b]!++;
    }
    // 120,000 bytes: about 469 of each value; a stuck or zeroed pool would leave some far off.
    expect(Math.min(...counts)).toBeGreaterThan(300);
    expect(Math.max(...counts)).toBeLessThan(650);
  });
});
