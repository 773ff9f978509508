// Attachments in an S3-compatible object store, so that API replicas and workers on different hosts share them
// without a shared file system. Same records as the folder store (src/attachments/store.ts): `<prefix><ref>` holds
// the sealed bytes, `<prefix><ref>.json` the sealed metadata, written last so that it marks the record complete.
import {
  CreateBucketCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  NoSuchKey,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { RecordSealer } from '../codec/at-rest';
import type { AttachmentRef } from '../workflows/journey-request';
import {
  attachmentRefOf,
  decodeAttachment,
  encodeAttachment,
  isAttachmentRef,
  type AttachmentMeta,
  type AttachmentStore,
  type StoredAttachment,
} from './store';

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

export class S3AttachmentStore implements AttachmentStore {
  readonly #s3: S3Client;
  readonly #o: S3AttachmentStoreOptions;
  readonly #sealer: RecordSealer;

  constructor(options: S3AttachmentStoreOptions, client?: S3Client) {
    this.#o = options;
    this.#sealer = options.sealer ?? RecordSealer.plain();
    this.#s3 =
      client ??
      new S3Client({
        region: options.region ?? 'us-east-1',
        ...(options.endpoint ? { endpoint: options.endpoint } : {}),
        forcePathStyle: options.forcePathStyle ?? Boolean(options.endpoint),
        ...(options.credentials ? { credentials: options.credentials } : {}),
      });
  }

  /** Creates the bucket when it does not exist (the local stack's object store starts empty). */
  async ensureBucket(): Promise<void> {
    try {
      await this.#s3.send(new HeadBucketCommand({ Bucket: this.#o.bucket }));
    } catch {
      await this.#s3.send(new CreateBucketCommand({ Bucket: this.#o.bucket }));
    }
  }

  async put(bytes: Uint8Array, meta: AttachmentMeta): Promise<AttachmentRef> {
    const encoded = encodeAttachment(this.#sealer, bytes, meta);
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
    return attachmentRefOf(encoded.ref, meta, bytes.byteLength);
  }

  async get(ref: string): Promise<StoredAttachment | undefined> {
    if (!isAttachmentRef(ref)) return undefined;
    const metaText = await this.#read(ref, 'json');
    if (metaText === undefined) return undefined;
    const raw = await this.#read(ref, 'bytes');
    if (raw === undefined) return undefined;
    return decodeAttachment(this.#sealer, ref, metaText.toString('utf8'), raw);
  }

  async delete(ref: string): Promise<void> {
    if (!isAttachmentRef(ref)) return;
    await this.#s3.send(
      new DeleteObjectsCommand({
        Bucket: this.#o.bucket,
        Delete: { Objects: [{ Key: this.#key(ref, 'json') }, { Key: this.#key(ref, 'bytes') }] },
      }),
    );
  }

  close(): void {
    this.#s3.destroy();
  }

  async #read(ref: string, part: 'bytes' | 'json'): Promise<Buffer | undefined> {
    try {
      const out = await this.#s3.send(new GetObjectCommand({ Bucket: this.#o.bucket, Key: this.#key(ref, part) }));
      return Buffer.from(await out.Body!.transformToByteArray());
    } catch (err) {
      if (err instanceof NoSuchKey || (err as { name?: string }).name === 'NoSuchKey') return undefined;
      throw err;
    }
  }

  #key(ref: string, part: 'bytes' | 'json'): string {
    return `${this.#o.prefix ?? ''}${part === 'bytes' ? ref : `${ref}.json`}`;
  }
}
