// The audit trail's PostgreSQL ways, on a throwaway cluster (what every trail promises, this one included, is
// audit-contract.test.ts): the table and the writer role prepared, again without harm, or as SQL a deployer runs; the
// writer may INSERT and SELECT only (UPDATE, DELETE, TRUNCATE: permission denied), a role that could change the trail
// is refused, even the owner is refused by the append-only triggers, and a filter's column edited alone is found; the
// verify tool checks the table and exports it as JSON lines that verify as a file.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { verifyAuditChain } from '../../src/audit/chain';
import type { AuditEvent, AuditRecord } from '../../src/audit/types';
import {
  AUDIT_TABLE,
  auditStoreSql,
  PostgresAuditLog,
  prepareAuditStore,
  scramVerifier,
  verifyAuditTable,
  type PreparedAuditStore,
} from '../../src/audit/postgres';
import { startTestPostgres, type TestPostgres } from '../support/postgres';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../..');
/** Ports of this suite: 23000-23099. */
const PG_PORT = 23040;

const event = (i: number, subject: string): AuditEvent => ({
  action: i % 3 === 0 ? 'journey.abandon' : 'codec.decode',
  subject,
  roles: ['journey-operator'],
  outcome: 'ok',
  details: { journeyId: `j${i}`, payloads: i },
});

describe('the audit trail in PostgreSQL', () => {
  let pg: TestPostgres;
  let prepared: PreparedAuditStore;
  let owner: Client;
  let writer: Client;
  const password = randomBytes(18).toString('base64url');
  const work = mkdtempSync(path.join(os.tmpdir(), 'audit-pg-'));

  beforeAll(async () => {
    pg = await startTestPostgres({ port: PG_PORT, database: 'audit' });
    prepared = await prepareAuditStore({
      ownerUrl: pg.url,
      writerRole: 'journey_audit_writer',
      writerPassword: password,
    });
    owner = new Client({ connectionString: pg.url });
    await owner.connect();
    writer = new Client({ connectionString: prepared.writerUrl });
    await writer.connect();
    const log = new PostgresAuditLog({ connectionString: prepared.writerUrl });
    await Promise.all(Array.from({ length: 30 }, (_, i) => log.append(event(i, `operator-${i % 3}`))));
    await log.close();
  }, 120_000);
  afterAll(async () => {
    await writer?.end();
    await owner?.end();
    await pg?.cleanup();
    rmSync(work, { recursive: true, force: true });
  });

  it('prepares the table and the writer role, again without harm', async () => {
    expect(prepared).toMatchObject({ table: AUDIT_TABLE, tableCreated: true, roleCreated: true });
    const again = await prepareAuditStore({
      ownerUrl: pg.url,
      writerRole: 'journey_audit_writer',
      writerPassword: password,
    });
    expect(again).toMatchObject({ tableCreated: false, roleCreated: false, writerUrl: prepared.writerUrl });
    const grants = await owner.query<{ privilege_type: string }>(
      `SELECT privilege_type FROM information_schema.role_table_grants
        WHERE grantee = 'journey_audit_writer' AND table_name = 'audit_trail' ORDER BY privilege_type`,
    );
    expect(grants.rows.map((r) => r.privilege_type)).toEqual(['INSERT', 'SELECT']);
    await expect(
      prepareAuditStore({ ownerUrl: pg.url, writerRole: pg.user, writerPassword: password }),
    ).rejects.toThrow('must not be the role that owns the audit trail');
  });

  it('prints SQL a deployer can run as printed, twice, with no password of its own', async () => {
    const sql = auditStoreSql({ writerRole: 'journey_audit_reader_test' });
    expect(sql).not.toMatch(/PASSWORD/);
    await owner.query(sql);
    await owner.query(sql);
    const role = await owner.query<{ rolcanlogin: boolean; rolpassword: string | null }>(
      `SELECT rolcanlogin, rolpassword FROM pg_authid WHERE rolname = 'journey_audit_reader_test'`,
    );
    // It may sign in once the deployer sets its password (\password); until then nobody can.
    expect(role.rows).toEqual([{ rolcanlogin: true, rolpassword: null }]);
    const grants = await owner.query<{ privilege_type: string }>(
      `SELECT privilege_type FROM information_schema.role_table_grants
        WHERE grantee = 'journey_audit_reader_test' AND table_name = 'audit_trail' ORDER BY privilege_type`,
    );
    expect(grants.rows.map((r) => r.privilege_type)).toEqual(['INSERT', 'SELECT']);
    const connect = await owner.query<{ ok: boolean }>(
      `SELECT has_database_privilege('journey_audit_reader_test', current_database(), 'CONNECT') AS ok`,
    );
    expect(connect.rows[0]!.ok).toBe(true);
    // With a verifier, its password is set (the password itself never in the SQL).
    const verifier = scramVerifier('a-long-enough-password');
    await owner.query(auditStoreSql({ writerRole: 'journey_audit_reader_test', passwordVerifier: verifier }));
    const after = await owner.query<{ rolpassword: string }>(
      `SELECT rolpassword FROM pg_authid WHERE rolname = 'journey_audit_reader_test'`,
    );
    expect(after.rows[0]!.rolpassword).toBe(verifier);
  });

  it('refuses to write as a role that could change the trail', async () => {
    const asOwner = new PostgresAuditLog({ connectionString: pg.url });
    try {
      const err = await asOwner.init().then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(err?.message).toMatch(/may change the trail \(UPDATE, DELETE, TRUNCATE, it owns the table\)/);
      expect(err?.message).not.toContain(password);
    } finally {
      await asOwner.close();
    }
  });

  it('refuses UPDATE, DELETE and TRUNCATE to the writer', async () => {
    for (const sql of [
      `UPDATE ${AUDIT_TABLE} SET subject = 'someone-else' WHERE seq = 2`,
      `DELETE FROM ${AUDIT_TABLE} WHERE seq = 2`,
      `TRUNCATE ${AUDIT_TABLE}`,
      `ALTER TABLE ${AUDIT_TABLE} DISABLE TRIGGER USER`,
      `DROP TABLE ${AUDIT_TABLE}`,
    ]) {
      await expect(writer.query(sql)).rejects.toMatchObject({
        code: '42501',
        message: expect.stringMatching(/permission denied|must be owner/),
      });
    }
    expect(await verifyAuditTable(prepared.writerUrl)).toEqual({ ok: true, records: 30 });
  });

  it("finds an edit the table's owner makes anyway", async () => {
    // Even the owner is refused until it turns the append-only triggers off on purpose.
    await expect(owner.query(`DELETE FROM ${AUDIT_TABLE} WHERE seq = 5`)).rejects.toThrow('append-only');
    await owner.query(`ALTER TABLE ${AUDIT_TABLE} DISABLE TRIGGER USER`);
    const original = (
      await owner.query<{ record: string }>(`SELECT record::text AS record FROM ${AUDIT_TABLE} WHERE seq = 5`)
    ).rows[0]!.record;

    // The filter's column changed alone: the chain holds, the check still finds it. (The record itself changed or
    // removed: audit-contract.test.ts.)
    await owner.query(`UPDATE ${AUDIT_TABLE} SET subject = 'someone-else' WHERE seq = 5`);
    expect(await verifyAuditTable(prepared.writerUrl)).toMatchObject({
      ok: false,
      at: 5,
      problem: expect.stringContaining('subject column'),
    });

    const subject = (JSON.parse(original) as AuditRecord).subject;
    await owner.query(`UPDATE ${AUDIT_TABLE} SET subject = $1 WHERE seq = 5`, [subject]);
    expect(await verifyAuditTable(prepared.writerUrl)).toEqual({ ok: true, records: 30 });
    await owner.query(`ALTER TABLE ${AUDIT_TABLE} ENABLE TRIGGER USER`);
  });

  it('verifies the table and exports it as JSON lines from the command line, never printing the URL', async () => {
    // A fresh table of 20 records.
    await owner.query(`ALTER TABLE ${AUDIT_TABLE} DISABLE TRIGGER USER`);
    await owner.query(`DELETE FROM ${AUDIT_TABLE}`);
    await owner.query(`ALTER TABLE ${AUDIT_TABLE} ENABLE TRIGGER USER`);
    const log = new PostgresAuditLog({ connectionString: prepared.writerUrl });
    await Promise.all(Array.from({ length: 20 }, (_, i) => log.append(event(i, `operator-${i % 4}`))));
    await log.close();

    const file = path.join(work, 'export.jsonl');
    const node = [process.execPath, '--import', 'tsx', path.join(ROOT, 'scripts/audit-trail.ts')] as const;
    const env = { ...process.env, AUDIT_DATABASE_URL: prepared.writerUrl };
    const exported = await run(node[0], [...node.slice(1), '--export', file], { cwd: ROOT, env });
    expect(exported.stdout).toContain('20 records written');
    expect(exported.stdout).toContain('the audit table: 20 records, the chain is whole');
    expect(exported.stdout + exported.stderr).not.toContain(password);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    expect(verifyAuditChain(lines)).toEqual({ ok: true, records: 20 });
    const checked = await run(node[0], [...node.slice(1), file], { cwd: ROOT });
    expect(checked.stdout).toContain('20 records, the chain is whole');

    // A range (seq 6 on) verifies from its first record's prev; as a whole trail it does not.
    const range = path.join(work, 'range.jsonl');
    await run('sh', ['-c', `tail -n 15 "${file}" > "${range}"`]);
    expect((await run(node[0], [...node.slice(1), '--range', range], { cwd: ROOT })).stdout).toContain(
      '15 records, the chain is whole',
    );
    await expect(run(node[0], [...node.slice(1), range], { cwd: ROOT })).rejects.toMatchObject({ code: 1 });

    // A bad password: an error that names no secret.
    const wrong = prepared.writerUrl.replace(encodeURIComponent(password), 'wrong-password');
    const refused = await run(node[0], [...node.slice(1), '--database-url', wrong], { cwd: ROOT }).catch(
      (e: { code: number; stdout: string; stderr: string }) => e,
    );
    expect(refused).toMatchObject({ code: 2, stderr: expect.stringContaining('password authentication failed') });
    expect(refused.stderr).not.toContain('wrong-password');
  }, 60_000);
});
