// The audit trail's chain: records appended one after the other (across a restart) verify; an edited record, a
// removed one and one put out of order are each found where they are.
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
});
