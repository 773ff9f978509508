// The audit trail in PostgreSQL: one table that every process appends to (API replicas, workers, the codec server),
// one hash chain. An append takes a transaction-scoped advisory lock, reads the tail, computes the next records with
// chainRecord and inserts them, so writers in any number of processes keep one chain (and the primary key on seq refuses a
// fork should the lock ever be bypassed). Concurrent appends of one process share one transaction (group commit).
//
// The application's role may only INSERT and SELECT: the table belongs to another role (prepareAuditStore, run by
// a deployer or the local stack), UPDATE, DELETE and TRUNCATE are refused to the writer, and triggers refuse them
// even to the owner until it disables them on purpose; an edit made anyway breaks the chain (verifyAuditTable).
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { Client, Pool, type PoolClient, type PoolConfig } from 'pg';
import type { Checkpoint } from './checkpoints';
import { isUnavailable, retryWhileUnavailable, StoreUnavailableError, type RetryPolicy } from './store-unavailable';
import { ChainVerifier, type ChainCheck } from './chain';
import {
  chainRecord,
  GENESIS,
  type AuditEvent,
  type AuditPage,
  type AuditQuery,
  type AuditRecord,
  type AuditTrail,
} from './types';

/** The table, schema-qualified: a table of the same name the writer made elsewhere on its search_path is never used. */
export const AUDIT_TABLE = 'public.audit_trail';
/** The advisory lock that serializes appends (any constant every writer shares; the inbox's is ...551). */
export const AUDIT_APPEND_LOCK_KEY = 7_311_420_552;
/** The advisory lock of prepareAuditStore, so two deployers at once do not trip over each other. */
const PREPARE_LOCK_KEY = 7_311_420_553;
/** The most records one transaction appends. */
const MAX_BATCH = 500;
/** Records per query when a trail is read through (an export, a check). */
const READ_PAGE = 1_000;

/** The table, its indexes and its append-only triggers; idempotent (run by the owner). */
export const AUDIT_TABLE_SQL = `
CREATE TABLE IF NOT EXISTS ${AUDIT_TABLE} (
  -- The record's own seq: 1, 2, 3... without gaps.
  seq bigint PRIMARY KEY CHECK (seq > 0),
  -- at, action, subject, prev and hash repeat the record's fields (filters, the tail); the record is what is verified.
  at timestamptz NOT NULL,
  action text NOT NULL,
  subject text NOT NULL,
  prev text NOT NULL UNIQUE,
  hash text NOT NULL UNIQUE,
  -- The AuditRecord as JSON, exactly as hashed and written (json keeps the text as it was given).
  record json NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_trail_subject ON ${AUDIT_TABLE} (subject, seq);
CREATE INDEX IF NOT EXISTS audit_trail_action ON ${AUDIT_TABLE} (action, seq);
CREATE INDEX IF NOT EXISTS audit_trail_at ON ${AUDIT_TABLE} (at);
CREATE OR REPLACE FUNCTION public.audit_trail_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'the audit trail is append-only' USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE OR REPLACE TRIGGER audit_trail_no_change BEFORE UPDATE OR DELETE ON ${AUDIT_TABLE}
  FOR EACH ROW EXECUTE FUNCTION public.audit_trail_append_only();
CREATE OR REPLACE TRIGGER audit_trail_no_truncate BEFORE TRUNCATE ON ${AUDIT_TABLE}
  FOR EACH STATEMENT EXECUTE FUNCTION public.audit_trail_append_only();
REVOKE ALL ON ${AUDIT_TABLE} FROM PUBLIC;
REVOKE ALL ON FUNCTION public.audit_trail_append_only() FROM PUBLIC;
`;

const ROLE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** The grants of the writer role, for a role name already checked against ROLE_NAME. */
function writerGrantsSql(role: string): string {
  const r = `"${role}"`;
  return `
REVOKE ALL ON ${AUDIT_TABLE} FROM ${r};
GRANT SELECT, INSERT ON ${AUDIT_TABLE} TO ${r};
GRANT USAGE ON SCHEMA public TO ${r};
`;
}

/**
 * The SQL prepareAuditStore runs, for a deployer who runs it by hand (`npm run audit-trail:verify -- --sql`): the
 * table, then the writer role with its password as a SCRAM verifier (the password itself never reaches the server).
 */
export function auditStoreSql(o: { writerRole: string; passwordVerifier?: string }): string {
  checkRoleName(o.writerRole);
  const role = o.writerRole;
  return [
    '-- As the owner of the audit trail (not the role the engine connects as). Safe to run again.',
    AUDIT_TABLE_SQL.trim(),
    '-- The writer: made the first time (it cannot sign in until it has a password), and allowed to connect here.',
    'DO $$ BEGIN',
    `  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '${role}') THEN CREATE ROLE "${role}" LOGIN; END IF;`,
    `  EXECUTE format('GRANT CONNECT ON DATABASE %I TO %I', current_database(), '${role}');`,
    'END $$;',
    o.passwordVerifier
      ? `ALTER ROLE "${role}" PASSWORD '${o.passwordVerifier}';`
      : `-- Its password, in psql (sent as a SCRAM verifier, never in clear): \\password ${role}`,
    writerGrantsSql(role).trim(),
  ].join('\n');
}

function checkRoleName(role: string): void {
  if (!ROLE_NAME.test(role)) throw new Error(`the writer role must match ${ROLE_NAME.source}`);
}

/**
 * A SCRAM-SHA-256 verifier of a password, as PostgreSQL stores it: the server is given this, never the password (a
 * statement log or pg_stat_activity would otherwise show it).
 */
export function scramVerifier(password: string, salt = randomBytes(16), iterations = 4096): string {
  const salted = pbkdf2Sync(password, salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest('base64');
  const serverKey = createHmac('sha256', salted).update('Server Key').digest('base64');
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey}:${serverKey}`;
}

export interface PrepareAuditStoreOptions {
  /** A role that may create the table and roles (the cluster's owner, or a CREATEROLE role): it owns the table. */
  ownerUrl: string;
  /** The role the engine's processes connect as: INSERT and SELECT only. Created when missing. */
  writerRole: string;
  /** Its password (printable ASCII, at least 12 characters); set again on every call. */
  writerPassword: string;
}

export interface PreparedAuditStore {
  /** The table, schema-qualified. */
  table: string;
  writerRole: string;
  /** The table was created by this call (false: it was there). */
  tableCreated: boolean;
  /** The role was created by this call (false: it existed; its password was set again). */
  roleCreated: boolean;
  /** ownerUrl with the writer's name and password: AUDIT_DATABASE_URL for the engine. A secret: never log it. */
  writerUrl: string;
}

/**
 * Creates the audit table (idempotent) as the owner's role, creates or updates the writer role (LOGIN, password) and
 * grants it exactly SELECT and INSERT on the table, revoking the rest. Refuses a writer that is the owner, a
 * superuser, or a member of the owner's role (each could change the trail).
 */
export async function prepareAuditStore(o: PrepareAuditStoreOptions): Promise<PreparedAuditStore> {
  checkRoleName(o.writerRole);
  if (!/^[\x21-\x7e]{12,}$/.test(o.writerPassword)) {
    throw new Error('the writer password must be at least 12 printable ASCII characters without spaces');
  }
  const client = new Client({ connectionString: o.ownerUrl, application_name: 'journey audit prepare' });
  await client.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [PREPARE_LOCK_KEY]);
    const owner = (await client.query<{ owner: string }>('SELECT current_user AS owner')).rows[0]!.owner;
    if (owner === o.writerRole) throw new Error('the writer role must not be the role that owns the audit trail');
    const existed = (
      await client.query<{ exists: boolean }>('SELECT to_regclass($1::text) IS NOT NULL AS exists', [AUDIT_TABLE])
    ).rows[0]!.exists;
    await client.query(AUDIT_TABLE_SQL);
    const role = (
      await client.query<{ rolsuper: boolean; rolbypassrls: boolean }>(
        'SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = $1',
        [o.writerRole],
      )
    ).rows[0];
    const verifier = client.escapeLiteral(scramVerifier(o.writerPassword));
    if (role) {
      if (role.rolsuper || role.rolbypassrls) {
        throw new Error(
          `the role ${o.writerRole} is a superuser (or bypasses row security): it could change the trail`,
        );
      }
      await client.query(`ALTER ROLE "${o.writerRole}" LOGIN PASSWORD ${verifier}`);
    } else {
      await client.query(`CREATE ROLE "${o.writerRole}" LOGIN PASSWORD ${verifier}`);
    }
    const member = (
      await client.query<{ member: boolean }>(
        `SELECT pg_has_role($1, r.relowner, 'MEMBER') AS member FROM pg_class r WHERE r.oid = to_regclass($2::text)`,
        [o.writerRole, AUDIT_TABLE],
      )
    ).rows[0]!.member;
    if (member)
      throw new Error(`the role ${o.writerRole} is a member of the table owner's role: it could change the trail`);
    await client.query(writerGrantsSql(o.writerRole));
    await client.query('COMMIT');
    const writerUrl = new URL(o.ownerUrl);
    writerUrl.username = o.writerRole;
    writerUrl.password = encodeURIComponent(o.writerPassword);
    return {
      table: AUDIT_TABLE,
      writerRole: o.writerRole,
      tableCreated: !existed,
      roleCreated: !role,
      writerUrl: writerUrl.toString(),
    };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The store refused: what a caller may show (never the URL, never a record's content). */
export class AuditStoreError extends Error {
  override name = 'AuditStoreError';
}

export interface PostgresAuditLogOptions {
  /** postgres://writer:password@host:port/database (a secret: never logged). */
  connectionString: string;
  /** Connections of this process (default 4): appends share one at a time, reads take the others. */
  poolSize?: number;
  /** A statement (the wait for the append lock included) that takes longer fails (default 10 s). */
  statementTimeoutMs?: number;
  /** Refuse a role that may also UPDATE, DELETE or TRUNCATE the table, or owns it (default true). */
  requireAppendOnlyRole?: boolean;
  /** The records' time; by default the database's clock, one clock for every writer (seq and time agree). */
  now?: () => Date;
  /** Shown in pg_stat_activity. */
  applicationName?: string;
  /**
   * How an append that finds the database unavailable (a failover) is tried again before it is refused as
   * StoreUnavailableError: 4 tries within 2 s by default. An append whose COMMIT went out unanswered is not tried
   * again (it may be in the table): it is refused at once, and the request that asked for it with it.
   */
  retry?: RetryPolicy;
}

interface Pending {
  event: AuditEvent;
  resolve: (r: AuditRecord) => void;
  reject: (err: unknown) => void;
}

const failed = (what: string, err: unknown) => {
  const code = (err as { code?: string } | undefined)?.code;
  const message = `${what}: PostgreSQL did not take it${code ? ` (${code})` : ''}`;
  if (err instanceof StoreUnavailableError) return err;
  if (isUnavailable(err))
    return new StoreUnavailableError('audit-trail', `the audit trail is unavailable: ${message}`, { cause: err });
  return new AuditStoreError(message, { cause: err });
};

/**
 * A COMMIT sent and not answered: the records may be in the table, so the append is not tried again (the driver's
 * error is kept aside, not as the cause, so that the retry does not read it as unavailability to try again).
 */
class CommitInDoubt extends Error {
  override name = 'CommitInDoubt';
  constructor(readonly driverError: unknown) {
    super('the commit of audit records went unanswered');
  }
}

export class PostgresAuditLog implements AuditTrail {
  readonly kind = 'postgres' as const;
  readonly pool: Pool;
  readonly #o: PostgresAuditLogOptions;
  #queue: Pending[] = [];
  #writing: Promise<void> | undefined;

  constructor(options: PostgresAuditLogOptions) {
    this.#o = options;
    const timeout = options.statementTimeoutMs ?? 10_000;
    const config: PoolConfig = {
      connectionString: options.connectionString,
      max: options.poolSize ?? 4,
      connectionTimeoutMillis: 5_000,
      statement_timeout: timeout,
      query_timeout: timeout + 1_000,
      application_name: options.applicationName ?? 'journey audit',
    };
    this.pool = new Pool(config);
    // An idle connection that breaks (PostgreSQL restarted) leaves the pool; the next query connects again.
    this.pool.on('error', () => undefined);
  }

  /** The table is there, the role may append and read it, and (by default) nothing more. */
  async init(): Promise<void> {
    let row: Record<string, boolean | null> | undefined;
    try {
      row = (
        await this.pool.query<Record<string, boolean | null>>(
          `SELECT t.oid IS NOT NULL AS present,
             has_table_privilege(t.oid, 'INSERT') AS insert,
             has_table_privilege(t.oid, 'SELECT') AS select,
             has_table_privilege(t.oid, 'UPDATE') AS update,
             has_table_privilege(t.oid, 'DELETE') AS delete,
             has_table_privilege(t.oid, 'TRUNCATE') AS truncate,
             (SELECT pg_has_role(current_user, c.relowner, 'MEMBER') FROM pg_class c WHERE c.oid = t.oid) AS owner
           FROM (SELECT to_regclass($1::text)::oid AS oid) t`,
          [AUDIT_TABLE],
        )
      ).rows[0];
    } catch (err) {
      throw failed('the audit trail could not be checked', err);
    }
    if (!row?.present) {
      throw new AuditStoreError(
        `the audit table ${AUDIT_TABLE} does not exist: prepare it as its owner (prepareAuditStore, or the SQL of ` +
          '`npm run audit-trail:verify -- --sql`)',
      );
    }
    if (!row.insert || !row.select) {
      throw new AuditStoreError(`the audit store's role may not INSERT into and SELECT from ${AUDIT_TABLE}`);
    }
    const more = (['update', 'delete', 'truncate', 'owner'] as const).filter((k) => row[k]);
    if (more.length > 0 && this.#o.requireAppendOnlyRole !== false) {
      throw new AuditStoreError(
        `the audit store's role may change the trail (${more.map((k) => (k === 'owner' ? 'it owns the table' : k.toUpperCase())).join(', ')}): ` +
          'connect as a role that may only INSERT and SELECT (prepareAuditStore makes one)',
      );
    }
  }

  append(event: AuditEvent): Promise<AuditRecord> {
    return new Promise<AuditRecord>((resolve, reject) => {
      this.#queue.push({ event, resolve, reject });
      this.#kick();
    });
  }

  /** One writer loop per process: each turn writes what queued meanwhile, in one transaction. */
  #kick(): void {
    if (this.#writing) return;
    this.#writing = (async () => {
      while (this.#queue.length > 0) {
        const batch = this.#queue.splice(0, MAX_BATCH);
        try {
          const events = batch.map((p) => p.event);
          const records = await retryWhileUnavailable(() => this.#write(events), this.#o.retry);
          batch.forEach((p, i) => p.resolve(records[i]!));
        } catch (err) {
          const cause = err instanceof CommitInDoubt ? err.driverError : err;
          const error = cause instanceof AuditStoreError ? cause : failed('an audit record', cause);
          for (const p of batch) p.reject(error);
        }
      }
    })().finally(() => {
      this.#writing = undefined;
      if (this.#queue.length > 0) this.#kick();
    });
  }

  async #write(events: AuditEvent[]): Promise<AuditRecord[]> {
    const client: PoolClient = await this.pool.connect();
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock($1)', [AUDIT_APPEND_LOCK_KEY]);
      const tail = (
        await client.query<{ now: Date; seq: string | null; hash: string | null }>(
          `SELECT clock_timestamp() AS now, t.seq, t.hash
             FROM (SELECT 1) one LEFT JOIN LATERAL
               (SELECT seq, hash FROM ${AUDIT_TABLE} ORDER BY seq DESC LIMIT 1) t ON true`,
        )
      ).rows[0]!;
      const at = (this.#o.now?.() ?? tail.now).toISOString();
      let seq = tail.seq === null ? 0 : Number(tail.seq);
      let prev = tail.hash ?? GENESIS;
      const records = events.map((event) => {
        const record = chainRecord(event, { seq: ++seq, at, prev });
        prev = record.hash;
        return record;
      });
      await client.query(
        `INSERT INTO ${AUDIT_TABLE} (seq, at, action, subject, prev, hash, record)
           SELECT * FROM unnest($1::bigint[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::text[],
             $7::json[])`,
        [
          records.map((r) => r.seq),
          records.map((r) => r.at),
          records.map((r) => r.action),
          records.map((r) => r.subject),
          records.map((r) => r.prev),
          records.map((r) => r.hash),
          records.map((r) => JSON.stringify(r)),
        ],
      );
      try {
        await client.query('COMMIT');
      } catch (err) {
        // Refused by the server (it answered): nothing was written. Unanswered: it may have been.
        if (isUnavailable(err)) throw new CommitInDoubt(err);
        throw err;
      }
      return records;
    } catch (err) {
      await client.query('ROLLBACK').catch((e: unknown) => {
        broken = e instanceof Error ? e : new Error('rollback failed');
      });
      throw err;
    } finally {
      // A connection whose rollback failed is dropped rather than handed to the next append.
      client.release(broken);
    }
  }

  async read(query: AuditQuery, limit: number): Promise<AuditPage> {
    const rows = await this.#page(query, limit + 1);
    const records = rows.slice(0, limit).map((r) => JSON.parse(r.record) as AuditRecord);
    return { records, nextAfter: rows.length > limit ? (records.at(-1)?.seq ?? null) : null };
  }

  async *records(query: AuditQuery): AsyncIterable<AuditRecord> {
    let after = query.after;
    for (;;) {
      const rows = await this.#page({ ...query, ...(after !== undefined ? { after } : {}) }, READ_PAGE);
      for (const row of rows) yield JSON.parse(row.record) as AuditRecord;
      if (rows.length < READ_PAGE) return;
      after = Number(rows.at(-1)!.seq);
    }
  }

  async #page(q: AuditQuery, limit: number): Promise<{ seq: string; record: string }[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (sql: string, value: unknown) => {
      params.push(value);
      where.push(sql.replace('?', `$${params.length}`));
    };
    if (q.after !== undefined) add('seq > ?', q.after);
    if (q.upTo !== undefined) add('seq <= ?', q.upTo);
    if (q.subject !== undefined) add('subject = ?', q.subject);
    if (q.action !== undefined) add('action = ?', q.action);
    if (q.since !== undefined) add('at >= ?', q.since.toISOString());
    if (q.until !== undefined) add('at < ?', q.until.toISOString());
    params.push(limit);
    try {
      const res = await this.pool.query<{ seq: string; record: string }>(
        `SELECT seq, record::text AS record FROM ${AUDIT_TABLE}
           ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY seq LIMIT $${params.length}`,
        params,
      );
      return res.rows;
    } catch (err) {
      throw failed('the audit trail could not be read', err);
    }
  }

  /** The table's last record (seq 0 and the genesis hash when empty): what a checkpoint anchors. */
  async head(): Promise<{ seq: number; hash: string }> {
    await this.#writing;
    try {
      const r = await this.pool.query<{ seq: string; hash: string }>(
        `SELECT seq, hash FROM ${AUDIT_TABLE} ORDER BY seq DESC LIMIT 1`,
      );
      const row = r.rows[0];
      return row ? { seq: Number(row.seq), hash: row.hash } : { seq: 0, hash: GENESIS };
    } catch (err) {
      throw failed('the audit trail could not be read', err);
    }
  }

  async close(): Promise<void> {
    await this.#writing;
    await this.pool.end();
  }
}

/**
 * Checks the table's chain from seq 1, a page at a time, and that each row's columns say what its record says (a
 * column edited alone would make the filters lie). `onRecord` gets each record's JSON line, as written (an export).
 */
export async function verifyAuditTable(
  connectionString: string,
  o: { onRecord?: (line: string) => void | Promise<void>; checkpoints?: readonly Checkpoint[] } = {},
): Promise<ChainCheck> {
  const client = new Client({ connectionString, application_name: 'journey audit verify' });
  await client.connect();
  const verifier = new ChainVerifier(o.checkpoints ? { checkpoints: o.checkpoints } : {});
  let columnProblem: { at: number; problem: string } | undefined;
  let n = 0;
  try {
    let after = 0;
    for (;;) {
      const { rows } = await client.query<AuditRow>(
        `SELECT seq, at, action, subject, prev, hash, record::text AS record FROM ${AUDIT_TABLE}
           WHERE seq > $1 ORDER BY seq LIMIT $2`,
        [after, READ_PAGE],
      );
      for (const row of rows) {
        n++;
        await o.onRecord?.(row.record);
        verifier.add(row.record);
        if (!columnProblem) {
          const differs = columnsDiffer(row);
          if (differs)
            columnProblem = { at: n, problem: `row ${row.seq}: its ${differs} column differs from its record` };
        }
      }
      if (rows.length < READ_PAGE) break;
      after = Number(rows.at(-1)!.seq);
    }
  } finally {
    await client.end().catch(() => undefined);
  }
  const chain = verifier.result();
  if (!chain.ok) return chain;
  return columnProblem ? { ok: false, records: chain.records, ...columnProblem } : chain;
}

/** A row of the table as the check reads it: the columns, and the record as written. */
interface AuditRow {
  seq: string;
  at: Date;
  action: string;
  subject: string;
  prev: string;
  hash: string;
  record: string;
}

function columnsDiffer(row: AuditRow): string | undefined {
  let r: AuditRecord;
  try {
    r = JSON.parse(row.record) as AuditRecord;
  } catch {
    return undefined; // the chain check names it
  }
  if (String(r.seq) !== row.seq) return 'seq';
  if (Date.parse(r.at) !== row.at.getTime()) return 'at';
  if (r.action !== row.action) return 'action';
  if (r.subject !== row.subject) return 'subject';
  if (r.prev !== row.prev) return 'prev';
  if (r.hash !== row.hash) return 'hash';
  return undefined;
}
