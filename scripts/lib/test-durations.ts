// test/durations.json: how long each test file ran, which jest.sequencer.js uses to run the longest first where jest's
// own cache has nothing (a fresh clone). Merged from a run's JSON (`jest --json --outputFile <file>`): the files the
// run had take its figures, the others keep theirs, files that no longer exist are dropped.
import path from 'node:path';

export interface Durations {
  about: string;
  measured: string;
  /** Seconds a file ran, by its path from the repository's root (forward slashes), the longest first. */
  seconds: Record<string, number>;
}

/** What `jest --json` writes, as far as it is read here. */
export interface JestRun {
  testResults: { name: string; startTime?: number; endTime?: number; perfStats?: { runtime?: number } }[];
}

export const ABOUT =
  'How long each test file ran (seconds), from a whole npm test on the 2-core machine; jest.sequencer.js runs the ' +
  'longest first. Written by npm run test:durations.';

/** One file's seconds in a run: jest's runtime, else its end less its start; undefined when the run has neither. */
function secondsOf(result: JestRun['testResults'][number]): number | undefined {
  const ms =
    result.perfStats?.runtime ??
    (result.startTime !== undefined && result.endTime !== undefined ? result.endTime - result.startTime : undefined);
  return ms === undefined || !Number.isFinite(ms) || ms < 0 ? undefined : Math.round(ms / 100) / 10;
}

/** The durations after a run: `exists` says whether a file is still in the repository. */
export function mergeDurations(
  before: Durations | undefined,
  run: JestRun,
  root: string,
  exists: (relative: string) => boolean,
  today: string,
): Durations {
  const seconds: Record<string, number> = { ...(before?.seconds ?? {}) };
  for (const result of run.testResults) {
    const s = secondsOf(result);
    if (s === undefined) continue;
    seconds[path.relative(root, result.name).split(path.sep).join('/')] = s;
  }
  const kept = Object.entries(seconds)
    .filter(([file]) => exists(file))
    .sort(([a, x], [b, y]) => y - x || a.localeCompare(b));
  return { about: ABOUT, measured: today, seconds: Object.fromEntries(kept) };
}
