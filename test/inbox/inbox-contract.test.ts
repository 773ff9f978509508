// One contract, two stores: every test below runs against the file inbox and the PostgreSQL inbox (a real server).
// Durable appends in arrival order, claims of whole journeys that a dead holder releases, group commit, dead letters
// in the same store, records sealed at rest, and a store that cannot write says so instead of pretending.
import type { AuditEvent } from '../../src/audit/types';
import { expireDeadLetters } from '../../src/inbox/retention';
import {
  InboxUnavailableError,
  UnstorableCallbackError,
  type CallbackInbox,
  type InboxClaim,
} from '../../src/inbox/types';
import { fileHarness, KEY_A, KEY_B, PATIENT, postgresHarness, signalFor, type StoreHarness } from './support';

const stores: [string, () => Promise<StoreHarness>][] = [
  ['files', fileHarness],
  ['postgres', postgresHarness],
];

describe.each(stores)('callback inbox (%s)', (_kind, makeHarness) => {
  let h: StoreHarness;
  let inbox: CallbackInbox;

  beforeAll(async () => {
    h = await makeHarness();
  }, 60_000);
  afterAll(async () => h?.teardown());
  beforeEach(async () => {
    await h.reset();
    inbox = await h.open();
  });

  const ids = (claim: InboxClaim | undefined) => claim?.entries.map((e) => e.signal.deliveryId) ?? [];

  it('keeps appends in arrival order and claims whole journeys, at most the given number of each', async () => {
    const order: Record<string, string[]> = { a: [], b: [], c: [] };
    for (let i = 0; i < 12; i++) {
      const journeyId = ['a', 'b', 'c'][i % 3]!;
      const signal = signalFor();
      order[journeyId]!.push(signal.deliveryId);
      await inbox.append(journeyId, signal);
    }
    expect((await inbox.stats()).depth).toBe(12);
    const claim = await inbox.claim(2, 3);
    expect(claim).toBeDefined();
    // The two journeys whose entries came first, three entries each, in arrival order.
    expect(claim!.entries.filter((e) => e.journeyId === 'a').map((e) => e.signal.deliveryId)).toEqual(
      order.a!.slice(0, 3),
    );
    expect(claim!.entries.filter((e) => e.journeyId === 'b').map((e) => e.signal.deliveryId)).toEqual(
      order.b!.slice(0, 3),
    );
    expect(new Set(claim!.entries.map((e) => e.journeyId))).toEqual(new Set(['a', 'b']));

    // While that claim is open, another claim (this process, or another replica of a shared store) gets only journey
    // c, also for an entry of a held journey that arrives meanwhile. (A file inbox belongs to one process.)
    await inbox.append('a', signalFor());
    const other = h.kind === 'files' ? inbox : await h.open();
    const second = await other.claim(10, 10);
    expect(new Set(second!.entries.map((e) => e.journeyId))).toEqual(new Set(['c']));
    expect(ids(second)).toEqual(order.c);
    await second!.settle(
      second!.entries.map((e) => e.id),
      [],
    );

    // Settle: the first entry of a is done, the rest of the claim released; a's next claim starts after it.
    const [firstOfA] = claim!.entries.filter((e) => e.journeyId === 'a');
    await claim!.settle([firstOfA!.id], []);
    const third = await inbox.claim(10, 100);
    expect(third!.entries.filter((e) => e.journeyId === 'a').map((e) => e.signal.deliveryId)).toEqual([
      ...order.a!.slice(1),
      expect.any(String),
    ]);
    expect(third!.entries.filter((e) => e.journeyId === 'b').map((e) => e.signal.deliveryId)).toEqual(order.b);
    await third!.settle(
      third!.entries.map((e) => e.id),
      [],
    );
    expect(await inbox.claim(10, 10)).toBeUndefined();
    expect((await inbox.stats()).depth).toBe(0);
  });

  it('is durable: what was appended is there after a restart, what was settled is not', async () => {
    const kept = signalFor();
    const done = signalFor();
    await inbox.append('j1', done);
    await inbox.append('j2', kept);
    const claim = await inbox.claim(1, 10);
    expect(ids(claim)).toEqual([done.deliveryId]);
    await claim!.settle([claim!.entries[0]!.id], []);
    await inbox.close();

    const restarted = await h.open();
    const after = await restarted.claim(10, 10);
    expect(ids(after)).toEqual([kept.deliveryId]);
    expect(after!.entries[0]!.signal).toEqual(kept);
    expect((await restarted.stats()).oldestReceivedAt?.toISOString()).toBe(kept.receivedAt);
    await after!.settle([], []);
  });

  it('releases the claim of a holder that died: another instance takes the entries', async () => {
    const s = signalFor();
    await inbox.append('j-dead', s);
    const held = await inbox.claim(10, 10);
    expect(ids(held)).toEqual([s.deliveryId]);
    const other = await h.open();
    if (h.killHolders) {
      // Another replica: the journey is held, so nothing for it yet.
      expect(await other.claim(10, 10)).toBeUndefined();
      await h.killHolders();
    }
    // (Files: a new process over the folder is what follows a crash; claims live in the dead process's memory.)
    const taken = await other.claim(10, 10);
    expect(ids(taken)).toEqual([s.deliveryId]);
    await taken!.settle([taken!.entries[0]!.id], []);
    // The dead holder's settle cannot undo anything (PostgreSQL: its session is gone).
    await held!.settle([], []).catch(() => undefined);
    expect((await other.stats()).depth).toBe(0);
  });

  it('group-commits a burst: 200 simultaneous appends take a few writes, each durable when it resolves', async () => {
    const batches: number[] = [];
    const writeTimes: number[] = [];
    const burst = await h.open({
      onBatch: (n, seconds) => {
        batches.push(n);
        writeTimes.push(seconds);
      },
    });
    const signals = Array.from({ length: 200 }, () => signalFor());
    await Promise.all(signals.map((s, i) => burst.append(`burst-${i % 20}`, s)));
    expect(batches.reduce((a, b) => a + b, 0)).toBe(200);
    expect(batches.length).toBeLessThanOrEqual(10);
    // Each write's own time, in seconds (the write histogram): positive, and far from a millisecond read as seconds.
    for (const t of writeTimes) expect(t).toBeGreaterThan(0);
    expect(Math.max(...writeTimes)).toBeLessThan(5);
    expect((await burst.stats()).depth).toBe(200);
    // In arrival order per journey.
    const claim = await burst.claim(100, 100);
    for (let j = 0; j < 20; j++) {
      const expected = signals.filter((_s, i) => i % 20 === j).map((s) => s.deliveryId);
      expect(claim!.entries.filter((e) => e.journeyId === `burst-${j}`).map((e) => e.signal.deliveryId)).toEqual(
        expected,
      );
    }
    await claim!.settle([], []);
  });

  it('refuses a callback it cannot write alone: its neighbours in the same group commit are stored', async () => {
    const shared = await h.open();
    // A body nested past what JSON.stringify can write (the webhook refuses it before; a store must not rely on it).
    let deep: unknown = 1;
    for (let i = 0; i < 200_000; i++) deep = [deep];
    const poison = { ...signalFor(), raw: deep };
    // PostgreSQL refuses a NUL in text: one row's value, not the store.
    const nulJourney = { journeyId: 'bad\u0000journey', signal: signalFor() };
    const good = Array.from({ length: 40 }, (_v, i) => ({ journeyId: `good-${i % 4}`, signal: signalFor() }));
    const results = await Promise.allSettled([
      ...good.slice(0, 20).map((g) => shared.append(g.journeyId, g.signal)),
      shared.append('poisoned', poison),
      shared.append(nulJourney.journeyId, nulJourney.signal),
      ...good.slice(20).map((g) => shared.append(g.journeyId, g.signal)),
    ]);
    const [goodBefore, [poisoned, nul], goodAfter] = [results.slice(0, 20), results.slice(20, 22), results.slice(22)];
    for (const r of [...goodBefore, ...goodAfter]) expect(r.status).toBe('fulfilled');
    expect(poisoned!.status).toBe('rejected');
    expect((poisoned as PromiseRejectedResult).reason).toBeInstanceOf(UnstorableCallbackError);
    if (h.kind === 'postgres') expect(nul!.status).toBe('rejected');
    const stored = h.kind === 'postgres' ? 40 : 41;
    expect((await shared.stats()).depth).toBe(stored);
    const claim = await shared.claim(100, 100);
    expect(
      claim!.entries
        .filter((e) => e.journeyId.startsWith('good-'))
        .map((e) => e.signal.deliveryId)
        .sort(),
    ).toEqual(good.map((g) => g.signal.deliveryId).sort());
    await claim!.settle([], []);
  });

  it('moves entries to the dead letters of the same store on settle, and keeps letters for operators', async () => {
    const s = signalFor(4242);
    await inbox.append('gone', s);
    const claim = await inbox.claim(10, 10);
    await claim!.settle(
      [],
      [
        {
          entryId: claim!.entries[0]!.id,
          letter: {
            journeyId: 'gone',
            reason: 'journey_not_found',
            detail: 'no journey with this id exists',
            event: 1,
            patientExamId: 4242,
            deliveryId: s.deliveryId,
            receivedAt: s.receivedAt,
            rawBody: JSON.stringify(s.raw),
          },
        },
      ],
    );
    expect((await inbox.stats()).depth).toBe(0);
    expect(await inbox.deadLetters.count()).toBe(1);
    const page = await inbox.deadLetters.list({ limit: 10 });
    expect(page.letters).toEqual([
      expect.objectContaining({ journeyId: 'gone', reason: 'journey_not_found', deliveryId: s.deliveryId }),
    ]);
    expect(JSON.parse(page.letters[0]!.rawBody)).toEqual(s.raw);

    // Pages, oldest first; update; remove.
    for (let i = 0; i < 4; i++) {
      await inbox.deadLetters.add(
        { journeyId: `u${i}`, reason: 'unparseable', detail: 'x', receivedAt: new Date().toISOString(), rawBody: '{' },
        new Date(Date.now() + (i + 1) * 1000),
      );
    }
    const first = await inbox.deadLetters.list({ limit: 3 });
    expect(first.letters.map((l) => l.journeyId)).toEqual(['gone', 'u0', 'u1']);
    const rest = await inbox.deadLetters.list({ limit: 3, after: first.next! });
    expect(rest.letters.map((l) => l.journeyId)).toEqual(['u2', 'u3']);
    expect(rest.next).toBeUndefined();
    const letter = first.letters[1]!;
    await inbox.deadLetters.update({ ...letter, replays: 2, lastReplayAt: '2026-01-01T00:00:00.000Z' });
    expect(await inbox.deadLetters.get(letter.id)).toMatchObject({
      replays: 2,
      lastReplayAt: '2026-01-01T00:00:00.000Z',
    });
    expect(await inbox.deadLetters.remove(letter.id)).toBe(true);
    expect(await inbox.deadLetters.remove(letter.id)).toBe(false);
    expect(await inbox.deadLetters.get(letter.id)).toBeUndefined();
    expect(await inbox.deadLetters.get('../../etc/passwd')).toBeUndefined();
    expect(await inbox.deadLetters.count()).toBe(4);
  });

  it('deletes dead letters past the retention period, oldest first, each deletion audited before it happens', async () => {
    const day = 86_400_000;
    const now = Date.now();
    for (const [journeyId, age] of [
      ['old-1', 40],
      ['old-2', 31],
      ['recent', 29],
      ['today', 0],
    ] as const) {
      await inbox.deadLetters.add(
        { journeyId, reason: 'journey_finished', detail: 'x', receivedAt: new Date().toISOString(), rawBody: '{}' },
        new Date(now - age * day),
      );
    }
    // Each deletion is on the record before it happens: a trail that cannot be written deletes nothing.
    await expect(
      expireDeadLetters(inbox.deadLetters, {
        olderThan: new Date(now - 30 * day),
        audit: () => Promise.reject(new Error('the audit trail is down')),
      }),
    ).rejects.toThrow('the audit trail is down');
    expect(await inbox.deadLetters.count()).toBe(4);
    const audit: AuditEvent[] = [];
    const r = await expireDeadLetters(inbox.deadLetters, {
      olderThan: new Date(now - 30 * day),
      audit: async (e) => {
        // Recorded while the letter is still there.
        expect(await inbox.deadLetters.get(String(e.details?.deadLetterId))).toBeDefined();
        audit.push(e);
      },
      pageSize: 1,
    });
    expect(r).toEqual({ removed: 2 });
    expect((await inbox.deadLetters.list({ limit: 10 })).letters.map((l) => l.journeyId)).toEqual(['recent', 'today']);
    expect(audit.map((e) => [e.action, e.subject, e.details?.journeyId, e.details?.reason])).toEqual([
      ['dead-letter.expire', 'retention', 'old-1', 'journey_finished'],
      ['dead-letter.expire', 'retention', 'old-2', 'journey_finished'],
    ]);
    // Nothing left to expire: a second sweep (another replica) removes and audits nothing.
    expect(await expireDeadLetters(inbox.deadLetters, { olderThan: new Date(now - 30 * day) })).toEqual({ removed: 0 });
  });

  it('seals entries and dead letters at rest with the key ring: no patient field in the clear', async () => {
    const sealed = await h.open({ keys: [KEY_A] });
    const s = signalFor(777);
    await sealed.append('sealed-j', s);
    await sealed.deadLetters.add({
      journeyId: 'sealed-j',
      reason: 'unparseable',
      detail: 'the body is not a callback',
      receivedAt: s.receivedAt,
      rawBody: JSON.stringify(s.raw),
    });
    const raw = (await h.rawDump()).toString('latin1');
    expect(raw).toContain('k-a');
    for (const value of Object.values(PATIENT)) expect(raw).not.toContain(value);

    // A restart after a rotation (new key first, old one kept) still reads them.
    const rotated = await h.open({ keys: [KEY_B, KEY_A] });
    const claim = await rotated.claim(10, 10);
    expect(claim!.entries[0]!.signal).toEqual(s);
    await claim!.settle([], []);
    expect((await rotated.deadLetters.list({ limit: 10 })).letters[0]!.rawBody).toBe(JSON.stringify(s.raw));

    // The same check finds the fields when records are not sealed: it would catch a leak.
    await h.reset();
    const plain = await h.open();
    await plain.append('plain-j', signalFor());
    expect((await h.rawDump()).toString('latin1')).toContain(PATIENT.email);
  });

  it('keeps an entry already sealed for its patient as it is (no second sealing), and claims it whole', async () => {
    const store = await h.open({ keys: [KEY_A] });
    const s = signalFor(778);
    await store.append('pre-sealed', s, { sealed: true });
    // Neither store seals it again: no payload key id beside it (the files inbox puts such entries in a record of
    // their own; PostgreSQL leaves the row's key id empty). The signal here stands in for the sealed one.
    expect((await h.rawDump()).toString('latin1')).not.toContain('k-a');
    await store.append('plain-j', signalFor(779));
    expect((await h.rawDump()).toString('latin1')).toContain('k-a');
    const claim = await store.claim(10, 10);
    expect(claim!.entries.map((e) => [e.journeyId, e.signal])).toEqual([
      ['pre-sealed', s],
      ['plain-j', expect.objectContaining({ deliveryId: expect.any(String) })],
    ]);
    await claim!.settle(
      claim!.entries.map((e) => e.id),
      [],
    );
    expect((await store.stats()).depth).toBe(0);
  });

  it('refuses an append it cannot store (and takes them again once it can)', async () => {
    await inbox.append('before', signalFor());
    await h.breakWrites();
    try {
      await expect(inbox.append('during', signalFor())).rejects.toBeInstanceOf(InboxUnavailableError);
      await expect(
        inbox.deadLetters.add({ journeyId: 'x', reason: 'unparseable', detail: 'x', receivedAt: '', rawBody: '' }),
      ).rejects.toThrow();
    } finally {
      await h.repairWrites();
    }
    const after = signalFor();
    // PostgreSQL: the pool's broken connections are replaced on the next query.
    await inbox.append('after', after);
    const reopened = await h.open();
    const claim = await reopened.claim(10, 10);
    expect(claim!.entries.map((e) => e.journeyId)).toContain('after');
    expect(claim!.entries.map((e) => e.journeyId)).not.toContain('during');
    await claim!.settle([], []);
  }, 60_000);
});
