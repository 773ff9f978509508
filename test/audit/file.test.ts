// The file trail's own ways (what every trail promises is audit-contract.test.ts): one JSON line per record, in a file
// only its owner may read, made with its folder on the first append; no file is an empty trail; the records' time is
// the clock it is given; a line that is not a record stops a read and says which line.
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { verifyAuditChain } from '../../src/audit/chain';
import { FileAuditLog } from '../../src/audit/file';
import type { AuditRecord } from '../../src/audit/types';

describe('the audit trail file', () => {
  let dir: string;

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'audit-file-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('writes one JSON line per record, in a file of its own folder that only its owner may read', async () => {
    const file = path.join(dir, 'nested', 'audit.jsonl');
    const at = new Date('2026-03-01T08:00:00.000Z');
    const log = new FileAuditLog(file, () => at);
    expect(existsSync(file)).toBe(false);
    expect(await log.read({}, 10)).toEqual({ records: [], nextAfter: null });

    const appended = await Promise.all(
      ['operator-1', 'operator-2'].map((subject) =>
        log.append({ action: 'codec.decode', subject, roles: ['journey-operator'], outcome: 'ok' }),
      ),
    );
    await log.close();
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const lines = readFileSync(file, 'utf8').split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[2]).toBe('');
    expect(lines.slice(0, 2).map((l) => JSON.parse(l) as AuditRecord)).toEqual(appended);
    expect(appended.map((r) => r.at)).toEqual([at.toISOString(), at.toISOString()]);
    expect(verifyAuditChain(lines)).toEqual({ ok: true, records: 2 });
  });

  it('stops a read at a line that is not a record, naming the line', async () => {
    const file = path.join(dir, 'audit.jsonl');
    const log = new FileAuditLog(file);
    await log.append({ action: 'codec.decode', subject: 'operator-1', roles: [], outcome: 'ok' });
    appendFileSync(file, '\n{not a record\n');
    const read: AuditRecord[] = [];
    await expect(
      (async () => {
        for await (const r of new FileAuditLog(file).records({})) read.push(r);
      })(),
    ).rejects.toThrow('the audit trail file has a line that is not a record (line 3)');
    expect(read.map((r) => r.seq)).toEqual([1]);
  });

  it('refuses to go on from a last line that is not a record, and leaves nothing unhandled when not asked to', async () => {
    const file = path.join(dir, 'audit.jsonl');
    await new FileAuditLog(file).append({ action: 'codec.decode', subject: 'operator-1', roles: [], outcome: 'ok' });
    appendFileSync(file, '{not a record\n');
    const unhandled: unknown[] = [];
    const listener = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', listener);
    try {
      // Opened and never appended to (a reader's trail): its tail is read at once, and that failure is nobody's.
      new FileAuditLog(file);
      await new Promise((r) => setTimeout(r, 50));
      expect(unhandled).toEqual([]);
      await expect(
        new FileAuditLog(file).append({ action: 'codec.decode', subject: 'operator-1', roles: [], outcome: 'ok' }),
      ).rejects.toThrow("the audit trail file's last line (line 2) is not a record");
    } finally {
      process.off('unhandledRejection', listener);
    }
  });
});
