// The two inbox stores behind one factory, so each contract test runs against both: files in a temp folder, and
// PostgreSQL on a real server (Debian's package, a throwaway cluster per suite).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Pool } from 'pg';
import { RecordSealer } from '../../src/codec/at-rest';
import type { EncryptionKey } from '../../src/encryption-keys';
import { FileInbox } from '../../src/inbox/files';
import { PostgresInbox } from '../../src/inbox/postgres';
import type { CallbackInbox } from '../../src/inbox/types';
import type { CallbackSignal } from '../../src/contract/definitions';
import { startTestPostgres, type TestPostgres } from '../support/postgres';

export const KEY_A: EncryptionKey = { id: 'k-a', key: Buffer.alloc(32, 7) };
export const KEY_B: EncryptionKey = { id: 'k-b', key: Buffer.alloc(32, 9) };

/** Patient data that must never be found in the clear at rest. */
export const PATIENT = {
  name: 'Zebulon Quixotic-Fairweather',
  email: 'zebulon.qf@example.org',
  phone: '5550179342',
  dob: '1961-02-17',
};

let sequence = 0;
export function signalFor(patientExamId = 90_000 + ++sequence): CallbackSignal {
  sequence++;
  return {
    deliveryId: `d-${String(sequence).padStart(6, '0')}`,
    receivedAt: new Date().toISOString(),
    callback: {
      event: 1,
      patientExamId,
      examId: 101,
      examStatus: 'Approved',
      rxStatus: null,
      examUrl: null,
      providerName: PATIENT.name,
      reason: null,
    },
    raw: { event: 1, patient_exam_id: patientExamId, patient: { ...PATIENT } },
  };
}

export interface StoreHarness {
  kind: 'files' | 'postgres';
  /** A new inbox instance over the same storage (a restart, or another replica). */
  open(options?: { keys?: EncryptionKey[]; onBatch?: (n: number, seconds: number) => void }): Promise<CallbackInbox>;
  /** Everything the store holds at rest, as bytes (files' contents, or the tables' rows). */
  rawDump(): Promise<Buffer>;
  /** Empties the storage between tests. */
  reset(): Promise<void>;
  /** Makes the store refuse writes, and undoes it. */
  breakWrites(): Promise<void>;
  repairWrites(): Promise<void>;
  /** Ends claims held by other sessions as a dead process would (PostgreSQL: backends terminated). */
  killHolders?(): Promise<void>;
  teardown(): Promise<void>;
}

export async function fileHarness(): Promise<StoreHarness> {
  const root = mkdtempSync(path.join(tmpdir(), 'inbox-files-'));
  const dir = path.join(root, 'inbox');
  const deadLetterDir = path.join(root, 'dead-letters');
  const { readdir, readFile, rm, writeFile, mkdir } = await import('node:fs/promises');
  const opened: CallbackInbox[] = [];
  return {
    kind: 'files',
    async open(o = {}) {
      const inbox = new FileInbox({
        dir,
        deadLetterDir,
        sealer: new RecordSealer(o.keys ?? []),
        ...(o.onBatch ? { onBatch: o.onBatch } : {}),
      });
      await inbox.init();
      opened.push(inbox);
      return inbox;
    },
    async rawDump() {
      const parts: Buffer[] = [];
      for (const d of [dir, deadLetterDir]) {
        for (const name of await readdir(d).catch(() => [] as string[])) {
          const bytes = await readFile(path.join(d, name));
          parts.push(bytes);
          // The records carry their data as base64: decoded too, so an unsealed record is seen for what it is.
          for (const m of bytes.toString('utf8').matchAll(/"data":"([A-Za-z0-9+/=]+)"/g)) {
            parts.push(Buffer.from(m[1]!, 'base64'));
          }
        }
      }
      return Buffer.concat(parts);
    },
    async reset() {
      // The last test's inboxes stop first, as their process would: one still running would write its deferred
      // settles into the folder that follows.
      for (const inbox of opened.splice(0)) await inbox.close().catch(() => undefined);
      await rm(root, { recursive: true, force: true });
      await mkdir(root, { recursive: true });
    },
    async breakWrites() {
      // Root ignores permissions: a plain file where the folder was refuses every write, for anyone.
      for (const d of [dir, deadLetterDir]) {
        await rm(d, { recursive: true, force: true });
        await writeFile(d, 'not a folder');
      }
    },
    async repairWrites() {
      for (const d of [dir, deadLetterDir]) {
        await rm(d, { force: true });
        await mkdir(d, { recursive: true });
      }
    },
    async teardown() {
      for (const inbox of opened) await inbox.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

export async function postgresHarness(): Promise<StoreHarness & { server: TestPostgres }> {
  const server = await startTestPostgres({ database: 'inbox_test' });
  const admin = new Pool({ connectionString: server.url, max: 2 });
  admin.on('error', () => undefined);
  const opened: CallbackInbox[] = [];
  // Waits (up to 5 s each) until the backends are gone: their locks outlive the signal by a moment.
  const killHolders = async () => {
    await admin.query(
      `SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity
        WHERE application_name = 'journey-api inbox' AND state LIKE 'idle in transaction%'`,
    );
  };
  return {
    kind: 'postgres',
    server,
    async open(o = {}) {
      const inbox = new PostgresInbox({
        connectionString: server.url,
        sealer: new RecordSealer(o.keys ?? []),
        statementTimeoutMs: 2_000,
        ...(o.onBatch ? { onBatch: o.onBatch } : {}),
      });
      await inbox.init();
      opened.push(inbox);
      return inbox;
    },
    async rawDump() {
      const rows = await admin.query<{ t: string; body: Buffer }>(
        `SELECT concat_ws(' ', journey_id, delivery_id, key_id) AS t, body FROM callback_inbox
         UNION ALL SELECT concat_ws(' ', id, journey_id, reason, key_id), body FROM dead_letters`,
      );
      return Buffer.concat(rows.rows.flatMap((r) => [Buffer.from(`${r.t} `), r.body, Buffer.from('\n')]));
    },
    async reset() {
      // A test that failed half way may have left a claim open: end it, as a dead holder's would end.
      await killHolders();
      await admin.query(
        `DO $$ BEGIN
           IF to_regclass('callback_inbox') IS NOT NULL THEN TRUNCATE callback_inbox, dead_letters; END IF;
         END $$`,
      );
    },
    async breakWrites() {
      await server.stop();
    },
    async repairWrites() {
      await server.start();
    },
    killHolders,
    async teardown() {
      await killHolders();
      for (const inbox of opened) await inbox.close().catch(() => undefined);
      await admin.end();
      await server.cleanup();
    },
  };
}
