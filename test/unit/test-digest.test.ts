// The digest CI prints last: which files and tests failed and the first line of each failure, from jest's JSON.
import os from 'node:os';
import { digest, firstLine, machineLine, syncLatency, type JestResults } from '../../scripts/test-digest';

const root = '/repo';

const results: JestResults = {
  numTotalTestSuites: 3,
  numFailedTestSuites: 2,
  numTotalTests: 9,
  numFailedTests: 6,
  testResults: [
    { name: '/repo/test/a.test.ts', status: 'passed', assertionResults: [{ fullName: 'a works', status: 'passed' }] },
    {
      name: '/repo/test/b.test.ts',
      status: 'failed',
      startTime: 1_000,
      endTime: 127_600,
      assertionResults: [
        { fullName: 'b passes', status: 'passed' },
        ...[1, 2, 3, 4, 5].map((i) => ({
          fullName: `b case ${i}`,
          status: 'failed',
          failureMessages: [
            `\u001b[31mthrown: "Exceeded timeout of 60000 ms for a test.\u001b[39m\n    at _getError (node_modules/x.js:1:1)`,
          ],
        })),
      ],
    },
    {
      name: '/repo/test/c.test.ts',
      status: 'failed',
      message: '  ● Test suite failed to run\n\n    Cannot find module ./gone from c.test.ts\n',
      assertionResults: [],
    },
  ],
};

test('names each failed file with its time, its failing tests and the first line of each failure', () => {
  expect(digest(results, root, { perFile: 4 })).toEqual([
    'Test digest: 2 of 3 files failed, 6 of 9 tests',
    'FAIL test/b.test.ts (127 s)',
    '  ✕ b case 1: thrown: "Exceeded timeout of 60000 ms for a test.',
    '  ✕ b case 2: thrown: "Exceeded timeout of 60000 ms for a test.',
    '  ✕ b case 3: thrown: "Exceeded timeout of 60000 ms for a test.',
    '  ✕ b case 4: thrown: "Exceeded timeout of 60000 ms for a test.',
    '  … and 1 more',
    'FAIL test/c.test.ts',
    '  Cannot find module ./gone from c.test.ts',
  ]);
});

test('caps the files it names, and says a clean run is one', () => {
  expect(digest(results, root, { maxFiles: 1 }).at(-1)).toBe('… and 1 more files');
  expect(digest({ numTotalTestSuites: 1, numTotalTests: 1, testResults: [results.testResults![0]!] }, root)).toEqual([
    'Test digest: 0 of 1 files failed, 0 of 1 tests',
  ]);
});

test("a failure's first line is cut to its width", () => {
  expect(firstLine(`${'x'.repeat(300)}\nsecond`, 20)).toBe(`${'x'.repeat(19)}…`);
  expect(firstLine('')).toBe('');
});

test('measures the machine it ran on, the durable-write latency included', () => {
  const sync = syncLatency(os.tmpdir(), 5);
  expect(sync.p50Ms).toBeGreaterThan(0);
  expect(sync.maxMs).toBeGreaterThanOrEqual(sync.p50Ms);
  expect(machineLine(os.tmpdir())).toMatch(/^Machine: .+, \d+ cores, load .+ GiB free, durable 4 KiB write p50 /);
});
