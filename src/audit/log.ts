// The audit trail: one record per access to patient data or action on it (who, by which roles, what, when, the
// outcome; never a payload), appended as JSON lines. Each record holds the hash of the one before it, so a record
// edited, removed or inserted afterwards breaks the chain where it happened (verifyAuditChain says where).
import { createHash } from 'node:crypto';
import { appendFile, mkdir, readFile } from 'node:fs/promises';
import { createReadStream, existsSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';

export interface AuditEvent {
  /** What was done: `codec.decode`, `codec.encode`, `journey.abandon`, `dead-letter.read`... */
  action: string;
  /** The token's subject (a person or a service account); `anonymous` when none was given. */
  subject: string;
  roles: readonly string[];
  /** `ok`, `refused: <reason>` (401), `forbidden` (403), `failed`. */
  outcome: string;
  /** What it was about, without patient data: a namespace, a journey id, a number of payloads. */
  details?: Record<string, string | number | boolean>;
}

export interface AuditRecord extends AuditEvent {
  seq: number;
  at: string;
  /** The previous record's hash; 64 zeros for the first. */
  prev: string;
  hash: string;
}

export const GENESIS = '0'.repeat(64);

/** The record's hash: over every field but `hash`, in a fixed order. */
export function hashOf(r: Omit<AuditRecord, 'hash'>): string {
  const canonical = JSON.stringify([
    r.seq,
    r.at,
    r.prev,
    r.action,
    r.subject,
    [...r.roles],
    r.outcome,
    r.details ?? {},
  ]);
  return createHash('sha256').update(canonical).digest('hex');
}

export interface AuditLog {
  append(event: AuditEvent): Promise<AuditRecord>;
}

/** Which records to read, in seq order; the filters go together (and). */
export interface AuditQuery {
  /** Records after this seq (exclusive). */
  after?: number;
  /** Records up to this seq (inclusive): an export ends where it began. */
  upTo?: number;
  subject?: string;
  action?: string;
  /** Records at or after this time. */
  since?: Date;
  /** Records before this time. */
  until?: Date;
}

export interface AuditPage {
  records: AuditRecord[];
  /** The seq to pass as `after` for the next page; null when no record follows. */
  nextAfter: number | null;
}

/** An audit store that is also read (the admin routes, an export): the file or the PostgreSQL table. */
export interface AuditTrail extends AuditLog {
  readonly kind: 'file' | 'postgres';
  /** Checks the store can be written (PostgreSQL: the table is there, the role may append and nothing more). */
  init(): Promise<void>;
  /** At most `limit` records of the query, in seq order. */
  read(query: AuditQuery, limit: number): Promise<AuditPage>;
  /** Every record of the query, in seq order, read a page at a time. */
  records(query: AuditQuery): AsyncIterable<AuditRecord>;
  /** Waits for the appends under way, then lets go of the store. */
  close(): Promise<void>;
}

/** Whether a record is one the query asks for (seq bounds and filters). */
export function matchesQuery(r: AuditRecord, q: AuditQuery): boolean {
  if (q.after !== undefined && r.seq <= q.after) return false;
  if (q.upTo !== undefined && r.seq > q.upTo) return false;
  if (q.subject !== undefined && r.subject !== q.subject) return false;
  if (q.action !== undefined && r.action !== q.action) return false;
  const at = Date.parse(r.at);
  if (q.since !== undefined && !(at >= q.since.getTime())) return false;
  if (q.until !== undefined && !(at < q.until.getTime())) return false;
  return true;
}

/** A page of an ordered record source: `limit` records, and whether one more follows. */
export async function pageOf(source: AsyncIterable<AuditRecord>, limit: number): Promise<AuditPage> {
  const records: AuditRecord[] = [];
  for await (const r of source) {
    if (records.length === limit) return { records, nextAfter: records.at(-1)?.seq ?? null };
    records.push(r);
  }
  return { records, nextAfter: null };
}

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
  }

  async #readTail(): Promise<{ seq: number; hash: string }> {
    if (!existsSync(this.file)) return { seq: 0, hash: GENESIS };
    const lines = (await readFile(this.file, 'utf8')).trimEnd().split('\n').filter(Boolean);
    const last = lines.at(-1);
    if (!last) return { seq: 0, hash: GENESIS };
    const r = JSON.parse(last) as AuditRecord;
    return { seq: r.seq, hash: r.hash };
  }

  append(event: AuditEvent): Promise<AuditRecord> {
    // One at a time: each record needs the hash of the one before.
    const next = this.#tail.then(async (tail) => {
      const body: Omit<AuditRecord, 'hash'> = {
        seq: tail.seq + 1,
        at: this.now().toISOString(),
        prev: tail.hash,
        action: event.action,
        subject: event.subject,
        roles: [...event.roles],
        outcome: event.outcome,
        ...(event.details ? { details: event.details } : {}),
      };
      const record: AuditRecord = { ...body, hash: hashOf(body) };
      await mkdir(path.dirname(this.file), { recursive: true });
      await appendFile(this.file, `${JSON.stringify(record)}\n`, { mode: 0o600 });
      return record;
    });
    this.#tail = next.then(
      (r) => ({ seq: r.seq, hash: r.hash }),
      () => this.#readTail(),
    );
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

export type ChainCheck = { ok: true; records: number } | { ok: false; records: number; at: number; problem: string };

export interface ChainStart {
  /**
   * `genesis` (default): the trail from its first record (seq 1, prev 64 zeros). `first`: a range of it (an export
   * of part of the trail), checked from its first record's seq and prev on.
   */
  from?: 'genesis' | 'first';
}

/**
 * Checks a trail one record at a time (a table or a file too large to hold): `add` each line in order; the first
 * record that does not follow from the one before is the answer, and later lines are only counted.
 */
export class ChainVerifier {
  #prev: string | undefined;
  #seq: number | undefined;
  #records = 0;
  #failure: { at: number; problem: string } | undefined;

  constructor(start: ChainStart = {}) {
    if ((start.from ?? 'genesis') === 'genesis') {
      this.#prev = GENESIS;
      this.#seq = 0;
    }
  }

  /** One line of the trail (blank lines are skipped); false once the chain is broken. */
  add(line: string): boolean {
    if (line.trim() === '') return this.#failure === undefined;
    const at = ++this.#records;
    if (this.#failure) return false;
    let r: AuditRecord;
    try {
      r = JSON.parse(line) as AuditRecord;
    } catch {
      return this.#fail(at, `line ${at} is not a record`);
    }
    const { hash, ...body } = r;
    const expectedSeq = this.#seq === undefined ? r.seq : this.#seq + 1;
    if (r.seq !== expectedSeq)
      return this.#fail(
        at,
        `record ${at} has seq ${r.seq}, expected ${expectedSeq}: a record is missing or out of place`,
      );
    if (this.#prev !== undefined && r.prev !== this.#prev)
      return this.#fail(at, `record ${r.seq} does not follow the one before it (its prev hash differs)`);
    if (hashOf(body) !== hash)
      return this.#fail(at, `record ${r.seq} was changed after it was written (its hash differs)`);
    this.#prev = hash;
    this.#seq = r.seq;
    return true;
  }

  #fail(at: number, problem: string): false {
    this.#failure = { at, problem };
    return false;
  }

  result(): ChainCheck {
    return this.#failure
      ? { ok: false, records: this.#records, ...this.#failure }
      : { ok: true, records: this.#records };
  }
}

/** Checks a trail's chain from its first record: the first record that does not follow from the one before. */
export function verifyAuditChain(lines: readonly string[], start: ChainStart = {}): ChainCheck {
  const verifier = new ChainVerifier(start);
  for (const line of lines) verifier.add(line);
  return verifier.result();
}
