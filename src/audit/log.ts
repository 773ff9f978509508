// The audit trail: one record per access to patient data or action on it (who, by which roles, what, when, the
// outcome; never a payload), appended as JSON lines. Each record holds the hash of the one before it, so a record
// edited, removed or inserted afterwards breaks the chain where it happened (verifyAuditChain says where).
import { createHash } from 'node:crypto';
import { appendFile, mkdir, readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';

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

/** The local audit store: a JSON-lines file, appended one record at a time, the chain carried on across restarts. */
export class FileAuditLog implements AuditLog {
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
}

export type ChainCheck = { ok: true; records: number } | { ok: false; records: number; at: number; problem: string };

/** Checks a trail's chain from its first record: the first record that does not follow from the one before. */
export function verifyAuditChain(lines: readonly string[]): ChainCheck {
  let prev = GENESIS;
  let seq = 0;
  const records = lines.filter((l) => l.trim() !== '');
  for (const [i, line] of records.entries()) {
    const at = i + 1;
    let r: AuditRecord;
    try {
      r = JSON.parse(line) as AuditRecord;
    } catch {
      return { ok: false, records: records.length, at, problem: `line ${at} is not a record` };
    }
    const { hash, ...body } = r;
    if (r.seq !== seq + 1)
      return {
        ok: false,
        records: records.length,
        at,
        problem: `record ${at} has seq ${r.seq}, expected ${seq + 1}: a record is missing or out of place`,
      };
    if (r.prev !== prev)
      return {
        ok: false,
        records: records.length,
        at,
        problem: `record ${r.seq} does not follow the one before it (its prev hash differs)`,
      };
    if (hashOf(body) !== hash)
      return {
        ok: false,
        records: records.length,
        at,
        problem: `record ${r.seq} was changed after it was written (its hash differs)`,
      };
    prev = hash;
    seq = r.seq;
  }
  return { ok: true, records: records.length };
}
