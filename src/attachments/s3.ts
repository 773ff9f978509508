// Attachments in an S3-compatible object store, so that API replicas and workers on different hosts share them
// without a shared file system. Same records as the folder store (src/attachments/files.ts): `<prefix><ref>` holds
// the sealed bytes, `<prefix><ref>.json` the sealed metadata, written last so that it marks the record complete;
// `<prefix>usage/` each clinic's usage (ledger.ts), listed by prefix.
//
// In a versioned bucket a document deleted by mistake (outside the engine: a console, a script) leaves its earlier
// version behind for the bucket's window, and `undelete` brings it back; a document the engine deletes (its journey's
// retention, an orphan's sweep) is deleted with every version it has, so it is gone for good.
import {
  CreateBucketCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  ListObjectVersionsCommand,
  ListObjectsV2Command,
  NoSuchKey,
  PutBucketLifecycleConfigurationCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { RecordSealer } from '../codec/at-rest';
import type { LedgerBackend, LedgerEntry } from './ledger';
import { AttachmentStoreBase, type EncodedAttachment } from './base';
import type { AttachmentPatientKeys } from './types';

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
  /** Documents sealed for their patients: opened with these keys (and sealed with them when a patient is known). */
  patientKeys?: AttachmentPatientKeys;
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
    super(
      options.sealer ?? RecordSealer.plain(),
      new S3Ledger(s3, options.bucket, `${options.prefix ?? ''}usage/`),
      options.patientKeys,
    );
    this.#o = options;
    this.#s3 = s3;
  }

  /**
   * Creates the bucket when it does not exist (the local stack's object store starts empty). With `keepDeletedDays`,
   * turns versioning on and keeps a version that was deleted or overwritten that many days, then lets it expire (and
   * the delete markers left with nothing behind them).
   */
  async ensureBucket(o: { keepDeletedDays?: number } = {}): Promise<void> {
    const Bucket = this.#o.bucket;
    try {
      await this.#s3.send(new HeadBucketCommand({ Bucket }));
    } catch {
      await this.#s3.send(new CreateBucketCommand({ Bucket }));
    }
    if (o.keepDeletedDays === undefined) return;
    if (!Number.isInteger(o.keepDeletedDays) || o.keepDeletedDays < 1) {
      throw new Error('keepDeletedDays: a whole number of days, 1 or more');
    }
    await this.#s3.send(new PutBucketVersioningCommand({ Bucket, VersioningConfiguration: { Status: 'Enabled' } }));
    await this.#s3.send(
      new PutBucketLifecycleConfigurationCommand({
        Bucket,
        LifecycleConfiguration: {
          Rules: [
            {
              ID: 'deleted-documents-window',
              Status: 'Enabled',
              Filter: { Prefix: '' },
              NoncurrentVersionExpiration: { NoncurrentDays: o.keepDeletedDays },
              Expiration: { ExpiredObjectDeleteMarker: true },
            },
          ],
        },
      }),
    );
  }

  /**
   * Brings back a document deleted by mistake in a versioned bucket, while its earlier version is kept: the delete
   * markers over its two parts are removed. False when there is nothing to bring back (it was never deleted so, the
   * window has passed, or the engine deleted it with every version).
   */
  async undelete(ref: string): Promise<boolean> {
    const markers: { Key: string; VersionId: string }[] = [];
    for (const part of ['json', 'bytes'] as const) {
      const key = this.#key(ref, part);
      const found = await versionsOf(this.#s3, this.#o.bucket, key);
      const latest = found.find((v) => v.latest);
      if (!latest?.marker) continue;
      if (!found.some((v) => !v.marker)) return false;
      markers.push({ Key: key, VersionId: latest.versionId });
    }
    if (markers.length === 0) return false;
    await deleteVersions(this.#s3, this.#o.bucket, markers);
    return (await this.readPart(ref, 'json')) !== undefined;
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
    // Every version of both parts (a versioned bucket keeps the ones before), the metadata first.
    const versions: { Key: string; VersionId: string }[] = [];
    for (const key of [this.#key(ref, 'json'), this.#key(ref, 'bytes')]) {
      for (const v of await versionsOf(this.#s3, this.#o.bucket, key))
        versions.push({ Key: key, VersionId: v.versionId });
    }
    await deleteVersions(this.#s3, this.#o.bucket, versions);
    return existed;
  }

  /**
   * Every version of both parts but the current one: a record sealed again for its patient leaves nothing of the
   * record before in a versioned bucket (its window would keep it readable under the payload keys).
   */
  protected async removeEarlierVersions(ref: string): Promise<void> {
    const versions: { Key: string; VersionId: string }[] = [];
    for (const key of [this.#key(ref, 'json'), this.#key(ref, 'bytes')]) {
      for (const v of await versionsOf(this.#s3, this.#o.bucket, key)) {
        if (!v.latest) versions.push({ Key: key, VersionId: v.versionId });
      }
    }
    await deleteVersions(this.#s3, this.#o.bucket, versions);
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

interface KeyVersion {
  versionId: string;
  latest: boolean;
  /** A delete marker, not a version with content. */
  marker: boolean;
}

/**
 * Every version of one key, delete markers included (an unversioned bucket lists one, `null`). A bucket that may not
 * be asked (s3:ListBucketVersions refused) fails the deletion rather than leave earlier versions behind.
 */
async function versionsOf(s3: S3Client, bucket: string, key: string): Promise<KeyVersion[]> {
  const found: KeyVersion[] = [];
  let keyMarker: string | undefined;
  let versionMarker: string | undefined;
  for (;;) {
    const page = await s3.send(
      new ListObjectVersionsCommand({
        Bucket: bucket,
        Prefix: key,
        ...(keyMarker ? { KeyMarker: keyMarker } : {}),
        ...(versionMarker ? { VersionIdMarker: versionMarker } : {}),
      }),
    );
    for (const [list, marker] of [
      [page.Versions ?? [], false],
      [page.DeleteMarkers ?? [], true],
    ] as const) {
      for (const v of list) {
        if (v.Key === key) found.push({ versionId: v.VersionId ?? 'null', latest: v.IsLatest === true, marker });
      }
    }
    if (!page.IsTruncated) return found;
    keyMarker = page.NextKeyMarker;
    versionMarker = page.NextVersionIdMarker;
  }
}

/** DeleteObjects of given versions, 1,000 a call; a version that could not be deleted is an error. */
async function deleteVersions(s3: S3Client, bucket: string, versions: { Key: string; VersionId: string }[]) {
  for (let i = 0; i < versions.length; i += 1000) {
    const out = await s3.send(
      new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: versions.slice(i, i + 1000), Quiet: true } }),
    );
    if (out.Errors?.length) throw new Error(`the object store did not delete ${out.Errors.length} object version(s)`);
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
