// The chain anchored: the head of a trail (its last record's seq and hash, and when) is written at least every minute
// and at stop to a place the trail's writers cannot rewrite. A chain alone proves only that it was not edited
// piecemeal: cut at its tail, or rewritten from some record on, it verifies as whole. Checked against its checkpoints
// (verifyAuditChain's `checkpoints`), a record a checkpoint saw that is gone or differs is found, and named.
//
// Where: in the production shapes an S3 bucket with Object Lock in compliance mode (each checkpoint an object nobody,
// the bucket's owner included, can delete or overwrite until its retention ends); locally a file beside the trail
// (`<trail>.checkpoints`), which guards against a cut or a rewrite by the process, not against someone on the host.
import { mkdir, open, readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  GetObjectCommand,
  GetObjectLockConfigurationCommand,
  ListObjectVersionsCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';

export interface Checkpoint {
  /** Which trail: `api`, `worker`, `codec` for files, `table` for the shared PostgreSQL table. */
  trail: string;
  /** The last record when the checkpoint was taken (0 and the genesis hash for an empty trail). */
  seq: number;
  hash: string;
  at: string;
}

export interface CheckpointStore {
  /** Where the checkpoints go, for logs and errors (no secret). */
  readonly where: string;
  /** Checks it can be written as promised (the bucket locks its objects); throws naming what is wrong. */
  init(): Promise<void>;
  put(checkpoint: Checkpoint): Promise<void>;
  list(trail: string): Promise<Checkpoint[]>;
}

function parseCheckpoint(text: string, where: string): Checkpoint {
  const c = JSON.parse(text) as Partial<Checkpoint>;
  if (
    typeof c.trail !== 'string' ||
    typeof c.seq !== 'number' ||
    typeof c.hash !== 'string' ||
    typeof c.at !== 'string'
  ) {
    throw new Error(`${where} is not a checkpoint`);
  }
  return { trail: c.trail, seq: c.seq, hash: c.hash, at: c.at };
}

/** Checkpoints as JSON lines in a file of their own, each synced before `put` resolves. */
export class FileCheckpoints implements CheckpointStore {
  constructor(readonly file: string) {}

  get where(): string {
    return this.file;
  }

  async init(): Promise<void> {
    await mkdir(path.dirname(this.file), { recursive: true, mode: 0o700 });
  }

  async put(checkpoint: Checkpoint): Promise<void> {
    const handle = await open(this.file, 'a', 0o600);
    try {
      await handle.appendFile(`${JSON.stringify(checkpoint)}\n`);
      await handle.datasync();
    } finally {
      await handle.close();
    }
  }

  async list(trail: string): Promise<Checkpoint[]> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const lines = text.split('\n');
    // A last line torn by a crash is left out; any other line must be a checkpoint.
    if (!text.endsWith('\n')) lines.pop();
    return lines
      .filter((l) => l.trim() !== '')
      .map((l, i) => parseCheckpoint(l, `line ${i + 1} of ${this.file}`))
      .filter((c) => c.trail === trail);
  }
}

export interface S3CheckpointsOptions {
  client: S3Client;
  bucket: string;
  /** Key prefix, e.g. `audit-checkpoints/`. */
  prefix?: string;
  /** How long each checkpoint is locked (compliance mode): at least as long as the trail is kept. */
  retentionDays: number;
  now?: () => Date;
}

/** Checkpoints as objects in a bucket with Object Lock: each locked in compliance mode for `retentionDays`. */
export class S3Checkpoints implements CheckpointStore {
  constructor(private readonly o: S3CheckpointsOptions) {}

  get where(): string {
    return `s3://${this.o.bucket}/${this.o.prefix ?? ''}`;
  }

  /** The bucket must have Object Lock on: without it a checkpoint could be deleted by whoever holds the keys. */
  async init(): Promise<void> {
    let enabled: string | undefined;
    try {
      const r = await this.o.client.send(new GetObjectLockConfigurationCommand({ Bucket: this.o.bucket }));
      enabled = r.ObjectLockConfiguration?.ObjectLockEnabled;
    } catch (err) {
      const name = (err as { name?: string }).name ?? 'error';
      throw new Error(
        `the audit checkpoint bucket ${this.o.bucket} has no Object Lock (${name}): create it with Object Lock ` +
          'enabled (the checkpoints must be objects nobody can delete or overwrite)',
        { cause: err },
      );
    }
    if (enabled !== 'Enabled') {
      throw new Error(`the audit checkpoint bucket ${this.o.bucket} does not have Object Lock enabled`);
    }
  }

  async put(checkpoint: Checkpoint): Promise<void> {
    const now = this.o.now?.() ?? new Date();
    const retainUntil = new Date(now.getTime() + this.o.retentionDays * 86_400_000);
    // One object per checkpoint, never overwritten: the time and seq name it.
    const key = `${this.o.prefix ?? ''}${checkpoint.trail}/${checkpoint.at.replace(/[:.]/g, '-')}-${checkpoint.seq}.json`;
    await this.o.client.send(
      new PutObjectCommand({
        Bucket: this.o.bucket,
        Key: key,
        Body: JSON.stringify(checkpoint),
        ContentType: 'application/json',
        ObjectLockMode: 'COMPLIANCE',
        ObjectLockRetainUntilDate: retainUntil,
        // Object Lock needs an integrity checksum on the upload.
        ChecksumAlgorithm: 'SHA256',
      }),
    );
  }

  /**
   * Every version of every checkpoint object: a version put over a checkpoint (a forged one under the same name) is
   * read beside the original, which the lock keeps, and a delete marker hides nothing.
   */
  async list(trail: string): Promise<Checkpoint[]> {
    const out: Checkpoint[] = [];
    let keyMarker: string | undefined;
    let versionMarker: string | undefined;
    do {
      const page = await this.o.client.send(
        new ListObjectVersionsCommand({
          Bucket: this.o.bucket,
          Prefix: `${this.o.prefix ?? ''}${trail}/`,
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
        out.push(parseCheckpoint(await got.Body!.transformToString('utf8'), `s3://${this.o.bucket}/${v.Key}`));
      }
      keyMarker = page.IsTruncated ? page.NextKeyMarker : undefined;
      versionMarker = page.IsTruncated ? page.NextVersionIdMarker : undefined;
    } while (keyMarker);
    return out;
  }
}

/** What a checkpointer reads: the trail's last record. */
export interface TrailHead {
  head(): Promise<{ seq: number; hash: string }>;
}

/**
 * Writes the head of one trail to its checkpoint store every `intervalMs` (when it moved) and at stop. A checkpoint
 * that cannot be written is logged and tried again at the next tick; the trail goes on (the checkpoints anchor it, they
 * do not gate it).
 */
export class Checkpointer {
  #timer: NodeJS.Timeout | undefined;
  #last: string | undefined;
  #running: Promise<void> = Promise.resolve();

  constructor(
    private readonly o: {
      trail: string;
      head: TrailHead;
      store: CheckpointStore;
      intervalMs?: number;
      now?: () => Date;
      warn?: (message: string, meta: Record<string, unknown>) => void;
    },
  ) {}

  async start(): Promise<void> {
    await this.o.store.init();
    await this.checkpoint();
    this.#timer = setInterval(() => void this.checkpoint(), this.o.intervalMs ?? 60_000).unref();
  }

  /** One checkpoint now, unless the head has not moved since the last one. */
  checkpoint(): Promise<void> {
    this.#running = this.#running.then(async () => {
      try {
        const { seq, hash } = await this.o.head.head();
        const key = `${seq}:${hash}`;
        if (key === this.#last) return;
        await this.o.store.put({ trail: this.o.trail, seq, hash, at: (this.o.now?.() ?? new Date()).toISOString() });
        this.#last = key;
      } catch (err) {
        this.o.warn?.('audit checkpoint not written; tried again at the next one', {
          trail: this.o.trail,
          where: this.o.store.where,
          error: err instanceof Error ? err.message : String(err),
        });
      }
    });
    return this.#running;
  }

  /** The last checkpoint, at stop: taken after the trail's last append. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.checkpoint();
  }
}
