// The order of a whole run: jest.sequencer.js takes test/durations.json's seconds where jest's cache has none, so a
// fresh clone runs the longest files first; test/durations.json names only test files that exist, and
// `npm run test:durations` merges a run's JSON into it.
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
