// What one sender's bad input may cost: nothing of another's. The group commit's isolation of a bad item, the parser's
// depth bound, the bound on what a callback puts into a journey's history, and the forwarder's watch for flooded
// journeys, each without a server.
import { callbackSignal, nestingOver, readCallback, NORMALIZED_MAX_BYTES } from '../../src/inbox/reading';
import { FloodWatch } from '../../src/inbox/flood-watch';
import { GroupCommit } from '../../src/group-commit';
import { forJourney, HELD_BODY_MAX_BYTES } from '../../src/contract/definitions';

class ItemRefused extends Error {}

describe('group commit', () => {
  it("halves a batch that failed for an item's value until only that item fails", async () => {
    const writes: number[][] = [];
    const commit = new GroupCommit<number>(
      (batch) => {
        writes.push(batch);
        return batch.includes(13) ? Promise.reject(new ItemRefused('13 is refused')) : Promise.resolve();
      },
      { itemFault: (err) => err instanceof ItemRefused },
    );
    const results = await Promise.allSettled(Array.from({ length: 40 }, (_v, i) => commit.add(i)));
    expect(results.filter((r) => r.status === 'rejected')).toHaveLength(1);
    expect(results[13]!.status).toBe('rejected');
    // The first write carried one item; the next 39 shared a write, and halving found 13 in a few more.
    expect(writes.length).toBeLessThanOrEqual(2 + 2 * Math.ceil(Math.log2(39)));
  });

  it('fails the whole batch at once when the store itself failed (halving would wait for the same failure)', async () => {
    let writes = 0;
    const commit = new GroupCommit<number>(
      (batch) => {
        writes++;
        return batch.length > 1 ? Promise.reject(new Error('disk full')) : Promise.resolve();
      },
      { itemFault: (err) => err instanceof ItemRefused },
    );
    const results = await Promise.allSettled(Array.from({ length: 10 }, (_v, i) => commit.add(i)));
    // The first item alone, then the other nine together: two writes, nine refusals.
    expect(writes).toBe(2);
    expect(results.filter((r) => r.status === 'rejected')).toHaveLength(9);
  });
});

describe('the webhook parser', () => {
  it('refuses a body nested deeper than a callback is, before parsing it', () => {
    const deep = `{"event":1,"x":${'['.repeat(500_000)}${']'.repeat(500_000)}}`;
    expect(nestingOver(deep, 32)).toBe(true);
    expect(readCallback(deep)).toEqual({ ok: false, issues: ['(body): is nested deeper than 32 levels'] });
    // Brackets inside strings (escaped quotes too) are text, not nesting.
    expect(nestingOver(JSON.stringify({ event: 1, note: `say \\"${'['.repeat(100)}` }), 32)).toBe(false);
    expect(nestingOver('{"a":{"b":[{"c":[1,2]}]}}', 5)).toBe(false);
    expect(nestingOver('{"a":{"b":[{"c":[[1],2]}]}}', 5)).toBe(true);
  });
});

describe("what a callback puts into a journey's history", () => {
  const delivery = (rawBody: string) => ({ deliveryId: 'd-1', receivedAt: '2026-11-26T00:00:00.000Z', rawBody });
  const event1 = (extra: Record<string, unknown>) =>
    JSON.stringify({
      event: 1,
      patient_exam_id: '9001',
      exam_id: '101',
      exam_status: 'Approved',
      rx_status: null,
      exam_url: null,
      provider_name: 'Dr. A',
      reason: 'ok',
      patient_email: 'pat@example.com',
      ...extra,
    });

  it('is the normalized event and a digest of the body, never the body', () => {
    // Nearly a megabyte of answers the journey does not act on.
    const rawBody = event1({ questions_answers: [{ question: 'q', answer: 'x'.repeat(900_000) }] });
    const reading = readCallback(rawBody);
    if (!reading.ok) throw new Error('expected a reading');
    const made = callbackSignal(reading, delivery(rawBody));
    if (!made.ok) throw new Error(made.over);
    expect(made.signal.body).toEqual({
      bytes: Buffer.byteLength(rawBody),
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    // The inbox keeps the body (for dead letters); the journey gets none of it.
    expect(made.signal.raw).toBeDefined();
    const sent = forJourney(made.signal);
    expect(sent).not.toHaveProperty('raw');
    expect(Buffer.byteLength(JSON.stringify(sent))).toBeLessThan(1_024);
  });

  it('is refused (for the dead letters) when the normalized event itself is over its bound', () => {
    const rawBody = event1({ reason: 'r'.repeat(NORMALIZED_MAX_BYTES + 1) });
    const reading = readCallback(rawBody);
    if (!reading.ok) throw new Error('expected a reading');
    const made = callbackSignal(reading, delivery(rawBody));
    expect(made.ok).toBe(false);
    if (!made.ok) expect(made.over).toMatch(/over the 8192 a journey keeps/);
  });

  it("keeps an unread callback's body for a person only while it is small", () => {
    const small = JSON.stringify({ event: 1, something: 'unknown layout' });
    const reading = readCallback(small);
    if (!reading.ok) throw new Error('expected a reading');
    const made = callbackSignal(reading, delivery(small));
    if (!made.ok) throw new Error(made.over);
    expect(forJourney(made.signal).raw).toEqual({ event: 1, something: 'unknown layout' });

    const large = JSON.stringify({ event: 1, something: 'u'.repeat(HELD_BODY_MAX_BYTES) });
    const big = readCallback(large);
    if (!big.ok) throw new Error('expected a reading');
    const refused = callbackSignal(big, delivery(large));
    expect(refused.ok).toBe(false);
  });
});

describe('flood watch', () => {
  it('asks a journey only after many signals, keeps a flooded answer, and asks again later', async () => {
    let now = 0;
    const asked: string[] = [];
    let floodedNow = true;
    const watch = new FloodWatch({
      ask: (journeyId) => {
        asked.push(journeyId);
        return Promise.resolve(floodedNow);
      },
      askAfter: 5,
      askEvery: 3,
      answerTtlMs: 1_000,
      now: () => now,
    });
    for (let i = 0; i < 4; i++) {
      expect(await watch.flooded('j')).toBe(false);
      watch.signalled('j');
    }
    expect(asked).toEqual([]);
    watch.signalled('j');
    expect(await watch.flooded('j')).toBe(true);
    expect(await watch.flooded('j')).toBe(true);
    expect(asked).toEqual(['j']);
    // A person retried: once the answer is old, the journey is asked again and its callbacks flow.
    floodedNow = false;
    now += 1_001;
    expect(await watch.flooded('j')).toBe(false);
    expect(asked).toHaveLength(2);
    // Not flooded: asked again after askEvery more signals.
    for (let i = 0; i < 3; i++) {
      expect(await watch.flooded('j')).toBe(false);
      watch.signalled('j');
    }
    expect(asked).toHaveLength(2);
    await watch.flooded('j');
    expect(asked).toHaveLength(3);
    // Another journey is not held back by this one.
    expect(await watch.flooded('other')).toBe(false);
  });

  it('lets the callbacks through when the journey cannot be asked', async () => {
    const watch = new FloodWatch({ ask: () => Promise.resolve(undefined), askAfter: 1 });
    watch.signalled('j');
    expect(await watch.flooded('j')).toBe(false);
  });
});
