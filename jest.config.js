/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest'] },
  // Temporal servers start per suite; give them room on a cold 2-core machine.
  testTimeout: 60_000,
  maxWorkers: 2,
  setupFiles: ['<rootDir>/test/support/jest-setup.ts'],
};
