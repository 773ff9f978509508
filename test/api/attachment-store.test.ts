// The claim-check store: what the API puts, the upload activity gets back byte for byte.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { LocalFolderAttachmentStore } from '../../src/attachments/store';
import { AttachmentRef } from '../../src/workflows/journey-request';
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
    // The bytes sit at <dir>/<ref> (where the worker's folder reader looks); no temp files stay behind.
    expect(readFileSync(path.join(store.dir, ref.ref)).equals(bytes)).toBe(true);
    expect(readdirSync(store.dir).sort()).toEqual([ref.ref, `${ref.ref}.json`]);
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
