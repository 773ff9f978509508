// The local patient key store: one JSON file (mode 0600) that one process writes. Each change writes the whole file
// anew beside it, syncs it, renames it over the old one and syncs the folder, so a crash leaves the old file or the new
// one, never half of either; the change counts only once that is done. A second writer, in this process or another, is
// refused naming the file (its lock, `<file>.lock`, holds the writer's pid). The file is small: a key is about 150
// bytes, and a deployment with many patients uses the PostgreSQL store.
import { mkdir, open, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { isPatientRef, type PatientRef } from './envelope';
import { PatientKeyStoreError, type ErasedKey, type PatientKeyStore, type WrappedKey } from './types';

interface FileKey {
  dekId: string;
  wrapKeyId: string;
  /** base64 */
  wrapped: string;
  createdAt: string;
}

interface FileState {
  version: 1;
  settings: Record<string, string>;
  keys: Record<string, FileKey>;
  erased: Record<string, Omit<ErasedKey, 'dekId'>>;
}

const empty = (): FileState => ({ version: 1, settings: {}, keys: {}, erased: {} });

/** Files this process writes (a second store on one file in one process is refused like one in another). */
const WRITING = new Set<string>();

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class FilePatientKeyStore implements PatientKeyStore {
  readonly kind = 'file' as const;
  readonly file: string;
  readonly #lockFile: string;
  #state: FileState | undefined;
  #locked = false;
  /** Changes one at a time: each writes the whole file. */
  #last: Promise<unknown> = Promise.resolve();

  constructor(file: string) {
    this.file = path.resolve(file);
    this.#lockFile = `${this.file}.lock`;
  }

  async init(): Promise<void> {
    if (this.#state) return;
    await this.#lock();
    try {
      this.#state = await this.#read();
    } catch (err) {
      await this.close();
      throw err;
    }
  }

  async #lock(): Promise<void> {
    if (WRITING.has(this.file)) {
      throw new PatientKeyStoreError(`the patient key file ${this.file} is written by another store in this process`);
    }
    await mkdir(path.dirname(this.file), { recursive: true, mode: 0o700 });
    for (let attempt = 0; ; attempt++) {
      try {
        await writeFile(this.#lockFile, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        const holder = Number.parseInt(await readFile(this.#lockFile, 'utf8').catch(() => ''), 10);
        if (attempt > 0 || (Number.isInteger(holder) && holder > 0 && holder !== process.pid && alive(holder))) {
          throw new PatientKeyStoreError(
            `the patient key file ${this.file} is written by ${attempt > 0 ? 'another process' : `process ${holder}`}: ` +
              'one process owns it (processes that share keys use the PostgreSQL store)',
          );
        }
        // Left by a writer that is gone: taken over.
        await unlink(this.#lockFile).catch(() => undefined);
      }
    }
    this.#locked = true;
    WRITING.add(this.file);
  }

  async #read(): Promise<FileState> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return empty();
      throw err;
    }
    let state: FileState;
    try {
      state = JSON.parse(text) as FileState;
    } catch {
      throw new PatientKeyStoreError(`the patient key file ${this.file} is not JSON`);
    }
    if (state?.version !== 1 || typeof state.keys !== 'object' || typeof state.erased !== 'object') {
      throw new PatientKeyStoreError(`the patient key file ${this.file} is not a key store of version 1`);
    }
    state.settings ??= {};
    return state;
  }

  get #s(): FileState {
    if (!this.#state) throw new PatientKeyStoreError('the patient key store is not open (init)');
    return this.#state;
  }

  /** Applies `change` to a copy, writes the copy durably, then makes it the state; one change at a time. */
  #change<T>(change: (draft: FileState) => T): Promise<T> {
    const next = this.#last
      .catch(() => undefined)
      .then(async () => {
        const draft = structuredClone(this.#s);
        const result = change(draft);
        await this.#write(draft);
        this.#state = draft;
        return result;
      });
    this.#last = next;
    return next;
  }

  async #write(state: FileState): Promise<void> {
    const tmp = `${this.file}.${process.pid}.tmp`;
    const handle = await open(tmp, 'w', 0o600);
    try {
      await handle.writeFile(`${JSON.stringify(state)}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, this.file);
    const dir = await open(path.dirname(this.file), 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  }

  setting(name: string): Promise<string | undefined> {
    return Promise.resolve(this.#s.settings[name]);
  }

  settleSetting(name: string, value: string): Promise<string> {
    const held = this.#s.settings[name];
    if (held !== undefined) return Promise.resolve(held);
    return this.#change((draft) => (draft.settings[name] ??= value));
  }

  get(patientRef: PatientRef): Promise<WrappedKey | undefined> {
    const k = this.#s.keys[patientRef];
    return Promise.resolve(k ? toWrapped(patientRef, k) : undefined);
  }

  insert(key: WrappedKey): Promise<WrappedKey> {
    return this.#change((draft) => {
      const held = draft.keys[key.patientRef];
      if (held) return toWrapped(key.patientRef, held);
      draft.keys[key.patientRef] = {
        dekId: key.dekId,
        wrapKeyId: key.wrapKeyId,
        wrapped: key.wrapped.toString('base64'),
        createdAt: key.createdAt,
      };
      return key;
    });
  }

  erased(dekId: string): Promise<ErasedKey | undefined> {
    const e = this.#s.erased[dekId];
    return Promise.resolve(e ? { ...e, dekId } : undefined);
  }

  destroy(e: ErasedKey): Promise<boolean> {
    return this.#change((draft) => {
      const held = draft.keys[e.patientRef];
      const found = held?.dekId === e.dekId;
      if (found) delete draft.keys[e.patientRef];
      draft.erased[e.dekId] ??= { patientRef: e.patientRef, erasureId: e.erasureId, erasedAt: e.erasedAt };
      return found;
    });
  }

  wrappedByOther(wrapKeyId: string, limit: number, after?: string): Promise<WrappedKey[]> {
    const out = Object.entries(this.#s.keys)
      .filter(([ref, k]) => k.wrapKeyId !== wrapKeyId && (after === undefined || k.dekId > after) && isPatientRef(ref))
      .map(([ref, k]) => toWrapped(ref as PatientRef, k))
      .sort((a, b) => (a.dekId < b.dekId ? -1 : 1));
    return Promise.resolve(out.slice(0, limit));
  }

  rewrap(dekId: string, from: string, to: { wrapKeyId: string; wrapped: Buffer }): Promise<boolean> {
    return this.#change((draft) => {
      const entry = Object.values(draft.keys).find((k) => k.dekId === dekId);
      if (!entry || entry.wrapKeyId !== from) return false;
      entry.wrapKeyId = to.wrapKeyId;
      entry.wrapped = to.wrapped.toString('base64');
      return true;
    });
  }

  counts(): Promise<{ keys: number; erased: number }> {
    return Promise.resolve({ keys: Object.keys(this.#s.keys).length, erased: Object.keys(this.#s.erased).length });
  }

  async close(): Promise<void> {
    await this.#last.catch(() => undefined);
    this.#state = undefined;
    if (this.#locked) {
      this.#locked = false;
      WRITING.delete(this.file);
      await unlink(this.#lockFile).catch(() => undefined);
    }
  }
}

function toWrapped(patientRef: PatientRef, k: FileKey): WrappedKey {
  return {
    patientRef,
    dekId: k.dekId,
    wrapKeyId: k.wrapKeyId,
    wrapped: Buffer.from(k.wrapped, 'base64'),
    createdAt: k.createdAt,
  };
}
