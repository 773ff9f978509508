// The local audit store: one record per access to patient data or action on it, appended as JSON lines to one file.
// Each record holds the hash of the one before it, so a record edited, removed or inserted afterwards breaks the
// chain where it happened (verifyAuditChain, chain.ts, says where).
import { appendFile, mkdir, readFile } from 'node:fs/promises';
import { createReadStream, existsSync } from 'node:fs';
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

/** The local audit store: a JSON-lines file, appended one record at a time, the chain carried on across restarts. */
export class FileAuditLog implements AuditTrail {
  readonly kind = 'file' as const;
  #tail: Promise<{ seq: number; hash: string }>;
  #last: Promise<unknown> = Promise.resolve();

  constructor(
    readonly file: string,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.#tail = this.#readTail();
    // Read at once, answered at the first append: a trail nobody appends to is no unhandled failure.
    this.#tail.catch(() => undefined);
  }

  async #readTail(): Promise<{ seq: number; hash: string }> {
    if (!existsSync(this.file)) return { seq: 0, hash: GENESIS };
    const lines = (await readFile(this.file, 'utf8')).trimEnd().split('\n').filter(Boolean);
    const last = lines.at(-1);
    if (!last) return { seq: 0, hash: GENESIS };
    let r: AuditRecord;
    try {
      r = JSON.parse(last) as AuditRecord;
    } catch {
      throw new Error(
        `the audit trail file's last line (line ${lines.length}) is not a record: the chain cannot go on`,
      );
    }
    return { seq: r.seq, hash: r.hash };
  }

  append(event: AuditEvent): Promise<AuditRecord> {
    // One at a time: each record needs the hash of the one before.
    const next = this.#tail.then(async (tail) => {
      const record = chainRecord(event, { seq: tail.seq + 1, at: this.now().toISOString(), prev: tail.hash });
      await mkdir(path.dirname(this.file), { recursive: true });
      await appendFile(this.file, `${JSON.stringify(record)}\n`, { mode: 0o600 });
      return record;
    });
    this.#tail = next.then(
      (r) => ({ seq: r.seq, hash: r.hash }),
      () => this.#readTail(),
    );
    this.#tail.catch(() => undefined);
    this.#last = next;
    return next;
  }

  /** Resolves once every append so far is written. */
  async flush(): Promise<void> {
    await this.#last.catch(() => undefined);
  }

  init(): Promise<void> {
    return Promise.resolve();
  }

  read(query: AuditQuery, limit: number): Promise<AuditPage> {
    return pageOf(this.records(query), limit);
  }

  /** The file read line by line (it is never held whole); a line that is not a record stops the read with its number. */
  async *records(query: AuditQuery): AsyncIterable<AuditRecord> {
    await this.flush();
    if (!existsSync(this.file)) return;
    const lines = createInterface({ input: createReadStream(this.file, 'utf8'), crlfDelay: Infinity });
    let n = 0;
    try {
      for await (const line of lines) {
        n++;
        if (line.trim() === '') continue;
        let r: AuditRecord;
        try {
          r = JSON.parse(line) as AuditRecord;
        } catch {
          throw new Error(`the audit trail file has a line that is not a record (line ${n})`);
        }
        if (query.upTo !== undefined && r.seq > query.upTo) return;
        if (matchesQuery(r, query)) yield r;
      }
    } finally {
      lines.close();
    }
  }

  close(): Promise<void> {
    return this.flush();
  }
}
