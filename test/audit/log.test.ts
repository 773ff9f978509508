// The audit trail's chain: records appended one after the other (across a restart) verify; an edited record, a
// removed one and one put out of order are each found where they are; a range verifies from its first record's prev;
// the file reads back by seq, subject, action and time.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FileAuditLog, GENESIS, verifyAuditChain, type AuditRecord } from '../../src/audit/log';

describe('the audit trail', () => {
  let dir: string;
  let file: string;
  let lines: string[];

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'audit-'));
    file = path.join(dir, 'audit.jsonl');
    const first = new FileAuditLog(file);
    // Appended at once: written one after the other all the same.
    await Promise.all(
      ['operator-1', 'operator-2', 'viewer-1'].map((subject) =>
        first.append({ action: 'codec.decode', subject, roles: ['journey-operator'], outcome: 'ok' }),
      ),
    );
    // A new process (a restart) carries the chain on from the last record.
    const second = new FileAuditLog(file);
    await second.append({
      action: 'journey.abandon',
      subject: 'admin-1',
      roles: ['journey-admin'],
      outcome: 'ok',
      details: { journeyId: 'jabc' },
    });
    lines = readFileSync(file, 'utf8').trim().split('\n');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('chains every record to the one before it, across a restart', () => {
    const records = lines.map((l) => JSON.parse(l) as AuditRecord);
    expect(records.map((r) => r.seq)).toEqual([1, 2, 3, 4]);
    expect(records[0]!.prev).toBe(GENESIS);
    for (let i = 1; i < records.length; i++) expect(records[i]!.prev).toBe(records[i - 1]!.hash);
    expect(verifyAuditChain(lines)).toEqual({ ok: true, records: 4 });
  });

  it('finds an edited record', () => {
    const edited = [...lines];
    edited[1] = edited[1]!.replace('"operator-2"', '"someone-else"');
    expect(verifyAuditChain(edited)).toMatchObject({
      ok: false,
      at: 2,
      problem: expect.stringContaining('was changed'),
    });
  });

  it('finds a removed record and one out of place', () => {
    expect(verifyAuditChain([lines[0]!, lines[2]!, lines[3]!])).toMatchObject({
      ok: false,
      at: 2,
      problem: expect.stringContaining('a record is missing'),
    });
    // Re-numbered to hide the gap: the chain still breaks.
    const renumbered = JSON.parse(lines[2]!) as AuditRecord;
    renumbered.seq = 2;
    expect(verifyAuditChain([lines[0]!, JSON.stringify(renumbered)])).toMatchObject({
      ok: false,
      at: 2,
      problem: expect.stringContaining('does not follow'),
    });
  });

  it('finds a line that is not a record', () => {
    expect(verifyAuditChain([lines[0]!, '{not json'])).toMatchObject({ ok: false, at: 2 });
  });

  it("verifies a range from its first record's prev, and only as a range", () => {
    expect(verifyAuditChain(lines.slice(1), { from: 'first' })).toEqual({ ok: true, records: 3 });
    expect(verifyAuditChain(lines.slice(1))).toMatchObject({ ok: false, at: 1 });
    expect(verifyAuditChain([lines[1]!, lines[3]!], { from: 'first' })).toMatchObject({
      ok: false,
      at: 2,
      problem: expect.stringContaining('a record is missing'),
    });
  });

  it('reads the file back by seq, subject, action and time', async () => {
    const log = new FileAuditLog(file);
    expect((await log.read({}, 2)).records.map((r) => r.seq)).toEqual([1, 2]);
    expect((await log.read({}, 2)).nextAfter).toBe(2);
    expect(await log.read({ after: 2 }, 2)).toMatchObject({ records: [{ seq: 3 }, { seq: 4 }], nextAfter: null });
    expect((await log.read({ subject: 'admin-1' }, 10)).records.map((r) => r.action)).toEqual(['journey.abandon']);
    expect((await log.read({ action: 'codec.decode', upTo: 2 }, 10)).records.map((r) => r.seq)).toEqual([1, 2]);
    const first = new Date((JSON.parse(lines[0]!) as AuditRecord).at);
    expect((await log.read({ since: first }, 10)).records).toHaveLength(4);
    expect((await log.read({ until: first }, 10)).records).toHaveLength(0);
    const all: number[] = [];
    for await (const r of log.records({ after: 1 })) all.push(r.seq);
    expect(all).toEqual([2, 3, 4]);
    // No file yet: an empty trail.
    expect(await new FileAuditLog(path.join(dir, 'none.jsonl')).read({}, 10)).toEqual({ records: [], nextAfter: null });
  });
});
