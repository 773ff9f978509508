// The chain anchored by its checkpoints: a trail cut at its tail, or with a record removed and the rest re-hashed,
// verifies as whole on its own chain; against the checkpoints its writer took (every interval and at stop), each is
// found and named. The file trail's checkpoints go beside it.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { verifyAuditChain } from '../../src/audit/chain';
import { Checkpointer, FileCheckpoints, type Checkpoint } from '../../src/audit/checkpoints';
import { FileAuditLog } from '../../src/audit/file';
import { checkpointerFor } from '../../src/audit';
import { chainRecord, GENESIS, type AuditRecord } from '../../src/audit/types';

const event = (subject: string) => ({ action: 'codec.decode', subject, roles: ['journey-operator'], outcome: 'ok' });

/** The trail with record `seq` removed and every later one renumbered and re-hashed: a chain that verifies. */
function removedAndRehashed(lines: readonly string[], seq: number): string[] {
  const kept = lines.map((l) => JSON.parse(l) as AuditRecord).filter((r) => r.seq !== seq);
  const out: AuditRecord[] = [];
  for (const r of kept) {
    const prev = out.at(-1);
    out.push(chainRecord(r, { seq: out.length + 1, at: r.at, prev: prev?.hash ?? GENESIS }));
  }
  return out.map((r) => JSON.stringify(r));
}

describe('audit checkpoints', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'audit-checkpoints-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  async function writtenTrail(records: number) {
    const file = path.join(dir, 'api.jsonl');
    const trail = new FileAuditLog(file);
    const settings = { store: 'file' as const, file, checkpoints: { store: 'file' as const, intervalMs: 60_000 } };
    const checkpointer = checkpointerFor(trail, settings)!;
    await checkpointer.start();
    for (let i = 1; i <= records; i++) {
      await trail.append(event(`operator-${i}`));
      // A checkpoint every third record, as the minute's timer would take them.
      if (i % 3 === 0) await checkpointer.checkpoint();
    }
    await checkpointer.stop();
    await trail.close();
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    const checkpoints = await new FileCheckpoints(`${file}.checkpoints`).list('api');
    return { file, lines, checkpoints };
  }

  it('are taken at start, as the trail moves and at stop, beside the trail, named for it', async () => {
    const { file, checkpoints } = await writtenTrail(7);
    expect(checkpoints.map((c) => c.seq)).toEqual([0, 3, 6, 7]);
    expect(checkpoints[0]).toMatchObject({ trail: 'api', hash: GENESIS });
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    expect(checkpoints.at(-1)!.hash).toBe((JSON.parse(lines.at(-1)!) as AuditRecord).hash);
    expect(verifyAuditChain(lines, { checkpoints })).toEqual({ ok: true, records: 7 });
  });

  it('find a tail cut off, naming the records gone', async () => {
    const { lines, checkpoints } = await writtenTrail(7);
    const cut = lines.slice(0, 5);
    // On its own chain the cut trail is whole: that is what the checkpoints are for.
    expect(verifyAuditChain(cut)).toEqual({ ok: true, records: 5 });
    expect(verifyAuditChain(cut, { checkpoints })).toMatchObject({
      ok: false,
      problem: expect.stringMatching(
        /the trail ends at record 5, but the checkpoint of \S+ saw record 7: records 6 to 7 were cut off/,
      ),
    });
  });

  it('find a record removed and the chain re-hashed after it, naming where', async () => {
    const { lines, checkpoints } = await writtenTrail(7);
    const rewritten = removedAndRehashed(lines, 2);
    expect(verifyAuditChain(rewritten)).toEqual({ ok: true, records: 6 });
    expect(verifyAuditChain(rewritten, { checkpoints })).toMatchObject({
      ok: false,
      at: 3,
      problem: expect.stringContaining('record 3 is not the one the checkpoint of'),
    });
  });

  it('skip a checkpoint when the trail has not moved, and say when one cannot be written (the trail goes on)', async () => {
    const file = path.join(dir, 'worker.jsonl');
    const trail = new FileAuditLog(file);
    const put: Checkpoint[] = [];
    let down = false;
    const warnings: string[] = [];
    const checkpointer = new Checkpointer({
      trail: 'worker',
      head: trail,
      store: {
        where: 'test',
        init: () => Promise.resolve(),
        put: (c) => (down ? Promise.reject(new Error('store down')) : Promise.resolve(void put.push(c))),
        list: () => Promise.resolve(put),
      },
      warn: (message) => warnings.push(message),
    });
    await checkpointer.start();
    await checkpointer.checkpoint();
    expect(put.map((c) => c.seq)).toEqual([0]);
    down = true;
    await trail.append(event('operator-1'));
    await checkpointer.checkpoint();
    expect(warnings).toEqual(['audit checkpoint not written; tried again at the next one']);
    down = false;
    await checkpointer.stop();
    expect(put.map((c) => c.seq)).toEqual([0, 1]);
    await trail.close();
  });

  it('leave out a checkpoint line torn by a crash, and refuse a line that is not one', async () => {
    const file = path.join(dir, 'codec.jsonl.checkpoints');
    const store = new FileCheckpoints(file);
    await store.put({ trail: 'codec', seq: 1, hash: 'a'.repeat(64), at: '2026-11-26T10:00:00.000Z' });
    writeFileSync(file, `${readFileSync(file, 'utf8')}{"trail":"codec","se`);
    expect((await store.list('codec')).map((c) => c.seq)).toEqual([1]);
    writeFileSync(file, `${readFileSync(file, 'utf8')}q\n`);
    await expect(store.list('codec')).rejects.toThrow();
  });
});
