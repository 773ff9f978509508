import { eachYielding } from '../../src/inbox/yielding';

const busy = (ms: number) => {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // the work of one item
  }
};

describe('eachYielding', () => {
  it('gives the event loop a turn between slices of a long run, in order', async () => {
    const seen: number[] = [];
    let ranAt: number | undefined;
    setImmediate(() => (ranAt = seen.length));
    await eachYielding(
      Array.from({ length: 200 }, (_, i) => i),
      (i) => {
        busy(0.2);
        seen.push(i);
      },
      2,
    );
    expect(seen).toEqual(Array.from({ length: 200 }, (_, i) => i));
    // 40 ms of work in 2 ms slices: what was waiting ran after the first slice, not after the whole run.
    expect(ranAt).toBeDefined();
    expect(ranAt!).toBeLessThan(200);
    expect(ranAt!).toBeGreaterThan(0);
  });

  it('awaits each item before the next, and stops at the first failure', async () => {
    const done: number[] = [];
    await expect(
      eachYielding([1, 2, 3, 4], async (i) => {
        await new Promise((r) => setTimeout(r, 1));
        if (i === 3) throw new Error('item 3');
        done.push(i);
      }),
    ).rejects.toThrow('item 3');
    expect(done).toEqual([1, 2]);
  });
});
