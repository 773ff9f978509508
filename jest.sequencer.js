/**
 * The order jest runs the test files in: the longest first, so that the two workers finish together. Jest's own
 * sequencer orders by the durations in its cache, which a fresh clone (CI) does not have, and then by file size, which
 * says little here (the game day's suite is short and runs for minutes). Where its cache has no duration for a file,
 * this one takes the duration test/durations.json records (`npm run test:durations` writes it from a run's JSON);
 * files in neither still run first, as jest runs files it knows nothing of.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- jest loads its sequencer as CommonJS
const path = require('node:path');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const Sequencer = require('@jest/test-sequencer').default;
// eslint-disable-next-line @typescript-eslint/no-require-imports
const recorded = require('./test/durations.json');

class LongestFirst extends Sequencer {
  time(test) {
    const cached = super.time(test);
    if (cached !== undefined) return cached;
    const seconds = recorded.seconds[path.relative(__dirname, test.path).split(path.sep).join('/')];
    return seconds === undefined ? undefined : seconds * 1000;
  }
}

module.exports = LongestFirst;
