// The patient key store in PostgreSQL, shared by every process of a deployment: the wrapped keys, the tombstones of the
// destroyed ones, the key ring's settings and each journey's patient, in four tables created at start when missing (as the inbox's are).
// The engine's role needs SELECT, INSERT, UPDATE and DELETE on them, nothing more; a deployer may create them
// beforehand as another role with PATIENT_KEY_TABLES_SQL and grant those four.
import { Pool, type PoolClient, type PoolConfig } from 'pg';
import type { PatientRef } from './envelope';
import {
  PatientKeyStoreError,
  type BindResult,
  type ErasedKey,
  type ErasureRequest,
  type JourneyBinding,
  type PatientKeyStore,
  type WrappedKey,
} from './types';

export const PATIENT_KEYS_TABLE = 'public.patient_keys';
export const PATIENT_KEY_ERASURES_TABLE = 'public.patient_key_erasures';
export const PATIENT_KEY_SETTINGS_TABLE = 'public.patient_key_settings';
export const PATIENT_JOURNEYS_TABLE = 'public.patient_journeys';
export const PATIENT_ERASURE_REQUESTS_TABLE = 'public.patient_erasure_requests';
const TABLES = [
  PATIENT_KEYS_TABLE,
  PATIENT_KEY_ERASURES_TABLE,
  PATIENT_KEY_SETTINGS_TABLE,
  PATIENT_JOURNEYS_TABLE,
  PATIENT_ERASURE_REQUESTS_TABLE,
];
/** The advisory lock of the tables' creation (the inbox's migrations hold ...551, the audit trail ...552 and ...553). */
const CREATE_LOCK_KEY = 7_311_420_554;

/** The tables; idempotent. */
export const PATIENT_KEY_TABLES_SQL = `
CREATE TABLE IF NOT EXISTS ${PATIENT_KEYS_TABLE} (
  -- A keyed hash of the clinic and the patient's e-mail, never the patient in clear.
  patient_ref text PRIMARY KEY,
  dek_id text NOT NULL UNIQUE,
  -- The master key that wrapped it, and iv | wrapped key | tag (AES-256-GCM).
  wrap_key_id text NOT NULL,
  wrapped bytea NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS patient_keys_wrap_key ON ${PATIENT_KEYS_TABLE} (wrap_key_id);
CREATE TABLE IF NOT EXISTS ${PATIENT_KEY_ERASURES_TABLE} (
  -- A destroyed key: which, whose, by which erasure, when. No key, no patient data.
  dek_id text PRIMARY KEY,
  patient_ref text NOT NULL,
  erasure_id text NOT NULL,
  erased_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS patient_key_erasures_patient ON ${PATIENT_KEY_ERASURES_TABLE} (patient_ref);
CREATE TABLE IF NOT EXISTS ${PATIENT_KEY_SETTINGS_TABLE} (
  name text PRIMARY KEY,
  value text NOT NULL
);
CREATE TABLE IF NOT EXISTS ${PATIENT_JOURNEYS_TABLE} (
  -- A journey's workflow id, the patient its payloads are sealed for and the data key they are sealed under; set once.
  workflow_id text PRIMARY KEY,
  patient_ref text NOT NULL,
  bound_at timestamptz NOT NULL,
  dek_id text,
  -- Until when the start that bound it may still reach Temporal (NULL once it answered).
  starting_until timestamptz
);
CREATE INDEX IF NOT EXISTS patient_journeys_patient ON ${PATIENT_JOURNEYS_TABLE} (patient_ref, bound_at);
CREATE TABLE IF NOT EXISTS ${PATIENT_ERASURE_REQUESTS_TABLE} (
  -- Who asked to erase which patient (by ref), when, and what it covered. No patient data.
  erasure_id text PRIMARY KEY,
  clinic_id text NOT NULL,
  patient_ref text NOT NULL,
  request_key text NOT NULL,
  requested_by text NOT NULL,
  requested_roles text[] NOT NULL,
  requested_at timestamptz NOT NULL,
  status text NOT NULL,
  journeys text[] NOT NULL,
  completed_at timestamptz,
  -- Which replica carries the request out, until when (it renews while it works): one at a time.
  claimed_by text,
  claimed_until timestamptz,
  UNIQUE (clinic_id, request_key)
);
CREATE INDEX IF NOT EXISTS patient_erasure_requests_pending ON ${PATIENT_ERASURE_REQUESTS_TABLE} (requested_at)
  WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS patient_erasure_requests_patient_pending ON ${PATIENT_ERASURE_REQUESTS_TABLE} (patient_ref)
  WHERE status = 'pending';
`;

/**
 * What tables made before journeys named their data key lack (each statement idempotent); run when a column is
 * missing, by a role that owns the tables.
 */
export const PATIENT_KEY_TABLES_UPGRADE_SQL = `
ALTER TABLE ${PATIENT_JOURNEYS_TABLE} ADD COLUMN IF NOT EXISTS dek_id text;
ALTER TABLE ${PATIENT_JOURNEYS_TABLE} ADD COLUMN IF NOT EXISTS starting_until timestamptz;
CREATE INDEX IF NOT EXISTS patient_erasure_requests_patient_pending ON ${PATIENT_ERASURE_REQUESTS_TABLE} (patient_ref)
  WHERE status = 'pending';
ALTER TABLE ${PATIENT_ERASURE_REQUESTS_TABLE} ADD COLUMN IF NOT EXISTS claimed_by text;
ALTER TABLE ${PATIENT_ERASURE_REQUESTS_TABLE} ADD COLUMN IF NOT EXISTS claimed_until timestamptz;
`;

/** Columns that later versions added: [table, column]; a table lacking one is upgraded at start. */
const ADDED_COLUMNS: ReadonlyArray<readonly [string, string]> = [
  [PATIENT_JOURNEYS_TABLE, 'dek_id'],
  [PATIENT_JOURNEYS_TABLE, 'starting_until'],
  [PATIENT_ERASURE_REQUESTS_TABLE, 'claimed_by'],
  [PATIENT_ERASURE_REQUESTS_TABLE, 'claimed_until'],
];

/** The per-patient lock that makes a binding and an erasure request of the same patient happen one after the other. */
const PATIENT_LOCK_SQL = 'SELECT pg_advisory_xact_lock(73114205, hashtext($1))';

/**
 * A binding's data key: the one it names, else (a binding from before journeys named theirs) the key the patient had
 * when it was made: the first destroyed after it, else the patient's key now.
 */
const BINDING_COLUMNS = `j.workflow_id, j.patient_ref, j.bound_at, j.starting_until,
  COALESCE(j.dek_id,
    (SELECT e.dek_id FROM ${PATIENT_KEY_ERASURES_TABLE} e WHERE e.patient_ref = j.patient_ref AND e.erased_at > j.bound_at
       ORDER BY e.erased_at LIMIT 1),
    (SELECT k.dek_id FROM ${PATIENT_KEYS_TABLE} k WHERE k.patient_ref = j.patient_ref)) AS dek_id`;

export interface PostgresPatientKeyStoreOptions {
  /** postgres://user:password@host:port/database (a secret: never logged). */
  connectionString: string;
  poolSize?: number;
  statementTimeoutMs?: number;
  applicationName?: string;
}

interface KeyRow {
  patient_ref: PatientRef;
  dek_id: string;
  wrap_key_id: string;
  wrapped: Buffer;
  created_at: Date;
}

interface ErasureRow {
  dek_id: string;
  patient_ref: PatientRef;
  erasure_id: string;
  erased_at: Date;
}

interface RequestRow {
  erasure_id: string;
  clinic_id: string;
  patient_ref: PatientRef;
  request_key: string;
  requested_by: string;
  requested_roles: string[];
  requested_at: Date;
  status: 'pending' | 'done';
  journeys: string[];
  completed_at: Date | null;
}

const toRequest = (r: RequestRow): ErasureRequest => ({
  erasureId: r.erasure_id,
  clinicId: r.clinic_id,
  patientRef: r.patient_ref,
  requestKey: r.request_key,
  requestedBy: r.requested_by,
  requestedRoles: r.requested_roles,
  requestedAt: r.requested_at.toISOString(),
  status: r.status,
  journeys: r.journeys,
  ...(r.completed_at ? { completedAt: r.completed_at.toISOString() } : {}),
});

const failed = (what: string, err: unknown) => {
  if (err instanceof PatientKeyStoreError) return err;
  const code = (err as { code?: string } | undefined)?.code;
  return new PatientKeyStoreError(`${what}: PostgreSQL did not take it${code ? ` (${code})` : ''}`, { cause: err });
};

interface BindingRow {
  workflow_id: string;
  patient_ref: PatientRef;
  bound_at: Date;
  starting_until: Date | null;
  dek_id: string | null;
}

const toBinding = (r: BindingRow): JourneyBinding => ({
  workflowId: r.workflow_id,
  patientRef: r.patient_ref,
  boundAt: r.bound_at.toISOString(),
  ...(r.dek_id ? { dekId: r.dek_id } : {}),
  ...(r.starting_until ? { startingUntil: r.starting_until.toISOString() } : {}),
});

const toErased = (r: ErasureRow): ErasedKey => ({
  dekId: r.dek_id,
  patientRef: r.patient_ref,
  erasureId: r.erasure_id,
  erasedAt: r.erased_at.toISOString(),
});

const toWrapped = (r: KeyRow): WrappedKey => ({
  patientRef: r.patient_ref,
  dekId: r.dek_id,
  wrapKeyId: r.wrap_key_id,
  wrapped: r.wrapped,
  createdAt: r.created_at.toISOString(),
});

export class PostgresPatientKeyStore implements PatientKeyStore {
  readonly kind = 'postgres' as const;
  readonly readOnly = false;
  readonly pool: Pool;

  constructor(options: PostgresPatientKeyStoreOptions) {
    const timeout = options.statementTimeoutMs ?? 5_000;
    const config: PoolConfig = {
      connectionString: options.connectionString,
      max: options.poolSize ?? 4,
      connectionTimeoutMillis: 5_000,
      statement_timeout: timeout,
      query_timeout: timeout + 1_000,
      application_name: options.applicationName ?? 'journey patient keys',
    };
    this.pool = new Pool(config);
    // An idle connection that breaks (PostgreSQL restarted) leaves the pool; the next query connects again.
    this.pool.on('error', () => undefined);
  }

  /** Creates the tables when one is missing, then checks the role may SELECT, INSERT, UPDATE and DELETE each. */
  async init(): Promise<void> {
    try {
      const present = await this.#present();
      if (present.some((p) => !p)) await this.#underCreateLock(PATIENT_KEY_TABLES_SQL);
      await this.#upgrade();
      const { rows } = await this.pool.query<{ t: string; missing: string[] }>(
        `SELECT t, array_remove(ARRAY[
             CASE WHEN has_table_privilege(t, 'SELECT') THEN NULL ELSE 'SELECT' END,
             CASE WHEN has_table_privilege(t, 'INSERT') THEN NULL ELSE 'INSERT' END,
             CASE WHEN has_table_privilege(t, 'UPDATE') THEN NULL ELSE 'UPDATE' END,
             CASE WHEN has_table_privilege(t, 'DELETE') THEN NULL ELSE 'DELETE' END], NULL) AS missing
           FROM unnest($1::text[]) t`,
        [TABLES],
      );
      const short = rows.filter((r) => r.missing.length > 0);
      if (short.length > 0) {
        throw new PatientKeyStoreError(
          `the patient key store's role may not ${short.map((r) => `${r.missing.join(', ')} on ${r.t}`).join('; ')}`,
        );
      }
    } catch (err) {
      throw failed('the patient key tables could not be prepared', err);
    }
  }

  /** Tables from before journeys named their data key or requests their holder gain the columns (under the creation lock). */
  async #upgrade(): Promise<void> {
    const { rows } = await this.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM unnest($1::text[], $2::text[]) c(t, col)
         JOIN pg_attribute a ON a.attrelid = to_regclass(c.t) AND a.attname = c.col AND NOT a.attisdropped`,
      [ADDED_COLUMNS.map(([t]) => t), ADDED_COLUMNS.map(([, c]) => c)],
    );
    if (rows[0]?.n === ADDED_COLUMNS.length) return;
    await this.#underCreateLock(PATIENT_KEY_TABLES_UPGRADE_SQL).catch((err: unknown) => {
      throw new PatientKeyStoreError(
        "the patient key tables need upgrading (PATIENT_KEY_TABLES_UPGRADE_SQL) and this role could not: run it as the tables' owner",
        { cause: err },
      );
    });
  }

  /** Runs DDL in a transaction holding the tables' creation lock (one process at a time). */
  async #underCreateLock(sql: string): Promise<void> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock($1)', [CREATE_LOCK_KEY]);
      await client.query(sql);
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  /** Runs `work` in a transaction holding the patient's lock. */
  async #underPatientLock<T>(what: string, patientRef: PatientRef, work: (c: PoolClient) => Promise<T>): Promise<T> {
    let client: PoolClient | undefined;
    try {
      client = await this.pool.connect();
      await client.query('BEGIN');
      await client.query(PATIENT_LOCK_SQL, [patientRef]);
      const out = await work(client);
      await client.query('COMMIT');
      return out;
    } catch (err) {
      await client?.query('ROLLBACK').catch(() => undefined);
      throw failed(what, err);
    } finally {
      client?.release();
    }
  }

  async #present(): Promise<boolean[]> {
    const { rows } = await this.pool.query<{ present: boolean }>(
      'SELECT to_regclass(t) IS NOT NULL AS present FROM unnest($1::text[]) WITH ORDINALITY u(t, n) ORDER BY n',
      [TABLES],
    );
    return rows.map((r) => r.present);
  }

  async #query<R extends object>(what: string, sql: string, params: unknown[]): Promise<R[]> {
    try {
      return (await this.pool.query<R>(sql, params)).rows;
    } catch (err) {
      throw failed(what, err);
    }
  }

  async setting(name: string): Promise<string | undefined> {
    const rows = await this.#query<{ value: string }>(
      'a patient key setting could not be read',
      `SELECT value FROM ${PATIENT_KEY_SETTINGS_TABLE} WHERE name = $1`,
      [name],
    );
    return rows[0]?.value;
  }

  async settleSetting(name: string, value: string): Promise<string> {
    // The insert loses to a concurrent one (ON CONFLICT); the select then reads the winner's.
    await this.#query(
      'a patient key setting could not be written',
      `INSERT INTO ${PATIENT_KEY_SETTINGS_TABLE} (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`,
      [name, value],
    );
    return (await this.setting(name))!;
  }

  async get(patientRef: PatientRef): Promise<WrappedKey | undefined> {
    const rows = await this.#query<KeyRow>(
      'a patient key could not be read',
      `SELECT patient_ref, dek_id, wrap_key_id, wrapped, created_at FROM ${PATIENT_KEYS_TABLE} WHERE patient_ref = $1`,
      [patientRef],
    );
    return rows[0] ? toWrapped(rows[0]) : undefined;
  }

  async insert(key: WrappedKey): Promise<WrappedKey> {
    const inserted = await this.#query<{ dek_id: string }>(
      'a patient key could not be stored',
      `INSERT INTO ${PATIENT_KEYS_TABLE} (patient_ref, dek_id, wrap_key_id, wrapped, created_at)
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (patient_ref) DO NOTHING RETURNING dek_id`,
      [key.patientRef, key.dekId, key.wrapKeyId, key.wrapped, key.createdAt],
    );
    if (inserted.length > 0) return key;
    const held = await this.get(key.patientRef);
    if (!held) throw new PatientKeyStoreError('a patient key could not be stored: it was destroyed meanwhile');
    return held;
  }

  async erased(dekId: string): Promise<ErasedKey | undefined> {
    const rows = await this.#query<ErasureRow>(
      'a patient key erasure could not be read',
      `SELECT dek_id, patient_ref, erasure_id, erased_at FROM ${PATIENT_KEY_ERASURES_TABLE} WHERE dek_id = $1`,
      [dekId],
    );
    return rows[0] ? toErased(rows[0]) : undefined;
  }

  async destroy(e: ErasedKey): Promise<boolean> {
    // One statement: the tombstone in, the key out, together.
    const rows = await this.#query<{ deleted: number }>(
      'a patient key could not be destroyed',
      `WITH tomb AS (
         INSERT INTO ${PATIENT_KEY_ERASURES_TABLE} (dek_id, patient_ref, erasure_id, erased_at)
           VALUES ($1, $2, $3, $4) ON CONFLICT (dek_id) DO NOTHING
       ), gone AS (
         DELETE FROM ${PATIENT_KEYS_TABLE} WHERE dek_id = $1 RETURNING 1
       ) SELECT count(*)::int AS deleted FROM gone`,
      [e.dekId, e.patientRef, e.erasureId, e.erasedAt],
    );
    return (rows[0]?.deleted ?? 0) > 0;
  }

  async wrappedByOther(wrapKeyId: string, limit: number, after?: string): Promise<WrappedKey[]> {
    const rows = await this.#query<KeyRow>(
      'the patient keys could not be read',
      `SELECT patient_ref, dek_id, wrap_key_id, wrapped, created_at FROM ${PATIENT_KEYS_TABLE}
         WHERE wrap_key_id <> $1 AND dek_id COLLATE "C" > $3 ORDER BY dek_id COLLATE "C" LIMIT $2`,
      [wrapKeyId, limit, after ?? ''],
    );
    return rows.map(toWrapped);
  }

  async rewrap(dekId: string, from: string, to: { wrapKeyId: string; wrapped: Buffer }): Promise<boolean> {
    const rows = await this.#query<{ dek_id: string }>(
      'a patient key could not be rewrapped',
      `UPDATE ${PATIENT_KEYS_TABLE} SET wrap_key_id = $3, wrapped = $4 WHERE dek_id = $1 AND wrap_key_id = $2
         RETURNING dek_id`,
      [dekId, from, to.wrapKeyId, to.wrapped],
    );
    return rows.length > 0;
  }

  bind(b: JourneyBinding & { dekId: string }): Promise<BindResult> {
    return this.#underPatientLock("a journey's patient could not be stored", b.patientRef, async (c) => {
      const held = await c.query<BindingRow>(
        `SELECT ${BINDING_COLUMNS} FROM ${PATIENT_JOURNEYS_TABLE} j WHERE workflow_id = $1`,
        [b.workflowId],
      );
      if (held.rows[0]) return { state: 'bound', binding: toBinding(held.rows[0]) };
      const pending = await c.query<{ erasure_id: string }>(
        `SELECT erasure_id FROM ${PATIENT_ERASURE_REQUESTS_TABLE} WHERE patient_ref = $1 AND status = 'pending' LIMIT 1`,
        [b.patientRef],
      );
      if (pending.rows[0]) return { state: 'fenced', erasureId: pending.rows[0].erasure_id };
      const key = await c.query<{ dek_id: string }>(`SELECT dek_id FROM ${PATIENT_KEYS_TABLE} WHERE patient_ref = $1`, [
        b.patientRef,
      ]);
      if (key.rows[0]?.dek_id !== b.dekId) return { state: 'stale-key' };
      await c.query(
        `INSERT INTO ${PATIENT_JOURNEYS_TABLE} (workflow_id, patient_ref, dek_id, bound_at, starting_until)
           VALUES ($1, $2, $3, $4, $5)`,
        [b.workflowId, b.patientRef, b.dekId, b.boundAt, b.startingUntil ?? null],
      );
      return { state: 'bound', binding: { ...b } };
    });
  }

  async settleStart(workflowId: string): Promise<void> {
    await this.#query(
      "a journey's start could not be marked answered",
      `UPDATE ${PATIENT_JOURNEYS_TABLE} SET starting_until = NULL WHERE workflow_id = $1 AND starting_until IS NOT NULL`,
      [workflowId],
    );
  }

  async bindingOf(workflowId: string): Promise<JourneyBinding | undefined> {
    const rows = await this.#query<BindingRow>(
      "a journey's patient could not be read",
      `SELECT ${BINDING_COLUMNS} FROM ${PATIENT_JOURNEYS_TABLE} j WHERE workflow_id = $1`,
      [workflowId],
    );
    return rows[0] ? toBinding(rows[0]) : undefined;
  }

  async journeysOf(patientRef: PatientRef): Promise<JourneyBinding[]> {
    const rows = await this.#query<BindingRow>(
      "a patient's journeys could not be read",
      `SELECT ${BINDING_COLUMNS} FROM ${PATIENT_JOURNEYS_TABLE} j WHERE patient_ref = $1 ORDER BY bound_at, workflow_id`,
      [patientRef],
    );
    return rows.map(toBinding);
  }

  async boundAmong(workflowIds: readonly string[]): Promise<Set<string>> {
    if (workflowIds.length === 0) return new Set();
    const rows = await this.#query<{ workflow_id: string }>(
      'the journeys bound could not be read',
      `SELECT workflow_id FROM ${PATIENT_JOURNEYS_TABLE} WHERE workflow_id = ANY($1::text[])`,
      [workflowIds],
    );
    return new Set(rows.map((r) => r.workflow_id));
  }

  async erasedAmong(dekIds: readonly string[]): Promise<ErasedKey[]> {
    if (dekIds.length === 0) return [];
    const rows = await this.#query<ErasureRow>(
      'the patient key erasures could not be read',
      `SELECT dek_id, patient_ref, erasure_id, erased_at FROM ${PATIENT_KEY_ERASURES_TABLE}
         WHERE dek_id = ANY($1::text[])`,
      [dekIds],
    );
    return rows.map(toErased);
  }

  async addErasureRequest(r: ErasureRequest): Promise<ErasureRequest> {
    await this.#underPatientLock('an erasure request could not be stored', r.patientRef, (c) =>
      c.query(
        `INSERT INTO ${PATIENT_ERASURE_REQUESTS_TABLE} (erasure_id, clinic_id, patient_ref, request_key, requested_by,
         requested_roles, requested_at, status, journeys, completed_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING`,
        [
          r.erasureId,
          r.clinicId,
          r.patientRef,
          r.requestKey,
          r.requestedBy,
          r.requestedRoles,
          r.requestedAt,
          r.status,
          r.journeys,
          r.completedAt ?? null,
        ],
      ),
    );
    const rows = await this.#query<RequestRow>(
      'an erasure request could not be read',
      `SELECT * FROM ${PATIENT_ERASURE_REQUESTS_TABLE} WHERE clinic_id = $1 AND request_key = $2`,
      [r.clinicId, r.requestKey],
    );
    return toRequest(rows[0]!);
  }

  async erasureRequest(erasureId: string): Promise<ErasureRequest | undefined> {
    const rows = await this.#query<RequestRow>(
      'an erasure request could not be read',
      `SELECT * FROM ${PATIENT_ERASURE_REQUESTS_TABLE} WHERE erasure_id = $1`,
      [erasureId],
    );
    return rows[0] ? toRequest(rows[0]) : undefined;
  }

  async pendingErasureRequests(): Promise<ErasureRequest[]> {
    const rows = await this.#query<RequestRow>(
      'the erasure requests could not be read',
      `SELECT * FROM ${PATIENT_ERASURE_REQUESTS_TABLE} WHERE status = 'pending' ORDER BY requested_at, erasure_id`,
      [],
    );
    return rows.map(toRequest);
  }

  async claimErasureRequest(erasureId: string, holder: string, leaseMs: number): Promise<boolean> {
    const rows = await this.#query<{ erasure_id: string }>(
      'an erasure request could not be claimed',
      `UPDATE ${PATIENT_ERASURE_REQUESTS_TABLE}
          SET claimed_by = $2, claimed_until = now() + make_interval(secs => $3::double precision / 1000)
        WHERE erasure_id = $1 AND status = 'pending'
          AND (claimed_by IS NULL OR claimed_by = $2 OR claimed_until IS NULL OR claimed_until <= now())
        RETURNING erasure_id`,
      [erasureId, holder, leaseMs],
    );
    return rows.length === 1;
  }

  async releaseErasureRequest(erasureId: string, holder: string): Promise<void> {
    await this.#query(
      'an erasure request could not be released',
      `UPDATE ${PATIENT_ERASURE_REQUESTS_TABLE} SET claimed_by = NULL, claimed_until = NULL
         WHERE erasure_id = $1 AND claimed_by = $2`,
      [erasureId, holder],
    );
  }

  async completeErasureRequest(erasureId: string, journeys: string[], completedAt: string): Promise<void> {
    await this.#query(
      'an erasure request could not be completed',
      `UPDATE ${PATIENT_ERASURE_REQUESTS_TABLE} SET status = 'done', journeys = $2, completed_at = $3
         WHERE erasure_id = $1 AND status = 'pending'`,
      [erasureId, journeys, completedAt],
    );
  }

  async counts(): Promise<{ keys: number; erased: number }> {
    const rows = await this.#query<{ keys: number; erased: number }>(
      'the patient keys could not be counted',
      `SELECT (SELECT count(*)::int FROM ${PATIENT_KEYS_TABLE}) AS keys,
              (SELECT count(*)::int FROM ${PATIENT_KEY_ERASURES_TABLE}) AS erased`,
      [],
    );
    return rows[0]!;
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
