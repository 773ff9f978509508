// The claim-check store: what the API puts, the upload activity gets back byte for byte; with keys, nothing of the
// attachment (content, file name, kind, clinic) is on disk in the clear.
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { LocalFolderAttachmentStore } from '../../src/attachments/files';
import { newAttachmentRef, type AttachmentMeta } from '../../src/attachments/types';
import { RecordSealer } from '../../src/codec/at-rest';
import { parseEncryptionKeys } from '../../src/encryption-keys';
import { AttachmentRef } from '../../src/contract/journey-request';
import { tempDataDir, type TestDirs } from './support';

describe('LocalFolderAttachmentStore', () => {
  let dirs: TestDirs;
  let store: LocalFolderAttachmentStore;

  beforeEach(() => {
    dirs = tempDataDir();
    store = new LocalFolderAttachmentStore(path.join(dirs.dataDir, 'attachments'));
  });
  afterEach(() => dirs.cleanup());

  it('gives a reference the journey request accepts and the same bytes back', async () => {
    const bytes = Buffer.from([0, 1, 2, 250, 255]);
    const ref = await store.put(bytes, {
      kind: 'Lab',
      fileName: 'lab.pdf',
      contentType: 'application/pdf',
      clinicId: 'c1',
    });
    expect(AttachmentRef.safeParse(ref).success).toBe(true);
    expect(ref).toEqual({
      ref: expect.stringMatching(/^att_/),
      kind: 'Lab',
      fileName: 'lab.pdf',
      contentType: 'application/pdf',
      size: 5,
    });
    const got = await store.get(ref.ref);
    expect(got?.bytes.equals(bytes)).toBe(true);
    expect(got?.meta).toMatchObject({
      ref: ref.ref,
      clinicId: 'c1',
      size: 5,
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    // The bytes sit at <dir>/<ref> (where the worker's folder reader looks), the clinic's usage under usage/ (one
    // empty entry naming the ref and its size); no temp files stay behind.
    expect(readFileSync(path.join(store.dir, ref.ref)).equals(bytes)).toBe(true);
    expect(readdirSync(store.dir).sort()).toEqual([ref.ref, `${ref.ref}.json`, 'usage']);
    const [clinicFolder, ...others] = readdirSync(path.join(store.dir, 'usage'));
    expect(others).toEqual([]);
    expect(readdirSync(path.join(store.dir, 'usage', clinicFolder!))).toEqual([`${ref.ref}.5`]);
  });

  it('gives distinct references, and undefined for unknown, malformed or path-like ones', async () => {
    const a = await store.put(Buffer.from('a'), { kind: 'ID', fileName: 'a', contentType: 'text/plain' });
    const b = await store.put(Buffer.from('a'), { kind: 'ID', fileName: 'a', contentType: 'text/plain' });
    expect(a.ref).not.toBe(b.ref);
    await expect(store.get('att_doesnotexist123')).resolves.toBeUndefined();
    await expect(store.get('../../etc/passwd')).resolves.toBeUndefined();
    await expect(store.get(`${a.ref}/../x`)).resolves.toBeUndefined();
    await store.delete(a.ref);
    await expect(store.get(a.ref)).resolves.toBeUndefined();
    expect((await store.get(b.ref))?.bytes.toString()).toBe('a');
  });
});

describe('LocalFolderAttachmentStore, sealed', () => {
  // Distinctive values: none of them can appear by chance in ciphertext or base64.
  const CONTENT = Buffer.from('%PDF-1.7 Lab report for Maria Gonzalez, DOB 1979-03-02: hemoglobin 13.5 g/dL');
  const META: AttachmentMeta = {
    kind: 'Face photo (front, no makeup)',
    fileName: 'maria-gonzalez-lab-results.pdf',
    contentType: 'application/pdf',
    clinicId: 'clinic-quillfeather-dermatology',
  };
  const SECRETS = ['Maria Gonzalez', '1979-03-02', META.fileName, META.kind, META.clinicId!];
  const keySpec = (id: string) => `${id}:${randomBytes(32).toString('base64')}`;
  const sealerOf = (...specs: string[]) => new RecordSealer(parseEncryptionKeys(specs.join(',')));

  let dirs: TestDirs;
  let dir: string;
  const K1 = keySpec('2026-05');
  const K2 = keySpec('2026-11');

  beforeEach(() => {
    dirs = tempDataDir();
    dir = path.join(dirs.dataDir, 'attachments');
  });
  afterEach(() => dirs.cleanup());

  /** Every file of the store (its usage folders too) as text, its path, and the base64 inside decoded too. */
  function diskText(): string {
    return readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => {
        const file = path.join(entry.parentPath, entry.name);
        const raw = readFileSync(file);
        const decoded = (raw.toString('utf8').match(/[A-Za-z0-9+/=]{16,}/g) ?? []).map((b) =>
          Buffer.from(b, 'base64').toString('latin1'),
        );
        return [path.relative(dir, file), raw.toString('latin1'), ...decoded].join('\n');
      })
      .join('\n');
  }

  async function messageOf(promise: Promise<unknown>): Promise<string> {
    try {
      await promise;
    } catch (err) {
      return (err as Error).message;
    }
    throw new Error('expected a rejection');
  }

  const expectNoPhi = (text: string) => {
    for (const s of SECRETS) expect(text).not.toContain(s);
  };

  it('round-trips the bytes and the metadata, with none of them on disk in the clear', async () => {
    const store = new LocalFolderAttachmentStore(dir, sealerOf(K1));
    const ref = await store.put(CONTENT, META);
    expect(ref).toEqual({
      ref: expect.stringMatching(/^att_/),
      kind: META.kind,
      fileName: META.fileName,
      contentType: META.contentType,
      size: CONTENT.length,
    });

    const got = await store.get(ref.ref);
    expect(got?.bytes.equals(CONTENT)).toBe(true);
    expect(got?.meta).toEqual({
      ...META,
      ref: ref.ref,
      size: CONTENT.length,
      sha256: createHash('sha256').update(CONTENT).digest('hex'),
      storedAt: expect.any(String),
    });

    expect(readdirSync(dir).sort()).toEqual([ref.ref, `${ref.ref}.json`, 'usage']);
    // The clinic's usage folder is named by a keyed digest: not by the clinic id, nor by its plain digest.
    expectNoPhi(diskText());
    expect(diskText()).not.toContain(RecordSealer.plain().blindNames(META.clinicId!, 'attachment-clinic')[0]);
    expect(diskText()).not.toContain('%PDF');
    expect(diskText()).not.toContain('hemoglobin');
    const record = JSON.parse(readFileSync(path.join(dir, `${ref.ref}.json`), 'utf8')) as Record<string, unknown>;
    expect(record).toEqual({ version: 2, keyId: '2026-05', sealed: { keyId: '2026-05', data: expect.any(String) } });
  });

  it('without keys stores the same layout unsealed (so the disk check above is meaningful), readable once sealing', async () => {
    const plain = new LocalFolderAttachmentStore(dir);
    const ref = await plain.put(CONTENT, META);
    for (const s of SECRETS) expect(diskText()).toContain(s);
    const sealing = new LocalFolderAttachmentStore(dir, sealerOf(K1));
    expect((await sealing.get(ref.ref))?.bytes.equals(CONTENT)).toBe(true);
  });

  it('still reads records written before sealing (plain bytes, plain metadata), checking their checksum', async () => {
    mkdirSync(dir, { recursive: true });
    const legacy = (bytes: Buffer, sha256: string) => {
      const ref = newAttachmentRef();
      const meta = { ...META, ref, size: bytes.length, sha256, storedAt: '2026-01-02T03:04:05.000Z' };
      writeFileSync(path.join(dir, ref), bytes);
      writeFileSync(path.join(dir, `${ref}.json`), JSON.stringify(meta));
      return { ref, meta };
    };
    const ok = legacy(CONTENT, createHash('sha256').update(CONTENT).digest('hex'));
    const store = new LocalFolderAttachmentStore(dir, sealerOf(K2, K1));
    const got = await store.get(ok.ref);
    expect(got?.bytes.equals(CONTENT)).toBe(true);
    expect(got?.meta).toEqual(ok.meta);

    const bad = legacy(CONTENT, createHash('sha256').update('something else').digest('hex'));
    const message = await messageOf(store.get(bad.ref));
    expect(message).toContain(bad.ref);
    expectNoPhi(message);

    // A corrupt plain metadata file: JSON.parse would quote it (file name included); the error must not.
    const broken = newAttachmentRef();
    writeFileSync(path.join(dir, broken), CONTENT);
    writeFileSync(path.join(dir, `${broken}.json`), `{"fileName":"${META.fileName}",`);
    const brokenMessage = await messageOf(store.get(broken));
    expect(brokenMessage).toContain(broken);
    expectNoPhi(brokenMessage);
  });

  it('opens records of an older key after a rotation, and seals new ones with the new key', async () => {
    const before = await new LocalFolderAttachmentStore(dir, sealerOf(K1)).put(CONTENT, META);
    const rotated = new LocalFolderAttachmentStore(dir, sealerOf(K2, K1));
    expect((await rotated.get(before.ref))?.bytes.equals(CONTENT)).toBe(true);
    const after = await rotated.put(CONTENT, META);
    const record = JSON.parse(readFileSync(path.join(dir, `${after.ref}.json`), 'utf8')) as { keyId: string };
    expect(record.keyId).toBe('2026-11');
    expect((await rotated.get(after.ref))?.meta.fileName).toBe(META.fileName);
  });

  it('refuses a record of an unknown key, naming the key id and the ref only', async () => {
    const ref = await new LocalFolderAttachmentStore(dir, sealerOf(K1)).put(CONTENT, META);
    const message = await messageOf(new LocalFolderAttachmentStore(dir, sealerOf(K2)).get(ref.ref));
    expect(message).toContain('"2026-05"');
    expect(message).toContain(ref.ref);
    expectNoPhi(message);
    expect(message).not.toContain(K1.split(':')[1]);
  });

  it('refuses altered or swapped files, naming the ref only', async () => {
    const store = new LocalFolderAttachmentStore(dir, sealerOf(K1));
    const expectRefused = async (ref: string) => {
      const message = await messageOf(store.get(ref));
      expect(message).toContain(ref);
      expectNoPhi(message);
    };

    // One bit of the sealed bytes flipped.
    const a = await store.put(CONTENT, META);
    const bytesFile = path.join(dir, a.ref);
    const sealed = readFileSync(bytesFile);
    const flipped = Buffer.from(sealed);
    flipped[20] = flipped[20]! ^ 1;
    writeFileSync(bytesFile, flipped);
    await expectRefused(a.ref);
    writeFileSync(bytesFile, sealed.subarray(0, 10));
    await expectRefused(a.ref);
    writeFileSync(bytesFile, sealed);
    expect((await store.get(a.ref))?.bytes.equals(CONTENT)).toBe(true);

    // The sealed metadata altered.
    const metaFile = path.join(dir, `${a.ref}.json`);
    const metaText = readFileSync(metaFile, 'utf8');
    const record = JSON.parse(metaText) as { sealed: { data: string } };
    const data = Buffer.from(record.sealed.data, 'base64');
    data[data.length - 1] = data[data.length - 1]! ^ 1;
    writeFileSync(metaFile, JSON.stringify({ ...record, sealed: { ...record.sealed, data: data.toString('base64') } }));
    await expectRefused(a.ref);
    writeFileSync(metaFile, metaText);

    // Another record's bytes (sealed under the same key), or another record's metadata, put in place of this one's.
    const b = await store.put(Buffer.from('another patient entirely'), { ...META, fileName: 'other.pdf' });
    writeFileSync(bytesFile, readFileSync(path.join(dir, b.ref)));
    await expectRefused(a.ref);
    writeFileSync(bytesFile, sealed);
    writeFileSync(metaFile, readFileSync(path.join(dir, `${b.ref}.json`)));
    await expectRefused(a.ref);
  });
});
