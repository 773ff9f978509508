// The bench's disk probe and the attribution of slow acknowledgements to the disk (bench/lib/disk-probe.ts,
// bench/lib/sustained-report.ts): a real probe on a real file, and the matching of answers with probe writes.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { overlappingStall, startDiskProbe, type DiskProbeResult } from '../../bench/lib/disk-probe';
import { missedOnlyForTheDisk, stallNote } from '../../bench/lib/sustained-report';
import type { SustainedRun } from '../../bench/phases/sustained';

const probeOf = (slow: [number, number][]): DiskProbeResult => ({
  intervalMs: 100,
  writes: 1_000,
  p50Ms: 0.5,
  p99Ms: 2,
  maxMs: Math.max(0, ...slow.map((w) => w[1])),
  slow,
  slowMs: 20,
});

describe('overlappingStall', () => {
  const probe = probeOf([
    [10_000, 30],
    [20_000, 250],
    [20_100, 150],
  ]);

  it('finds the slowest probe write that overlapped the answer', () => {
    // Due at 20,050, answered 200 ms later: both the 250 ms write (from 20,000) and the 150 ms one (from 20,100).
    expect(overlappingStall(probe, 20_050, 200)).toEqual([20_000, 250]);
    // Due while the 30 ms write was under way.
    expect(overlappingStall(probe, 10_020, 120)).toEqual([10_000, 30]);
  });

  it('finds nothing for an answer made while the disk was fast', () => {
    expect(overlappingStall(probe, 15_000, 180)).toBeUndefined();
    // Due just after the 250 ms write ended and answered before the next began.
    expect(overlappingStall(probe, 20_260, 5)).toBeUndefined();
  });
});

describe('the disk in the report', () => {
  const run = (p99: number, max: number, slowAnswers: SustainedRun['slowAnswers']) =>
    ({
      rate: 100,
      ack: { latencyMs: { p50: 2, p99, p999: max, max } },
      stalls: { serverAckMaxMs: 250, writeMaxMs: 250, loopDelayMaxMs: 12 },
      slowAnswers,
    }) as unknown as SustainedRun;

  it('says each slow answer came while the disk stalled, and when', () => {
    const r = run(6, 240, [
      { t: 12.1, ms: 180, diskMs: 200 },
      { t: 12.4, ms: 240, diskMs: 230 },
      { t: 90, ms: 130, diskMs: 120 },
    ]);
    expect(missedOnlyForTheDisk(r)).toBe(true);
    const note = stallNote(r)!;
    expect(note).toContain("3 answers at or over 100 ms, each while the disk's own probe write stalled");
    expect(note).toContain('at 12.1-12.4 s, 90.0 s into the load');
  });

  it('does not blame the disk for answers it was fast for, nor for a slow p99', () => {
    const mixed = run(6, 240, [
      { t: 12.1, ms: 180, diskMs: 200 },
      { t: 50, ms: 240 },
    ]);
    expect(missedOnlyForTheDisk(mixed)).toBe(false);
    expect(stallNote(mixed)).toContain('1 of them while the disk');
    expect(stallNote(mixed)).toContain('1 with the disk fast');
    expect(missedOnlyForTheDisk(run(14, 240, [{ t: 12.1, ms: 240, diskMs: 250 }]))).toBe(false);
    expect(stallNote(run(6, 240, [{ t: 1, ms: 240 }]))).toContain('none while the disk was slow');
  });
});

describe('startDiskProbe', () => {
  it('writes durably into its own file and reports every write it timed', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'disk-probe-'));
    try {
      const probe = await startDiskProbe(dir, { intervalMs: 10, slowMs: 0 });
      await new Promise((r) => setTimeout(r, 300));
      const result = await probe.stop();
      expect(result.writes).toBeGreaterThan(3);
      // slowMs 0 keeps every write, each with its wall-clock start.
      expect(result.slow).toHaveLength(result.writes);
      expect(result.slow[0]![0]).toBeGreaterThan(Date.now() - 60_000);
      expect(result.maxMs).toBeGreaterThanOrEqual(result.p50Ms);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
