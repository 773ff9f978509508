// `npm run test:durations -- <run.json>`: records how long each test file ran in test/durations.json, from the JSON a
// jest run wrote, so that a fresh clone runs the longest files first (jest.sequencer.js). Record a whole run on the
// 2-core machine:
//   npm test -- --json --outputFile /tmp/jest-run.json; npm run test:durations -- /tmp/jest-run.json
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { mergeDurations, type Durations, type JestRun } from './lib/test-durations';
import { ROOT } from './lib/processes';

const file = process.argv[2];
if (!file) {
  console.error('usage: npm run test:durations -- <the JSON of jest --json --outputFile>');
  process.exit(2);
}
const run = JSON.parse(readFileSync(file, 'utf8')) as JestRun;
if (!Array.isArray(run.testResults)) {
  console.error(`${file} is not the JSON jest --json writes (it has no testResults)`);
  process.exit(2);
}
const target = path.join(ROOT, 'test', 'durations.json');
const before = existsSync(target) ? (JSON.parse(readFileSync(target, 'utf8')) as Durations) : undefined;
const after = mergeDurations(
  before,
  run,
  ROOT,
  (f) => existsSync(path.join(ROOT, f)),
  new Date().toISOString().slice(0, 10),
);
writeFileSync(target, `${JSON.stringify(after, null, 2)}\n`);
const total = Object.values(after.seconds).reduce((a, b) => a + b, 0);
console.log(`test/durations.json: ${Object.keys(after.seconds).length} files, ${total.toFixed(0)} s in all`);
