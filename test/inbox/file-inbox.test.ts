// What only the file inbox does: upgrading from the spool of earlier versions (one plain file per callback), reading
// dead letters written before sealing, and setting aside a batch file it cannot read instead of dropping it.
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { RecordSealer } from '../../src/codec/at-rest';
import { FileInbox } from '../../src/inbox/files';
import { KEY_A, KEY_B, signalFor } from './support';

describe('file inbox', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(path.join(tmpdir(), 'file-inbox-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  const open = async (keys = [KEY_A]) => {
    const inbox = new FileInbox({
      dir: path.join(root, 'inbox'),
      deadLetterDir: path.join(root, 'dead-letters'),
      legacySpoolDir: path.join(root, 'spool'),
      sealer: new RecordSealer(keys),
    });
    await inbox.init();
    return inbox;
  };

  it("imports an earlier version's spool, in order, and removes it", async () => {
    const spool = path.join(root, 'spool');
    mkdirSync(spool);
    const signals = [signalFor(), signalFor(), signalFor()];
    signals.forEach((signal, i) =>
      writeFileSync(
        path.join(spool, `cb_00000000000000${i}_00000${i}_${signal.deliveryId}.json`),
        JSON.stringify({ version: 1, journeyId: 'upgraded', signal }),
      ),
    );
    writeFileSync(path.join(spool, 'cb_000000000000009_000009_broken.json'), '{not json');
    const inbox = await open();
    expect(readdirSync(spool)).toEqual([]);
    const claim = await inbox.claim(10, 10);
    expect(claim!.entries.map((e) => e.signal)).toEqual(signals);
    await claim!.settle([], []);
    // The unreadable one is kept for an operator, not dropped.
    expect((await inbox.deadLetters.list({ limit: 10 })).letters).toEqual([
      expect.objectContaining({ reason: 'corrupt_spool_entry' }),
    ]);
  });

  it('reads dead letters written before sealing', async () => {
    const dir = path.join(root, 'dead-letters');
    mkdirSync(dir, { recursive: true });
    const id = 'dl_001795425635558_4oqycJRJVg8g';
    const old = {
      id,
      journeyId: 'j1',
      reason: 'journey_finished',
      detail: 'the journey has already finished; it takes no more callbacks',
      receivedAt: '2026-01-01T00:00:00.000Z',
      deadLetteredAt: '2026-01-01T00:00:01.000Z',
      replays: 0,
      rawBody: '{"event":1}',
    };
    writeFileSync(path.join(dir, `${id}.json`), JSON.stringify(old));
    const inbox = await open();
    expect(await inbox.deadLetters.get(id)).toEqual(old);
    expect(await inbox.deadLetters.count()).toBe(1);
  });

  it('sets aside a batch file sealed under a key it no longer has, as a dead letter naming it', async () => {
    const before = await open([KEY_A]);
    await before.append('j', signalFor());
    await before.close();
    const after = await open([KEY_B]);
    expect(await after.claim(10, 10)).toBeUndefined();
    const letters = (await after.deadLetters.list({ limit: 10 })).letters;
    expect(letters).toEqual([expect.objectContaining({ reason: 'corrupt_inbox_entry' })]);
    expect(letters[0]!.detail).toMatch(/unknown key id "k-a"/);
    expect(readdirSync(path.join(root, 'inbox')).filter((n) => n.endsWith('.corrupt'))).toHaveLength(1);
    // With the key configured again, an operator can put the file back: nothing was lost.
  });
});
