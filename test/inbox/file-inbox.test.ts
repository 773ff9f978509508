// What only the file inbox does: its log of preallocated segments (torn last writes ignored, damage reported and
// set aside, old segments deleted or carried forward), upgrading from the spool and the batch files of earlier
// versions, reading dead letters written before sealing, and setting aside a record it cannot read.
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { RecordSealer } from '../../src/codec/at-rest';
import { FileInbox, waitingInFolder } from '../../src/inbox/files';
import { frame, readFrames, SegmentLog, SegmentLogClosedError } from '../../src/inbox/segment-log';
import type { CallbackSignal } from '../../src/contract/definitions';
import { KEY_A, KEY_B, PATIENT, signalFor } from './support';

describe('file inbox', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(path.join(tmpdir(), 'file-inbox-'));
  });
  const opened: FileInbox[] = [];
  afterEach(async () => {
    for (const inbox of opened.splice(0)) await inbox.close();
    rmSync(root, { recursive: true, force: true });
  });

  const open = async (keys = [KEY_A], more: { segmentBytes?: number; maxSegments?: number } = {}) => {
    const inbox = new FileInbox({
      dir: path.join(root, 'inbox'),
      deadLetterDir: path.join(root, 'dead-letters'),
      legacySpoolDir: path.join(root, 'spool'),
      sealer: new RecordSealer(keys),
      ...more,
    });
    opened.push(inbox);
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

  const segments = () => readdirSync(path.join(root, 'inbox')).filter((n) => /^seg_\d{15}\.log$/.test(n));
  const letters = async (inbox: FileInbox) => (await inbox.deadLetters.list({ limit: 100 })).letters;

  it('sets aside a record sealed under a key it no longer has, as a dead letter naming it, to be put back', async () => {
    const kept = signalFor();
    const before = await open([KEY_A]);
    await before.append('j', kept);
    await before.close();
    const after = await open([KEY_B]);
    expect(await after.claim(10, 10)).toBeUndefined();
    const found = await letters(after);
    expect(found).toEqual([expect.objectContaining({ reason: 'corrupt_inbox_entry' })]);
    expect(found[0]!.detail).toMatch(/unknown key id "k-a"/);
    const aside = readdirSync(path.join(root, 'inbox')).filter((n) => n.endsWith('.corrupt'));
    expect(aside).toHaveLength(1);
    await after.close();
    // Reported once: the next start does not find it again.
    const again = await open([KEY_B]);
    expect(await letters(again)).toHaveLength(1);
    await again.close();
    // With the key configured again, the operator renames the file back: nothing was lost.
    const dir = path.join(root, 'inbox');
    renameSync(path.join(dir, aside[0]!), path.join(dir, aside[0]!.replace(/\.corrupt$/, '')));
    const restored = await open([KEY_B, KEY_A]);
    const claim = await restored.claim(10, 10);
    expect(claim!.entries.map((e) => e.signal)).toEqual([kept]);
    await claim!.settle([], []);
    await restored.close();
  });

  it('closed while a write prepares its segment: the write is refused and no file is left open or behind', async () => {
    const dir = path.join(root, 'log');
    // The files this process holds open in the log's folder (a handle left open would be closed by the collector).
    const openIn = () =>
      readdirSync('/proc/self/fd').filter((fd) => {
        try {
          return readlinkSync(`/proc/self/fd/${fd}`).startsWith(`${dir}/`);
        } catch {
          return false;
        }
      });
    const log = new SegmentLog({ dir, segmentBytes: 256 * 1024 });
    await log.readExisting();
    const write = log.write([Buffer.from('{"a":1}')]);
    await log.close();
    await expect(write).rejects.toBeInstanceOf(SegmentLogClosedError);
    await expect(log.write([Buffer.from('{"b":2}')])).rejects.toBeInstanceOf(SegmentLogClosedError);
    expect(openIn()).toEqual([]);
    expect(readdirSync(dir)).toEqual([]);

    // Closed with a segment written and the next one being prepared ahead: both closed, the unused one removed.
    const again = new SegmentLog({ dir, segmentBytes: 256 * 1024 });
    await again.readExisting();
    const segment = await again.write([Buffer.from('{"c":3}')]);
    await again.close();
    expect(openIn()).toEqual([]);
    expect(readdirSync(dir)).toEqual([segment.name]);
  });

  it('a settle that comes after the close is not retried against the closed log', async () => {
    const inbox = await open();
    await inbox.append('late', signalFor());
    const claim = await inbox.claim(10, 10);
    await inbox.close();
    const timers = jest.spyOn(global, 'setTimeout');
    try {
      // Not written (the entry is signalled again at the next start); it may be refused, as the inbox is closed.
      await claim!.settle([claim!.entries[0]!.id], []).catch((err: unknown) => {
        expect(String(err)).toMatch(/the inbox is closed/);
      });
      await new Promise((r) => setTimeout(r, 350));
      // The sleep's own timer only: no settle timer armed, and none re-armed after a failed write every 100 ms.
      expect(timers).toHaveBeenCalledTimes(1);
    } finally {
      timers.mockRestore();
    }
  });

  it('reads records up to a torn last write (never acknowledged) and reports damage before the end', () => {
    const a = frame(Buffer.from('{"t":"s","ids":["e_000000000000001"]}'));
    const b = frame(Buffer.from('{"t":"s","ids":["e_000000000000002"]}'));
    const zeros = Buffer.alloc(64);
    expect(readFrames(Buffer.concat([a, b, zeros])).records).toHaveLength(2);
    // The last record torn: only its first bytes reached the disk, zeros after.
    const torn = Buffer.concat([a, b.subarray(0, 20), Buffer.alloc(b.length - 20), zeros]);
    expect(readFrames(torn)).toEqual({ records: [expect.objectContaining({ offset: 0 })] });
    // The file ends inside the last record.
    expect(readFrames(Buffer.concat([a, b.subarray(0, 12)])).records).toHaveLength(1);
    // A changed byte in the first record, with a good one after it: damage, reported where it starts.
    const flipped = Buffer.concat([a, b, zeros]);
    flipped[12] = flipped[12]! ^ 0xff;
    expect(readFrames(flipped)).toEqual({ records: [], damagedAt: 0 });
  });

  it('keeps what precedes damage in a segment, sets the rest aside and reports it once', async () => {
    const first = await open();
    const signals = [signalFor(), signalFor(), signalFor()];
    for (const s of signals) await first.append('dmg', s);
    await first.close();
    const [name] = segments();
    const file = path.join(root, 'inbox', name!);
    const bytes = readFileSync(file);
    // The second record's payload changed on disk (its header says where it starts).
    const second = 8 + bytes.readUInt32LE(0);
    bytes[second + 20] = bytes[second + 20]! ^ 0xff;
    writeFileSync(file, bytes);

    const reopened = await open();
    const claim = await reopened.claim(10, 10);
    expect(claim!.entries.map((e) => e.signal)).toEqual([signals[0]]);
    await claim!.settle([], []);
    const found = await letters(reopened);
    expect(found).toEqual([expect.objectContaining({ reason: 'corrupt_inbox_entry' })]);
    expect(found[0]!.detail).toContain(`${name} is damaged from byte ${second}`);
    expect(readdirSync(path.join(root, 'inbox'))).toContain(`${name}.${second}.corrupt`);
    await reopened.close();
    // The damaged segment is gone (what it held was written anew): the next start reports nothing more.
    expect(segments()).not.toContain(name);
    const third = await open();
    expect(await letters(third)).toHaveLength(1);
    expect((await third.claim(10, 10))!.entries.map((e) => e.signal)).toEqual([signals[0]]);
    await third.close();
  });

  it('deletes settled segments and carries a long-waiting entry forward, keeping its place', async () => {
    const inbox = await open([KEY_A], { segmentBytes: 64 * 1024, maxSegments: 3 });
    // One callback that waits (its journey's first), then many that are signalled as they come.
    const waiting = signalFor();
    await inbox.append('slow', waiting);
    for (let round = 0; round < 60; round++) {
      await Promise.all(Array.from({ length: 10 }, () => inbox.append(`fast-${round % 7}`, signalFor())));
      const claim = await inbox.claim(100, 100);
      const fast = claim!.entries.filter((e) => e.journeyId !== 'slow').map((e) => e.id);
      await claim!.settle(fast, []);
      expect(segments().length).toBeLessThanOrEqual(4);
    }
    const later = signalFor();
    await inbox.append('slow', later);
    await inbox.close();
    const restarted = await open([KEY_A], { segmentBytes: 64 * 1024, maxSegments: 3 });
    const claim = await restarted.claim(10, 10);
    expect(claim!.entries.map((e) => e.signal)).toEqual([waiting, later]);
    expect((await restarted.stats()).depth).toBe(2);
    await claim!.settle([], []);
    await restarted.close();
  });

  it('keeps an entry sealed for its patient as it came, beside others sealed under the payload keys, through a carry and a restart', async () => {
    const log = () =>
      segments()
        .map((name) => readFileSync(path.join(root, 'inbox', name)))
        .flatMap((bytes) => readFrames(bytes).records.map((r) => JSON.parse(r.payload.toString('utf8')) as unknown));
    const inbox = await open([KEY_A], { segmentBytes: 64 * 1024, maxSegments: 3 });
    // What patient-sealing.ts hands the store: ids and times in the clear, the callback in an envelope of its own.
    const own = {
      deliveryId: 'd-own',
      receivedAt: new Date().toISOString(),
      sealed: { v: 1, ref: 'p_ref', dek: 'dek-1', iv: 'aXY=', data: 'c2VhbGVkLWZvci10aGUtcGF0aWVudA==' },
    } as unknown as CallbackSignal;
    const plain = signalFor();
    // In one group commit: two records, one kept as it came (no cipher), one sealed under the payload keys.
    await Promise.all([inbox.append('held', own, { sealed: true }), inbox.append('held', plain)]);
    const written = log();
    expect(written).toEqual([
      { t: 'p', ids: [expect.any(String)], entries: [{ journeyId: 'held', signal: own }] },
      { t: 'a', ids: [expect.any(String)], sealed: expect.objectContaining({ keyId: KEY_A.id }) },
    ]);
    expect(JSON.stringify(written)).not.toContain(PATIENT.name);
    // Carried forward with the oldest segment: each stays as it was written.
    for (let round = 0; round < 60; round++) {
      await Promise.all(Array.from({ length: 10 }, () => inbox.append(`fast-${round % 7}`, signalFor())));
      const claim = await inbox.claim(100, 100);
      await claim!.settle(
        claim!.entries.filter((e) => e.journeyId !== 'held').map((e) => e.id),
        [],
      );
    }
    await inbox.close();
    const carried = log().filter((r) => JSON.stringify(r).includes('"held"'));
    expect(carried.every((r) => (r as { t: string }).t === 'p')).toBe(true);
    expect(JSON.stringify(log())).not.toContain(PATIENT.name);
    const restarted = await open([KEY_A], { segmentBytes: 64 * 1024, maxSegments: 3 });
    const claim = await restarted.claim(10, 10);
    expect(claim!.entries.map((e) => e.signal)).toEqual([own, plain]);
    await claim!.settle([], []);
  });

  it('reports a record whose entries are not a list as one this version does not write', async () => {
    const first = await open();
    await first.append('j', signalFor());
    await first.close();
    // A record whose checksum holds but whose entries are not a list: written by something else.
    const log = new SegmentLog({ dir: path.join(root, 'inbox'), segmentBytes: 64 * 1024 });
    await log.readExisting();
    await log.write([Buffer.from('{"t":"p","ids":["e_000000000000009"],"entries":{}}')]);
    await log.close();
    const second = await open();
    expect((await second.stats()).depth).toBe(1);
    expect(await letters(second)).toEqual([
      expect.objectContaining({
        reason: 'corrupt_inbox_entry',
        detail: expect.stringContaining('its ids or entries are not lists'),
      }),
    ]);
  });

  it('tells tools outside the process how many callbacks wait, from the log alone', async () => {
    const dir = path.join(root, 'inbox');
    expect(waitingInFolder(dir)).toBe(0);
    const inbox = await open();
    await Promise.all(Array.from({ length: 5 }, (_x, i) => inbox.append(`w-${i % 2}`, signalFor())));
    expect(waitingInFolder(dir)).toBe(5);
    const claim = await inbox.claim(1, 10);
    await claim!.settle(
      claim!.entries.map((e) => e.id),
      [],
    );
    // The settle reaches the log with the next write, or on its own once appends pause (settles ride with appends).
    const until = Date.now() + 10_000;
    while (waitingInFolder(dir) !== 5 - claim!.entries.length && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(waitingInFolder(dir)).toBe(5 - claim!.entries.length);
    await inbox.close();
  });

  it('imports the batch files of the previous version and removes them', async () => {
    const sealer = new RecordSealer([KEY_A]);
    const dir = path.join(root, 'inbox');
    mkdirSync(dir, { recursive: true });
    const signals = [signalFor(), signalFor()];
    const content = { entries: signals.map((signal) => ({ journeyId: 'old-batch', signal })) };
    writeFileSync(
      path.join(dir, 'b_001795425635558_000001.json'),
      JSON.stringify({ version: 2, sealed: sealer.sealToJson(JSON.stringify(content), 'callback-inbox') }),
    );
    const inbox = await open();
    expect(readdirSync(dir).filter((n) => n.startsWith('b_'))).toEqual([]);
    const claim = await inbox.claim(10, 10);
    expect(claim!.entries.map((e) => e.signal)).toEqual(signals);
    await claim!.settle([], []);
    await inbox.close();
  });
});
