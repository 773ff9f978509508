// The file inbox, the single-host default (`npm start`): a group-committed log of segment files (segment-log.ts) that
// one process owns, its waiting entries held in memory (docs/design-notes.md#the-file-inbox).
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { writeFileDurably } from '../attachments/files';
import { type RecordSealer, type SealedJson } from '../codec/at-rest';
import type { CallbackSignal } from '../contract/definitions';
import { GroupCommit } from '../group-commit';
import { readFrames, SegmentLog, SegmentLogClosedError, type Segment } from './segment-log';
import {
  DEAD_LETTER_ID,
  newDeadLetterId,
  encodeSignal,
  InboxUnavailableError,
  type CallbackInbox,
  type DeadLetter,
  type DeadLetterInput,
  type DeadLetterPage,
  type DeadLetterSettlement,
  type DeadLetterStore,
  type InboxClaim,
  type InboxEntry,
  type InboxStats,
  type AppendOptions,
} from './types';
import { eachYielding } from './yielding';

/** Batch files of the previous version (one sealed file per group commit): imported into the log at start. */
const BATCH_FILE = /^b_[0-9]{15}_[0-9]{6}\.json$/;
const JSON_FILE = /^[A-Za-z0-9_-]+\.json$/;
const ENTRY_ID = /^e_([0-9]{15})$/;

/**
 * A log record: entries appended (ids in the clear, callbacks sealed under the payload keys), entries appended that
 * were each sealed for their patient already (kept as they came: patient-sealing.ts), or entries settled (ids only).
 */
type LogRecord =
  | { t: 'a'; ids: string[]; sealed: SealedJson }
  | { t: 'p'; ids: string[]; entries: BatchContent['entries'] }
  | { t: 's'; ids: string[] };
interface BatchContent {
  entries: { journeyId: string; signal: CallbackSignal }[];
}
interface BatchFile {
  version: 2;
  sealed: SealedJson;
}
/** A spool entry of earlier versions (one plain file per callback), imported at start. */
interface LegacySpooled {
  version: 1;
  journeyId: string;
  signal: CallbackSignal;
}

type Item =
  | { kind: 'append'; journeyId: string; receivedAt: string; json: string; sealed: boolean }
  | { kind: 'carry'; entries: Held[] }
  | { kind: 'settle'; ids: string[] };

/**
 * A waiting entry as the process holds it: the signal as its JSON text, parsed when it is claimed. One string, not
 * an object graph, so thousands waiting in a surge keep GC pauses short (docs/design-notes.md#the-file-inbox).
 */
interface Held {
  id: string;
  journeyId: string;
  receivedAt: string;
  json: string;
  /** Sealed for its patient already (AppendOptions.sealed): written as it is, not sealed again. */
  sealed: boolean;
}

function held(id: string, journeyId: string, signal: CallbackSignal, sealed: boolean): Held {
  return { id, journeyId, receivedAt: signal.receivedAt, json: JSON.stringify(signal), sealed };
}

/** The JSON text of the entries of a record, from their own JSON (nothing parsed again). */
function entriesJson(entries: readonly Held[]): string {
  return `[${entries.map((e) => `{"journeyId":${JSON.stringify(e.journeyId)},"signal":${e.json}}`).join(',')}]`;
}

/** A held entry as the forwarder gets it. */
function claimed(entry: Held): InboxEntry {
  return { id: entry.id, journeyId: entry.journeyId, signal: JSON.parse(entry.json) as CallbackSignal };
}

async function removeTempFiles(dir: string): Promise<void> {
  // Temp files of writes a crash interrupted: those callbacks were never acknowledged.
  for (const name of await readdir(dir)) {
    if (name.startsWith('.tmp-')) await rm(path.join(dir, name), { force: true });
  }
}

function unavailable(err: unknown): InboxUnavailableError {
  if (err instanceof SegmentLogClosedError) return new InboxUnavailableError('the inbox is closed', { cause: err });
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return new InboxUnavailableError(`the inbox folder cannot be written${code ? ` (${code})` : ''}`, { cause: err });
}

const message = (err: unknown) => (err instanceof Error ? err.message : 'unknown error');

/**
 * How many callbacks wait in an inbox folder, read from its log without opening any record (ids are in the clear):
 * appended and never settled, plus those of batch files of the previous version. For tools that look at a folder a
 * running process owns (the fault suite); the process itself keeps the count in memory.
 */
export function waitingInFolder(dir: string): number {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  const appended = new Set<string>();
  const settled = new Set<string>();
  let legacy = 0;
  for (const name of names.sort()) {
    if (BATCH_FILE.test(name)) legacy += 1;
    if (!/^seg_[0-9]{15}\.log$/.test(name)) continue;
    let bytes: Buffer;
    try {
      bytes = readFileSync(path.join(dir, name));
    } catch {
      continue; // deleted meanwhile: everything in it was settled
    }
    for (const r of readFrames(bytes).records) {
      try {
        const record = JSON.parse(r.payload.toString('utf8')) as LogRecord;
        for (const id of record.ids) (record.t === 's' ? settled : appended).add(id);
      } catch {
        // not a record of this version
      }
    }
  }
  let waiting = legacy;
  for (const id of appended) if (!settled.has(id)) waiting += 1;
  return waiting;
}

export interface FileInboxOptions {
  dir: string;
  deadLetterDir: string;
  sealer: RecordSealer;
  /** The spool folder of earlier versions: its entries are imported into the inbox at start. */
  legacySpoolDir?: string;
  /** Largest group-commit batch. */
  maxBatch?: number;
  /** Size of a log segment (preallocated): 16 MiB unless set. */
  segmentBytes?: number;
  /** Segments kept before the live entries of the oldest are carried forward: 8 unless set. */
  maxSegments?: number;
  /** Each group commit: callbacks it stored, and the time of its durable write (seconds). */
  onBatch?: (size: number, seconds: number) => void;
  /**
   * How long a settle may wait for an append's write to ride with before it gets a write of its own: 100 ms unless
   * set; 0 writes every settle at once, as before (docs/design-notes.md#settles-ride-with-appends).
   */
  settleDelayMs?: number;
  now?: () => Date;
}

export class FileInbox implements CallbackInbox {
  readonly kind = 'files' as const;
  readonly deadLetters: FileDeadLetters;
  readonly #o: FileInboxOptions;
  readonly #log: SegmentLog;
  /** Waiting entries in arrival order (a Map iterates in insertion order), each with the segment holding it. */
  readonly #entries = new Map<string, { entry: Held; segment: Segment }>();
  readonly #claimed = new Set<string>();
  readonly #listeners = new Set<() => void>();
  readonly #commit: GroupCommit<Item>;
  #nextId = 1;
  /** Deletions and carries of old segments, one at a time, after settles. */
  #maintenance: Promise<void> = Promise.resolve();
  /**
   * Settled ids (gone from #entries) whose settle record is not on the log yet: the next write takes them along, or
   * the timer gives them one of their own. Lost in a crash, they are signalled again after the restart, and the
   * journey knows each delivery id it has taken.
   */
  #unwritten: string[] = [];
  #settleTimer: NodeJS.Timeout | undefined;
  /** FileInboxOptions.settleDelayMs: 0 writes each settle at once. */
  readonly #settleDelayMs: number;
  /** When the last write to the log ended (performance.now()). */
  #lastWriteAt = 0;

  constructor(options: FileInboxOptions) {
    this.#o = options;
    this.#settleDelayMs = options.settleDelayMs ?? 100;
    this.deadLetters = new FileDeadLetters(options.deadLetterDir, options.sealer);
    this.#log = new SegmentLog({
      dir: options.dir,
      segmentBytes: Math.max(64 * 1024, options.segmentBytes ?? 16 << 20),
    });
    this.#commit = new GroupCommit((batch) => this.#write(batch), {
      maxBatch: options.maxBatch ?? 1_000,
      // Anything but the log's own write failing (a record too large to seal or join) may be one entry's doing.
      itemFault: (err) => !(err instanceof InboxUnavailableError),
    });
  }

  get dir(): string {
    return this.#o.dir;
  }

  async init(): Promise<void> {
    await mkdir(this.#o.dir, { recursive: true });
    await removeTempFiles(this.#o.dir);
    await this.deadLetters.init();
    const setAside: string[] = [];
    const { carry, damaged } = await this.#replay(setAside);
    // What was read from damaged segments is written anew, and the entries of records that could not be opened
    // (their bytes set aside) are settled, before anything else: the next start finds them as they are now.
    if (carry.length > 0) await this.#commit.add({ kind: 'carry', entries: carry });
    if (setAside.length > 0) await this.#commit.add({ kind: 'settle', ids: setAside });
    for (const segment of damaged) if (segment.live === 0) await this.#log.remove(segment);
    await this.#importBatchFiles();
    if (this.#o.legacySpoolDir) await this.#importLegacySpool(this.#o.legacySpoolDir);
    await this.#compact();
  }

  async append(journeyId: string, signal: CallbackSignal, options?: AppendOptions): Promise<void> {
    // Encoded here, so a callback that cannot be written fails alone and never the group commit it would share.
    const json = encodeSignal(signal);
    const sealed = options?.sealed === true;
    return this.#commit.add({ kind: 'append', journeyId, receivedAt: signal.receivedAt, json, sealed });
  }

  async claim(maxJourneys: number, maxPerJourney: number): Promise<InboxClaim | undefined> {
    const chosen = new Map<string, number>();
    const held: Held[] = [];
    for (const { entry } of this.#entries.values()) {
      const count = chosen.get(entry.journeyId);
      if (count === undefined) {
        if (this.#claimed.has(entry.journeyId) || chosen.size >= maxJourneys) continue;
        chosen.set(entry.journeyId, 1);
        held.push(entry);
      } else if (count < maxPerJourney) {
        chosen.set(entry.journeyId, count + 1);
        held.push(entry);
      }
    }
    if (held.length === 0) return undefined;
    for (const journeyId of chosen.keys()) this.#claimed.add(journeyId);
    // Read a slice at a time: the webhook's acknowledgements are answered between slices (yielding.ts).
    const entries: InboxEntry[] = [];
    try {
      await eachYielding(held, (entry) => {
        entries.push(claimed(entry));
      });
    } catch (err) {
      for (const journeyId of chosen.keys()) this.#claimed.delete(journeyId);
      throw err;
    }
    let settled = false;
    return {
      entries,
      settle: async (done, deadLetters) => {
        if (settled) throw new Error('an inbox claim is settled once');
        settled = true;
        try {
          await this.#settle(done, deadLetters);
        } finally {
          for (const journeyId of chosen.keys()) this.#claimed.delete(journeyId);
        }
      },
    };
  }

  stats(): Promise<InboxStats> {
    const first = this.#entries.values().next();
    return this.deadLetters.count().then((deadLetters) => ({
      depth: this.#entries.size,
      ...(first.done ? {} : { oldestReceivedAt: new Date(first.value.entry.receivedAt) }),
      deadLetters,
    }));
  }

  onAppend(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async close(): Promise<void> {
    if (this.#log.closed) return;
    await this.#maintenance;
    await this.#writeSettles();
    await this.#commit.idle();
    // Settles that come after this are not written (their entries are signalled again at the next start, and each
    // journey knows the delivery ids it has taken): no timer keeps retrying a closed log. The log counts as closed
    // from close's first step, before anything else runs.
    clearTimeout(this.#settleTimer);
    this.#settleTimer = undefined;
    await this.#log.close();
  }

  /** One group commit: the appends as one record (new ids), carries with their ids, settles as one record. */
  async #write(batch: Item[]): Promise<void> {
    const appended: Held[] = [];
    const carried: Held[] = [];
    const settled: string[] = [];
    for (const item of batch) {
      if (item.kind === 'append') {
        const { journeyId, receivedAt, json, sealed } = item;
        appended.push({ id: this.#newId(), journeyId, receivedAt, json, sealed });
      } else if (item.kind === 'carry') carried.push(...item.entries);
      else settled.push(...item.ids);
    }
    const records: Buffer[] = [];
    for (const entries of [carried, appended]) records.push(...this.#appendRecords(entries));
    // Settles waiting for a write ride with this one.
    const riding = this.#unwritten;
    this.#unwritten = [];
    settled.push(...riding);
    if (settled.length > 0) records.push(Buffer.from(JSON.stringify({ t: 's', ids: settled } satisfies LogRecord)));
    let segment: Segment;
    const started = performance.now();
    try {
      segment = await this.#log.write(records);
    } catch (err) {
      this.#unwritten = [...riding, ...this.#unwritten];
      if (this.#unwritten.length > 0) this.#armSettleTimer();
      throw unavailable(err);
    } finally {
      this.#lastWriteAt = performance.now();
    }
    for (const entry of carried) {
      const held = this.#entries.get(entry.id);
      if (!held) continue;
      held.segment.live -= 1;
      held.segment = segment;
      segment.live += 1;
    }
    for (const entry of appended) {
      this.#entries.set(entry.id, { entry, segment });
      segment.live += 1;
    }
    if (appended.length > 0) {
      this.#o.onBatch?.(appended.length, (performance.now() - started) / 1000);
      for (const listener of this.#listeners) listener();
    }
  }

  /**
   * The records of appended entries: those sealed for their patient as they came (`p`, their JSON joined as text, no
   * cipher), the others sealed together under the payload keys (`a`).
   */
  #appendRecords(entries: readonly Held[]): Buffer[] {
    const own: Held[] = [];
    const rest: Held[] = [];
    for (const e of entries) (e.sealed ? own : rest).push(e);
    const records: Buffer[] = [];
    if (own.length > 0) {
      const ids = JSON.stringify(own.map((e) => e.id));
      records.push(Buffer.from(`{"t":"p","ids":${ids},"entries":${entriesJson(own)}}`));
    }
    if (rest.length > 0) {
      const record: LogRecord = {
        t: 'a',
        ids: rest.map((e) => e.id),
        sealed: this.#o.sealer.sealToJson(`{"entries":${entriesJson(rest)}}`, 'callback-inbox'),
      };
      records.push(Buffer.from(JSON.stringify(record)));
    }
    return records;
  }

  #newId(): string {
    return `e_${String(this.#nextId++).padStart(15, '0')}`;
  }

  /**
   * Reads the log: an entry is waiting when it was appended and never settled. Only records with waiting entries
   * are opened. Returns the waiting entries of damaged segments (to be written anew, then the segments deleted);
   * records that cannot be opened are set aside for an operator and their ids pushed to `setAside` (to be settled).
   */
  async #replay(setAside: string[]): Promise<{ carry: Held[]; damaged: Segment[] }> {
    const { records, damaged } = await this.#log.readExisting();
    const parsed: { segment: Segment; offset: number; record: LogRecord }[] = [];
    const settled = new Set<string>();
    for (const r of records) {
      let record: LogRecord;
      try {
        record = JSON.parse(r.payload.toString('utf8')) as LogRecord;
        if (!Array.isArray(record.ids) || (record.t === 'p' && !Array.isArray(record.entries))) {
          throw new Error('its ids or entries are not lists');
        }
      } catch (err) {
        // Passed its checksum yet is not a record: written by something else. Reported, then left behind.
        await this.#deadLetterCorrupt(
          `an inbox record in ${r.segment.name} at ${r.offset} is not one this version writes (${message(err)})`,
        );
        continue;
      }
      parsed.push({ segment: r.segment, offset: r.offset, record });
      if (record.t === 's') for (const id of record.ids) settled.add(id);
      for (const id of record.ids) {
        const m = ENTRY_ID.exec(id);
        if (m) this.#nextId = Math.max(this.#nextId, Number(m[1]) + 1);
      }
    }
    const loaded = new Map<string, { entry: Held; segment: Segment }>();
    for (const { segment, offset, record } of parsed) {
      if (record.t === 's' || record.ids.every((id) => settled.has(id))) continue;
      const content: BatchContent | undefined =
        record.t === 'p'
          ? { entries: record.entries }
          : await this.#openRecord(record, segment, offset, settled, setAside);
      if (!content) continue;
      record.ids.forEach((id, i) => {
        const e = content.entries[i];
        if (!e || settled.has(id)) return;
        // A carried entry is in two segments until the older one is deleted: the later copy is the one kept.
        const previous = loaded.get(id);
        if (previous) previous.segment.live -= 1;
        loaded.set(id, { entry: held(id, e.journeyId, e.signal, record.t === 'p'), segment });
        segment.live += 1;
      });
    }
    // Ids grow in arrival order; a carried entry keeps its place.
    for (const id of [...loaded.keys()].sort()) this.#entries.set(id, loaded.get(id)!);
    const carry: Held[] = [];
    for (const d of damaged) {
      const aside = `${d.segment.name}.${d.offset}.corrupt`;
      await writeFileDurably(path.join(this.#o.dir, aside), d.rest);
      await this.#deadLetterCorrupt(
        `inbox segment ${d.segment.name} is damaged from byte ${d.offset}: what was before it was kept, the rest was copied to ${aside}`,
      );
      for (const held of this.#entries.values()) if (held.segment === d.segment) carry.push(held.entry);
    }
    return { carry, damaged: damaged.map((d) => d.segment) };
  }

  /**
   * The content of a record sealed under the payload keys; undefined when it cannot be opened: then it is set aside
   * as a batch file of the previous layout (once the key is configured again, renaming it without `.corrupt` imports
   * it at the next start), reported, and its waiting ids pushed to `setAside`.
   */
  async #openRecord(
    record: Extract<LogRecord, { t: 'a' }>,
    segment: Segment,
    offset: number,
    settled: ReadonlySet<string>,
    setAside: string[],
  ): Promise<BatchContent | undefined> {
    try {
      return JSON.parse(this.#o.sealer.openJson(record.sealed, 'callback-inbox').toString('utf8')) as BatchContent;
    } catch (err) {
      const aside = `b_${String(segment.seq).padStart(15, '0')}_${String(offset % 1_000_000).padStart(6, '0')}.json.corrupt`;
      const batch: BatchFile = { version: 2, sealed: record.sealed };
      await writeFileDurably(path.join(this.#o.dir, aside), JSON.stringify(batch));
      await this.#deadLetterCorrupt(
        `an inbox record (${record.ids.length} callbacks) in ${segment.name} at byte ${offset} could not be read (${message(err)}); it was copied to ${aside} (rename it without .corrupt to import it again)`,
      );
      setAside.push(...record.ids.filter((id) => !settled.has(id)));
      return undefined;
    }
  }

  async #deadLetterCorrupt(detail: string): Promise<void> {
    await this.deadLetters.add({
      journeyId: 'unknown',
      reason: 'corrupt_inbox_entry',
      detail,
      receivedAt: this.#now().toISOString(),
      rawBody: '',
    });
  }

  async #settle(done: readonly string[], deadLetters: readonly DeadLetterSettlement[]): Promise<void> {
    // The letters first: an entry leaves the inbox only once it is kept elsewhere.
    for (const d of deadLetters) await this.deadLetters.add(d.letter, this.#now());
    const ids: string[] = [];
    for (const id of [...done, ...deadLetters.map((d) => d.entryId)]) {
      const held = this.#entries.get(id);
      if (!held) continue;
      this.#entries.delete(id);
      held.segment.live -= 1;
      ids.push(id);
    }
    if (ids.length === 0) return;
    if (deadLetters.length > 0 || this.#settleDelayMs <= 0) {
      await this.#commit.add({ kind: 'settle', ids });
    } else {
      // The entries have been signalled: their settle record need not hold the webhook's next write back. It rides
      // with that write, or is written on its own once no append came for settleDelayMs.
      this.#unwritten.push(...ids);
      this.#armSettleTimer();
    }
    const work = this.#maintenance.then(() => this.#compact());
    this.#maintenance = work.catch(() => undefined);
    await work;
  }

  #armSettleTimer(delayMs = this.#settleDelayMs): void {
    if (this.#settleTimer || this.#log.closed) return;
    this.#settleTimer = setTimeout(() => {
      this.#settleTimer = undefined;
      if (this.#unwritten.length === 0) return;
      // While the webhook keeps writing, its writes take the settles along: wait for the next one.
      const quietMs = performance.now() - this.#lastWriteAt;
      if (quietMs < this.#settleDelayMs) return this.#armSettleTimer(this.#settleDelayMs - quietMs);
      // A failed write puts its settles back and arms the timer again; nothing is waiting on this promise.
      this.#writeSettles().catch(() => undefined);
    }, delayMs);
    this.#settleTimer.unref();
  }

  /** Writes the settles no append took along (on the timer, and at close). */
  async #writeSettles(): Promise<void> {
    if (this.#settleTimer) clearTimeout(this.#settleTimer);
    this.#settleTimer = undefined;
    if (this.#unwritten.length === 0) return;
    const ids = this.#unwritten;
    this.#unwritten = [];
    try {
      await this.#commit.add({ kind: 'settle', ids });
    } catch (err) {
      this.#unwritten = [...ids, ...this.#unwritten];
      this.#armSettleTimer();
      throw err;
    }
  }

  /**
   * Deletes the old segments that hold nothing waiting, oldest first; while more than `maxSegments` remain, carries
   * the waiting entries of the oldest forward so that it can go too.
   */
  async #compact(): Promise<void> {
    const max = Math.max(2, this.#o.maxSegments ?? 8);
    for (;;) {
      const oldest = this.#log.segments[0];
      if (!oldest || oldest === this.#log.currentSegment) return;
      if (oldest.live > 0) {
        if (this.#log.segments.length <= max) return;
        const entries = [...this.#entries.values()].filter((h) => h.segment === oldest).map((h) => h.entry);
        await this.#commit.add({ kind: 'carry', entries });
        if (oldest.live > 0) return;
      }
      await this.#log.remove(oldest);
    }
  }

  /** Batch files of the previous version: their entries into the log (new ids), then the files removed. */
  async #importBatchFiles(): Promise<void> {
    const names = (await readdir(this.#o.dir)).filter((n) => BATCH_FILE.test(n)).sort();
    for (const name of names) {
      const file = path.join(this.#o.dir, name);
      let content: BatchContent;
      try {
        const batch = JSON.parse(await readFile(file, 'utf8')) as BatchFile;
        content = JSON.parse(this.#o.sealer.openJson(batch.sealed, 'callback-inbox').toString('utf8')) as BatchContent;
      } catch (err) {
        // Kept for an operator rather than dropped: the letter says which file, the file stays aside.
        await this.#deadLetterCorrupt(
          `inbox batch file ${name} could not be read (${message(err)}); it was renamed to ${name}.corrupt`,
        );
        await writeFileDurably(`${file}.corrupt`, await readFile(file));
        await rm(file, { force: true });
        continue;
      }
      await Promise.all(content.entries.map((e) => this.append(e.journeyId, e.signal)));
      await rm(file, { force: true });
    }
  }

  async #importLegacySpool(dir: string): Promise<void> {
    let names: string[];
    try {
      names = (await readdir(dir)).filter((n) => n.startsWith('cb_') && JSON_FILE.test(n)).sort();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    if (names.length === 0) return;
    const batch: { journeyId: string; signal: CallbackSignal }[] = [];
    for (const name of names) {
      try {
        const old = JSON.parse(await readFile(path.join(dir, name), 'utf8')) as LegacySpooled;
        batch.push({ journeyId: old.journeyId, signal: old.signal });
      } catch {
        await this.deadLetters.add({
          journeyId: 'unknown',
          reason: 'corrupt_spool_entry',
          detail: `spool entry ${name} of an earlier version could not be read`,
          receivedAt: this.#now().toISOString(),
          rawBody: '',
        });
      }
    }
    // Durable in the inbox first, then removed from the old folder (a crash between repeats it: same delivery ids).
    await Promise.all(batch.map((e) => this.append(e.journeyId, e.signal)));
    for (const name of names) await rm(path.join(dir, name), { force: true });
  }

  #now(): Date {
    return this.#o.now?.() ?? new Date();
  }
}

interface SealedLetterFile {
  version: 2;
  id: string;
  sealed: SealedJson;
}

/** One file per dead letter, sealed; letters of earlier versions (plain JSON) are still read. */
export class FileDeadLetters implements DeadLetterStore {
  #count = 0;
  #ready: Promise<void> | undefined;

  constructor(
    readonly dir: string,
    private readonly sealer: RecordSealer,
  ) {}

  init(): Promise<void> {
    return (this.#ready ??= (async () => {
      await mkdir(this.dir, { recursive: true });
      await removeTempFiles(this.dir);
      this.#count = (await readdir(this.dir)).filter((n) => JSON_FILE.test(n)).length;
    })());
  }

  count(): Promise<number> {
    return Promise.resolve(this.#count);
  }

  async add(input: DeadLetterInput, now = new Date()): Promise<DeadLetter> {
    await this.init();
    const id = newDeadLetterId(now, randomBytes(9).toString('base64url'));
    const letter: DeadLetter = { id, ...input, deadLetteredAt: now.toISOString(), replays: 0 };
    await this.#write(letter);
    this.#count += 1;
    return letter;
  }

  async list(options: { limit: number; after?: string }): Promise<DeadLetterPage> {
    await this.init();
    const names = (await readdir(this.dir))
      .filter((n) => JSON_FILE.test(n))
      .sort()
      .map((n) => n.slice(0, -'.json'.length));
    const start = options.after === undefined ? 0 : names.findIndex((n) => n > options.after!);
    const page = start < 0 ? [] : names.slice(start, start + options.limit);
    const letters = (await Promise.all(page.map((id) => this.get(id)))).filter((l): l is DeadLetter => !!l);
    const more = start >= 0 && start + options.limit < names.length;
    return { letters, ...(more && page.length > 0 ? { next: page[page.length - 1] } : {}) };
  }

  async get(id: string): Promise<DeadLetter | undefined> {
    if (!DEAD_LETTER_ID.test(id)) return undefined;
    let stored: SealedLetterFile | DeadLetter;
    try {
      stored = JSON.parse(await readFile(this.#file(id), 'utf8')) as SealedLetterFile | DeadLetter;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    if ('version' in stored && stored.version === 2) {
      return JSON.parse(this.sealer.openJson(stored.sealed, 'dead-letter').toString('utf8')) as DeadLetter;
    }
    return stored as DeadLetter;
  }

  async update(letter: DeadLetter): Promise<void> {
    await this.#write(letter);
  }

  async remove(id: string): Promise<boolean> {
    if (!DEAD_LETTER_ID.test(id)) return false;
    try {
      await rm(this.#file(id));
      this.#count = Math.max(0, this.#count - 1);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw err;
    }
  }

  async #write(letter: DeadLetter): Promise<void> {
    const file: SealedLetterFile = {
      version: 2,
      id: letter.id,
      sealed: this.sealer.sealToJson(JSON.stringify(letter), 'dead-letter'),
    };
    try {
      await writeFileDurably(this.#file(letter.id), JSON.stringify(file));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException | undefined)?.code;
      throw new InboxUnavailableError(`the dead-letter folder cannot be written${code ? ` (${code})` : ''}`, {
        cause: err,
      });
    }
  }

  #file(id: string): string {
    return path.join(this.dir, `${id}.json`);
  }
}
