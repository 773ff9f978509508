// The attachments' bucket versioned (MinIO, a real server): a document deleted by mistake outside the engine comes
// back from its earlier version within the bucket's window; a document the engine deletes (retention, an orphan's
// sweep) goes with every version it had, so no copy is left to bring back.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import {
  DeleteObjectsCommand,
  GetBucketLifecycleConfigurationCommand,
  GetBucketVersioningCommand,
  ListObjectVersionsCommand,
} from '@aws-sdk/client-s3';
import { S3AttachmentStore } from '../../src/attachments/s3';
import type { AttachmentMeta } from '../../src/attachments/types';
import { RecordSealer } from '../../src/codec/at-rest';
import { startTestObjectStore, type TestObjectStore } from '../support/object-store';

const META: AttachmentMeta = { kind: 'Lab', fileName: 'panel.pdf', contentType: 'application/pdf', clinicId: 'c-1' };

describe('the attachments in a versioned bucket', () => {
  let objects: TestObjectStore;
  const sealer = new RecordSealer([{ id: 'k1', key: randomBytes(32) }]);
  const store = (bucket: string) =>
    new S3AttachmentStore({
      bucket,
      endpoint: objects.minio.endpoint,
      credentials: { accessKeyId: objects.minio.accessKeyId, secretAccessKey: objects.minio.secretAccessKey },
      sealer,
    });
  const versions = async (bucket: string, ref: string) => {
    const out = await objects.s3.send(new ListObjectVersionsCommand({ Bucket: bucket, Prefix: ref }));
    return [...(out.Versions ?? []), ...(out.DeleteMarkers ?? [])].length;
  };
  /** What someone with the bucket's credentials does by mistake: a plain delete of the document's two objects. */
  const deleteByMistake = (bucket: string, ref: string) =>
    objects.s3.send(
      new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: [{ Key: ref }, { Key: `${ref}.json` }] } }),
    );

  beforeAll(async () => {
    objects = await startTestObjectStore('attachment-versions');
  }, 60_000);
  afterAll(() => objects?.stop());

  it('turns versioning on with a window for deleted versions', async () => {
    const s = store('versioned-a');
    await s.ensureBucket({ keepDeletedDays: 7 });
    // A second start changes nothing.
    await s.ensureBucket({ keepDeletedDays: 7 });
    const v = await objects.s3.send(new GetBucketVersioningCommand({ Bucket: 'versioned-a' }));
    expect(v.Status).toBe('Enabled');
    const rules = (await objects.s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: 'versioned-a' }))).Rules;
    expect(rules).toEqual([
      expect.objectContaining({
        ID: 'deleted-documents-window',
        Status: 'Enabled',
        NoncurrentVersionExpiration: expect.objectContaining({ NoncurrentDays: 7 }),
        Expiration: expect.objectContaining({ ExpiredObjectDeleteMarker: true }),
      }),
    ]);
    await expect(s.ensureBucket({ keepDeletedDays: 0 })).rejects.toThrow(/keepDeletedDays/);
    s.close();
  });

  it('brings back a document deleted by mistake, bytes and metadata as they were', async () => {
    const s = store('versioned-b');
    await s.ensureBucket({ keepDeletedDays: 7 });
    const bytes = Buffer.from('%PDF-1.7 the results of a thyroid panel');
    const { ref } = await s.put(bytes, META);
    await deleteByMistake('versioned-b', ref);
    expect(await s.get(ref)).toBeUndefined();

    expect(await s.undelete(ref)).toBe(true);
    const back = await s.get(ref);
    expect(Buffer.from(back!.bytes).equals(bytes)).toBe(true);
    expect(back!.meta).toMatchObject(META);
    // Nothing deleted: nothing to bring back.
    expect(await s.undelete(ref)).toBe(false);
    s.close();
  });

  it('deletes every version when the engine deletes a document: nothing left to bring back', async () => {
    const s = store('versioned-c');
    await s.ensureBucket({ keepDeletedDays: 7 });
    const { ref } = await s.put(Buffer.from('a document to delete'), META);
    expect(await versions('versioned-c', ref)).toBe(2);
    await s.delete(ref);
    expect(await versions('versioned-c', ref)).toBe(0);
    expect(await s.undelete(ref)).toBe(false);

    // Deleted by mistake first, then by its retention: the kept version goes too.
    const second = await s.put(Buffer.from('another document'), META);
    await deleteByMistake('versioned-c', second.ref);
    expect(await versions('versioned-c', second.ref)).toBe(4);
    await s.delete(second.ref);
    expect(await versions('versioned-c', second.ref)).toBe(0);
    expect(await s.undelete(second.ref)).toBe(false);
    s.close();
  });

  it('is what `npm run attachments:restore` does for an operator; it says when there is nothing to bring back', async () => {
    const s = store('versioned-d');
    await s.ensureBucket({ keepDeletedDays: 7 });
    const { ref } = await s.put(Buffer.from('a referral letter'), META);
    await deleteByMistake('versioned-d', ref);
    const restore = (arg: string) =>
      spawnSync(
        process.execPath,
        ['--import', 'tsx', path.join(__dirname, '../../scripts/restore-attachment.ts'), arg],
        {
          encoding: 'utf8',
          env: {
            PATH: process.env.PATH,
            ATTACHMENTS_S3_BUCKET: 'versioned-d',
            ATTACHMENTS_S3_ENDPOINT: objects.minio.endpoint,
            AWS_ACCESS_KEY_ID: objects.minio.accessKeyId,
            AWS_SECRET_ACCESS_KEY: objects.minio.secretAccessKey,
          },
        },
      );
    const first = restore(ref);
    expect([first.status, first.stdout]).toEqual([0, expect.stringContaining(`${ref} is back in versioned-d`)]);
    expect((await s.get(ref))?.meta.fileName).toBe(META.fileName);
    const again = restore(ref);
    expect([again.status, again.stderr]).toEqual([1, expect.stringContaining('nothing to bring back')]);
    const wrong = restore('../etc/passwd');
    expect([wrong.status, wrong.stderr]).toEqual([2, expect.stringContaining('is not an attachment ref')]);
    s.close();
  }, 60_000);

  it('deletes in an unversioned bucket as before', async () => {
    const s = store('plain');
    await s.ensureBucket();
    const { ref } = await s.put(Buffer.from('plain'), META);
    await s.delete(ref);
    expect(await s.get(ref)).toBeUndefined();
    expect(await versions('plain', ref)).toBe(0);
    s.close();
  });
});
