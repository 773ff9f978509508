// The PostgreSQL inbox: one table shared by every API replica; forwarders claim whole journeys in a transaction, so a
// replica that disappears loses nothing (docs/design-notes.md#the-postgresql-inbox).
import { randomBytes } from 'node:crypto';
import { Client as PgClient, Pool, type PoolClient, type PoolConfig, type QueryResult } from 'pg';
import type { RecordSealer, Sealed } from '../codec/at-rest';
import type { CallbackSignal } from '../contract/definitions';
import { GroupCommit } from '../group-commit';
import { MIGRATION_LOCK_KEY, MIGRATIONS, type Migration } from './migrations';
import {
  DEAD_LETTER_ID,
  newDeadLetterId,
  encodeSignal,
  InboxUnavailableError,
  type AppendOptions,
  type CallbackInbox,
  type DeadLetter,
  type DeadLetterInput,
  type DeadLetterPage,
  type DeadLetterSettlement,
  type DeadLetterStore,
  type InboxClaim,
  type InboxEntry,
  type InboxStats,
} from './types';
import { eachYielding } from './yielding';

const CHANNEL = 'callback_inbox';

export interface PostgresInboxOptions {
  /** postgres://user:password@host:port/database (never logged). */
  connectionString: string;
  sealer: RecordSealer;
  /** Connections of this replica's pool: appends, claims, admin routes. */
  poolSize?: number;
  /** An append (or any statement) that takes longer fails: the webhook answers 503 rather than hang. */
  statementTimeoutMs?: number;
  maxBatch?: number;
  /** Each group commit: callbacks it stored, and the time of its durable write (seconds). */
  onBatch?: (size: number, seconds: number) => void;
  /** Errors of the background LISTEN connection (it reconnects by itself). */
  onListenError?: (err: unknown) => void;
  /**
   * Whether a claim's settle waits for its commit to be flushed (and on the synchronous standby): off unless set, as
   * a lost settle is only signalled again (docs/design-notes.md#settles-ride-with-appends).
   */
  synchronousSettles?: boolean;
  now?: () => Date;
}

interface Row {
  id: string;
  journey_id: string;
  key_id: string | null;
  body: Buffer;
}

/** An append sealed and waiting for its group commit. */
interface PendingAppend {
  journeyId: string;
  deliveryId: string;
  receivedAt: string;
  sealed: Sealed;
}

/** A positive integer written into a statement (the claim's limits). */
function count(n: number, name: string): number {
  if (!Number.isSafeInteger(n) || n < 1) throw new RangeError(`${name} must be a positive integer, not ${n}`);
  return n;
}

/** An inbox entry's id written into a statement: the table's bigint, as text. */
function entryId(id: string): string {
  if (!/^[0-9]{1,19}$/.test(id)) throw new RangeError(`an inbox entry id is a bigint, not ${JSON.stringify(id)}`);
  return id;
}

/**
 * Batches of up to this many callbacks are appended by a statement prepared once per connection (one for each size):
 * PostgreSQL parses and plans it once, not at every append. Larger batches (a burst's) are rare and parsed each time.
 */
export const PREPARED_APPEND_ROWS = 32;

/** The most rows one append statement takes: 5 parameters a row, within the protocol's 65,535. */
export const APPEND_MAX_ROWS = 13_000;

const appendTexts = new Map<number, string>();

/**
 * The append of `rows` callbacks (5 values each, in the table's column order), with its NOTIFY: one statement, one
 * round trip. Each row's values are parameters of their own, so the sealed body goes as binary (a Buffer), not as
 * the hex text of an element of a bytea array.
 */
export function appendStatement(rows: number, values: unknown[]): { text: string; values: unknown[]; name?: string } {
  if (!Number.isSafeInteger(rows) || rows < 1 || rows > APPEND_MAX_ROWS)
    throw new RangeError(`an append takes 1 to ${APPEND_MAX_ROWS} rows, not ${rows}`);
  if (values.length !== rows * 5) throw new RangeError(`an append of ${rows} rows takes ${rows * 5} values`);
  let text = appendTexts.get(rows);
  if (text === undefined) {
    const tuples = Array.from({ length: rows }, (_, i) => {
      const p = i * 5;
      return `($${p + 1}, $${p + 2}, $${p + 3}::timestamptz, $${p + 4}, $${p + 5}::bytea)`;
    });
    text =
      `WITH ins AS (INSERT INTO callback_inbox (journey_id, delivery_id, received_at, key_id, body) ` +
      `VALUES ${tuples.join(', ')} RETURNING 1) SELECT pg_notify('${CHANNEL}', count(*)::text) FROM ins`;
    if (rows <= PREPARED_APPEND_ROWS) appendTexts.set(rows, text);
  }
  return rows <= PREPARED_APPEND_ROWS ? { name: `callback_inbox_append_${rows}`, text, values } : { text, values };
}

/**
 * Whether PostgreSQL refused a value rather than failed as a store: data exceptions (class 22), integrity violations
 * (23) and program limits (54, a value too large) are a row's doing; connection loss and timeouts are not.
 */
function refusedValue(err: unknown): boolean {
  const code = ((err as { cause?: { code?: unknown } } | undefined)?.cause?.code ?? '') as string;
  return typeof code === 'string' && /^(22|23|54)/.test(code);
}

function unavailable(what: string, err: unknown): InboxUnavailableError {
  const code = (err as { code?: string } | undefined)?.code;
  return new InboxUnavailableError(`${what}: PostgreSQL did not take it${code ? ` (${code})` : ''}`, { cause: err });
}

/** Applies the migrations this database has not seen, under an advisory lock; returns the versions applied. */
export async function migrate(pool: Pool, migrations: readonly Migration[] = MIGRATIONS): Promise<number[]> {
  const client = await pool.connect();
  const applied: number[] = [];
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    await client.query(`CREATE TABLE IF NOT EXISTS journey_engine_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const seen = new Set(
      (await client.query<{ version: number }>('SELECT version FROM journey_engine_migrations')).rows.map(
        (r) => r.version,
      ),
    );
    for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
      if (seen.has(m.version)) continue;
      await client.query(m.sql);
      await client.query('INSERT INTO journey_engine_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
      applied.push(m.version);
    }
    await client.query('COMMIT');
    return applied;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

export class PostgresInbox implements CallbackInbox {
  readonly kind = 'postgres' as const;
  readonly deadLetters: PostgresDeadLetters;
  readonly pool: Pool;
  readonly #o: PostgresInboxOptions;
  readonly #listeners = new Set<() => void>();
  readonly #commit: GroupCommit<PendingAppend>;
  #listen: PgClient | undefined;
  #listenRetry: NodeJS.Timeout | undefined;
  #closed = false;
  /** Claims not yet settled: close() ends them (rolled back: their entries are free for another forwarder). */
  readonly #openClaims = new Set<() => Promise<void>>();

  constructor(options: PostgresInboxOptions) {
    this.#o = options;
    const config: PoolConfig = {
      connectionString: options.connectionString,
      max: options.poolSize ?? 10,
      connectionTimeoutMillis: 2_000,
      statement_timeout: options.statementTimeoutMs ?? 5_000,
      query_timeout: (options.statementTimeoutMs ?? 5_000) + 1_000,
      application_name: 'journey-api inbox',
    };
    this.pool = new Pool(config);
    // An idle connection that breaks (PostgreSQL restarted) is dropped from the pool; the next query reconnects.
    this.pool.on('error', () => undefined);
    this.deadLetters = new PostgresDeadLetters(this.pool, options.sealer, options.now);
    const maxBatch = options.maxBatch ?? 1_000;
    if (!Number.isSafeInteger(maxBatch) || maxBatch < 1 || maxBatch > APPEND_MAX_ROWS)
      throw new RangeError(`the inbox's largest batch is 1 to ${APPEND_MAX_ROWS} callbacks, not ${maxBatch}`);
    this.#commit = new GroupCommit((batch) => this.#insert(batch), {
      maxBatch,
      ...(options.onBatch ? { onBatch: options.onBatch } : {}),
      itemFault: refusedValue,
    });
  }

  async init(): Promise<void> {
    await migrate(this.pool);
    this.#startListening();
  }

  async append(journeyId: string, signal: CallbackSignal, options?: AppendOptions): Promise<void> {
    // Encoded and sealed here, so a callback that cannot be written fails alone and never the insert it would share.
    // One sealed for its patient already is kept as it is (no key id: the claim reads it as written).
    const encoded = encodeSignal(signal);
    const sealed = options?.sealed
      ? { keyId: null, data: Buffer.from(encoded, 'utf8') }
      : this.#o.sealer.seal(encoded, 'callback-inbox');
    return this.#commit.add({ journeyId, deliveryId: signal.deliveryId, receivedAt: signal.receivedAt, sealed });
  }

  async #insert(batch: PendingAppend[]): Promise<void> {
    const values: unknown[] = [];
    for (const b of batch) values.push(b.journeyId, b.deliveryId, b.receivedAt, b.sealed.keyId, b.sealed.data);
    try {
      await this.pool.query(appendStatement(batch.length, values));
    } catch (err) {
      throw unavailable('the callback inbox', err);
    }
    // This replica's forwarder learns of its own appends at once (the NOTIFY reaches the others).
    for (const listener of this.#listeners) listener();
  }

  async claim(maxJourneys: number, maxPerJourney: number): Promise<InboxClaim | undefined> {
    const client = await this.pool.connect();
    // A checked-out client's connection may break while the claim is held (PostgreSQL restarted, the session ended):
    // the error reaches the next query of the claim, not the process.
    const ignore = () => undefined;
    client.on('error', ignore);
    let released = false;
    const release = (err?: Error) => {
      if (released) return;
      released = true;
      this.#openClaims.delete(abort);
      client.off('error', ignore);
      client.release(err);
    };
    const abort = async () => {
      await client.query('ROLLBACK').catch(() => undefined);
      release(new Error('inbox closed with the claim open'));
    };
    this.#openClaims.add(abort);
    let open = false;
    try {
      // Two round trips a claim: this one opens the transaction and takes the journeys, the settle deletes and
      // commits (each round trip is PostgreSQL's work beside the webhook's appends, on the same cores).
      // A forwarder stuck with a claim must not hold the journeys for ever. Its commit (the settle) waits for no WAL
      // flush, here or on the synchronous standby: it would only hold back the flushes the webhook's appends wait
      // for. A settle lost with the primary is signalled again, and the journey knows each delivery id it has taken
      // (docs/design-notes.md#settles-ride-with-appends).
      // Each journey's oldest entry is locked; a journey another forwarder holds is skipped whole, because its oldest
      // entry is the one that forwarder locked. Its first `maxPerJourney` entries, in order, come with it.
      open = true;
      const opened = (await client.query(
        `BEGIN;
         SET LOCAL idle_in_transaction_session_timeout = '120s';
         SET LOCAL synchronous_commit = ${this.#o.synchronousSettles ? 'on' : 'off'};
         WITH heads AS MATERIALIZED (
           SELECT i.journey_id FROM callback_inbox i
            WHERE NOT EXISTS (SELECT 1 FROM callback_inbox p WHERE p.journey_id = i.journey_id AND p.id < i.id)
            ORDER BY i.id LIMIT ${count(maxJourneys, 'maxJourneys')} FOR UPDATE SKIP LOCKED
         )
         SELECT t.id::text AS id, t.journey_id, t.key_id, t.body FROM (
           SELECT c.id, c.journey_id, c.key_id, c.body,
                  row_number() OVER (PARTITION BY c.journey_id ORDER BY c.id) AS rn
             FROM callback_inbox c WHERE c.journey_id IN (SELECT journey_id FROM heads)
         ) t WHERE t.rn <= ${count(maxPerJourney, 'maxPerJourney')} ORDER BY t.id`,
      )) as unknown as QueryResult<Row>[];
      const rows = opened.at(-1)!;
      if (rows.rows.length === 0) {
        await client.query('COMMIT');
        open = false;
        release();
        return undefined;
      }
      const entries: InboxEntry[] = [];
      const corrupt: DeadLetterSettlement[] = [];
      // Opened a slice at a time: the webhook's acknowledgements are answered between slices (yielding.ts).
      await eachYielding(rows.rows, (row) => {
        try {
          const signal = JSON.parse(
            this.#o.sealer.openText({ keyId: row.key_id, data: row.body }, 'callback-inbox'),
          ) as CallbackSignal;
          entries.push({ id: row.id, journeyId: row.journey_id, signal });
        } catch (err) {
          corrupt.push({
            entryId: row.id,
            letter: {
              journeyId: row.journey_id,
              reason: 'corrupt_inbox_entry',
              detail:
                `inbox entry ${row.id} could not be read (${err instanceof Error ? err.message : 'unknown error'}); ` +
                'the body holds the sealed record as it was (key id, then base64) for recovery with that key',
              receivedAt: this.#now().toISOString(),
              // Nothing is dropped: the record as stored, still sealed under its own key.
              rawBody: `sealed-record:${row.key_id ?? ''}:${row.body.toString('base64')}`,
            },
          });
        }
      });
      let settled = false;
      const claim: InboxClaim = {
        entries,
        settle: async (done, deadLetters) => {
          if (settled) throw new Error('an inbox claim is settled once');
          settled = true;
          if (released) throw new Error('the inbox was closed with this claim open; its entries were released');
          try {
            const letters = [...corrupt, ...deadLetters];
            if (letters.length > 0)
              await this.deadLetters.insert(
                client,
                letters.map((l) => l.letter),
              );
            const ids = [...done, ...letters.map((l) => l.entryId)];
            // The delete and the commit in one round trip; the ids are the table's own (checked to be integers).
            await client.query(
              ids.length > 0
                ? `DELETE FROM callback_inbox WHERE id IN (${ids.map((id) => entryId(id)).join(',')}); COMMIT`
                : 'COMMIT',
            );
            release();
          } catch (err) {
            await client.query('ROLLBACK').catch(() => undefined);
            release(err instanceof Error ? err : new Error('settle failed'));
            throw err;
          }
        },
      };
      if (entries.length === 0) {
        // Only unreadable rows: settle them now (kept as dead letters) and report nothing to forward.
        await claim.settle([], []);
        return undefined;
      }
      return claim;
    } catch (err) {
      if (open) await client.query('ROLLBACK').catch(() => undefined);
      release(err instanceof Error ? err : new Error('claim failed'));
      throw err;
    }
  }

  async stats(): Promise<InboxStats> {
    const r = await this.pool.query<{ depth: number; oldest: Date | null; dead_letters: number }>(
      `SELECT count(*)::int AS depth, min(received_at) AS oldest,
              (SELECT count(*)::int FROM dead_letters) AS dead_letters
         FROM callback_inbox`,
    );
    const row = r.rows[0]!;
    return {
      depth: row.depth,
      ...(row.oldest ? { oldestReceivedAt: row.oldest } : {}),
      deadLetters: row.dead_letters,
    };
  }

  onAppend(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#listenRetry);
    const listen = this.#listen;
    this.#listen = undefined;
    await listen?.end().catch(() => undefined);
    await Promise.all([...this.#openClaims].map((abort) => abort()));
    await this.pool.end();
  }

  /** One connection LISTENs for the other replicas' appends; it reconnects after an error. */
  #startListening(): void {
    if (this.#closed) return;
    const client = new PgClient({ connectionString: this.#o.connectionString, application_name: 'journey-api listen' });
    this.#listen = client;
    const retry = (err: unknown) => {
      if (this.#listen !== client || this.#closed) return;
      this.#listen = undefined;
      this.#o.onListenError?.(err);
      client.end().catch(() => undefined);
      this.#listenRetry = setTimeout(() => this.#startListening(), 1_000);
      this.#listenRetry.unref();
    };
    client.on('error', retry);
    client.on('end', () => retry(new Error('LISTEN connection ended')));
    client.on('notification', () => {
      for (const listener of this.#listeners) listener();
    });
    client
      .connect()
      .then(() => client.query(`LISTEN ${CHANNEL}`))
      .catch(retry);
  }

  #now(): Date {
    return this.#o.now?.() ?? new Date();
  }
}

interface LetterRow {
  key_id: string | null;
  body: Buffer;
}

export class PostgresDeadLetters implements DeadLetterStore {
  constructor(
    private readonly pool: Pool,
    private readonly sealer: RecordSealer,
    private readonly now?: () => Date,
  ) {}

  async add(input: DeadLetterInput, now = this.now?.() ?? new Date()): Promise<DeadLetter> {
    const [letter] = await this.insert(this.pool, [input], now);
    return letter!;
  }

  /** Inserts letters with the given client (a claim's transaction, or the pool). */
  async insert(
    client: Pool | PoolClient,
    inputs: DeadLetterInput[],
    now = this.now?.() ?? new Date(),
  ): Promise<DeadLetter[]> {
    const letters = inputs.map((input): DeadLetter => ({
      id: newDeadLetterId(now, randomBytes(9).toString('base64url')),
      ...input,
      deadLetteredAt: now.toISOString(),
      replays: 0,
    }));
    const sealed = letters.map((l) => this.sealer.seal(JSON.stringify(l), 'dead-letter'));
    try {
      await client.query(
        `INSERT INTO dead_letters (id, journey_id, reason, received_at, dead_lettered_at, key_id, body)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::timestamptz[], $6::text[],
                              $7::bytea[])`,
        [
          letters.map((l) => l.id),
          letters.map((l) => l.journeyId),
          letters.map((l) => l.reason),
          letters.map((l) => l.receivedAt),
          letters.map((l) => l.deadLetteredAt),
          sealed.map((s) => s.keyId),
          sealed.map((s) => s.data),
        ],
      );
    } catch (err) {
      throw unavailable('the dead letters', err);
    }
    return letters;
  }

  async list(options: { limit: number; after?: string }): Promise<DeadLetterPage> {
    const r = await this.pool.query<LetterRow & { id: string }>(
      `SELECT id, key_id, body FROM dead_letters WHERE ($1::text IS NULL OR id > $1) ORDER BY id LIMIT $2`,
      [options.after ?? null, options.limit + 1],
    );
    const rows = r.rows.slice(0, options.limit);
    const letters = rows.map((row) => this.#open(row));
    return {
      letters,
      ...(r.rows.length > options.limit && rows.length > 0 ? { next: rows[rows.length - 1]!.id } : {}),
    };
  }

  async get(id: string): Promise<DeadLetter | undefined> {
    if (!DEAD_LETTER_ID.test(id)) return undefined;
    const r = await this.pool.query<LetterRow>('SELECT key_id, body FROM dead_letters WHERE id = $1', [id]);
    return r.rows[0] ? this.#open(r.rows[0]) : undefined;
  }

  async update(letter: DeadLetter): Promise<void> {
    const sealed = this.sealer.seal(JSON.stringify(letter), 'dead-letter');
    await this.pool.query('UPDATE dead_letters SET replays = $2, key_id = $3, body = $4 WHERE id = $1', [
      letter.id,
      letter.replays,
      sealed.keyId,
      sealed.data,
    ]);
  }

  async remove(id: string): Promise<boolean> {
    if (!DEAD_LETTER_ID.test(id)) return false;
    const r = await this.pool.query('DELETE FROM dead_letters WHERE id = $1', [id]);
    return (r.rowCount ?? 0) > 0;
  }

  async count(): Promise<number> {
    const r = await this.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM dead_letters');
    return r.rows[0]!.n;
  }

  #open(row: LetterRow): DeadLetter {
    return JSON.parse(this.sealer.openText({ keyId: row.key_id, data: row.body }, 'dead-letter')) as DeadLetter;
  }
}
