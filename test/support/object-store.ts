// MinIO for a test file: a server of its own in a temporary folder, on free ports, with an S3 client of its root user.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import { startObjectStore, type ObjectStoreServer } from '../../scripts/lib/object-store';
import { freePort } from './dev-server-process';

export interface TestObjectStore {
  minio: ObjectStoreServer;
  /** A client as the root user, path-style. */
  s3: S3Client;
  /** Stops the server and removes its folder. */
  stop(): Promise<void>;
}

export async function startTestObjectStore(accessKeyId: string): Promise<TestObjectStore> {
  const root = mkdtempSync(path.join(tmpdir(), `${accessKeyId}-`));
  const minio = await startObjectStore({
    dataDir: path.join(root, 'data'),
    port: await freePort(),
    consolePort: await freePort(),
    accessKeyId,
    secretAccessKey: randomBytes(18).toString('base64url'),
  });
  const s3 = new S3Client({
    region: 'us-east-1',
    endpoint: minio.endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: minio.accessKeyId, secretAccessKey: minio.secretAccessKey },
  });
  return {
    minio,
    s3,
    stop: async () => {
      s3.destroy();
      await minio.stop();
      rmSync(root, { recursive: true, force: true });
    },
  };
}
