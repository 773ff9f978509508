// When the forwarder holds its signals back: a surge of slow acknowledgements, not one slow answer now and then.
import { AckPressure } from '../../src/api/ack-pressure';

describe('acknowledgement pressure', () => {
  it('is three slow answers within a second, and lasts until the third-latest is a second old', () => {
    const p = new AckPressure(5);
    p.record(12, 0);
    p.record(2, 10);
    p.record(9, 100);
    expect(p.underPressure(150)).toBe(false);
    p.record(30, 400);
    expect(p.underPressure(450)).toBe(true);
    // The surge goes on: fast answers in between do not end it.
    p.record(1, 500);
    p.record(7, 900);
    expect(p.underPressure(1_050)).toBe(true);
    // A second after the third-latest slow answer (100, of 100, 400, 900): over.
    expect(p.underPressure(1_101)).toBe(false);
  });

  it('ignores a slow answer now and then', () => {
    const p = new AckPressure(5);
    for (let t = 0; t < 10_000; t += 700) {
      p.record(40, t);
      expect(p.underPressure(t + 1)).toBe(false);
    }
  });

  it('never presses with the threshold at 0 (pacing off)', () => {
    const p = new AckPressure(0);
    for (let t = 0; t < 100; t += 10) p.record(500, t);
    expect(p.underPressure(100)).toBe(false);
  });
});
