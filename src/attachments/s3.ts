// Attachments in an S3-compatible object store, so that API replicas and workers on different hosts share them
// without a shared file system. Same records as the folder store (src/attachments/files.ts): `<prefix><ref>` holds
// the sealed bytes, `<prefix><ref>.json` the sealed metadata, written last so that it marks the record complete;
// `<prefix>usage/` each clinic's usage (ledger.ts), listed by prefix.
import {
  CreateBucketCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  ListObjectsV2Command,
  NoSuchKey,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { RecordSealer } from '../codec/at-rest';
import type { LedgerBackend, LedgerEntry } from './ledger';
import { AttachmentStoreBase, type EncodedAttachment } from './base';

export interface S3AttachmentStoreOptions {
  bucket: string;
  /** Key prefix inside the bucket (e.g. `attachments/`). */
  prefix?: string;
  /** An S3-compatible server's address (MinIO and the like); unset for AWS itself. */
  endpoint?: string;
  region?: string;
  /** Path-style addressing (`endpoint/bucket/key`), which most S3-compatible servers want. */
  forcePathStyle?: boolean;
  /** By default the SDK's chain (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, profiles, roles). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
  sealer?: RecordSealer;
}

export class S3AttachmentStore extends AttachmentStoreBase {
  readonly #s3: S3Client;
  readonly #o: S3AttachmentStoreOptions;

  constructor(options: S3AttachmentStoreOptions, client?: S3Client) {
    const s3 =
      client ??
      new S3Client({
        region: options.region ?? 'us-east-1',
        ...(options.endpoint ? { endpoint: options.endpoint } : {}),
        forcePathStyle: options.forcePathStyle ?? Boolean(options.endpoint),
        ...(options.credentials ? { credentials: options.credentials } : {}),
      });
    super(options.sealer ?? RecordSealer.plain(), new S3Ledger(s3, options.bucket, `${options.prefix ?? ''}usage/`));
    this.#o = options;
    this.#s3 = s3;
  }

  /** Creates the bucket when it does not exist (the local stack's object store starts empty). */
  async ensureBucket(): Promise<void> {
    try {
      await this.#s3.send(new HeadBucketCommand({ Bucket: this.#o.bucket }));
    } catch {
      await this.#s3.send(new CreateBucketCommand({ Bucket: this.#o.bucket }));
    }
  }

  close(): void {
    this.#s3.destroy();
  }

  protected async writeRecord(encoded: EncodedAttachment): Promise<void> {
    await this.#s3.send(
      new PutObjectCommand({ Bucket: this.#o.bucket, Key: this.#key(encoded.ref, 'bytes'), Body: encoded.bytes }),
    );
    await this.#s3.send(
      new PutObjectCommand({
        Bucket: this.#o.bucket,
        Key: this.#key(encoded.ref, 'json'),
        Body: encoded.metaRecord,
        ContentType: 'application/json',
      }),
    );
  }

  protected readPart(ref: string, part: 'bytes' | 'json'): Promise<Buffer | undefined> {
    return readObject(this.#s3, this.#o.bucket, this.#key(ref, part));
  }

  protected async removeRecord(ref: string): Promise<boolean> {
    // S3 says nothing of whether a deleted key was there: the metadata (the part that marks a record) is asked first.
    const existed = (await this.readPart(ref, 'json')) !== undefined;
    await deleteObjects(this.#s3, this.#o.bucket, [this.#key(ref, 'json'), this.#key(ref, 'bytes')]);
    return existed;
  }

  #key(ref: string, part: 'bytes' | 'json'): string {
    return `${this.#o.prefix ?? ''}${part === 'bytes' ? ref : `${ref}.json`}`;
  }
}

/** The ledger as objects under `<prefix>usage/`; an entry's time is its object's LastModified. */
class S3Ledger implements LedgerBackend {
  constructor(
    readonly s3: S3Client,
    readonly bucket: string,
    readonly root: string,
  ) {}

  async write(entry: string, body: string): Promise<void> {
    await this.s3.send(new PutObjectCommand({ Bucket: this.bucket, Key: this.root + entry, Body: body }));
  }

  async read(entry: string): Promise<string | undefined> {
    return (await readObject(this.s3, this.bucket, this.root + entry))?.toString('utf8');
  }

  async remove(entries: string[]): Promise<void> {
    await deleteObjects(
      this.s3,
      this.bucket,
      entries.map((e) => this.root + e),
    );
  }

  async list(folder: string): Promise<LedgerEntry[]> {
    const prefix = `${this.root}${folder}/`;
    const entries: LedgerEntry[] = [];
    for await (const page of this.#pages(prefix)) {
      for (const o of page.Contents ?? []) {
        if (o.Key) entries.push({ name: o.Key.slice(prefix.length), at: o.LastModified ?? new Date(0) });
      }
    }
    return entries;
  }

  async names(folder: string): Promise<string[]> {
    return (await this.list(folder)).map((e) => e.name);
  }

  async folders(): Promise<string[]> {
    const folders: string[] = [];
    for await (const page of this.#pages(this.root, '/')) {
      for (const p of page.CommonPrefixes ?? []) {
        if (p.Prefix) folders.push(p.Prefix.slice(this.root.length, -1));
      }
    }
    return folders;
  }

  async *#pages(prefix: string, delimiter?: string) {
    let token: string | undefined;
    do {
      const page = await this.s3.send(
        new ListObjectsV2Command({
          Bucket: this.bucket,
          Prefix: prefix,
          ...(delimiter ? { Delimiter: delimiter } : {}),
          ...(token ? { ContinuationToken: token } : {}),
        }),
      );
      yield page;
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }
}

async function readObject(s3: S3Client, bucket: string, key: string): Promise<Buffer | undefined> {
  try {
    const out = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    return Buffer.from(await out.Body!.transformToByteArray());
  } catch (err) {
    if (err instanceof NoSuchKey || (err as { name?: string }).name === 'NoSuchKey') return undefined;
    throw err;
  }
}

/** DeleteObjects, 1,000 keys a call (its limit); an absent key is no error. */
async function deleteObjects(s3: S3Client, bucket: string, keys: string[]): Promise<void> {
  for (let i = 0; i < keys.length; i += 1000) {
    const out = await s3.send(
      new DeleteObjectsCommand({
        Bucket: bucket,
        Delete: { Objects: keys.slice(i, i + 1000).map((Key) => ({ Key })), Quiet: true },
      }),
    );
    // The call succeeds even when keys fail: a key that could not be deleted must not read as gone.
    if (out.Errors?.length) throw new Error(`the object store did not delete ${out.Errors.length} object(s)`);
  }
}
