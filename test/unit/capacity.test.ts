// docs/capacity.md's arithmetic (bench/lib/capacity-model.ts): the costs taken from a growth run, what each size
// needs, and the page, which must be what the committed growth run gives (so it cannot drift from its report).
import { existsSync, readFileSync } from 'node:fs';
import { CAPACITY_DOC, capacityPage, GROWTH_LAST, parseCapacityOptions } from '../../bench/capacity';
import {
  DEFAULT_ASSUMPTIONS,
  measuredCosts,
  renderCapacity,
  size,
  type MeasuredCosts,
} from '../../bench/lib/capacity-model';
import type { GrowthRun, GrowthStep } from '../../bench/lib/growth-report';

const MiB = 2 ** 20;
const lat = (p50: number) => ({ n: 20, p50, p99: p50 * 2 });

function step(journeys: number, complete: boolean): GrowthStep {
  return {
    target: journeys,
    journeys,
    parkedNow: journeys / 2,
    parkSeconds: journeys / 40,
    apiStart: { ...lat(100), refused: 0 },
    bytes: {
      total: 3 * MiB + journeys * 60 * 1024,
      byDatabase: { temporal_visibility: journeys * 40 * 1024, journey_audit: journeys * 2 * 1024 },
      largest: [],
      baseline: 3 * MiB,
    },
    list: { first: lat(20), deep: { ...lat(90), page: 5, pageSize: 100 } },
    count: { byClinic: { ...lat(9), value: journeys }, byStage: { ...lat(9), value: journeys } },
    ops: { query: 'q', dryRun: lat(50), listAll: { ms: journeys, matched: journeys, pages: 1 } },
    workerRss: [600 * MiB],
    temporalRss: [250 * MiB],
    ...(complete
      ? {
          wal: { perJourney: 100 * 1024, perCallback: 40 * 1024, tablesPerCallback: 4 * 1024 },
          cpu: {
            perJourney: { worker: 24, temporal: 32, api: 5, postgres: 28 },
            perCallback: { worker: 6, temporal: 11, api: 6, postgres: 9 },
          },
        }
      : {}),
    at: '2026-11-29T09:00:00.000Z',
  };
}

const run: GrowthRun = {
  began: '2026-11-29T08:37:00.000Z',
  machine: 'AMD EPYC, 2 cores, 24 GiB, Node v24',
  loadBefore: '0 / 0 / 0',
  database: 'single',
  workers: 1,
  clinicId: 'demo-clinic',
  options: { steps: [1000, 10_000, 100_000], apiStarts: 200, apiConcurrency: 4, samples: 20, deepPages: 50 },
  // The largest step lacks its callbacks' costs: the costs come from the one before.
  steps: [step(1000, true), step(10_000, true), step(100_000, false)],
  errors: [],
};

describe('measuredCosts', () => {
  it('takes the largest step with every cost, the audit trail apart from the rest', () => {
    const c = measuredCosts(run);
    expect(c.step).toBe(10_000);
    expect(c.bytesPerOpenJourney).toBe(58 * 1024);
    expect(c.auditBytesPerJourney).toBe(2 * 1024);
    expect(c.walPerJourney).toBe(100 * 1024);
    expect(c.cpuPerCallback.temporal).toBe(11);
    // The API's CPU over 5,000 journeys parked went to its 200 starts.
    expect(c.apiCpuPerStart).toBeCloseTo((5 * 5000) / 200, 10);
    expect(c.workerRss).toBe(600 * MiB);
  });

  it('refuses a run without any complete step', () => {
    expect(() => measuredCosts({ ...run, steps: [step(1000, false)] })).toThrow(/npm run bench:growth/);
  });
});

describe('size', () => {
  const c: MeasuredCosts = measuredCosts(run);

  it('grows storage and rates in proportion to the journeys a month', () => {
    const small = size(100_000, c);
    const big = size(1_000_000, c);
    expect(big.tablesBytes / small.tablesBytes).toBeCloseTo(10, 10);
    expect(big.walPerDay / small.walPerDay).toBeCloseTo(10, 10);
    expect(big.startsPeak / small.startsPeak).toBeCloseTo(10, 10);
    expect(big.cores.worker / small.cores.worker).toBeCloseTo(10, 10);
  });

  it('works the busiest hour out of the working time, and cores out of the measured CPU', () => {
    const a = { ...DEFAULT_ASSUMPTIONS, businessDays: 20, businessHours: 10, peakFactor: 2, cpuTarget: 0.5 };
    const s = size(720_000, c, a);
    // 720,000 over 200 working hours is 1 a second, twice that at the busiest hour.
    expect(s.startsPeak).toBeCloseTo(2, 10);
    // Half prescription (3 callbacks), half good faith (1), 1.2 deliveries each: 2.4 callbacks, and a reminder.
    expect(s.callbacksPerJourney).toBeCloseTo(2.4, 10);
    expect(s.wakesPeak).toBeCloseTo(2 * 3.4, 10);
    expect(s.cores.worker).toBeCloseTo((2 * 24 + 2 * 3.4 * 6) / 1000 / 0.5, 10);
  });

  it('keeps at least two of each replica, and a power of two of shards', () => {
    const s = size(10_000, c);
    expect(s.workers).toBe(2);
    expect(s.apiReplicas).toBe(2);
    expect(s.historyShards).toBe(16);
    const big = size(10_000_000, c);
    expect(Math.log2(big.historyShards) % 1).toBe(0);
    expect(big.historyShards).toBeGreaterThanOrEqual((big.open * 2) / 10_000);
  });
});

describe('the page', () => {
  it('has a column per size, the measured costs and the assumptions', () => {
    const page = renderCapacity(measuredCosts(run));
    expect(page).toContain('| | 10,000 a month | 1,000,000 a month | 10,000,000 a month |');
    expect(page).toContain('performance.md#growth-with-the-number-of-parked-journeys');
    expect(page).toContain('| Prescription exams among journeys (`--prescription-share`) | 50 % |');
    expect(page).toContain('From the step of 10,000 journeys parked');
  });

  it('takes its assumptions from flags, and refuses a bad one by name', () => {
    const o = parseCapacityOptions(['--sizes', '50_000,500000', '--prescription-share', '0.8']);
    expect(o.assumptions.sizes).toEqual([50_000, 500_000]);
    expect(o.assumptions.prescriptionShare).toBe(0.8);
    expect(DEFAULT_ASSUMPTIONS.prescriptionShare).toBe(0.5);
    expect(() => parseCapacityOptions(['--cpu-target', '0'])).toThrow(/--cpu-target/);
    expect(() => parseCapacityOptions(['--sizes', '10k'])).toThrow(/--sizes/);
  });

  it('docs/capacity.md is what the committed growth run gives', () => {
    if (!existsSync(GROWTH_LAST)) throw new Error('bench/growth-last.json is missing: run npm run bench:growth');
    expect(readFileSync(CAPACITY_DOC, 'utf8')).toBe(capacityPage());
  });
});
