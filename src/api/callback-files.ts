// The webhook's two folders. The spool holds callbacks acknowledged to the service but not yet signalled to their
// journey (one file each, durable before the 200). Dead letters hold callbacks no journey could take, for operators.
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { writeFileDurably } from '../attachments/store';
import type { CallbackSignal } from '../workflows/definitions';

export interface SpooledCallback {
  version: 1;
  journeyId: string;
  signal: CallbackSignal;
}

const JSON_FILE = /^[A-Za-z0-9_-]+\.json$/;

/** Names sort in arrival order: a zero-padded millisecond time first. */
function timeOrderedName(prefix: string, nowMs: number, suffix: string): string {
  return `${prefix}${String(nowMs).padStart(15, '0')}_${suffix}`;
}

async function jsonFiles(dir: string): Promise<string[]> {
  const names = await readdir(dir);
  return names.filter((n) => JSON_FILE.test(n)).sort();
}

/** Removes the temp files of writes a crash interrupted: those callbacks were never acknowledged. */
async function removeTempFiles(dir: string): Promise<void> {
  for (const name of await readdir(dir)) {
    if (name.startsWith('.tmp-')) await rm(path.join(dir, name), { force: true });
  }
}

export class CallbackSpool {
  #depth = 0;
  /** Orders entries of the same millisecond in arrival order. */
  #sequence = 0;

  constructor(readonly dir: string) {}

  async init(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    await removeTempFiles(this.dir);
    this.#depth = (await jsonFiles(this.dir)).length;
  }

  get depth(): number {
    return this.#depth;
  }

  entryName(deliveryId: string, nowMs = Date.now()): string {
    const seq = String(this.#sequence++ % 1_000_000).padStart(6, '0');
    return `${timeOrderedName('cb_', nowMs, `${seq}_${deliveryId}`)}.json`;
  }

  /** Durable when it resolves: fsync of the file and of the folder. */
  async write(entry: SpooledCallback, name = this.entryName(entry.signal.deliveryId)): Promise<string> {
    await writeFileDurably(path.join(this.dir, name), JSON.stringify(entry));
    this.#depth += 1;
    return name;
  }

  list(): Promise<string[]> {
    return jsonFiles(this.dir);
  }

  /** Undefined when the entry is gone (already forwarded). */
  async read(name: string): Promise<SpooledCallback | undefined> {
    try {
      return JSON.parse(await readFile(path.join(this.dir, name), 'utf8')) as SpooledCallback;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  async remove(name: string): Promise<void> {
    try {
      await rm(path.join(this.dir, name));
      this.#depth = Math.max(0, this.#depth - 1);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
}

export type DeadLetterReason = 'unparseable' | 'journey_not_found' | 'journey_finished' | 'corrupt_spool_entry';

export interface DeadLetter {
  id: string;
  journeyId: string;
  reason: DeadLetterReason;
  /** What went wrong, in words an operator can act on (no payload values). */
  detail: string;
  /** Validation issues of an unparseable body ("field: message"). */
  issues?: string[];
  event?: number;
  patientExamId?: number;
  deliveryId?: string;
  receivedAt: string;
  deadLetteredAt: string;
  replays: number;
  lastReplayAt?: string;
  /** The body exactly as received (it may hold PHI: the folder is as sensitive as the workflow store). */
  rawBody: string;
}

export type DeadLetterInput = Omit<DeadLetter, 'id' | 'deadLetteredAt' | 'replays'>;

const DEAD_LETTER_ID = /^dl_[0-9]{15}_[A-Za-z0-9_-]{6,40}$/;

export class DeadLetterStore {
  #count = 0;

  constructor(readonly dir: string) {}

  async init(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    await removeTempFiles(this.dir);
    this.#count = (await jsonFiles(this.dir)).length;
  }

  get count(): number {
    return this.#count;
  }

  async add(input: DeadLetterInput, now = new Date()): Promise<DeadLetter> {
    const id = timeOrderedName('dl_', now.getTime(), randomBytes(9).toString('base64url'));
    const letter: DeadLetter = { id, ...input, deadLetteredAt: now.toISOString(), replays: 0 };
    await writeFileDurably(this.#file(id), JSON.stringify(letter));
    this.#count += 1;
    return letter;
  }

  /** Oldest first; `after` continues from an id of the previous page. */
  async list(options: { limit: number; after?: string }): Promise<{ letters: DeadLetter[]; next?: string }> {
    const names = (await jsonFiles(this.dir)).map((n) => n.slice(0, -'.json'.length));
    const start = options.after === undefined ? 0 : names.findIndex((n) => n > options.after!);
    const page = start < 0 ? [] : names.slice(start, start + options.limit);
    const letters = (await Promise.all(page.map((id) => this.get(id)))).filter((l): l is DeadLetter => !!l);
    const more = start >= 0 && start + options.limit < names.length;
    return { letters, ...(more && page.length > 0 ? { next: page[page.length - 1] } : {}) };
  }

  async get(id: string): Promise<DeadLetter | undefined> {
    if (!DEAD_LETTER_ID.test(id)) return undefined;
    try {
      return JSON.parse(await readFile(this.#file(id), 'utf8')) as DeadLetter;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  async update(letter: DeadLetter): Promise<void> {
    await writeFileDurably(this.#file(letter.id), JSON.stringify(letter));
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

  #file(id: string): string {
    return path.join(this.dir, `${id}.json`);
  }
}
