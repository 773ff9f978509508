// Checkpoints where the trail's writers cannot rewrite them: a bucket with Object Lock (MinIO, a real server), each
// checkpoint locked in compliance mode. A bucket without the lock is refused at start; a locked checkpoint cannot be
// deleted, and one forged over it is read beside it. `npm run audit-trail:verify` checks a trail against the bucket the
// environment names and fails, naming where, on a cut tail and on a record removed with the chain re-hashed.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  ListObjectVersionsCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import type { ObjectStoreServer } from '../../scripts/lib/object-store';
import { checkpointerFor, type AuditStoreSettings } from '../../src/audit';
import { S3Checkpoints } from '../../src/audit/checkpoints';
import { FileAuditLog } from '../../src/audit/file';
import { chainRecord, GENESIS, type AuditRecord } from '../../src/audit/types';
import { startTestObjectStore, type TestObjectStore } from '../support/object-store';

const ROOT = path.resolve(__dirname, '../..');
const BUCKET = 'audit-checkpoints';

describe('audit checkpoints in a bucket with Object Lock', () => {
  let dir: string;
  let store: TestObjectStore;
  let minio: ObjectStoreServer;
  let s3: S3Client;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'audit-checkpoints-s3-'));
    store = await startTestObjectStore('audit-checkpoints');
    ({ minio, s3 } = store);
    await s3.send(new CreateBucketCommand({ Bucket: BUCKET, ObjectLockEnabledForBucket: true }));
    await s3.send(new CreateBucketCommand({ Bucket: 'no-lock' }));
  });
  afterAll(async () => {
    await store?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const env = () => ({
    AWS_ACCESS_KEY_ID: minio.accessKeyId,
    AWS_SECRET_ACCESS_KEY: minio.secretAccessKey,
    AUDIT_CHECKPOINT_BUCKET: BUCKET,
    AUDIT_CHECKPOINT_ENDPOINT: minio.endpoint,
  });

  it('refuses a bucket without Object Lock, naming it', async () => {
    const store = new S3Checkpoints({ client: s3, bucket: 'no-lock', retentionDays: 1 });
    await expect(store.init()).rejects.toThrow('the audit checkpoint bucket no-lock has no Object Lock');
  });

  it('locks each checkpoint: it cannot be deleted, and one put over it is read beside it', async () => {
    const store = new S3Checkpoints({ client: s3, bucket: BUCKET, prefix: 'lock-test/', retentionDays: 1 });
    await store.init();
    await store.put({ trail: 'api', seq: 4, hash: 'a'.repeat(64), at: '2026-11-26T10:00:00.000Z' });
    const versions = await s3.send(new ListObjectVersionsCommand({ Bucket: BUCKET, Prefix: 'lock-test/' }));
    const [v] = versions.Versions!;
    await expect(
      s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: v!.Key!, VersionId: v!.VersionId! })),
    ).rejects.toThrow();
    // A forged checkpoint under the same name, and a delete marker: the original is still read.
    await s3.send(
      new PutObjectCommand({
        Bucket: BUCKET,
        Key: v!.Key!,
        Body: JSON.stringify({ trail: 'api', seq: 4, hash: 'b'.repeat(64), at: '2026-11-26T10:00:00.000Z' }),
        ChecksumAlgorithm: 'SHA256',
      }),
    );
    await s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: v!.Key! }));
    expect((await store.list('api')).map((c) => c.hash).sort()).toEqual(['a'.repeat(64), 'b'.repeat(64)]);
  });

  it('anchor a trail that audit-trail:verify checks against the bucket, finding a cut tail and a re-hashed chain', async () => {
    const file = path.join(dir, 'trail', 'worker.jsonl');
    const settings: AuditStoreSettings = {
      store: 'file',
      file,
      checkpoints: {
        store: 's3',
        intervalMs: 60_000,
        bucket: BUCKET,
        prefix: 'audit-checkpoints/',
        endpoint: minio.endpoint,
        region: 'us-east-1',
        retentionDays: 1,
      },
    };
    Object.assign(process.env, { AWS_ACCESS_KEY_ID: minio.accessKeyId, AWS_SECRET_ACCESS_KEY: minio.secretAccessKey });
    const trail = new FileAuditLog(file);
    const checkpointer = checkpointerFor(trail, settings)!;
    await checkpointer.start();
    for (let i = 1; i <= 6; i++) {
      await trail.append({ action: 'attachments.expire', subject: 'retention', roles: [], outcome: 'ok' });
      if (i === 3) await checkpointer.checkpoint();
    }
    await checkpointer.stop();
    await trail.close();

    const verify = (target: string) =>
      spawnSync(
        process.execPath,
        ['--import', 'tsx', path.join(ROOT, 'scripts/audit-trail.ts'), target, '--trail', 'worker'],
        {
          cwd: ROOT,
          env: { ...process.env, ...env() },
          encoding: 'utf8',
        },
      );
    const whole = verify(file);
    expect(whole.stdout).toContain('6 records, the chain is whole and matches its 3 checkpoints');
    expect(whole.status).toBe(0);

    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    const cutFile = path.join(dir, 'cut.jsonl');
    writeFileSync(cutFile, `${lines.slice(0, 4).join('\n')}\n`);
    const cut = verify(cutFile);
    expect(cut.status).toBe(1);
    expect(cut.stderr).toMatch(
      /the trail ends at record 4, but the checkpoint of \S+ saw record 6: records 5 to 6 were cut off/,
    );

    const records = lines.map((l) => JSON.parse(l) as AuditRecord).filter((r) => r.seq !== 2);
    const rehashed: AuditRecord[] = [];
    for (const r of records) {
      rehashed.push(chainRecord(r, { seq: rehashed.length + 1, at: r.at, prev: rehashed.at(-1)?.hash ?? GENESIS }));
    }
    const rewrittenFile = path.join(dir, 'rewritten.jsonl');
    writeFileSync(rewrittenFile, `${rehashed.map((r) => JSON.stringify(r)).join('\n')}\n`);
    const rewritten = verify(rewrittenFile);
    expect(rewritten.status).toBe(1);
    expect(rewritten.stderr).toContain('record 3 is not the one the checkpoint of');
  });
});
