// A JSON-lines journal beside the key file: its one writer appends lines (synced before they count), its readers read
// what was appended since they last looked. A reader's place is the end of the last whole line it read: a line still
// being written (or cut short by a crash, and cut off by the writer's next start) is read again next time, whole. A
// journal replaced by an empty one (a new file renamed over it) is read again from its start.
import { open, rename, stat, truncate } from 'node:fs/promises';
import path from 'node:path';
import { PatientKeyStoreError } from './types';

export class LineJournal {
  /** Where the last whole line read ends, in the file read (its inode). */
  #offset = 0;
  #ino: number | undefined;

  /** @param what how errors name it, e.g. `the journey bindings file` */
  constructor(
    readonly file: string,
    private readonly what: string,
  ) {}

  /** Bytes of whole lines read or appended so far (0: nothing in it, as far as this process knows). */
  get bytes(): number {
    return this.#offset;
  }

  /** The whole lines appended since the last read, parsed (nothing if the journal does not exist). */
  async readNew(): Promise<Record<string, unknown>[]> {
    let handle;
    try {
      handle = await open(this.file, 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    try {
      const { size, ino } = await handle.stat();
      // Another file now (replaced), or a shorter one (a torn line cut off): read from the start.
      if (ino !== this.#ino || size < this.#offset) {
        this.#ino = ino;
        this.#offset = 0;
      }
      if (size <= this.#offset) return [];
      const buf = Buffer.alloc(size - this.#offset);
      const { bytesRead } = await handle.read(buf, 0, buf.length, this.#offset);
      const end = buf.subarray(0, bytesRead).lastIndexOf(0x0a) + 1;
      if (end === 0) return [];
      this.#offset += end;
      const out: Record<string, unknown>[] = [];
      for (const line of buf.subarray(0, end).toString('utf8').split('\n')) {
        if (!line.trim()) continue;
        let r: unknown;
        try {
          r = JSON.parse(line);
        } catch {
          throw new PatientKeyStoreError(`${this.what} ${this.file} has a line that is not JSON`);
        }
        if (typeof r !== 'object' || r === null) {
          throw new PatientKeyStoreError(`${this.what} ${this.file} has a malformed line`);
        }
        out.push(r as Record<string, unknown>);
      }
      return out;
    } finally {
      await handle.close();
    }
  }

  /**
   * The writer, at its start (after reading the journal): cuts off a last line a crash left without its end. It was
   * never acknowledged; a line appended after it would otherwise be glued to it.
   */
  async dropTornTail(): Promise<void> {
    const size = await stat(this.file).then(
      (st) => st.size,
      (err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return 0;
        throw err;
      },
    );
    if (size > this.#offset) await truncate(this.file, this.#offset);
  }

  /** The writer: appends the lines and syncs them; they count once this resolves. */
  async append(lines: object[]): Promise<void> {
    const text = lines.map((l) => `${JSON.stringify(l)}\n`).join('');
    const handle = await open(this.file, 'a', 0o600);
    try {
      await handle.appendFile(text);
      await handle.datasync();
      const { ino } = await handle.stat();
      if (ino !== this.#ino) {
        // The first append to a journal this process had not read (it did not exist yet).
        this.#ino = ino;
        this.#offset = 0;
      }
      this.#offset += Buffer.byteLength(text);
    } finally {
      await handle.close();
    }
  }

  /** The writer: puts an empty journal in its place (synced, then renamed over it, the folder synced). */
  async replaceWithEmpty(): Promise<void> {
    const tmp = `${this.file}.${process.pid}.tmp`;
    const handle = await open(tmp, 'w', 0o600);
    let ino: number;
    try {
      await handle.sync();
      ino = (await handle.stat()).ino;
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
    this.#ino = ino;
    this.#offset = 0;
  }

  /** Forgets where it was: the next read starts from the beginning. */
  reset(): void {
    this.#offset = 0;
    this.#ino = undefined;
  }
}
