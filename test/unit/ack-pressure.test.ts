// When the forwarder holds its signals back: a surge that made the acknowledgements slow, for as long as the callbacks
// keep coming; not one slow answer now and then, and not a high rate the webhook answers quickly.
import { AckPressure, BURST_MAX_MS } from '../../src/inbox/ack-pressure';

/** Answers every `everyMs` from `from` to `to` (excluded), each taking `ms` in all, `storeWaitMs` of it the write's. */
function answers(p: AckPressure, from: number, to: number, everyMs: number, ms = 1, storeWaitMs = 0): void {
  for (let t = from; t < to; t += everyMs) p.record(ms, t, storeWaitMs);
}

describe('acknowledgement pressure', () => {
  it('begins with three slow answers within a second', () => {
    const p = new AckPressure(5);
    p.record(12, 0);
    p.record(2, 10);
    p.record(9, 100);
    expect(p.underPressure(150)).toBe(false);
    p.record(30, 400);
    expect(p.underPressure(450)).toBe(true);
  });

  it('lasts while callbacks keep coming at half the rate of its start, though the answers are fast again', () => {
    const p = new AckPressure(5);
    answers(p, 0, 1_000, 2); // 500 a second, fast
    expect(p.underPressure(1_000)).toBe(false);
    for (const t of [1_000, 1_001, 1_002]) p.record(20, t); // a stall: the surge begins at about 500 a second
    expect(p.underPressure(1_003)).toBe(true);
    answers(p, 1_003, 5_000, 2); // four more seconds at 500 a second, every answer fast
    expect(p.underPressure(5_000)).toBe(true);
    answers(p, 5_000, 7_000, 3); // 333 a second: still over half
    expect(p.underPressure(7_000)).toBe(true);
    answers(p, 7_000, 9_000, 10); // 100 a second: the surge has passed
    expect(p.underPressure(9_000)).toBe(false);
    // And it is over: a return to 500 a second of fast answers is no surge until answers are slow again.
    answers(p, 9_000, 11_000, 2);
    expect(p.underPressure(11_000)).toBe(false);
  });

  it('lasts at most the hold after the answers were last slow, however steady the callbacks', () => {
    const p = new AckPressure(5, 10_000);
    for (const t of [0, 1, 2]) p.record(20, t);
    answers(p, 3, 9_990, 2);
    expect(p.underPressure(9_990)).toBe(true);
    answers(p, 9_990, 10_010, 2);
    expect(p.underPressure(10_010)).toBe(false);
    // Slow again: a new surge, with a hold of its own.
    for (const t of [12_000, 12_001, 12_002]) p.record(20, t);
    answers(p, 12_003, 20_000, 2);
    expect(p.underPressure(20_000)).toBe(true);
    answers(p, 20_000, 22_100, 2);
    expect(p.underPressure(22_100)).toBe(false);
  });

  it('ends when the callbacks stop', () => {
    const p = new AckPressure(5);
    answers(p, 0, 1_000, 2);
    for (const t of [1_000, 1_001, 1_002]) p.record(20, t);
    expect(p.underPressure(1_500)).toBe(true);
    // Nothing for a second after the last answer: the slow ones are a second old and the rate is zero.
    expect(p.underPressure(2_010)).toBe(false);
  });

  it('ignores a slow answer now and then, and a high rate answered quickly', () => {
    const p = new AckPressure(5);
    for (let t = 0; t < 10_000; t += 700) {
      p.record(40, t);
      answers(p, t + 1, t + 700, 1);
      expect(p.underPressure(t + 700)).toBe(false);
    }
  });

  it('calls a surge a burst when the callbacks came at twice the rate of the ten seconds before or more', () => {
    const p = new AckPressure(5);
    answers(p, 0, 20_000, 20); // 50 a second
    // Then 500 a second.
    answers(p, 20_000, 21_500, 2);
    expect(p.burst(21_500)).toBe(false); // no pressure yet
    for (const t of [21_500, 21_501, 21_502]) p.record(20, t);
    expect(p.underPressure(21_503)).toBe(true);
    expect(p.burst(21_503)).toBe(true);
    // Through the surge it stays a burst while the callbacks keep coming at twice the rate before, until they ease off.
    answers(p, 21_503, 30_000, 2);
    expect(p.burst(30_000)).toBe(true);
    answers(p, 30_000, 32_000, 10);
    expect(p.underPressure(32_000)).toBe(false);
    expect(p.burst(32_000)).toBe(false);
  });

  it('calls a surge of a steady run no burst, nor a rise under twice the rate before', () => {
    const p = new AckPressure(5);
    // About 143 a second, for longer than a burst from quiet lasts.
    answers(p, 0, BURST_MAX_MS + 10_000, 7);
    const t0 = BURST_MAX_MS + 10_000;
    for (const t of [t0, t0 + 1, t0 + 2]) p.record(20, t);
    expect(p.underPressure(t0 + 3)).toBe(true);
    expect(p.burst(t0 + 3)).toBe(false);
    // Ended (the hold after the last slow answer), then a rise to about 1.4 times the rate: no burst either.
    answers(p, t0 + 3, t0 + 11_000, 7);
    expect(p.underPressure(t0 + 11_000)).toBe(false);
    answers(p, t0 + 11_000, t0 + 13_000, 5);
    const t1 = t0 + 13_000;
    for (const t of [t1, t1 + 1, t1 + 2]) p.record(20, t);
    expect(p.underPressure(t1 + 3)).toBe(true);
    expect(p.burst(t1 + 3)).toBe(false);
  });

  it('calls slow answers seconds into a rise from quiet a burst; a rate held past its longest is the steady run', () => {
    const p = new AckPressure(5);
    // 500 a second out of nothing, every answer fast for six seconds (the journeys' signals not yet felt).
    answers(p, 0, 6_000, 2);
    for (const t of [6_000, 6_001, 6_002]) p.record(20, t);
    expect(p.underPressure(6_003)).toBe(true);
    expect(p.burst(6_003)).toBe(true);
    // Nothing for a while: it has passed.
    expect(p.burst(9_000)).toBe(false);
    // 250 a second from quiet, for longer than a burst lasts: its slow answers then are the steady run's.
    answers(p, 20_000, 20_000 + BURST_MAX_MS + 5_000, 4);
    const t1 = 20_000 + BURST_MAX_MS + 5_000;
    for (const t of [t1, t1 + 1, t1 + 2]) p.record(20, t);
    expect(p.underPressure(t1 + 3)).toBe(true);
    expect(p.burst(t1 + 3)).toBe(false);
  });

  it('calls a rise whose answers are slow in all, the durable write included, a burst the webhook feels, for as long as the rise lasts', () => {
    const p = new AckPressure(5);
    // 500 a second from quiet; its own time 2 ms, the write's 6 ms more: slow in all under twice the threshold.
    answers(p, 0, 2_000, 2, 8, 6);
    expect(p.underPressure(2_000)).toBe(false);
    expect(p.burst(2_000)).toBe(false);
    // The write now waits 10 ms (its flush behind the journeys' signals for the cores): 12 ms in all, 2 ms its own.
    answers(p, 2_000, 2_010, 2, 12, 10);
    expect(p.underPressure(2_010)).toBe(false); // a surge counts the webhook's own time
    expect(p.burst(2_010)).toBe(true);
    // The signals held, the answers are fast again: it is a burst while the callbacks keep coming at that rate.
    answers(p, 2_010, 7_000, 2, 1);
    expect(p.burst(7_000)).toBe(true);
    // They stopped: it has passed.
    expect(p.burst(8_500)).toBe(false);
    // A rise after it starts unfelt again.
    answers(p, 30_000, 31_000, 2, 1);
    expect(p.burst(31_000)).toBe(false);
  });

  it('calls answers slow in all through a steady run neither a surge nor a burst', () => {
    const p = new AckPressure(5);
    // About 143 a second for longer than a burst from quiet lasts, then its writes turn slow.
    answers(p, 0, BURST_MAX_MS + 5_000, 7);
    const t0 = BURST_MAX_MS + 5_000;
    answers(p, t0, t0 + 2_000, 7, 30, 28);
    expect(p.underPressure(t0 + 2_000)).toBe(false);
    expect(p.burst(t0 + 2_000)).toBe(false);
  });

  it('calls a rise to fewer than BURST_MIN a second no burst, its answers slow or not', () => {
    const p = new AckPressure(5);
    // 40 a second from quiet (journeys completing), every answer slow in all and in its own time.
    answers(p, 0, 3_000, 25, 30, 0);
    expect(p.underPressure(3_000)).toBe(true);
    expect(p.burst(3_000)).toBe(false);
    // 100 a second is one.
    const q = new AckPressure(5);
    answers(q, 0, 3_000, 10, 30, 0);
    expect(q.burst(3_000)).toBe(true);
  });

  it('never presses with the threshold at 0 (pacing off)', () => {
    const p = new AckPressure(0);
    for (let t = 0; t < 100; t += 10) p.record(500, t);
    expect(p.underPressure(100)).toBe(false);
  });
});
