// The file trail's own ways (what every trail promises is audit-contract.test.ts): one JSON line per record, in a file
// only its owner may read, made with its folder on the first append; no file is an empty trail; the records' time is
// the clock it is given; a line that is not a record stops a read and says which line; one writer per trail; a record
// torn by a crash dropped by the next writer, on the record; each append synced before it resolves.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
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
    await log.close();
  });

  it('refuses to go on from a whole last line that is not a record, naming it', async () => {
    const file = path.join(dir, 'audit.jsonl');
    const first = new FileAuditLog(file);
    await first.append({ action: 'codec.decode', subject: 'operator-1', roles: [], outcome: 'ok' });
    await first.close();
    appendFileSync(file, '{not a record\n');
    const next = new FileAuditLog(file);
    await expect(
      next.append({ action: 'codec.decode', subject: 'operator-1', roles: [], outcome: 'ok' }),
    ).rejects.toThrow("the audit trail file's last line (line 2) is not a record");
    await next.close();
  });

  it('drops a record torn by a crash mid-append at the next start, and records that it did', async () => {
    const file = path.join(dir, 'audit.jsonl');
    const first = new FileAuditLog(file);
    for (const subject of ['operator-1', 'operator-2']) {
      await first.append({ action: 'codec.decode', subject, roles: [], outcome: 'ok' });
    }
    await first.close();
    // A crash after part of the third line was written: no newline after it.
    const torn = '{"seq":3,"at":"2026-03-01T08:0';
    appendFileSync(file, torn);
    // A reader leaves the torn line out (its next writer drops it).
    const read: number[] = [];
    for await (const r of new FileAuditLog(file).records({})) read.push(r.seq);
    expect(read).toEqual([1, 2]);

    const next = new FileAuditLog(file);
    await next.init();
    const after = await next.append({ action: 'codec.decode', subject: 'operator-3', roles: [], outcome: 'ok' });
    await next.close();
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    const records = lines.map((l) => JSON.parse(l) as AuditRecord);
    expect(records.map((r) => [r.seq, r.action])).toEqual([
      [1, 'codec.decode'],
      [2, 'codec.decode'],
      [3, 'audit.torn-record-dropped'],
      [4, 'codec.decode'],
    ]);
    expect(records[2]!.details).toEqual({ bytes: Buffer.byteLength(torn), afterSeq: 2 });
    expect(after.seq).toBe(4);
    expect(verifyAuditChain(lines)).toEqual({ ok: true, records: 4 });
  });

  it('has one writer: a second one, in this process or another that runs, is refused naming the trail', async () => {
    const file = path.join(dir, 'audit.jsonl');
    const first = new FileAuditLog(file);
    await first.append({ action: 'codec.decode', subject: 'operator-1', roles: [], outcome: 'ok' });
    const second = new FileAuditLog(file);
    await expect(second.init()).rejects.toThrow(`the audit trail ${file} is written by another writer in this process`);
    await first.close();
    expect(existsSync(`${file}.lock`)).toBe(false);
    // Once the first let go, the trail goes on from its last record.
    expect((await second.append({ action: 'codec.decode', subject: 'operator-2', roles: [], outcome: 'ok' })).seq).toBe(
      2,
    );
    await second.close();

    // Another process that runs holds it.
    const holder = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)'], { stdio: 'ignore' });
    try {
      writeFileSync(`${file}.lock`, `${holder.pid}\n`);
      const third = new FileAuditLog(file);
      await expect(third.init()).rejects.toThrow(`the audit trail ${file} is written by process ${holder.pid}`);
      await third.close();
    } finally {
      holder.kill('SIGKILL');
      await once(holder, 'exit');
    }
    // A lock left by a process that is gone is taken over.
    const fourth = new FileAuditLog(file);
    expect((await fourth.append({ action: 'codec.decode', subject: 'operator-3', roles: [], outcome: 'ok' })).seq).toBe(
      3,
    );
    expect(readFileSync(`${file}.lock`, 'utf8').trim()).toBe(String(process.pid));
    await fourth.close();
  });

  it('has each record on disk (written and synced) before its append resolves', async () => {
    const file = path.join(dir, 'audit.jsonl');
    const probe = await open(file, 'a');
    const handleType = Object.getPrototypeOf(probe) as { datasync: () => Promise<void> };
    await probe.close();
    const synced: number[] = [];
    const sync = jest.spyOn(handleType, 'datasync').mockImplementation(() => {
      synced.push(readFileSync(file, 'utf8').split('\n').filter(Boolean).length);
      return Promise.resolve();
    });
    try {
      const log = new FileAuditLog(file);
      const r = await log.append({ action: 'codec.decode', subject: 'operator-1', roles: [], outcome: 'ok' });
      // Synced once the line was written, before the append resolved.
      expect(synced).toEqual([1]);
      expect(r.seq).toBe(1);
      await log.close();
    } finally {
      sync.mockRestore();
    }
  });
});
