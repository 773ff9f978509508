// The at-rest sealer: what the engine keeps on disk (inbox, dead letters, attachments) under the payload key ring.
import { randomBytes } from 'node:crypto';
import { RecordSealer } from '../../src/codec/at-rest';

const key = (id: string) => ({ id, key: randomBytes(32) });
const PHI = '{"fileName":"maria-gonzalez-id.jpg","dob":"1979-03-02"}';

describe('RecordSealer', () => {
  it('seals under the first key, hides the content, and opens it again', () => {
    const sealer = new RecordSealer([key('k1')]);
    expect(sealer.sealing).toBe(true);
    const sealed = sealer.seal(PHI, 'attachment-meta');
    expect(sealed.keyId).toBe('k1');
    expect(sealed.data.toString('utf8')).not.toContain('maria');
    expect(sealed.data.toString('latin1')).not.toContain('1979-03-02');
    expect(sealer.openText(sealed, 'attachment-meta')).toBe(PHI);
  });

  it('seals bytes as bytes, with a fresh nonce each time', () => {
    const sealer = new RecordSealer([key('k1')]);
    const bytes = randomBytes(64);
    const a = sealer.seal(bytes, 'attachment');
    const b = sealer.seal(bytes, 'attachment');
    expect(a.data.equals(b.data)).toBe(false);
    expect(sealer.open(a, 'attachment').equals(bytes)).toBe(true);
  });

  it('round-trips through the JSON form used in files', () => {
    const sealer = new RecordSealer([key('k1')]);
    const json = sealer.sealToJson(PHI, 'dead-letter');
    expect(json).toEqual({ keyId: 'k1', data: expect.any(String) });
    const text = JSON.stringify(json);
    expect(text).not.toContain('maria');
    expect(sealer.openJson(JSON.parse(text) as typeof json, 'dead-letter').toString('utf8')).toBe(PHI);
  });

  it('refuses a record opened for another purpose', () => {
    const sealer = new RecordSealer([key('k1')]);
    const sealed = sealer.seal(PHI, 'attachment-meta');
    expect(() => sealer.open(sealed, 'attachment')).toThrow();
    expect(() => sealer.open(sealed, 'callback-inbox')).toThrow();
  });

  it('stores records as they are in plain mode, and opens plain records in any mode', () => {
    const plain = RecordSealer.plain();
    expect(plain.sealing).toBe(false);
    const sealed = plain.seal(PHI, 'callback-inbox');
    expect(sealed).toEqual({ keyId: null, data: Buffer.from(PHI) });
    expect(plain.openText(sealed, 'callback-inbox')).toBe(PHI);
    // A deployment that turns encryption on still reads what it stored before.
    expect(new RecordSealer([key('k1')]).openText(sealed, 'callback-inbox')).toBe(PHI);
  });

  it('opens records of an older key after a rotation, and seals with the new one', () => {
    const old = key('2026-05');
    const sealedOld = new RecordSealer([old]).seal(PHI, 'attachment');
    const rotated = new RecordSealer([key('2026-11'), old]);
    expect(rotated.openText(sealedOld, 'attachment')).toBe(PHI);
    expect(rotated.seal(PHI, 'attachment').keyId).toBe('2026-11');
  });

  it('refuses a record of an unknown key, naming the key id only', () => {
    const gone = key('gone');
    const sealed = new RecordSealer([gone]).seal(PHI, 'attachment');
    let message = '';
    try {
      new RecordSealer([key('k2')]).open(sealed, 'attachment');
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain('"gone"');
    expect(message).not.toContain('maria');
    expect(message).not.toContain(gone.key.toString('base64'));
    // Plain mode has no key at all: a sealed record cannot be passed off as plain.
    expect(() => RecordSealer.plain().open(sealed, 'attachment')).toThrow(/"gone"/);
  });

  it('refuses a truncated or altered record', () => {
    const sealer = new RecordSealer([key('k1')]);
    const sealed = sealer.seal(PHI, 'attachment');
    expect(() => sealer.open({ keyId: 'k1', data: sealed.data.subarray(0, 20) }, 'attachment')).toThrow(/truncated/);
    expect(() =>
      sealer.open({ keyId: 'k1', data: sealed.data.subarray(0, sealed.data.length - 1) }, 'attachment'),
    ).toThrow();
    const flipped = Buffer.from(sealed.data);
    flipped[15] = flipped[15]! ^ 1;
    expect(() => sealer.open({ keyId: 'k1', data: flipped }, 'attachment')).toThrow();
  });

  it('refuses keys that are not 32 bytes, naming the key id only', () => {
    expect(() => new RecordSealer([{ id: 'short', key: randomBytes(16) }])).toThrow(/short.*32 bytes/);
  });
});
