// Claim check for attachments: the bytes live here, workflow histories carry only the AttachmentRef. The API writes
// (put), the upload activity reads (get). The local folder store is the default; any other backend implements the
// same two calls.
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import type { AttachmentRef } from '../workflows/journey-request';

export interface AttachmentMeta {
  /** File-kind label the exam expects (ID, Lab, a picture name). */
  kind: string;
  fileName: string;
  contentType: string;
  /** The clinic that uploaded it: a clinic may only use its own attachments. */
  clinicId?: string;
}

export interface StoredAttachmentMeta extends AttachmentMeta {
  ref: string;
  size: number;
  sha256: string;
  storedAt: string;
}

export interface AttachmentStore {
  put(bytes: Uint8Array, meta: AttachmentMeta): Promise<AttachmentRef>;
  /** Undefined when the ref is unknown (or not a ref at all). */
  get(ref: string): Promise<StoredAttachment | undefined>;
}

export interface StoredAttachment {
  bytes: Buffer;
  meta: StoredAttachmentMeta;
}

const REF = /^att_[A-Za-z0-9_-]{8,64}$/;

export function isAttachmentRef(ref: string): boolean {
  return REF.test(ref);
}

export function newAttachmentRef(): string {
  return `att_${randomBytes(18).toString('base64url')}`;
}

/** Writes a file so that it is either absent or complete, also after a crash: temp file, fsync, rename, fsync dir. */
export async function writeFileDurably(file: string, data: Uint8Array | string): Promise<void> {
  const dir = path.dirname(file);
  const tmp = path.join(dir, `.tmp-${path.basename(file)}-${randomBytes(4).toString('hex')}`);
  const handle = await open(tmp, 'w');
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(tmp, file);
  const dirHandle = await open(dir, 'r');
  try {
    await dirHandle.sync();
  } finally {
    await dirHandle.close();
  }
}

/** One folder: `<ref>` holds the bytes, `<ref>.json` the metadata (written last, so it marks completeness). */
export class LocalFolderAttachmentStore implements AttachmentStore {
  #ready: Promise<unknown> | undefined;

  constructor(readonly dir: string) {}

  async put(bytes: Uint8Array, meta: AttachmentMeta): Promise<AttachmentRef> {
    await (this.#ready ??= mkdir(this.dir, { recursive: true }));
    const ref = newAttachmentRef();
    const stored: StoredAttachmentMeta = {
      ...meta,
      ref,
      size: bytes.byteLength,
      sha256: createHash('sha256').update(bytes).digest('hex'),
      storedAt: new Date().toISOString(),
    };
    await writeFileDurably(this.#file(ref, 'bytes'), bytes);
    await writeFileDurably(this.#file(ref, 'json'), JSON.stringify(stored));
    return { ref, kind: meta.kind, fileName: meta.fileName, contentType: meta.contentType, size: bytes.byteLength };
  }

  async get(ref: string): Promise<StoredAttachment | undefined> {
    if (!isAttachmentRef(ref)) return undefined;
    try {
      const meta = JSON.parse(await readFile(this.#file(ref, 'json'), 'utf8')) as StoredAttachmentMeta;
      const bytes = await readFile(this.#file(ref, 'bytes'));
      return { bytes, meta };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  /** Removes an attachment (retention jobs, tests); unknown refs are ignored. */
  async delete(ref: string): Promise<void> {
    if (!isAttachmentRef(ref)) return;
    await rm(this.#file(ref, 'json'), { force: true });
    await rm(this.#file(ref, 'bytes'), { force: true });
  }

  #file(ref: string, part: 'bytes' | 'json'): string {
    return path.join(this.dir, part === 'bytes' ? ref : `${ref}.json`);
  }
}
