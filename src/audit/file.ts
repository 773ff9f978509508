// The local audit store: one record per access to patient data or action on it, appended as JSON lines to one file.
// Each record holds the hash of the one before it, so a record edited, removed or inserted afterwards breaks the
// chain where it happened (verifyAuditChain, chain.ts, says where).
//
// One writer per trail: the process that appends holds `<file>.lock` (its pid) while it runs, and a second writer, in
// this process or another, is refused with a message naming the file, as two writers would number their records
// apart and break the chain. Every append is on disk (written and synced) before it resolves, so an answer that
// depends on a record never goes out before it. A crash mid-append leaves a torn last line: the next writer drops it at
// start and says so in a record of its own.
import { createReadStream, existsSync } from 'node:fs';
import { mkdir, open, readFile, unlink, writeFile, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import {
  GENESIS,
  chainRecord,
  matchesQuery,
  pageOf,
  type AuditEvent,
  type AuditPage,
  type AuditQuery,
  type AuditRecord,
  type AuditTrail,
} from './types';

/** Another writer holds the trail: each process needs a trail of its own (or the shared PostgreSQL table). */
export class AuditTrailInUseError extends Error {
  constructor(file: string, holder: string) {
    super(
      `the audit trail ${file} is written by ${holder}: give each process its own trail file (AUDIT_FILE, ` +
        'CODEC_AUDIT_FILE) or use the shared table (AUDIT_STORE=postgres)',
    );
    this.name = 'AuditTrailInUseError';
  }
}

/** Trails this process writes (a second writer in one process is refused like one in another). */
const WRITING = new Set<string>();

/** How much of the file's end is read at start to find its last record. */
const TAIL_READ_BYTES = 256 * 1024;

interface Writer {
  handle: FileHandle;
  seq: number;
  hash: string;
}

/** Whether a process of this pid runs (one we may not signal runs too). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The local audit store: a JSON-lines file, appended one record at a time, the chain carried on across restarts. */
export class FileAuditLog implements AuditTrail {
  readonly kind = 'file' as const;
  readonly #lockFile: string;
  #writer: Promise<Writer> | undefined;
  #locked = false;
  #last: Promise<unknown> = Promise.resolve();

  constructor(
    readonly file: string,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.file = path.resolve(file);
    this.#lockFile = `${this.file}.lock`;
  }

  /** Takes the trail for writing: its lock, its last record (a torn one dropped and recorded). */
  async init(): Promise<void> {
    await this.#open();
  }

  #open(): Promise<Writer> {
    this.#writer ??= this.#openForWriting();
    const opening = this.#writer;
    // A failed open is tried again by the next append.
    opening.catch(() => {
      if (this.#writer === opening) this.#writer = undefined;
    });
    return opening;
  }

  async #lock(): Promise<void> {
    if (this.#locked) return;
    if (WRITING.has(this.file)) throw new AuditTrailInUseError(this.file, 'another writer in this process');
    await mkdir(path.dirname(this.file), { recursive: true, mode: 0o700 });
    for (let attempt = 0; ; attempt++) {
      try {
        await writeFile(this.#lockFile, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) {
          if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
            throw new AuditTrailInUseError(this.file, 'another process that took it at the same time');
          }
          throw err;
        }
        const holder = Number.parseInt(await readFile(this.#lockFile, 'utf8').catch(() => ''), 10);
        if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && alive(holder)) {
          throw new AuditTrailInUseError(this.file, `process ${holder}`);
        }
        // Left by a writer that is gone (or an earlier run of this pid): taken over.
        await unlink(this.#lockFile).catch(() => undefined);
      }
    }
    this.#locked = true;
    WRITING.add(this.file);
  }

  async #openForWriting(): Promise<Writer> {
    await this.#lock();
    const handle = await open(this.file, 'a+', 0o600);
    try {
      const { size } = await handle.stat();
      const from = Math.max(0, size - TAIL_READ_BYTES);
      const buffer = Buffer.alloc(size - from);
      await handle.read(buffer, 0, buffer.length, from);
      let bytes = buffer;
      let partial = from > 0;
      if (partial) {
        // The end read must hold a whole line before the last one (its first line may be cut): else read it all.
        const last = bytes.lastIndexOf(0x0a);
        if (last <= 0 || bytes.lastIndexOf(0x0a, last - 1) < 0) {
          bytes = await readFile(this.file);
          partial = false;
        }
      }
      // Bytes after the last newline: a record torn by a crash mid-append.
      const end = bytes.lastIndexOf(0x0a) + 1;
      const torn = bytes.length - end;
      const whole = bytes.subarray(0, end).toString('utf8').split('\n');
      whole.pop();
      const lastLine = [...whole].reverse().find((l) => l.trim() !== '');
      let tail = { seq: 0, hash: GENESIS };
      if (lastLine) {
        let r: AuditRecord;
        try {
          r = JSON.parse(lastLine) as AuditRecord;
        } catch {
          const lineNo = partial ? 'its last whole line' : `line ${whole.lastIndexOf(lastLine) + 1}`;
          throw new Error(
            `the audit trail file's last line (${lineNo}) is not a record: the chain cannot go on (a whole line ` +
              'that is not a record was written there, not torn by a crash)',
          );
        }
        tail = { seq: r.seq, hash: r.hash };
      }
      const writer: Writer = { handle, ...tail };
      if (torn > 0) {
        // A crash mid-append: the bytes after the last whole record go, and the trail says so.
        await handle.truncate(size - torn);
        await handle.sync();
        await this.#write(writer, {
          action: 'audit.torn-record-dropped',
          subject: 'audit-trail',
          roles: [],
          outcome: 'ok',
          details: { bytes: torn, afterSeq: tail.seq },
        });
      }
      return writer;
    } catch (err) {
      await handle.close().catch(() => undefined);
      throw err;
    }
  }

  /** One record written and synced; the writer's head moves only once it is on disk. */
  async #write(writer: Writer, event: AuditEvent): Promise<AuditRecord> {
    const record = chainRecord(event, { seq: writer.seq + 1, at: this.now().toISOString(), prev: writer.hash });
    await writer.handle.appendFile(`${JSON.stringify(record)}\n`);
    await writer.handle.datasync();
    writer.seq = record.seq;
    writer.hash = record.hash;
    return record;
  }

  append(event: AuditEvent): Promise<AuditRecord> {
    // One at a time: each record needs the hash of the one before.
    const next = this.#last
      .catch(() => undefined)
      .then(async () => {
        const writer = await this.#open();
        try {
          return await this.#write(writer, event);
        } catch (err) {
          // A write cut short may have left part of a line: the next append opens the file again, which drops it.
          if (this.#writer) {
            this.#writer = undefined;
            await writer.handle.close().catch(() => undefined);
          }
          throw err;
        }
      });
    this.#last = next;
    return next;
  }

  /** The last record on disk (seq 0 and the genesis hash for an empty trail): what a checkpoint anchors. */
  async head(): Promise<{ seq: number; hash: string }> {
    await this.flush();
    const writer = await this.#open();
    return { seq: writer.seq, hash: writer.hash };
  }

  /** Resolves once every append so far is written. */
  async flush(): Promise<void> {
    await this.#last.catch(() => undefined);
  }

  read(query: AuditQuery, limit: number): Promise<AuditPage> {
    return pageOf(this.records(query), limit);
  }

  /**
   * The file read line by line (it is never held whole), as it was when the read began; a line that is not a record
   * stops the read with its number, but for a torn last line (a crash mid-append, no newline after it), which is left
   * out as its next writer will drop it.
   */
  async *records(query: AuditQuery): AsyncIterable<AuditRecord> {
    await this.flush();
    if (!existsSync(this.file)) return;
    const handle = await open(this.file, 'r');
    let size: number;
    let endsWhole: boolean;
    try {
      size = (await handle.stat()).size;
      const lastByte = Buffer.alloc(1);
      if (size > 0) await handle.read(lastByte, 0, 1, size - 1);
      endsWhole = size === 0 || lastByte[0] === 0x0a;
    } finally {
      await handle.close();
    }
    if (size === 0) return;
    const lines = createInterface({
      input: createReadStream(this.file, { encoding: 'utf8', end: size - 1 }),
      crlfDelay: Infinity,
    });
    const parse = (line: string, n: number): AuditRecord | undefined => {
      if (line.trim() === '') return undefined;
      try {
        return JSON.parse(line) as AuditRecord;
      } catch {
        throw new Error(`the audit trail file has a line that is not a record (line ${n})`);
      }
    };
    let n = 0;
    let held: string | undefined;
    try {
      for await (const line of lines) {
        if (held !== undefined) {
          const r = parse(held, n);
          if (r && query.upTo !== undefined && r.seq > query.upTo) return;
          if (r && matchesQuery(r, query)) yield r;
        }
        held = line;
        n++;
      }
      if (held === undefined) return;
      let r: AuditRecord | undefined;
      try {
        r = parse(held, n);
      } catch (err) {
        if (endsWhole) throw err;
        return;
      }
      if (r && (query.upTo === undefined || r.seq <= query.upTo) && matchesQuery(r, query)) yield r;
    } finally {
      lines.close();
    }
  }

  /** Waits for the appends, closes the file and lets go of the trail. */
  async close(): Promise<void> {
    await this.flush();
    const writer = this.#writer;
    this.#writer = undefined;
    if (writer) await (await writer.catch(() => undefined))?.handle.close();
    if (this.#locked) {
      this.#locked = false;
      WRITING.delete(this.file);
      await unlink(this.#lockFile).catch(() => undefined);
    }
  }
}
