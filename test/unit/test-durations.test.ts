// The order of a whole run: jest.sequencer.js takes test/durations.json's seconds where jest's cache has none, so a
// fresh clone runs the longest files first; test/durations.json names only test files that exist, and
// `npm run test:durations` merges a run's JSON into it; jest.tier-summary.js ends a run with each tier's time.
import { existsSync } from 'node:fs';
import path from 'node:path';
import recorded from '../durations.json';
import { mergeDurations } from '../../scripts/lib/test-durations';

const ROOT = path.resolve(__dirname, '../..');

interface FakeTest {
  path: string;
  duration?: number;
  context: { config: { cache: boolean; id: string }; hasteFS: { getSize: (p: string) => number } };
}

function fakeTest(relative: string, size = 100): FakeTest {
  return {
    path: path.join(ROOT, relative),
    context: { config: { cache: false, id: 'unit' }, hasteFS: { getSize: () => size } },
  };
}

describe('test/durations.json', () => {
  it('names only test files that exist, each with a duration', () => {
    const files = Object.keys(recorded.seconds);
    expect(files.length).toBeGreaterThan(100);
    expect(files.filter((f) => !f.endsWith('.test.ts') || !existsSync(path.join(ROOT, f)))).toEqual([]);
    expect(Object.values(recorded.seconds).every((s) => Number.isFinite(s) && s >= 0)).toBe(true);
  });
});

describe('jest.sequencer.js', () => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const Sequencer = require('../../jest.sequencer.js') as new (o: object) => { sort(t: FakeTest[]): FakeTest[] };

  it('runs the files it knows nothing of first, then the longest recorded first, whatever their sizes', () => {
    const seconds = recorded.seconds as Record<string, number>;
    const [longest, second] = Object.keys(seconds);
    const short = Object.keys(seconds).find((f) => seconds[f]! < 1)!;
    const tests = [
      fakeTest(short, 1e6),
      fakeTest('test/unit/not-yet-recorded.test.ts', 1),
      fakeTest(second!, 10),
      fakeTest(longest!, 5),
    ];
    const order = new Sequencer({}).sort(tests).map((t) => path.relative(ROOT, t.path));
    expect(order).toEqual(['test/unit/not-yet-recorded.test.ts', longest, second, short]);
  });
});

describe('mergeDurations', () => {
  const root = '/repo';
  const before = {
    about: '',
    measured: '2026-01-01',
    seconds: { 'test/a.test.ts': 10, 'test/b.test.ts': 2, 'test/gone.test.ts': 5 },
  };

  it("takes the run's files' seconds, keeps the others, drops files that are gone, and sorts the longest first", () => {
    const run = {
      testResults: [
        { name: '/repo/test/b.test.ts', perfStats: { runtime: 30_000 } },
        { name: '/repo/test/c.test.ts', startTime: 1_000, endTime: 1_450 },
        { name: '/repo/test/d.test.ts' },
      ],
    };
    const after = mergeDurations(before, run, root, (f) => f !== 'test/gone.test.ts', '2026-11-29');
    expect(Object.entries(after.seconds)).toEqual([
      ['test/b.test.ts', 30],
      ['test/a.test.ts', 10],
      ['test/c.test.ts', 0.5],
    ]);
    expect(after.measured).toBe('2026-11-29');
  });

  it('starts from nothing', () => {
    const after = mergeDurations(
      undefined,
      { testResults: [{ name: '/repo/test/x.test.ts', perfStats: { runtime: 1234 } }] },
      root,
      () => true,
      'd',
    );
    expect(after.seconds).toEqual({ 'test/x.test.ts': 1.2 });
  });
});

describe('jest.tier-summary.js', () => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const TierSummary = require('../../jest.tier-summary.js') as new (
    g: object,
    o: { print: (l: string) => void; slowest?: number },
  ) => { onRunStart(r: object, o: object): void; onRunComplete(c: Set<unknown>, r: object): void };

  const result = (tier: string, file: string, start: number, end: number, passing: number, failing = 0) => ({
    displayName: { name: tier, color: 'white' },
    testFilePath: path.join(process.cwd(), file),
    perfStats: { start, end },
    numPassingTests: passing,
    numFailingTests: failing,
    numPendingTests: 0,
  });

  it("gives each tier's files, tests, failures and time, and names the slowest files", () => {
    const lines: string[] = [];
    const reporter = new TierSummary({}, { print: (l) => lines.push(l), slowest: 2 });
    const t0 = Date.now();
    reporter.onRunStart({}, {});
    reporter.onRunComplete(new Set(), {
      startTime: t0,
      testResults: [
        result('unit', 'test/unit/a.test.ts', t0, t0 + 2_000, 10),
        result('topology', 'test/production/b.test.ts', t0 + 1_000, t0 + 251_000, 2, 1),
        result('unit', 'test/unit/c.test.ts', t0 + 2_000, t0 + 3_000, 5),
        result('integration', 'test/api/d.test.ts', t0 + 3_000, t0 + 63_000, 4),
      ],
    });
    expect(lines.slice(2)).toEqual([
      '  unit         2 files, 15 tests, all passed; ran 3 s, from 0:00 to 0:03 into the run',
      '  topology     1 file, 3 tests, 1 file(s) and 1 test(s) FAILED; ran 250 s, from 0:01 to 4:11 into the run',
      '  integration  1 file, 4 tests, all passed; ran 60 s, from 0:03 to 1:03 into the run',
      'The slowest files: test/production/b.test.ts 250 s, test/api/d.test.ts 60 s',
    ]);
  });
});
