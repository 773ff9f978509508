// One contract, two stores: every test below runs against the file trail and the PostgreSQL table (a real server).
// Appends come back in order as one hash chain, also when they race and across a restart; the stored records verify,
// and a record changed or removed afterwards is found where it is; reads filter and page the same on both.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { verifyAuditChain, type ChainCheck } from '../../src/audit/chain';
import { FileAuditLog } from '../../src/audit/file';
import { AUDIT_TABLE, PostgresAuditLog, prepareAuditStore, verifyAuditTable } from '../../src/audit/postgres';
import { GENESIS, type AuditEvent, type AuditRecord, type AuditTrail } from '../../src/audit/types';
import { startTestPostgres } from '../support/postgres';

/** A store under test: trails over it (each a process of its own), its records as written, its own check. */
interface TrailHarness {
  kind: 'file' | 'postgres';
  /** Empties the store. */
  reset(): Promise<void>;
  /** A trail over the store, as a process that starts now would open it. */
  open(): Promise<AuditTrail>;
  /** The records as the store holds them (file lines, the table's record column), in seq order. */
  lines(): Promise<string[]>;
  /** The store's own check of its whole chain. */
  verify(): Promise<ChainCheck>;
  /** Changes a stored record's subject, or removes the record, behind the trail's back. */
  tamper(seq: number, how: 'edit' | 'remove'): Promise<void>;
  teardown(): Promise<void>;
}

function fileHarness(): Promise<TrailHarness> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'audit-contract-'));
  let n = 0;
  let file = path.join(dir, `audit-${n}.jsonl`);
  const lines = () => {
    try {
      return readFileSync(file, 'utf8').trimEnd().split('\n').filter(Boolean);
    } catch {
      return [];
    }
  };
  return Promise.resolve({
    kind: 'file',
    reset: () => {
      file = path.join(dir, `audit-${++n}.jsonl`);
      return Promise.resolve();
    },
    open: () => Promise.resolve(new FileAuditLog(file)),
    lines: () => Promise.resolve(lines()),
    verify: () => Promise.resolve(verifyAuditChain(lines())),
    tamper: (seq, how) => {
      const kept = lines().flatMap((line) => {
        const r = JSON.parse(line) as AuditRecord;
        if (r.seq !== seq) return [line];
        return how === 'remove' ? [] : [JSON.stringify({ ...r, subject: 'someone-else' })];
      });
      writeFileSync(file, `${kept.join('\n')}\n`);
      return Promise.resolve();
    },
    teardown: () => {
      rmSync(dir, { recursive: true, force: true });
      return Promise.resolve();
    },
  });
}

async function postgresHarness(): Promise<TrailHarness> {
  const pg = await startTestPostgres({ database: 'audit_contract' });
  const prepared = await prepareAuditStore({
    ownerUrl: pg.url,
    writerRole: 'journey_audit_writer',
    writerPassword: randomBytes(18).toString('base64url'),
  });
  // The table's owner: only it can change the trail, and only with the append-only triggers off.
  const owner = new Client({ connectionString: pg.url });
  await owner.connect();
  const asOwner = async (sql: string, params: unknown[] = []) => {
    await owner.query(`ALTER TABLE ${AUDIT_TABLE} DISABLE TRIGGER USER`);
    try {
      await owner.query(sql, params);
    } finally {
      await owner.query(`ALTER TABLE ${AUDIT_TABLE} ENABLE TRIGGER USER`);
    }
  };
  let processes = 0;
  return {
    kind: 'postgres',
    reset: () => asOwner(`DELETE FROM ${AUDIT_TABLE}`),
    open: async () => {
      const trail = new PostgresAuditLog({
        connectionString: prepared.writerUrl,
        applicationName: `audit contract ${++processes}`,
      });
      await trail.init();
      return trail;
    },
    lines: async () =>
      (
        await owner.query<{ record: string }>(`SELECT record::text AS record FROM ${AUDIT_TABLE} ORDER BY seq`)
      ).rows.map((r) => r.record),
    verify: () => verifyAuditTable(prepared.writerUrl),
    tamper: async (seq, how) => {
      if (how === 'remove') return asOwner(`DELETE FROM ${AUDIT_TABLE} WHERE seq = $1`, [seq]);
      // The record rewritten, and its subject column with it (the column alone is the table's own check).
      const { rows } = await owner.query<{ record: string }>(
        `SELECT record::text AS record FROM ${AUDIT_TABLE} WHERE seq = $1`,
        [seq],
      );
      const edited = { ...(JSON.parse(rows[0]!.record) as AuditRecord), subject: 'someone-else' };
      return asOwner(`UPDATE ${AUDIT_TABLE} SET record = $1::json, subject = $2 WHERE seq = $3`, [
        JSON.stringify(edited),
        edited.subject,
        seq,
      ]);
    },
    teardown: async () => {
      await owner.end();
      await pg.cleanup();
    },
  };
}

const stores: [string, () => Promise<TrailHarness>][] = [
  ['file', fileHarness],
  ['postgres', postgresHarness],
];

const event = (i: number, subject: string): AuditEvent => ({
  action: i % 3 === 0 ? 'journey.abandon' : 'codec.decode',
  subject,
  roles: ['journey-operator'],
  outcome: 'ok',
  details: { journeyId: `j${i}`, payloads: i },
});

describe.each(stores)('audit trail (%s)', (_kind, makeHarness) => {
  let h: TrailHarness;
  let trail: AuditTrail;
  const opened: AuditTrail[] = [];
  const open = async () => {
    const t = await h.open();
    opened.push(t);
    return t;
  };

  beforeAll(async () => {
    h = await makeHarness();
  }, 120_000);
  afterAll(async () => h?.teardown());
  beforeEach(async () => {
    await h.reset();
    trail = await open();
  });
  afterEach(async () => {
    // (A trail a test closed itself closes again without harm.)
    await Promise.all(opened.splice(0).map((t) => t.close().catch(() => undefined)));
  });

  it('appends in order, each record chained to the one before it, and reads them back as written', async () => {
    const appended: AuditRecord[] = [];
    for (let i = 1; i <= 5; i++) appended.push(await trail.append(event(i, `operator-${i % 2}`)));
    appended.push(
      await trail.append({
        action: 'journey.cancel',
        subject: 'admin-1',
        roles: ['journey-admin'],
        outcome: 'forbidden',
      }),
    );

    expect(appended.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(appended[0]!.prev).toBe(GENESIS);
    for (let i = 1; i < appended.length; i++) expect(appended[i]!.prev).toBe(appended[i - 1]!.hash);
    expect(appended[2]).toMatchObject({ ...event(3, 'operator-1'), roles: ['journey-operator'] });
    // An event without details gets none.
    expect(appended[5]).not.toHaveProperty('details');

    // What is read back is what each append answered, and what the store holds.
    expect((await trail.read({}, 100)).records).toEqual(appended);
    expect((await h.lines()).map((l) => JSON.parse(l) as AuditRecord)).toEqual(appended);
    expect(await h.verify()).toEqual({ ok: true, records: 6 });
  });

  it('keeps one chain while appends race (on a shared store, from two processes)', async () => {
    // A file trail belongs to one process; the table is shared by every process of a deployment.
    const other = h.kind === 'file' ? trail : await open();
    const lane = async (t: AuditTrail, subject: string, l: number) => {
      const out: AuditRecord[] = [];
      for (let i = 0; i < 10; i++) out.push(await t.append(event(l * 100 + i, subject)));
      return out;
    };
    const appended = (
      await Promise.all([
        ...[0, 1, 2].flatMap((l) => [lane(trail, 'operator-a', l), lane(other, 'operator-b', l)]),
        Promise.all(Array.from({ length: 30 }, (_, i) => trail.append(event(i, 'operator-a')))),
        Promise.all(Array.from({ length: 30 }, (_, i) => other.append(event(i, 'operator-b')))),
      ])
    ).flat();

    // Each append answers its own record, and every seq is given once.
    expect(new Set(appended.map((r) => r.seq)).size).toBe(120);
    expect(appended.filter((r) => r.subject === 'operator-a')).toHaveLength(60);
    const stored = (await h.lines()).map((l) => JSON.parse(l) as AuditRecord);
    expect(stored.map((r) => r.seq)).toEqual(Array.from({ length: 120 }, (_, i) => i + 1));
    expect(stored.filter((r, i) => i > 0 && r.subject !== stored[i - 1]!.subject).length).toBeGreaterThan(2);
    expect(await h.verify()).toEqual({ ok: true, records: 120 });
  });

  it('carries the chain on across a restart', async () => {
    await Promise.all(['operator-1', 'operator-2', 'viewer-1'].map((s, i) => trail.append(event(i + 1, s))));
    await trail.close();

    const restarted = await open();
    const next = await restarted.append(event(4, 'admin-1'));
    const third = (await restarted.read({ after: 2, upTo: 3 }, 10)).records[0]!;
    expect(next).toMatchObject({ seq: 4, prev: third.hash });
    expect(await h.verify()).toEqual({ ok: true, records: 4 });
  });

  it('reads by seq, subject, action and time, a page at a time', async () => {
    // An empty trail reads as one.
    expect(await trail.read({}, 10)).toEqual({ records: [], nextAfter: null });
    for (let i = 1; i <= 24; i++) await trail.append(event(i, `operator-${i % 4}`));
    const everything = (await trail.read({}, 1000)).records;
    expect(everything.map((r) => r.seq)).toEqual(Array.from({ length: 24 }, (_, i) => i + 1));

    const first = await trail.read({}, 10);
    expect(first.records.map((r) => r.seq)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
    expect(first.nextAfter).toBe(10);
    expect(await trail.read({ after: 20 }, 4)).toMatchObject({
      records: [{ seq: 21 }, { seq: 22 }, { seq: 23 }, { seq: 24 }],
      nextAfter: null,
    });
    expect((await trail.read({ after: 20 }, 3)).nextAfter).toBe(23);

    const mine = await trail.read({ subject: 'operator-1', action: 'journey.abandon' }, 100);
    expect(mine.records).toEqual(
      everything.filter((r) => r.subject === 'operator-1' && r.action === 'journey.abandon'),
    );
    expect(mine.records.length).toBeGreaterThan(0);
    expect((await trail.read({ action: 'codec.decode', upTo: 5 }, 100)).records.map((r) => r.seq)).toEqual([
      1, 2, 4, 5,
    ]);

    const iterated: number[] = [];
    for await (const r of trail.records({ after: 3, upTo: 20 })) iterated.push(r.seq);
    expect(iterated).toEqual(Array.from({ length: 17 }, (_, i) => i + 4));

    const at = new Date(everything[0]!.at);
    expect((await trail.read({ since: at, until: new Date(at.getTime() + 3_600_000) }, 100)).records).toHaveLength(24);
    expect((await trail.read({ until: at }, 100)).records).toHaveLength(0);
    expect((await trail.read({ since: new Date(at.getTime() + 3_600_000) }, 100)).records).toHaveLength(0);
  });

  it('reads back records that verify, whole or as a range, and finds an edit, a gap and a line out of place', async () => {
    for (let i = 1; i <= 6; i++) await trail.append(event(i, `operator-${i}`));
    const lines: string[] = [];
    for await (const r of trail.records({})) lines.push(JSON.stringify(r));
    expect(verifyAuditChain(lines)).toEqual({ ok: true, records: 6 });

    const edited = [...lines];
    edited[1] = edited[1]!.replace('"operator-2"', '"someone-else"');
    expect(verifyAuditChain(edited)).toMatchObject({
      ok: false,
      at: 2,
      problem: expect.stringContaining('was changed'),
    });
    expect(verifyAuditChain([lines[0]!, ...lines.slice(2)])).toMatchObject({
      ok: false,
      at: 2,
      problem: expect.stringContaining('a record is missing'),
    });
    // Re-numbered to hide the gap: the chain still breaks.
    const renumbered = { ...(JSON.parse(lines[2]!) as AuditRecord), seq: 2 };
    expect(verifyAuditChain([lines[0]!, JSON.stringify(renumbered)])).toMatchObject({
      ok: false,
      at: 2,
      problem: expect.stringContaining('does not follow'),
    });
    expect(verifyAuditChain([lines[0]!, '{not json'])).toMatchObject({ ok: false, at: 2 });

    // A range (an export of part of the trail) verifies from its first record's prev, and only as a range.
    const range: string[] = [];
    for await (const r of trail.records({ after: 2 })) range.push(JSON.stringify(r));
    expect(verifyAuditChain(range, { from: 'first' })).toEqual({ ok: true, records: 4 });
    expect(verifyAuditChain(range)).toMatchObject({ ok: false, at: 1 });
    expect(verifyAuditChain([range[0]!, range[2]!], { from: 'first' })).toMatchObject({
      ok: false,
      at: 2,
      problem: expect.stringContaining('a record is missing'),
    });
  });

  it("finds a record changed or removed in the store behind the trail's back", async () => {
    for (let i = 1; i <= 8; i++) await trail.append(event(i, `operator-${i}`));
    expect(await h.verify()).toEqual({ ok: true, records: 8 });

    await h.tamper(3, 'edit');
    expect(await h.verify()).toMatchObject({
      ok: false,
      at: 3,
      problem: 'record 3 was changed after it was written (its hash differs)',
    });

    await h.reset();
    const again = await open();
    for (let i = 1; i <= 8; i++) await again.append(event(i, `operator-${i}`));
    await h.tamper(6, 'remove');
    expect(await h.verify()).toMatchObject({
      ok: false,
      at: 6,
      problem: expect.stringContaining('a record is missing'),
    });
  });
});
