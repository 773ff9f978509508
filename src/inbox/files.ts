// The file inbox: the single-host default (`npm start`). Appends are group-committed: every callback that arrived
// while the previous write was under way goes into one batch file (temp file, fsync, rename, folder fsync), so a
// burst costs about one write. The process keeps the waiting entries in memory (read back from the folder at start)
// and claims them for its own forwarder; entries signalled are removed by rewriting or deleting their batch file.
// One process owns the folder: API replicas on several hosts share the PostgreSQL inbox instead.
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { writeFileDurably } from '../attachments/store';
import { type RecordSealer, type SealedJson } from '../codec/at-rest';
import type { CallbackSignal } from '../workflows/definitions';
import { GroupCommit } from './group-commit';
import {
  DEAD_LETTER_ID,
  newDeadLetterId,
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
} from './types';

const BATCH_FILE = /^b_[0-9]{15}_[0-9]{6}\.json$/;
const JSON_FILE = /^[A-Za-z0-9_-]+\.json$/;

interface BatchFile {
  version: 2;
  sealed: SealedJson;
}
interface BatchContent {
  entries: { journeyId: string; signal: CallbackSignal }[];
}
/** A spool entry of earlier versions (one plain file per callback), imported at start. */
interface LegacySpooled {
  version: 1;
  journeyId: string;
  signal: CallbackSignal;
}

interface Batch {
  name: string;
  /** Entry ids still waiting, in order. */
  remaining: Set<string>;
}

/** Names sort in time order: a zero-padded millisecond time first. */
function timeOrderedName(prefix: string, nowMs: number, suffix: string): string {
  return `${prefix}${String(nowMs).padStart(15, '0')}_${suffix}`;
}

async function removeTempFiles(dir: string): Promise<void> {
  // Temp files of writes a crash interrupted: those callbacks were never acknowledged.
  for (const name of await readdir(dir)) {
    if (name.startsWith('.tmp-')) await rm(path.join(dir, name), { force: true });
  }
}

function unavailable(err: unknown): InboxUnavailableError {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return new InboxUnavailableError(`the inbox folder cannot be written${code ? ` (${code})` : ''}`, { cause: err });
}

export interface FileInboxOptions {
  dir: string;
  deadLetterDir: string;
  sealer: RecordSealer;
  /** The spool folder of earlier versions: its entries are imported into the inbox at start. */
  legacySpoolDir?: string;
  /** Largest group-commit batch. */
  maxBatch?: number;
  onBatch?: (size: number) => void;
  now?: () => Date;
}

export class FileInbox implements CallbackInbox {
  readonly kind = 'files' as const;
  readonly deadLetters: FileDeadLetters;
  readonly #o: FileInboxOptions;
  /** Waiting entries in arrival order (a Map iterates in insertion order). */
  readonly #entries = new Map<string, { entry: InboxEntry; batch: Batch }>();
  readonly #claimed = new Set<string>();
  readonly #listeners = new Set<() => void>();
  readonly #commit: GroupCommit<{ journeyId: string; signal: CallbackSignal }>;
  #sequence = 0;
  /** File maintenance (rewrites and removals of batch files) one at a time. */
  #maintenance: Promise<void> = Promise.resolve();

  constructor(options: FileInboxOptions) {
    this.#o = options;
    this.deadLetters = new FileDeadLetters(options.deadLetterDir, options.sealer);
    this.#commit = new GroupCommit((batch) => this.#writeBatch(batch), options.maxBatch ?? 1_000, options.onBatch);
  }

  get dir(): string {
    return this.#o.dir;
  }

  async init(): Promise<void> {
    await mkdir(this.#o.dir, { recursive: true });
    await removeTempFiles(this.#o.dir);
    await this.deadLetters.init();
    const names = (await readdir(this.#o.dir)).filter((n) => BATCH_FILE.test(n)).sort();
    for (const name of names) {
      let content: BatchContent;
      try {
        const file = JSON.parse(await readFile(path.join(this.#o.dir, name), 'utf8')) as BatchFile;
        content = JSON.parse(this.#o.sealer.openJson(file.sealed, 'callback-inbox').toString('utf8')) as BatchContent;
      } catch (err) {
        // Kept for an operator rather than dropped: the letter says which file, the file stays aside.
        await this.deadLetters.add({
          journeyId: 'unknown',
          reason: 'corrupt_inbox_entry',
          detail: `inbox batch file ${name} could not be read (${err instanceof Error ? err.message : 'unknown error'}); it was renamed to ${name}.corrupt`,
          receivedAt: this.#now().toISOString(),
          rawBody: '',
        });
        await writeFileDurably(path.join(this.#o.dir, `${name}.corrupt`), await readFile(path.join(this.#o.dir, name)));
        await rm(path.join(this.#o.dir, name), { force: true });
        continue;
      }
      this.#index(name, content);
    }
    const last = names[names.length - 1];
    if (last) this.#sequence = Number(last.slice(-11, -5)) + 1;
    if (this.#o.legacySpoolDir) await this.#importLegacySpool(this.#o.legacySpoolDir);
  }

  append(journeyId: string, signal: CallbackSignal): Promise<void> {
    return this.#commit.add({ journeyId, signal });
  }

  claim(maxJourneys: number, maxPerJourney: number): Promise<InboxClaim | undefined> {
    const chosen = new Map<string, number>();
    const entries: InboxEntry[] = [];
    for (const { entry } of this.#entries.values()) {
      const count = chosen.get(entry.journeyId);
      if (count === undefined) {
        if (this.#claimed.has(entry.journeyId) || chosen.size >= maxJourneys) continue;
        chosen.set(entry.journeyId, 1);
        entries.push(entry);
      } else if (count < maxPerJourney) {
        chosen.set(entry.journeyId, count + 1);
        entries.push(entry);
      }
    }
    if (entries.length === 0) return Promise.resolve(undefined);
    for (const journeyId of chosen.keys()) this.#claimed.add(journeyId);
    let settled = false;
    return Promise.resolve({
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
    });
  }

  stats(): Promise<InboxStats> {
    const first = this.#entries.values().next();
    return this.deadLetters.count().then((deadLetters) => ({
      depth: this.#entries.size,
      ...(first.done ? {} : { oldestReceivedAt: new Date(first.value.entry.signal.receivedAt) }),
      deadLetters,
    }));
  }

  onAppend(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async close(): Promise<void> {
    await this.#maintenance;
  }

  async #writeBatch(batch: { journeyId: string; signal: CallbackSignal }[]): Promise<void> {
    const seq = String(this.#sequence++ % 1_000_000).padStart(6, '0');
    const name = `${timeOrderedName('b_', this.#now().getTime(), seq)}.json`;
    const content: BatchContent = { entries: batch };
    const file: BatchFile = {
      version: 2,
      sealed: this.#o.sealer.sealToJson(JSON.stringify(content), 'callback-inbox'),
    };
    try {
      await writeFileDurably(path.join(this.#o.dir, name), JSON.stringify(file));
    } catch (err) {
      throw unavailable(err);
    }
    this.#index(name, content);
    for (const listener of this.#listeners) listener();
  }

  #index(name: string, content: BatchContent): void {
    const batch: Batch = { name, remaining: new Set() };
    content.entries.forEach((e, i) => {
      const id = `${name.slice(0, -'.json'.length)}#${i}`;
      batch.remaining.add(id);
      this.#entries.set(id, { entry: { id, journeyId: e.journeyId, signal: e.signal }, batch });
    });
  }

  async #settle(done: readonly string[], deadLetters: readonly DeadLetterSettlement[]): Promise<void> {
    // The letters first: an entry leaves the inbox only once it is kept elsewhere.
    for (const d of deadLetters) await this.deadLetters.add(d.letter, this.#now());
    const touched = new Set<Batch>();
    for (const id of [...done, ...deadLetters.map((d) => d.entryId)]) {
      const held = this.#entries.get(id);
      if (!held) continue;
      this.#entries.delete(id);
      held.batch.remaining.delete(id);
      touched.add(held.batch);
    }
    if (touched.size === 0) return;
    const work = this.#maintenance.then(async () => {
      for (const batch of touched) await this.#rewrite(batch);
    });
    this.#maintenance = work.catch(() => undefined);
    await work;
  }

  /** The batch file with only its waiting entries, or gone when none waits. */
  async #rewrite(batch: Batch): Promise<void> {
    const file = path.join(this.#o.dir, batch.name);
    if (batch.remaining.size === 0) {
      await rm(file, { force: true });
      return;
    }
    const content: BatchContent = {
      entries: [...batch.remaining].map((id) => {
        const { entry } = this.#entries.get(id)!;
        return { journeyId: entry.journeyId, signal: entry.signal };
      }),
    };
    const sealed = this.#o.sealer.sealToJson(JSON.stringify(content), 'callback-inbox');
    await writeFileDurably(file, JSON.stringify({ version: 2, sealed } satisfies BatchFile));
    // The ids stay those of the first write: the forwarder may hold them in a claim.
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
    if (batch.length > 0) await this.#writeBatch(batch);
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
