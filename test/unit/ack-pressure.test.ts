// When the forwarder holds its signals back: a surge that made the acknowledgements slow, for as long as the callbacks
// keep coming; not one slow answer now and then, and not a high rate the webhook answers quickly.
import { AckPressure } from '../../src/inbox/ack-pressure';

/** Answers every `everyMs` from `from` to `to` (excluded), each taking `ms`. */
function answers(p: AckPressure, from: number, to: number, everyMs: number, ms = 1): void {
  for (let t = from; t < to; t += everyMs) p.record(ms, t);
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

  it('never presses with the threshold at 0 (pacing off)', () => {
    const p = new AckPressure(0);
    for (let t = 0; t < 100; t += 10) p.record(500, t);
    expect(p.underPressure(100)).toBe(false);
  });
});
