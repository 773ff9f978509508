/**
 * Three tiers of tests, one jest project each (the files of each in test/tiers.json: whole folders, and single files
 * where a folder mixes tiers; test/unit/test-tiers.test.ts keeps every test file in exactly one tier):
 *
 * - unit: starts nothing. In-process only: fastify's inject, in-process HTTP on loopback, no Temporal server, no child
 *   process but git and the installers' prerequisites check (sh on stand-in commands). `npm run test:unit`.
 * - integration: the Temporal dev server or time-skipping test server, real HTTP between our own processes, the local
 *   stack, the project's scripts and tools run as child processes. `npm run test:integration`.
 * - topology: PostgreSQL, Keycloak, Chromium, MinIO, HAProxy, the Temporal server, the production-shaped stacks,
 *   Helm and promtool (what npm test's pretest installs). `npm run test:topology`.
 *
 * `npm test` runs all three.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- jest reads its configuration as CommonJS
const tiers = require('./test/tiers.json');

/** The testMatch globs of a tier: its folders whole, its single files by name. */
function tierMatch(tier) {
  const { folders, files } = tiers[tier];
  return [
    ...folders.map((folder) => `<rootDir>/test/${folder}/**/*.test.ts`),
    ...files.map((file) => `<rootDir>/test/${file}`),
  ];
}

/** What every tier shares. */
const shared = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  transform: { '^.+\\.ts$': ['@swc/jest'], '/node_modules/jose/.+\\.js$': ['@swc/jest'] },
  // jose ships ES modules only: compiled for jest like our sources (Node.js itself loads them as they are).
  transformIgnorePatterns: ['/node_modules/(?!jose/)'],
  setupFiles: ['<rootDir>/test/support/jest-setup.ts'],
};

/** @type {import('jest').Config} */
module.exports = {
  // Temporal servers start per suite; give them room on a cold 2-core machine. (Both are settings of the whole run,
  // not of a project: jest reads a project's testTimeout no more than its maxWorkers.)
  testTimeout: 60_000,
  maxWorkers: 2,
  // A test worker that has run many files holds on to what their modules left (a whole run grew each worker past a
  // gigabyte and a half): one whose heap is over this after a file is replaced by a fresh one before the next.
  workerIdleMemoryLimit: '600MB',
  // The longest files first, by test/durations.json where jest's cache has nothing (a fresh clone).
  testSequencer: '<rootDir>/jest.sequencer.js',
  // After jest's own summary, one line per tier (its files, tests and time) and the slowest files.
  reporters: ['default', '<rootDir>/jest.tier-summary.js'],
  projects: [
    { ...shared, displayName: 'unit', testMatch: tierMatch('unit') },
    { ...shared, displayName: 'integration', testMatch: tierMatch('integration') },
    { ...shared, displayName: 'topology', testMatch: tierMatch('topology') },
  ],
};
