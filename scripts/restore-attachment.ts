// `npm run attachments:restore -- <ref>`: brings back a document deleted by mistake from the attachments' versioned
// bucket (a console's or a script's delete, not the engine's), while the bucket still keeps its earlier version
// (its window: 7 days in the production shapes). The engine's own deletions (retention, an orphan's sweep, an erasure)
// remove every version: those cannot come back, by design. Reads the engine's settings (ATTACHMENTS_S3_BUCKET,
// _PREFIX, _ENDPOINT, _REGION) and the object store's credentials as the SDK finds them (AWS_SHARED_CREDENTIALS_FILE,
// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY); they need s3:ListBucketVersions and s3:DeleteObjectVersion.
import { S3AttachmentStore } from '../src/attachments/s3';
import { isAttachmentRef } from '../src/attachments/types';
import { exitWith, parseCommandLine, UsageError } from './lib/cli';

const USAGE = `Usage:
  npm run attachments:restore -- <attachment ref>
  The bucket from ATTACHMENTS_S3_BUCKET (ATTACHMENTS_S3_PREFIX, ATTACHMENTS_S3_ENDPOINT, ATTACHMENTS_S3_REGION);
  credentials as the AWS SDK finds them.`;

export function parseRestore(argv: string[], env: NodeJS.ProcessEnv) {
  const { values, positionals } = parseCommandLine(
    argv,
    { help: { type: 'boolean', short: 'h' } },
    { positionals: true },
  );
  if (values.help) return undefined;
  const [ref, ...rest] = positionals;
  if (!ref || rest.length > 0) throw new UsageError('one attachment ref (att_...)');
  if (!isAttachmentRef(ref)) throw new UsageError(`${ref.slice(0, 80)} is not an attachment ref (att_...)`);
  if (!env.ATTACHMENTS_S3_BUCKET) throw new UsageError('ATTACHMENTS_S3_BUCKET: the attachments bucket');
  return {
    ref,
    bucket: env.ATTACHMENTS_S3_BUCKET,
    prefix: env.ATTACHMENTS_S3_PREFIX ?? '',
    region: env.ATTACHMENTS_S3_REGION ?? 'us-east-1',
    ...(env.ATTACHMENTS_S3_ENDPOINT ? { endpoint: env.ATTACHMENTS_S3_ENDPOINT } : {}),
  };
}

async function main(argv: string[]): Promise<number> {
  let o: ReturnType<typeof parseRestore>;
  try {
    o = parseRestore(argv, process.env);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    console.error(`${err.message}\n${USAGE}`);
    return 2;
  }
  if (!o) {
    console.log(USAGE);
    return 0;
  }
  const store = new S3AttachmentStore(o);
  try {
    if (await store.undelete(o.ref)) {
      console.log(`${o.ref} is back in ${o.bucket}, as it was before it was deleted.`);
      return 0;
    }
    console.error(
      `${o.ref}: nothing to bring back in ${o.bucket} (not deleted, past the bucket's window, or deleted by the engine with every version).`,
    );
    return 1;
  } finally {
    store.close();
  }
}

if (require.main === module) exitWith(() => main(process.argv.slice(2)));
