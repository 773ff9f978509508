// The local patient key store: one JSON file (mode 0600) that one process writes. Each change writes the whole file
// anew beside it, syncs it, renames it over the old one and syncs the folder, so a crash leaves the old file or the new
// one, never half of either; the change counts only once that is done. A second writer, in this process or another, is
// refused naming the file (its lock, `<file>.lock`, holds the writer's pid). The file is small: a key is about 150
// bytes, and a deployment with many patients uses the PostgreSQL store.
//
// Journeys' bindings to their patients are many (one per journey) and never change: they are appended, one JSON line
// each, to `<file>.journeys` (synced before the bind resolves), not rewritten with the keys.
//
// Other processes of the same host (the worker beside the API) open the file `readOnly`: no lock, no change; a key,
// tombstone or binding they do not have makes them read what the writer added since.
import { mkdir, open, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { GroupCommit } from '../group-commit';
import { isPatientRef, type PatientRef } from './envelope';
import {
  PatientKeyStoreError,
  type BindResult,
  type ErasedKey,
  type ErasureRequest,
  type JourneyBinding,
  type PatientKeyStore,
  type WrappedKey,
} from './types';

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
  /** Erasure requests by id (absent in files of earlier versions). */
  requests?: Record<string, ErasureRequest>;
}

const empty = (): FileState => ({ version: 1, settings: {}, keys: {}, erased: {}, requests: {} });

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
  readonly readOnly: boolean;
  readonly #lockFile: string;
  readonly #journeysFile: string;
  #state: FileState | undefined;
  /** The key file's modification time and size when it was read (a reader reads it again once they change). */
  #version = '';
  #locked = false;
  /** Changes one at a time: each writes the whole file. */
  #last: Promise<unknown> = Promise.resolve();
  /**
   * New keys that arrive while the file is being written share the next write: starts for many new patients at once
   * (a clinic's batch) rewrite the file once, not once each.
   */
  readonly #inserts = new GroupCommit<{ key: WrappedKey; held?: WrappedKey }>((batch) =>
    this.#change((draft) => {
      for (const item of batch) {
        const { key } = item;
        const held = draft.keys[key.patientRef];
        if (held) {
          item.held = toWrapped(key.patientRef, held);
          continue;
        }
        draft.keys[key.patientRef] = {
          dekId: key.dekId,
          wrapKeyId: key.wrapKeyId,
          wrapped: key.wrapped.toString('base64'),
          createdAt: key.createdAt,
        };
      }
    }),
  );
  /** The bindings read so far, and how far into the journal. */
  readonly #bindings = new Map<string, JourneyBinding>();
  #journalOffset = 0;
  #journalTail = '';
  /** Starts under way (the writer's own: one process writes the file), until when each may reach Temporal. */
  readonly #starting = new Map<string, string>();
  /**
   * Who carries out each pending erasure request, until when (ms). Kept here, not in the file: one process writes it,
   * so a holder is one of this process's runners, and a process that stopped holds nothing.
   */
  readonly #claims = new Map<string, { holder: string; until: number }>();
  /** A reader's reads, in turn (#readAfterCall), and the one of each kind waiting to begin. */
  #reads: Promise<unknown> = Promise.resolve();
  readonly #waiting = new Map<'keys' | 'journal', Promise<void>>();

  /** How many times this store has written the key file (the whole file each time). */
  writes = 0;

  constructor(file: string, o: { readOnly?: boolean } = {}) {
    this.file = path.resolve(file);
    this.readOnly = o.readOnly ?? false;
    this.#lockFile = `${this.file}.lock`;
    this.#journeysFile = `${this.file}.journeys`;
  }

  async init(): Promise<void> {
    if (this.#state) return;
    if (!this.readOnly) await this.#lock();
    try {
      this.#state = await this.#read();
      await this.#readJournal();
    } catch (err) {
      await this.close();
      throw err;
    }
  }

  /** A reader: the key file read again when the writer has changed it. */
  #refresh(): Promise<void> {
    if (!this.readOnly || !this.#state) return Promise.resolve();
    return this.#readAfterCall('keys', async () => {
      const version = await this.#stat();
      if (version !== this.#version) this.#state = await this.#read();
    });
  }

  /** A reader: the bindings the writer appended since the last read. */
  #refreshJournal(): Promise<void> {
    return this.#readAfterCall('journal', () => this.#readJournal());
  }

  /**
   * A reader's reads of the writer's files, one at a time, each begun after the call that asked for it (calls that
   * come while one waits to begin share it). Two reads at once could leave the older content of the key file in place
   * under the newer version, so that a key the writer made stays unseen, or read the same bindings twice and skip
   * the ones after them.
   */
  #readAfterCall(what: 'keys' | 'journal', read: () => Promise<void>): Promise<void> {
    const waiting = this.#waiting.get(what);
    if (waiting) return waiting;
    const next = this.#reads
      .catch(() => undefined)
      .then(() => {
        this.#waiting.delete(what);
        return read();
      });
    this.#waiting.set(what, next);
    this.#reads = next;
    return next;
  }

  async #stat(): Promise<string> {
    const st = await stat(this.file).catch(() => undefined);
    return st ? `${st.mtimeMs}:${st.size}:${st.ino}` : '';
  }

  /** Reads the bindings appended since the last read (a line cut short by a crash, or still being written, waits). */
  async #readJournal(): Promise<void> {
    let handle;
    try {
      handle = await open(this.#journeysFile, 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    try {
      const { size } = await handle.stat();
      if (size <= this.#journalOffset) return;
      const buf = Buffer.alloc(size - this.#journalOffset);
      const { bytesRead } = await handle.read(buf, 0, buf.length, this.#journalOffset);
      this.#journalOffset += bytesRead;
      const lines = (this.#journalTail + buf.subarray(0, bytesRead).toString('utf8')).split('\n');
      this.#journalTail = lines.pop() ?? '';
      for (const line of lines) {
        if (!line.trim()) continue;
        let r: { w?: unknown; p?: unknown; k?: unknown; at?: unknown };
        try {
          r = JSON.parse(line) as typeof r;
        } catch {
          throw new PatientKeyStoreError(`the journey bindings file ${this.#journeysFile} has a line that is not JSON`);
        }
        if (
          typeof r.w !== 'string' ||
          !isPatientRef(r.p) ||
          typeof r.at !== 'string' ||
          (r.k !== undefined && typeof r.k !== 'string')
        ) {
          throw new PatientKeyStoreError(`the journey bindings file ${this.#journeysFile} has a malformed line`);
        }
        // The first binding of a workflow id holds.
        if (!this.#bindings.has(r.w)) {
          this.#bindings.set(r.w, { workflowId: r.w, patientRef: r.p, boundAt: r.at, ...(r.k ? { dekId: r.k } : {}) });
        }
      }
    } finally {
      await handle.close();
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
    this.#version = await this.#stat();
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
    if (this.readOnly) {
      return Promise.reject(
        new PatientKeyStoreError(`the patient key file ${this.file} is open for reading here: its writer changes it`),
      );
    }
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
    this.writes += 1;
    const dir = await open(path.dirname(this.file), 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  }

  async setting(name: string): Promise<string | undefined> {
    if (this.#s.settings[name] === undefined) await this.#refresh();
    return this.#s.settings[name];
  }

  settleSetting(name: string, value: string): Promise<string> {
    const held = this.#s.settings[name];
    if (held !== undefined) return Promise.resolve(held);
    return this.#change((draft) => (draft.settings[name] ??= value));
  }

  async get(patientRef: PatientRef): Promise<WrappedKey | undefined> {
    // A reader looks whether the writer changed the file (a key made, or destroyed) on every read: reads come only
    // when a process's cache has no key for the patient, at most once per patient per cache lifetime.
    await this.#refresh();
    const k = this.#s.keys[patientRef];
    return k ? toWrapped(patientRef, k) : undefined;
  }

  async insert(key: WrappedKey): Promise<WrappedKey> {
    const item: { key: WrappedKey; held?: WrappedKey } = { key };
    await this.#inserts.add(item);
    return item.held ?? key;
  }

  async erased(dekId: string): Promise<ErasedKey | undefined> {
    if (!this.#s.erased[dekId]) await this.#refresh();
    const e = this.#s.erased[dekId];
    return e ? { ...e, dekId } : undefined;
  }

  /**
   * Bindings go through the same queue as every change of the key file (an erasure request among them), so a binding
   * and a request of the same patient never overlap: the fence holds.
   */
  bind(b: JourneyBinding & { dekId: string }): Promise<BindResult> {
    if (this.readOnly) return this.#change<BindResult>(() => ({ state: 'stale-key' })); // refused, naming the file
    const next = this.#last
      .catch(() => undefined)
      .then(async (): Promise<BindResult> => {
        const held = this.#bindings.get(b.workflowId);
        if (held) return { state: 'bound', binding: this.#resolved(held) };
        const pending = Object.values(this.#s.requests ?? {}).find(
          (r) => r.patientRef === b.patientRef && r.status === 'pending',
        );
        if (pending) return { state: 'fenced', erasureId: pending.erasureId };
        if (this.#s.keys[b.patientRef]?.dekId !== b.dekId) return { state: 'stale-key' };
        await mkdir(path.dirname(this.#journeysFile), { recursive: true, mode: 0o700 });
        const handle = await open(this.#journeysFile, 'a', 0o600);
        try {
          const line = `${JSON.stringify({ w: b.workflowId, p: b.patientRef, k: b.dekId, at: b.boundAt })}\n`;
          await handle.appendFile(line);
          await handle.datasync();
          this.#journalOffset += Buffer.byteLength(line);
        } finally {
          await handle.close();
        }
        const { startingUntil, ...binding } = b;
        this.#bindings.set(b.workflowId, binding);
        if (startingUntil) this.#starting.set(b.workflowId, startingUntil);
        return { state: 'bound', binding: { ...b } };
      });
    this.#last = next;
    return next;
  }

  settleStart(workflowId: string): Promise<void> {
    this.#starting.delete(workflowId);
    return Promise.resolve();
  }

  /** A binding with its data key (one from before bindings named it: the key the patient had then). */
  #resolved(b: JourneyBinding): JourneyBinding {
    const startingUntil = this.#starting.get(b.workflowId);
    const out = { ...b, ...(startingUntil ? { startingUntil } : {}) };
    if (b.dekId) return out;
    const destroyedAfter = Object.entries(this.#s.erased)
      .filter(([, e]) => e.patientRef === b.patientRef && e.erasedAt > b.boundAt)
      .sort(([, x], [, y]) => (x.erasedAt < y.erasedAt ? -1 : 1))[0]?.[0];
    const dekId = destroyedAfter ?? this.#s.keys[b.patientRef]?.dekId;
    return dekId ? { ...out, dekId } : out;
  }

  async bindingOf(workflowId: string): Promise<JourneyBinding | undefined> {
    void this.#s;
    if (!this.#bindings.has(workflowId) && this.readOnly) await this.#refreshJournal();
    const b = this.#bindings.get(workflowId);
    if (!b) return undefined;
    if (!b.dekId) await this.#refresh();
    return this.#resolved(b);
  }

  async journeysOf(patientRef: PatientRef): Promise<JourneyBinding[]> {
    void this.#s;
    if (this.readOnly) await this.#refreshJournal();
    await this.#refresh();
    return [...this.#bindings.values()].filter((b) => b.patientRef === patientRef).map((b) => this.#resolved(b));
  }

  async boundAmong(workflowIds: readonly string[]): Promise<Set<string>> {
    void this.#s;
    if (this.readOnly) await this.#refreshJournal();
    return new Set(workflowIds.filter((w) => this.#bindings.has(w)));
  }

  async erasedAmong(dekIds: readonly string[]): Promise<ErasedKey[]> {
    await this.#refresh();
    const erased = this.#s.erased;
    return dekIds.filter((k) => erased[k]).map((k) => ({ ...erased[k]!, dekId: k }));
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

  addErasureRequest(r: ErasureRequest): Promise<ErasureRequest> {
    const held = this.#heldRequest(this.#s, r);
    if (held) return Promise.resolve(structuredClone(held));
    return this.#change((draft) => {
      const again = this.#heldRequest(draft, r);
      if (again) return structuredClone(again);
      (draft.requests ??= {})[r.erasureId] = structuredClone(r);
      return structuredClone(r);
    });
  }

  #heldRequest(state: FileState, r: ErasureRequest): ErasureRequest | undefined {
    return Object.values(state.requests ?? {}).find((x) => x.clinicId === r.clinicId && x.requestKey === r.requestKey);
  }

  async erasureRequest(erasureId: string): Promise<ErasureRequest | undefined> {
    if (!this.#s.requests?.[erasureId]) await this.#refresh();
    const r = this.#s.requests?.[erasureId];
    return r ? structuredClone(r) : undefined;
  }

  async pendingErasureRequests(): Promise<ErasureRequest[]> {
    await this.#refresh();
    return Object.values(this.#s.requests ?? {})
      .filter((r) => r.status === 'pending')
      .sort((a, b) => (a.requestedAt < b.requestedAt ? -1 : a.requestedAt > b.requestedAt ? 1 : 0))
      .map((r) => structuredClone(r));
  }

  claimErasureRequest(erasureId: string, holder: string, leaseMs: number): Promise<boolean> {
    if (this.readOnly) return this.#change(() => false); // refused, naming the file
    const r = this.#s.requests?.[erasureId];
    if (r?.status !== 'pending') return Promise.resolve(false);
    const now = Date.now();
    const held = this.#claims.get(erasureId);
    if (held && held.holder !== holder && held.until > now) return Promise.resolve(false);
    this.#claims.set(erasureId, { holder, until: now + leaseMs });
    return Promise.resolve(true);
  }

  releaseErasureRequest(erasureId: string, holder: string): Promise<void> {
    if (this.#claims.get(erasureId)?.holder === holder) this.#claims.delete(erasureId);
    return Promise.resolve();
  }

  completeErasureRequest(erasureId: string, journeys: string[], completedAt: string): Promise<void> {
    this.#claims.delete(erasureId);
    return this.#change((draft) => {
      const r = draft.requests?.[erasureId];
      if (!r || r.status === 'done') return;
      r.status = 'done';
      r.journeys = [...journeys];
      r.completedAt = completedAt;
    });
  }

  counts(): Promise<{ keys: number; erased: number }> {
    return Promise.resolve({ keys: Object.keys(this.#s.keys).length, erased: Object.keys(this.#s.erased).length });
  }

  async close(): Promise<void> {
    await this.#last.catch(() => undefined);
    this.#state = undefined;
    this.#bindings.clear();
    this.#journalOffset = 0;
    this.#journalTail = '';
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
