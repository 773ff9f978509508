// The local patient key store: one JSON file (mode 0600) that one process writes. Each change writes the whole file
// anew beside it, syncs it, renames it over the old one and syncs the folder, so a crash leaves the old file or the new
// one, never half of either; the change counts only once that is done. A second writer, in this process or another, is
// refused naming the file (its lock, `<file>.lock`, holds the writer's pid). The file is small: a key is about 150
// bytes, and a deployment with many patients uses the PostgreSQL store.
//
// New keys are appended, one JSON line each, to `<file>.keys` (synced before the insert resolves) instead of rewriting
// the file: a new patient costs one line, not a copy of every key (the file grows with the patients: 2 MB at 10,000,
// each rewrite then about 14 ms of the API's event loop). The key file holds them all again at the next change that
// rewrites it (a tombstone, a rewrap, a setting, an erasure request), at the writer's start and at its stop, and the
// journal starts empty again. A line is read only for a patient without a key and a key id without a tombstone, so a
// journal the key file already holds (a crash between the two) changes nothing.
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
import { LineJournal } from './line-journal';
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
  /** New keys since the key file was last written. */
  readonly #keyJournal: LineJournal;
  /** Journeys' bindings. */
  readonly #journeys: LineJournal;
  #state: FileState | undefined;
  /** The key file's modification time and size when it was read (a reader reads it again once they change). */
  #version = '';
  #locked = false;
  /** Changes, new keys and binds one at a time, in the order they came. */
  #last: Promise<unknown> = Promise.resolve();
  /**
   * New keys that arrive while the journal is being appended to share the next append: starts for many new patients
   * at once (a clinic's batch) cost a few syncs, not one each.
   */
  readonly #inserts = new GroupCommit<{ key: WrappedKey; held?: WrappedKey }>((batch) => this.#insertBatch(batch));
  /** Binds that arrive while the journal is being appended to share the next append. */
  readonly #binds = new GroupCommit<{ bind: JourneyBinding & { dekId: string }; result?: BindResult }>((batch) =>
    this.#bindBatch(batch),
  );
  /** The bindings read so far. */
  readonly #bindings = new Map<string, JourneyBinding>();
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
  /** How many times this store has appended new keys to their journal and synced it. */
  keyJournalSyncs = 0;
  /** How many times this store has appended bindings to their journal and synced it. */
  journalSyncs = 0;

  constructor(file: string, o: { readOnly?: boolean } = {}) {
    this.file = path.resolve(file);
    this.readOnly = o.readOnly ?? false;
    this.#lockFile = `${this.file}.lock`;
    this.#keyJournal = new LineJournal(`${this.file}.keys`, 'the new patient keys file');
    this.#journeys = new LineJournal(`${this.file}.journeys`, 'the journey bindings file');
  }

  async init(): Promise<void> {
    if (this.#state) return;
    if (!this.readOnly) await this.#lock();
    try {
      this.#state = await this.#read();
      this.#applyKeyLines(this.#state, await this.#keyJournal.readNew());
      await this.#readJournal();
      if (!this.readOnly) {
        await this.#journeys.dropTornTail();
        // A torn last line alone is not counted in the journal's bytes: cut off here, or the next key is glued to it.
        await this.#keyJournal.dropTornTail();
        // The keys a stop or a crash left in the journal go into the key file, and the journal starts empty.
        await this.#compact();
      }
    } catch (err) {
      await this.close();
      throw err;
    }
  }

  /**
   * A reader: the key file read again when the writer has changed it (and the journal of new keys from its start), and
   * the new keys appended since. Once more if the key file changed meanwhile: the writer writes the key file, then
   * empties the journal, and a key read neither in the old file nor in the emptied journal would be missed.
   */
  #refresh(): Promise<void> {
    if (!this.readOnly || !this.#state) return Promise.resolve();
    return this.#readAfterCall('keys', async () => {
      for (;;) {
        const version = await this.#stat();
        if (version !== this.#version) {
          this.#state = await this.#read();
          this.#keyJournal.reset();
        }
        this.#applyKeyLines(this.#s, await this.#keyJournal.readNew());
        if ((await this.#stat()) === this.#version) return;
      }
    });
  }

  /** A reader: the bindings the writer appended since the last read. */
  #refreshJournal(): Promise<void> {
    return this.#readAfterCall('journal', () => this.#readJournal());
  }

  /** New keys of the journal: each only for a patient without a key, and a key id that was never destroyed. */
  #applyKeyLines(state: FileState, lines: Record<string, unknown>[]): void {
    for (const r of lines) {
      if (
        !isPatientRef(r.p) ||
        typeof r.k !== 'string' ||
        typeof r.w !== 'string' ||
        typeof r.x !== 'string' ||
        typeof r.at !== 'string'
      ) {
        throw new PatientKeyStoreError(`the new patient keys file ${this.#keyJournal.file} has a malformed line`);
      }
      if (state.keys[r.p] || state.erased[r.k]) continue;
      state.keys[r.p] = { dekId: r.k, wrapKeyId: r.w, wrapped: r.x, createdAt: r.at };
    }
  }

  /** The writer: the key file written with every key, when the journal holds any, and the journal emptied. */
  async #compact(): Promise<void> {
    if (this.#keyJournal.bytes === 0) return;
    await this.#write(this.#s);
    await this.#keysTakenIn();
  }

  /** The key file just written holds every key: the journal of new keys starts empty again. */
  async #keysTakenIn(): Promise<void> {
    if (this.#keyJournal.bytes > 0) await this.#keyJournal.replaceWithEmpty();
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
    for (const r of await this.#journeys.readNew()) {
      if (
        typeof r.w !== 'string' ||
        !isPatientRef(r.p) ||
        typeof r.at !== 'string' ||
        (r.k !== undefined && typeof r.k !== 'string')
      ) {
        throw new PatientKeyStoreError(`the journey bindings file ${this.#journeys.file} has a malformed line`);
      }
      // The first binding of a workflow id holds.
      if (!this.#bindings.has(r.w)) {
        this.#bindings.set(r.w, { workflowId: r.w, patientRef: r.p, boundAt: r.at, ...(r.k ? { dekId: r.k } : {}) });
      }
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

  /** Runs `task` once every change and bind before it is done: one at a time, in the order they came. */
  #inTurn<T>(task: () => Promise<T>): Promise<T> {
    const next = this.#last.catch(() => undefined).then(task);
    this.#last = next;
    return next;
  }

  /** Applies `change` to a copy, writes the copy durably, then makes it the state; one change at a time. */
  #change<T>(change: (draft: FileState) => T): Promise<T> {
    if (this.readOnly) {
      return Promise.reject(
        new PatientKeyStoreError(`the patient key file ${this.file} is open for reading here: its writer changes it`),
      );
    }
    return this.#inTurn(async () => {
      const draft = structuredClone(this.#s);
      const result = change(draft);
      await this.#write(draft);
      this.#state = draft;
      await this.#keysTakenIn();
      return result;
    });
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
    if (this.readOnly) return this.#change(() => key); // refused, naming the file
    const item: { key: WrappedKey; held?: WrappedKey } = { key };
    await this.#inserts.add(item);
    return item.held ?? key;
  }

  /** Appends the batch's keys of patients without one (the first of a patient in the batch holds) in one sync. */
  #insertBatch(batch: { key: WrappedKey; held?: WrappedKey }[]): Promise<void> {
    return this.#inTurn(async () => {
      const added = new Map<string, FileKey>();
      for (const item of batch) {
        const { key } = item;
        const held = this.#s.keys[key.patientRef] ?? added.get(key.patientRef);
        if (held) {
          item.held = toWrapped(key.patientRef, held);
          continue;
        }
        added.set(key.patientRef, {
          dekId: key.dekId,
          wrapKeyId: key.wrapKeyId,
          wrapped: key.wrapped.toString('base64'),
          createdAt: key.createdAt,
        });
      }
      if (added.size === 0) return;
      await this.#keyJournal.append(
        [...added].map(([p, k]) => ({ p, k: k.dekId, w: k.wrapKeyId, x: k.wrapped, at: k.createdAt })),
      );
      this.keyJournalSyncs += 1;
      for (const [p, k] of added) this.#s.keys[p] = k;
    });
  }

  async erased(dekId: string): Promise<ErasedKey | undefined> {
    if (!this.#s.erased[dekId]) await this.#refresh();
    const e = this.#s.erased[dekId];
    return e ? { ...e, dekId } : undefined;
  }

  /**
   * Bindings go through the same queue as every change of the key file (an erasure request among them), so a binding
   * and a request of the same patient never overlap: the fence holds. Binds that arrive while the journal is being
   * appended to share the next append and its sync: a clinic's batch of starts costs a few syncs, not one each.
   */
  async bind(b: JourneyBinding & { dekId: string }): Promise<BindResult> {
    if (this.readOnly) return this.#change<BindResult>(() => ({ state: 'stale-key' })); // refused, naming the file
    const item: { bind: JourneyBinding & { dekId: string }; result?: BindResult } = { bind: b };
    await this.#binds.add(item);
    return item.result!;
  }

  /** Decides each bind of a batch in turn (a later one of the same journey finds the earlier), then appends the new. */
  #bindBatch(batch: { bind: JourneyBinding & { dekId: string }; result?: BindResult }[]): Promise<void> {
    return this.#inTurn(async () => {
      const added = new Map<string, JourneyBinding & { dekId: string }>();
      for (const item of batch) {
        const b = item.bind;
        const held = this.#bindings.get(b.workflowId);
        const earlier = added.get(b.workflowId);
        const pending = Object.values(this.#s.requests ?? {}).find(
          (r) => r.patientRef === b.patientRef && r.status === 'pending',
        );
        if (held) item.result = { state: 'bound', binding: this.#resolved(held) };
        else if (earlier) item.result = { state: 'bound', binding: { ...earlier } };
        else if (pending) item.result = { state: 'fenced', erasureId: pending.erasureId };
        else if (this.#s.keys[b.patientRef]?.dekId !== b.dekId) item.result = { state: 'stale-key' };
        else {
          added.set(b.workflowId, b);
          item.result = { state: 'bound', binding: { ...b } };
        }
      }
      if (added.size === 0) return;
      await this.#journeys.append(
        [...added.values()].map((b) => ({ w: b.workflowId, p: b.patientRef, k: b.dekId, at: b.boundAt })),
      );
      this.journalSyncs += 1;
      for (const b of added.values()) {
        const { startingUntil, ...binding } = b;
        this.#bindings.set(b.workflowId, binding);
        if (startingUntil) this.#starting.set(b.workflowId, startingUntil);
      }
    });
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
    // Keys and binds asked for before the close are written first (a group commit hands its batch over in turn).
    await Promise.all([this.#inserts.idle(), this.#binds.idle()]);
    await this.#last.catch(() => undefined);
    // The key file left holding every key, and the journal empty: what an earlier release reads whole.
    if (this.#locked && this.#state) await this.#inTurn(() => this.#compact()).catch(() => undefined);
    this.#state = undefined;
    this.#bindings.clear();
    this.#keyJournal.reset();
    this.#journeys.reset();
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
