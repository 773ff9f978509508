/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest'], '/node_modules/jose/.+\\.js$': ['@swc/jest'] },
  // jose ships ES modules only: compiled for jest like our sources (Node.js itself loads them as they are).
  transformIgnorePatterns: ['/node_modules/(?!jose/)'],
  // Temporal servers start per suite; give them room on a cold 2-core machine.
  testTimeout: 60_000,
  maxWorkers: 2,
  setupFiles: ['<rootDir>/test/support/jest-setup.ts'],
};
