// The local folder attachment store (the default): the claim check's bytes live here, workflow histories carry only
// the AttachmentRef. The API writes (put), the upload activity reads (get), retention deletes. Records are sealed and
// each clinic's usage kept as AttachmentStoreBase (base.ts) does for both stores; this file holds the folder's own
// parts: files written durably, and the ledger as a folder.
import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { RecordSealer } from '../codec/at-rest';
import { AttachmentStoreBase, type EncodedAttachment } from './base';
import type { LedgerBackend, LedgerEntry } from './ledger';
import type { AttachmentPatientKeys } from './types';

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

/**
 * One folder: `<ref>` holds the bytes (sealed), `<ref>.json` the sealed metadata (written last, so it marks
 * completeness), `usage/` each clinic's usage. The sealer's first key seals; every configured key opens, so records
 * survive a key rotation.
 */
export class LocalFolderAttachmentStore extends AttachmentStoreBase {
  #ready: Promise<unknown> | undefined;

  constructor(
    readonly dir: string,
    sealer: RecordSealer = RecordSealer.plain(),
    patientKeys?: AttachmentPatientKeys,
  ) {
    super(sealer, new FolderLedger(path.join(dir, 'usage')), patientKeys);
  }

  protected async writeRecord(encoded: EncodedAttachment): Promise<void> {
    await (this.#ready ??= mkdir(this.dir, { recursive: true }));
    await writeFileDurably(this.#file(encoded.ref, 'bytes'), encoded.bytes);
    await writeFileDurably(this.#file(encoded.ref, 'json'), encoded.metaRecord);
  }

  protected async readPart(ref: string, part: 'bytes' | 'json'): Promise<Buffer | undefined> {
    return readIfExists(this.#file(ref, part));
  }

  protected async removeRecord(ref: string): Promise<boolean> {
    const json = await removeIfExists(this.#file(ref, 'json'));
    const bytes = await removeIfExists(this.#file(ref, 'bytes'));
    return json || bytes;
  }

  /** A file written again replaced the one before (a rename): nothing else of it is kept. */
  protected removeEarlierVersions(): Promise<void> {
    return Promise.resolve();
  }

  #file(ref: string, part: 'bytes' | 'json'): string {
    return path.join(this.dir, part === 'bytes' ? ref : `${ref}.json`);
  }
}

/** The ledger in a folder: `<root>/<clinic folder>/<entry>`; an entry's time is its file's. */
class FolderLedger implements LedgerBackend {
  constructor(readonly root: string) {}

  async write(entry: string, body: string): Promise<void> {
    const file = path.join(this.root, entry);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFileDurably(file, body);
  }

  async read(entry: string): Promise<string | undefined> {
    return (await readIfExists(path.join(this.root, entry)))?.toString('utf8');
  }

  async remove(entries: string[]): Promise<void> {
    for (const entry of entries) await rm(path.join(this.root, entry), { force: true });
  }

  async names(folder: string): Promise<string[]> {
    try {
      return (await readdir(path.join(this.root, folder))).filter((name) => !name.startsWith('.tmp-'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
  }

  async list(folder: string): Promise<LedgerEntry[]> {
    const dir = path.join(this.root, folder);
    const entries: LedgerEntry[] = [];
    for (const name of await this.names(folder)) {
      try {
        entries.push({ name, at: (await stat(path.join(dir, name))).mtime });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err; // removed meanwhile
      }
    }
    return entries;
  }

  async folders(): Promise<string[]> {
    try {
      return (await readdir(this.root, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
  }
}

async function readIfExists(file: string): Promise<Buffer | undefined> {
  try {
    return await readFile(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

async function removeIfExists(file: string): Promise<boolean> {
  try {
    await rm(file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}
