// The file inbox's storage: an append-only log in preallocated, zero-filled segment files opened O_DSYNC, so a write
// is a data flush alone, with no journal commit (docs/design-notes.md#the-file-inboxs-segment-log).
// A record: [u32 length][u32 crc32][payload] (little-endian); a zero length marks the end of what was written.
import { constants, statSync } from 'node:fs';
import { mkdir, open, readdir, readFile, rm, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { crc32 } from 'node:zlib';

const HEADER_BYTES = 8;
const SEGMENT_FILE = /^seg_([0-9]{15})\.log$/;
const ZEROS = Buffer.alloc(1024 * 1024);
/** Pause after each megabyte of a segment prepared ahead. */
const PACE_MS = 10;

export interface Segment {
  readonly seq: number;
  readonly name: string;
  /** Live entries whose latest copy is in this segment (kept by the inbox). */
  live: number;
}

export interface ReadRecord {
  segment: Segment;
  offset: number;
  payload: Buffer;
}

export interface DamagedSegment {
  segment: Segment;
  /** Where the damage starts; everything from there on could not be read. */
  offset: number;
  /** The unread rest of the segment, to be set aside for an operator. */
  rest: Buffer;
}

interface OpenSegment {
  segment: Segment;
  handle: FileHandle;
  ino: number;
  size: number;
  position: number;
}

export function frame(payload: Buffer): Buffer {
  const header = Buffer.allocUnsafe(HEADER_BYTES);
  header.writeUInt32LE(payload.length, 0);
  header.writeUInt32LE(crc32(payload), 4);
  return Buffer.concat([header, payload]);
}

function allZero(buf: Buffer): boolean {
  for (let i = 0; i < buf.length; i++) if (buf[i] !== 0) return false;
  return true;
}

/** The records of one segment's bytes, up to the end of what was written, and the damage if any. */
export function readFrames(bytes: Buffer): { records: { offset: number; payload: Buffer }[]; damagedAt?: number } {
  const records: { offset: number; payload: Buffer }[] = [];
  let pos = 0;
  while (pos + HEADER_BYTES <= bytes.length) {
    const length = bytes.readUInt32LE(pos);
    if (length === 0) {
      // The end of what was written, unless something was written after zeros (damage).
      return allZero(bytes.subarray(pos)) ? { records } : { records, damagedAt: pos };
    }
    const end = pos + HEADER_BYTES + length;
    const payload = end <= bytes.length ? bytes.subarray(pos + HEADER_BYTES, end) : undefined;
    if (!payload || crc32(payload) !== bytes.readUInt32LE(pos + 4)) {
      // Torn last write (zeros after it, or the file ends inside it): never acknowledged. Anything else is damage.
      const after = bytes.subarray(Math.min(end, bytes.length));
      return payload === undefined || allZero(after) ? { records } : { records, damagedAt: pos };
    }
    records.push({ offset: pos, payload });
    pos = end;
  }
  return allZero(bytes.subarray(pos)) ? { records } : { records, damagedAt: pos };
}

export interface SegmentLogOptions {
  dir: string;
  /** Size of a segment (preallocated). A record larger than this gets a segment of its own size. */
  segmentBytes: number;
}

/** A write asked of a log that is closed, or closed while the write waited for its segment. */
export class SegmentLogClosedError extends Error {
  constructor() {
    super('the segment log is closed');
    this.name = 'SegmentLogClosedError';
  }
}

export class SegmentLog {
  readonly #o: SegmentLogOptions;
  /** Every segment on disk, oldest first (the current one last). */
  readonly segments: Segment[] = [];
  #current: OpenSegment | undefined;
  #next: Promise<OpenSegment | undefined> | undefined;
  #nextSeq = 1;
  /** Set by close: no write starts after it, and a segment a write was preparing meanwhile is discarded. */
  #closed = false;

  constructor(options: SegmentLogOptions) {
    this.#o = options;
  }

  /** Whether close was called (from its first step: no write starts after it). */
  get closed(): boolean {
    return this.#closed;
  }

  get currentSegment(): Segment | undefined {
    return this.#current?.segment;
  }

  /** Reads every segment written before (oldest first); the first write then starts a new one. */
  async readExisting(): Promise<{ records: ReadRecord[]; damaged: DamagedSegment[] }> {
    await mkdir(this.#o.dir, { recursive: true });
    const names = (await readdir(this.#o.dir)).filter((n) => SEGMENT_FILE.test(n)).sort();
    const records: ReadRecord[] = [];
    const damaged: DamagedSegment[] = [];
    for (const name of names) {
      const seq = Number(SEGMENT_FILE.exec(name)![1]);
      const segment: Segment = { seq, name, live: 0 };
      this.segments.push(segment);
      this.#nextSeq = Math.max(this.#nextSeq, seq + 1);
      const bytes = await readFile(path.join(this.#o.dir, name));
      const read = readFrames(bytes);
      for (const r of read.records) records.push({ segment, ...r });
      if (read.damagedAt !== undefined) {
        damaged.push({ segment, offset: read.damagedAt, rest: bytes.subarray(read.damagedAt) });
      }
    }
    return { records, damaged };
  }

  /**
   * Appends the payloads durably (one write, one data sync), in order, to the current segment (a new one when they
   * do not fit); resolves with the segment they are in. Rejects when the folder cannot be written; the log then
   * starts a new segment at the next write, so a folder that comes back is written to again.
   */
  async write(payloads: Buffer[]): Promise<Segment> {
    if (this.#closed) throw new SegmentLogClosedError();
    const bytes = Buffer.concat(payloads.map(frame));
    let current = await this.#usable();
    if (current.position + bytes.length > current.size) current = await this.#rotate(bytes.length);
    const at = current.position;
    // The position moves first: a failed write leaves a gap of zeros or a torn record, never an overwrite.
    current.position += bytes.length;
    try {
      await current.handle.write(bytes, 0, bytes.length, at);
    } catch (err) {
      await this.#drop();
      throw err;
    }
    return current.segment;
  }

  /** Deletes a segment that holds nothing live (never the current one). */
  async remove(segment: Segment): Promise<void> {
    if (segment === this.#current?.segment) return;
    const i = this.segments.indexOf(segment);
    if (i >= 0) this.segments.splice(i, 1);
    await rm(path.join(this.#o.dir, segment.name), { force: true });
  }

  async close(): Promise<void> {
    this.#closed = true;
    const next = await this.#next?.catch(() => undefined);
    this.#next = undefined;
    if (next) await this.#discard(next);
    if (this.#current) await this.#current.handle.close().catch(() => undefined);
    this.#current = undefined;
  }

  /** The current segment, checked to be still the file at its path (the folder may have been moved or removed). */
  async #usable(): Promise<OpenSegment> {
    const current = this.#current;
    if (current) {
      let ino: number | undefined;
      try {
        ino = statSync(path.join(this.#o.dir, current.segment.name)).ino;
      } catch {
        ino = undefined;
      }
      if (ino === current.ino) return current;
      await this.#drop();
    }
    return this.#rotate(0);
  }

  /** Starts the next segment (large enough for `need` bytes) and prepares the one after it in the background. */
  async #rotate(need: number): Promise<OpenSegment> {
    let next = await this.#next?.catch(() => undefined);
    this.#next = undefined;
    if (next && next.size < need) {
      await this.#discard(next);
      next = undefined;
    }
    next ??= await this.#prepare(Math.max(this.#o.segmentBytes, need));
    if (this.#closed) {
      // Closed while the segment was being prepared: its handle would outlive the log (closed, at best, by the
      // garbage collector), and nothing was written to it.
      await this.#discard(next);
      throw new SegmentLogClosedError();
    }
    if (this.#current) await this.#current.handle.close().catch(() => undefined);
    this.#current = next;
    this.segments.push(next.segment);
    const ahead = this.#prepare(this.#o.segmentBytes, true);
    ahead.catch(() => undefined);
    this.#next = ahead;
    return next;
  }

  /**
   * A new segment, created exclusively, zero-filled and synced; `paced` (prepared ahead) fills a megabyte at a time,
   * pausing, so appends never queue behind its flush (docs/design-notes.md#the-file-inboxs-segment-log).
   */
  async #prepare(size: number, paced = false): Promise<OpenSegment> {
    let seq: number;
    let name: string;
    let handle: FileHandle;
    for (;;) {
      seq = this.#nextSeq++;
      name = `seg_${String(seq).padStart(15, '0')}.log`;
      try {
        handle = await open(path.join(this.#o.dir, name), constants.O_RDWR | constants.O_CREAT | constants.O_EXCL);
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
    }
    try {
      for (let written = 0; written < size; written += ZEROS.length) {
        await handle.write(ZEROS, 0, Math.min(ZEROS.length, size - written), written);
        if (paced) {
          await handle.datasync();
          await new Promise((r) => setTimeout(r, PACE_MS));
        }
      }
      await handle.sync();
      await handle.close();
      const folder = await open(this.#o.dir, 'r');
      try {
        await folder.sync();
      } finally {
        await folder.close();
      }
      handle = await open(path.join(this.#o.dir, name), constants.O_RDWR | constants.O_DSYNC);
      const { ino } = await handle.stat();
      return { segment: { seq, name, live: 0 }, handle, ino, size, position: 0 };
    } catch (err) {
      await handle.close().catch(() => undefined);
      await rm(path.join(this.#o.dir, name), { force: true }).catch(() => undefined);
      throw err;
    }
  }

  /** Forgets the current segment (its file is gone or cannot be written) and the one prepared after it. */
  async #drop(): Promise<void> {
    if (this.#current) await this.#current.handle.close().catch(() => undefined);
    this.#current = undefined;
    const next = await this.#next?.catch(() => undefined);
    this.#next = undefined;
    if (next) await this.#discard(next);
  }

  async #discard(prepared: OpenSegment): Promise<void> {
    await prepared.handle.close().catch(() => undefined);
    await rm(path.join(this.#o.dir, prepared.segment.name), { force: true }).catch(() => undefined);
  }
}
