// The erasure log: every destroyed data key (patient ref, key id, erasure id, when; no patient data), kept where a
// restore of the key store does not reach, so that the store re-applies it at start and a key brought back by a
// restore of an older backup is destroyed again (docs/design-notes.md#per-patient-data-keys).
//
// In the production shapes: the audit checkpoints' bucket, which has Object Lock in compliance mode, each erasure an
// object nobody (the bucket's owner included) deletes or overwrites before its retention ends; restoring the database
// leaves it as it is. Locally: a JSON-lines file of its own, each line synced; it guards against the key file restored
// alone, not against the whole data folder restored from an older copy.
import { mkdir, open, readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  GetObjectCommand,
  GetObjectLockConfigurationCommand,
  ListObjectVersionsCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { isDataKeyId, isPatientRef } from './envelope';
import type { ErasedKey, ErasureLog } from './types';

function parseErasure(text: string, where: string): ErasedKey {
  let e: Partial<ErasedKey>;
  try {
    e = JSON.parse(text) as Partial<ErasedKey>;
  } catch {
    throw new Error(`${where} is not an erasure`);
  }
  if (
    !isPatientRef(e.patientRef) ||
    !isDataKeyId(e.dekId) ||
    typeof e.erasureId !== 'string' ||
    typeof e.erasedAt !== 'string'
  ) {
    throw new Error(`${where} is not an erasure`);
  }
  return { patientRef: e.patientRef, dekId: e.dekId, erasureId: e.erasureId, erasedAt: e.erasedAt };
}

const line = (e: ErasedKey) =>
  JSON.stringify({ patientRef: e.patientRef, dekId: e.dekId, erasureId: e.erasureId, erasedAt: e.erasedAt });

/** Erasures as JSON lines in a file (mode 0600), each synced before `append` resolves. */
export class FileErasureLog implements ErasureLog {
  readonly file: string;
  #last: Promise<unknown> = Promise.resolve();

  constructor(file: string) {
    this.file = path.resolve(file);
  }

  get where(): string {
    return this.file;
  }

  async init(): Promise<void> {
    await mkdir(path.dirname(this.file), { recursive: true, mode: 0o700 });
  }

  append(e: ErasedKey): Promise<void> {
    const next = this.#last
      .catch(() => undefined)
      .then(async () => {
        const handle = await open(this.file, 'a', 0o600);
        try {
          await handle.appendFile(`${line(e)}\n`);
          await handle.datasync();
        } finally {
          await handle.close();
        }
      });
    this.#last = next;
    return next;
  }

  async list(): Promise<ErasedKey[]> {
    await this.#last.catch(() => undefined);
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const lines = text.split('\n');
    // A last line torn by a crash was never acknowledged: left out. Any other line must be an erasure.
    if (!text.endsWith('\n')) lines.pop();
    return lines
      .map((l, i) => [l, i] as const)
      .filter(([l]) => l.trim() !== '')
      .map(([l, i]) => parseErasure(l, `line ${i + 1} of ${this.file}`));
  }
}

export interface S3ErasureLogOptions {
  client: S3Client;
  /** A bucket with Object Lock: the audit checkpoints' bucket. */
  bucket: string;
  /** Key prefix, e.g. `patient-erasures/`. */
  prefix?: string;
  /** How long each erasure is locked (compliance mode): at least as long as the oldest backup is kept. */
  retentionDays: number;
  now?: () => Date;
}

/** Erasures as objects in a bucket with Object Lock, each locked in compliance mode for `retentionDays`. */
export class S3ErasureLog implements ErasureLog {
  constructor(private readonly o: S3ErasureLogOptions) {}

  get where(): string {
    return `s3://${this.o.bucket}/${this.o.prefix ?? ''}`;
  }

  async init(): Promise<void> {
    let enabled: string | undefined;
    try {
      const r = await this.o.client.send(new GetObjectLockConfigurationCommand({ Bucket: this.o.bucket }));
      enabled = r.ObjectLockConfiguration?.ObjectLockEnabled;
    } catch (err) {
      const name = (err as { name?: string }).name ?? 'error';
      throw new Error(
        `the erasure log's bucket ${this.o.bucket} has no Object Lock (${name}): an erasure must be an object nobody ` +
          'can delete',
        { cause: err },
      );
    }
    if (enabled !== 'Enabled')
      throw new Error(`the erasure log's bucket ${this.o.bucket} does not have Object Lock enabled`);
  }

  async append(e: ErasedKey): Promise<void> {
    const now = this.o.now?.() ?? new Date();
    await this.o.client.send(
      new PutObjectCommand({
        Bucket: this.o.bucket,
        // One object per destroyed key, named by it: written again (a retried erasure), it is a new version beside.
        Key: `${this.o.prefix ?? ''}${e.dekId}.json`,
        Body: line(e),
        ContentType: 'application/json',
        ObjectLockMode: 'COMPLIANCE',
        ObjectLockRetainUntilDate: new Date(now.getTime() + this.o.retentionDays * 86_400_000),
        ChecksumAlgorithm: 'SHA256',
      }),
    );
  }

  /**
   * Every version of every erasure object: a delete marker (which anyone allowed to delete may put) hides none, and
   * a key erased twice is listed once.
   */
  async list(): Promise<ErasedKey[]> {
    const out = new Map<string, ErasedKey>();
    let keyMarker: string | undefined;
    let versionMarker: string | undefined;
    do {
      const page = await this.o.client.send(
        new ListObjectVersionsCommand({
          Bucket: this.o.bucket,
          Prefix: this.o.prefix ?? '',
          ...(keyMarker ? { KeyMarker: keyMarker } : {}),
          ...(versionMarker ? { VersionIdMarker: versionMarker } : {}),
        }),
      );
      for (const v of page.Versions ?? []) {
        const got = await this.o.client.send(
          new GetObjectCommand({
            Bucket: this.o.bucket,
            Key: v.Key!,
            ...(v.VersionId ? { VersionId: v.VersionId } : {}),
          }),
        );
        const e = parseErasure(await got.Body!.transformToString('utf8'), `s3://${this.o.bucket}/${v.Key}`);
        if (!out.has(e.dekId)) out.set(e.dekId, e);
      }
      keyMarker = page.IsTruncated ? page.NextKeyMarker : undefined;
      versionMarker = page.IsTruncated ? page.NextVersionIdMarker : undefined;
    } while (keyMarker);
    return [...out.values()];
  }
}
