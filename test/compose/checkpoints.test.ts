// docker-compose.yml's audit checkpoints: every engine process (the API replicas, the workers, the codec server)
// checkpoints the audit table's head to a MinIO bucket with Object Lock, signed in as a MinIO user of its own. The
// minio-bucket job's script runs here with a stand-in for `mc` (what it asks MinIO for is recorded); the policies it
// gives the users then go to a real MinIO as the session policies of the root's AssumeRole, so what MinIO allows under
// them is what it allows the users they are attached to.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectVersionsCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { AssumeRoleCommand, STSClient } from '@aws-sdk/nested-clients/sts';
import { startObjectStore, type ObjectStoreServer } from '../../scripts/lib/object-store';
import { ATTACHMENTS_KEEP_DELETED_DAYS } from '../../scripts/lib/production-stack';
import { S3AttachmentStore } from '../../src/attachments/s3';
import { S3Checkpoints } from '../../src/audit/checkpoints';
import { loadAuditConfig, loadConfig } from '../../src/config';
import { freePort } from '../support/dev-server-process';
import { ROOT, envOf, loadCompose, parseDotenv, read, type Service } from './compose-file';

const text = read('docker-compose.yml');
const userEnv = {
  ...parseDotenv(read('deploy/.env.example')).values,
  POSTGRES_PASSWORD: 'a-test-password-only',
  SECRETS_GID: '1000',
};
const { compose } = loadCompose(text, userEnv);
const svc = (name: string): Service => compose.services[name]!;
const env = (name: string) => envOf(svc(name));
const CHECKPOINTS = 'journey-audit-checkpoints';
const ATTACHMENTS = 'journey-attachments';

/** A stand-in `mc`: records its arguments and the policy files it is given; a policy attached twice is refused. */
const STAND_IN_MC = `#!/bin/sh
printf '%s\\n' "$*" >> "$MC_LOG"
if [ "$1 $2" = "admin policy" ] && [ "$3" = create ]; then cp "$6" "$MC_POLICIES/$5.json"; fi
if [ "$1 $2" = "admin policy" ] && [ "$3" = attach ]; then
  if [ -e "$MC_POLICIES/$7.attached" ]; then
    echo "mc: <ERROR> Unable to make user/group policy association. The specified policy change is already in effect." >&2
    exit 1
  fi
  touch "$MC_POLICIES/$7.attached"
fi
`;

interface Policy {
  Version: string;
  Statement: { Effect: string; Action: string[]; Resource: string[] }[];
}

describe("the audit trail's checkpoints in docker-compose.yml", () => {
  let work: string;
  let secretsDir: string;
  const secretFile = (secret: string) => path.join(secretsDir, path.basename(compose.secrets[secret]!.file));
  /** The environment a service's process gets, its secrets the files init-secrets.sh made. */
  const serviceEnv = (name: string) =>
    Object.fromEntries(
      Object.entries(env(name)).map(([k, v]) => {
        const secret = /^\/run\/secrets\/([a-z0-9_]+)$/.exec(v)?.[1];
        if (secret) expect([name, svc(name).secrets?.includes(secret)]).toEqual([name, true]);
        return [k, secret ? secretFile(secret) : v];
      }),
    );
  /** The user and secret key of an AWS shared credentials file. */
  const credentialsOf = (file: string) => {
    const ini = readFileSync(file, 'utf8');
    return {
      user: /^aws_access_key_id = (.+)$/m.exec(ini)![1]!,
      secret: /^aws_secret_access_key = (.+)$/m.exec(ini)![1]!,
    };
  };

  beforeAll(() => {
    work = mkdtempSync(path.join(tmpdir(), 'compose-checkpoints-'));
    secretsDir = path.join(work, 'secrets');
    execFileSync('sh', [path.join(ROOT, 'deploy/init-secrets.sh'), secretsDir, path.join(work, '.env')], {
      stdio: 'ignore',
    });
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  test('every engine process checkpoints to the bucket with Object Lock, as a MinIO user of its own', () => {
    const expected = {
      store: 's3',
      bucket: CHECKPOINTS,
      prefix: 'audit-checkpoints/',
      endpoint: 'http://minio:9000',
      region: 'us-east-1',
      retentionDays: 2190,
      intervalMs: 60_000,
    };
    for (const name of ['api-1', 'api-2', 'worker']) {
      expect([name, loadConfig(serviceEnv(name)).audit.checkpoints]).toEqual([name, expected]);
    }
    expect(loadAuditConfig(serviceEnv('codec')).audit.checkpoints).toEqual(expected);
    // The bucket the minio-bucket job makes; every process waits for it.
    expect(env('minio-bucket').CHECKPOINT_BUCKET).toBe(CHECKPOINTS);
    for (const name of ['api-1', 'worker', 'codec']) {
      expect([name, svc(name).depends_on?.['minio-bucket']]).toEqual([
        name,
        { condition: 'service_completed_successfully' },
      ]);
    }
    // Credentials of their own (the AWS SDK's shared credentials file), not MinIO's root: the API replicas and the
    // workers journey-engine, the codec server journey-codec.
    const users = Object.fromEntries(
      ['api-1', 'api-2', 'worker', 'codec'].map((name) => [
        name,
        credentialsOf(serviceEnv(name).AWS_SHARED_CREDENTIALS_FILE!).user,
      ]),
    );
    expect(users).toEqual({
      'api-1': 'journey-engine',
      'api-2': 'journey-engine',
      worker: 'journey-engine',
      codec: 'journey-codec',
    });
    const root = readFileSync(secretFile('object_store_root_user'), 'utf8').trim();
    expect(Object.values(users)).not.toContain(root);
    for (const name of ['api-1', 'worker', 'codec']) {
      for (const secret of ['object_store_root_user', 'object_store_root_password']) {
        expect([name, svc(name).secrets?.includes(secret)]).toEqual([name, false]);
      }
    }
  });

  test('the minio-bucket job makes both buckets, the second with Object Lock, and the two users; harmless again', () => {
    const job = svc('minio-bucket');
    expect(job.entrypoint).toEqual(['/bin/sh', '-ec']);
    const dir = path.join(work, 'mc');
    const bin = path.join(dir, 'bin');
    const policies = path.join(dir, 'policies');
    mkdirSync(bin, { recursive: true });
    mkdirSync(policies, { recursive: true });
    writeFileSync(path.join(bin, 'mc'), STAND_IN_MC, { mode: 0o755 });
    // The image's programs the script may use besides the shell's built-ins (it has no sed, no jq); the stand-in
    // itself uses cp and touch.
    for (const program of ['cat', 'mkdir', 'cp', 'touch']) {
      symlinkSync(
        execFileSync('sh', ['-c', `command -v ${program}`], { encoding: 'utf8' }).trim(),
        path.join(bin, program),
      );
    }
    const secrets = path.join(dir, 'run-secrets');
    mkdirSync(secrets);
    for (const secret of job.secrets!) writeFileSync(path.join(secrets, secret), readFileSync(secretFile(secret)));
    const run = () =>
      execFileSync(
        '/bin/sh',
        [
          '-ec',
          job
            .command!.join('\n')
            .replaceAll('/run/secrets/', `${secrets}/`)
            .replaceAll('/tmp/policies', path.join(dir, 'tmp')),
        ],
        {
          env: {
            PATH: bin,
            ...env('minio-bucket'),
            MC_LOG: path.join(dir, 'mc.log'),
            MC_POLICIES: policies,
          },
          encoding: 'utf8',
        },
      );
    for (let i = 0; i < 2; i++) expect(run()).toContain(`the buckets ${ATTACHMENTS} and ${CHECKPOINTS} are ready`);
    const engine = credentialsOf(secretFile('object_store_engine_credentials'));
    const codec = credentialsOf(secretFile('object_store_codec_credentials'));
    const once = [
      `mb --ignore-existing objects/${ATTACHMENTS}`,
      `mb --ignore-existing --with-lock objects/${CHECKPOINTS}`,
      `version enable objects/${ATTACHMENTS}`,
      `ilm import objects/${ATTACHMENTS}`,
      `admin policy create objects journey-engine ${path.join(dir, 'tmp')}/journey-engine.json`,
      `admin user add objects journey-engine ${engine.secret}`,
      'admin policy attach objects journey-engine --user journey-engine',
      `admin policy create objects journey-codec ${path.join(dir, 'tmp')}/journey-codec.json`,
      `admin user add objects journey-codec ${codec.secret}`,
      'admin policy attach objects journey-codec --user journey-codec',
    ];
    expect(readFileSync(path.join(dir, 'mc.log'), 'utf8')).toBe([...once, ...once].map((l) => `${l}\n`).join(''));
    expect(
      readdirSync(policies)
        .filter((f) => f.endsWith('.json'))
        .sort(),
    ).toEqual(['journey-codec.json', 'journey-engine.json']);
    // The window for a document deleted by mistake: the same as the native stack's.
    expect(JSON.parse(readFileSync(path.join(dir, 'tmp', 'lifecycle.json'), 'utf8'))).toEqual({
      Rules: [
        {
          ID: 'deleted-documents-window',
          Status: 'Enabled',
          Filter: { Prefix: '' },
          NoncurrentVersionExpiration: { NoncurrentDays: ATTACHMENTS_KEEP_DELETED_DAYS },
          Expiration: { ExpiredObjectDeleteMarker: true },
        },
      ],
    });
  });

  describe('under the policies the job gives the users, on a real MinIO', () => {
    let minio: ObjectStoreServer;
    let root: S3Client;
    const policy = (name: string) =>
      JSON.parse(readFileSync(path.join(work, 'mc', 'policies', `${name}.json`), 'utf8')) as Policy;
    /** An S3 client holding a session of the root restricted to the policy. */
    const as = async (name: string) => {
      const sts = new STSClient({
        region: 'us-east-1',
        endpoint: minio.endpoint,
        credentials: { accessKeyId: minio.accessKeyId, secretAccessKey: minio.secretAccessKey },
      });
      const { Credentials: c } = await sts.send(
        new AssumeRoleCommand({
          RoleArn: 'arn:minio:iam:::role/compose-test',
          RoleSessionName: name,
          Policy: JSON.stringify(policy(name)),
          DurationSeconds: 900,
        }),
      );
      sts.destroy();
      return new S3Client({
        region: 'us-east-1',
        endpoint: minio.endpoint,
        forcePathStyle: true,
        credentials: {
          accessKeyId: c!.AccessKeyId!,
          secretAccessKey: c!.SecretAccessKey!,
          sessionToken: c!.SessionToken!,
        },
      });
    };
    const denied = (p: Promise<unknown>) =>
      p.then(
        () => 'allowed',
        (err: { name?: string }) => err.name,
      );

    beforeAll(async () => {
      minio = await startObjectStore({
        dataDir: path.join(work, 'minio'),
        port: await freePort(),
        consolePort: await freePort(),
        accessKeyId: 'compose-root',
        secretAccessKey: 'a-root-secret-for-the-test',
      });
      root = new S3Client({
        region: 'us-east-1',
        endpoint: minio.endpoint,
        forcePathStyle: true,
        credentials: { accessKeyId: minio.accessKeyId, secretAccessKey: minio.secretAccessKey },
      });
      // What `mc mb`, `mc version enable` and `mc mb --with-lock` make.
      await root.send(new CreateBucketCommand({ Bucket: ATTACHMENTS }));
      await root.send(
        new PutBucketVersioningCommand({ Bucket: ATTACHMENTS, VersioningConfiguration: { Status: 'Enabled' } }),
      );
      await root.send(new CreateBucketCommand({ Bucket: CHECKPOINTS, ObjectLockEnabledForBucket: true }));
    });
    afterAll(async () => {
      root?.destroy();
      await minio?.stop();
    });

    test.each(['journey-engine', 'journey-codec'])(
      '%s puts and reads checkpoints, each locked; it deletes none',
      async (name) => {
        const s3 = await as(name);
        try {
          const store = new S3Checkpoints({
            client: s3,
            bucket: CHECKPOINTS,
            prefix: 'audit-checkpoints/',
            retentionDays: 1,
          });
          await store.init();
          const checkpoint = { trail: 'table', seq: 7, hash: 'a'.repeat(64), at: new Date().toISOString() };
          await store.put(checkpoint);
          expect(await store.list('table')).toContainEqual(checkpoint);
          const versions = await s3.send(new ListObjectVersionsCommand({ Bucket: CHECKPOINTS }));
          const v = versions.Versions!.at(-1)!;
          // Not its own to remove, and locked anyway (the root may not either).
          expect(
            await denied(
              s3.send(new DeleteObjectCommand({ Bucket: CHECKPOINTS, Key: v.Key!, VersionId: v.VersionId! })),
            ),
          ).toBe('AccessDenied');
          expect(
            await denied(
              root.send(new DeleteObjectCommand({ Bucket: CHECKPOINTS, Key: v.Key!, VersionId: v.VersionId! })),
            ),
          ).not.toBe('allowed');
        } finally {
          s3.destroy();
        }
      },
    );

    test('journey-engine keeps attachments in their bucket; journey-codec reaches no attachment', async () => {
      const engine = await as('journey-engine');
      const codec = await as('journey-codec');
      try {
        const store = new S3AttachmentStore({ bucket: ATTACHMENTS }, engine);
        await store.ensureBucket();
        const meta = { kind: 'Lab', fileName: 'panel.pdf', contentType: 'application/pdf', clinicId: 'clinic-a' };
        const { ref } = await store.put(Buffer.alloc(10, 7), meta, { quota: { bytes: 0, count: 10 } });
        expect((await store.get(ref))?.bytes.length).toBe(10);
        expect((await store.usage('clinic-a')).count).toBe(1);
        await store.delete(ref);
        expect(await store.get(ref)).toBeUndefined();
        // With every version: nothing of it left in the versioned bucket.
        const left = await root.send(new ListObjectVersionsCommand({ Bucket: ATTACHMENTS, Prefix: ref }));
        expect([...(left.Versions ?? []), ...(left.DeleteMarkers ?? [])]).toEqual([]);

        expect(await denied(codec.send(new PutObjectCommand({ Bucket: ATTACHMENTS, Key: 'k', Body: 'x' })))).toBe(
          'AccessDenied',
        );
        await root.send(new PutObjectCommand({ Bucket: ATTACHMENTS, Key: 'k', Body: 'x' }));
        expect(await denied(codec.send(new GetObjectCommand({ Bucket: ATTACHMENTS, Key: 'k' })))).toBe('AccessDenied');
      } finally {
        engine.destroy();
        codec.destroy();
      }
    });
  });
});
