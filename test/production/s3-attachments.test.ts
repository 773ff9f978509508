// Attachments in an S3-compatible object store (MinIO, a real server built from the Go module proxy): the same sealed
// records as the folder store, shared by any number of API replicas and workers. Round trip, another process's store
// reads what this one wrote, nothing in the clear in the bucket, unknown refs, rotation, and the configuration path.
import { randomBytes } from 'node:crypto';
import { GetObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import type { ObjectStoreServer } from '../../scripts/lib/object-store';
import { startTestObjectStore, type TestObjectStore } from '../support/object-store';
import { createAttachmentStore } from '../../src/attachments';
import { S3AttachmentStore } from '../../src/attachments/s3';
import { RecordSealer } from '../../src/codec/at-rest';
import { loadConfig } from '../../src/config';

const KEY_A = { id: 'att-a', key: randomBytes(32) };
const KEY_B = { id: 'att-b', key: randomBytes(32) };
const CONTENT = Buffer.from('%PDF-1.4 lipid panel for Philippa Marchbanks-Oyelaran');
const META = {
  kind: 'Lab',
  fileName: 'Marchbanks-Oyelaran lipids.pdf',
  contentType: 'application/pdf',
  clinicId: 'c-1',
};

describe('S3 attachment store on MinIO', () => {
  let objects: TestObjectStore;
  let minio: ObjectStoreServer;
  let raw: S3Client;

  beforeAll(async () => {
    objects = await startTestObjectStore('journeys-test');
    ({ minio, s3: raw } = objects);
  }, 60_000);
  afterAll(() => objects?.stop());

  const store = (keys = [KEY_A], bucket = 'attachments') =>
    new S3AttachmentStore({
      bucket,
      prefix: 'att/',
      endpoint: minio.endpoint,
      credentials: { accessKeyId: minio.accessKeyId, secretAccessKey: minio.secretAccessKey },
      sealer: new RecordSealer(keys),
    });

  it('stores sealed records another process reads back, and nothing readable sits in the bucket', async () => {
    const writer = store();
    await writer.ensureBucket();
    await writer.ensureBucket(); // idempotent
    const ref = await writer.put(CONTENT, META);
    expect(ref).toMatchObject({ kind: 'Lab', fileName: META.fileName, size: CONTENT.byteLength });

    // Another replica (its own client) after a key rotation: new key first, the old one kept.
    const reader = store([KEY_B, KEY_A]);
    const got = await reader.get(ref.ref);
    expect(got?.bytes.equals(CONTENT)).toBe(true);
    expect(got?.meta).toMatchObject({ ...META, ref: ref.ref, size: CONTENT.byteLength });

    // The record's two objects, and the clinic's usage entry (its ref and size) under a keyed digest of the clinic.
    const listed = await raw.send(new ListObjectsV2Command({ Bucket: 'attachments', Prefix: 'att/' }));
    expect(listed.Contents?.map((o) => o.Key).sort()).toEqual([
      `att/${ref.ref}`,
      `att/${ref.ref}.json`,
      expect.stringMatching(new RegExp(`^att/usage/[A-Za-z0-9_-]{22}/${ref.ref}\\.${CONTENT.byteLength}$`)),
    ]);
    for (const o of listed.Contents ?? []) {
      const body = await raw.send(new GetObjectCommand({ Bucket: 'attachments', Key: o.Key }));
      const text = o.Key + Buffer.from(await body.Body!.transformToByteArray()).toString('latin1');
      for (const needle of ['Marchbanks-Oyelaran', 'lipid panel', 'c-1', 'Lab']) expect(text).not.toContain(needle);
    }

    expect(await reader.get('att_doesnotexist0000')).toBeUndefined();
    expect(await reader.get('../../etc/passwd')).toBeUndefined();
    await expect(store([KEY_B]).get(ref.ref)).rejects.toThrow(`attachment ${ref.ref} cannot be opened`);
    await writer.delete(ref.ref);
    expect(await reader.get(ref.ref)).toBeUndefined();
    const left = await raw.send(new ListObjectsV2Command({ Bucket: 'attachments', Prefix: 'att/' }));
    expect(left.Contents ?? []).toEqual([]); // its usage went with it
    writer.close();
    reader.close();
  });

  it('is what ATTACHMENTS_STORE=s3 builds', async () => {
    const config = loadConfig({
      WEBHOOK_SECRET: 'webhook-secret-0123456789',
      ATTACHMENTS_STORE: 's3',
      ATTACHMENTS_S3_BUCKET: 'configured',
      ATTACHMENTS_S3_ENDPOINT: minio.endpoint,
      ATTACHMENTS_S3_PREFIX: 'p/',
    });
    expect(config.attachmentStore).toEqual({
      kind: 's3',
      bucket: 'configured',
      prefix: 'p/',
      endpoint: minio.endpoint,
      region: 'us-east-1',
    });
    process.env.AWS_ACCESS_KEY_ID = minio.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = minio.secretAccessKey;
    try {
      const s = createAttachmentStore(config, new RecordSealer([KEY_A]));
      expect(s).toBeInstanceOf(S3AttachmentStore);
      await (s as S3AttachmentStore).ensureBucket();
      const ref = await s.put(CONTENT, META);
      expect((await s.get(ref.ref))?.bytes.equals(CONTENT)).toBe(true);
      (s as S3AttachmentStore).close();
    } finally {
      delete process.env.AWS_ACCESS_KEY_ID;
      delete process.env.AWS_SECRET_ACCESS_KEY;
    }
    expect(() => loadConfig({ WEBHOOK_SECRET: 'webhook-secret-0123456789', ATTACHMENTS_STORE: 's3' })).toThrow(
      /ATTACHMENTS_S3_BUCKET is required/,
    );
    expect(() => loadConfig({ WEBHOOK_SECRET: 'webhook-secret-0123456789', ATTACHMENTS_STORE: 'nfs' })).toThrow(
      'ATTACHMENTS_STORE: must be folder or s3',
    );
  });
});
