// What every audit store is and promises: the record (who, by which roles, what, when, the outcome; never a payload),
// its hash over the record before it, the query a trail is read by, and the AuditTrail interface that the file store
// (file.ts) and the PostgreSQL table (postgres.ts) implement. The chain's check is chain.ts.
import { createHash } from 'node:crypto';

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

/** The record an event becomes at its place in the chain: numbered, timed, linked to the one before, hashed. */
export function chainRecord(event: AuditEvent, place: { seq: number; at: string; prev: string }): AuditRecord {
  const body: Omit<AuditRecord, 'hash'> = {
    ...place,
    action: event.action,
    subject: event.subject,
    roles: [...event.roles],
    outcome: event.outcome,
    ...(event.details ? { details: event.details } : {}),
  };
  return { ...body, hash: hashOf(body) };
}

/**
 * A value from a request (a header, a name) as it may go on the record: letters, digits and `._:@/-` kept, anything
 * else replaced by `_`, at most `max` characters (a longer one cut, saying how long it was). Empty for none.
 */
export function boundedLabel(value: unknown, max = 64): string {
  const text = typeof value === 'string' ? value : Array.isArray(value) ? value.join(',') : '';
  const clean = text.replace(/[^A-Za-z0-9._:@/-]/g, '_');
  return clean.length <= max ? clean : `${clean.slice(0, max)}…(${clean.length} characters)`;
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
  /** The last record's seq and hash (0 and GENESIS when empty): what a checkpoint anchors. */
  head(): Promise<{ seq: number; hash: string }>;
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
