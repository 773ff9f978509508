// 4. Cold starts. The local stack exactly as `npm start` runs it (scripts/local-stack.ts: tool check, Temporal dev
// server with its UI, codec server, sandbox, worker, API) on the bench's ports and a fresh data folder, timed from
// the spawn to the first 200 of /readyz; the Temporal tools are already installed (the script's check is a no-op).
// And `npm test`: the time to its first test result, or the whole run (--npm-test full).
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Options } from '../lib/context';
import { loadAverage } from '../lib/machine';
import { httpOk, ROOT, sleep, startProcess, tsx } from '../../scripts/lib/processes';
import { benchPorts } from '../lib/stack';

export interface ColdStartResults {
  /** Spawn of scripts/local-stack.ts to the first 200 of /readyz. */
  readyMs: number;
  /** Spawn to the API's port answering at all (/healthz), before Temporal is reachable. */
  apiUpMs: number;
  stopMs: number;
}

export interface NpmTestResults {
  mode: 'first' | 'full';
  firstResultMs: number;
  firstResult: string;
  fullMs?: number;
  exitCode?: number | null;
  summary?: string[];
  /** Test files that failed (FAIL lines). */
  failed?: string[];
  /** Added by hand after the run, if anything needs saying. */
  note?: string;
  loadBefore: ReturnType<typeof loadAverage>;
  loadAfter: ReturnType<typeof loadAverage>;
  at: string;
}

export async function coldStartPhase(
  o: Options,
  workDir: string,
  logDir: string,
  log: (m: string) => void,
): Promise<ColdStartResults> {
  const p = benchPorts(o.portBase);
  const dataDir = path.join(workDir, 'cold-stack-data');
  await mkdir(dataDir, { recursive: true });
  log('cold start: scripts/local-stack.ts on the bench ports, fresh data folder...');
  const t0 = performance.now();
  const stack = startProcess({
    name: 'cold-local-stack',
    ...tsx('scripts/local-stack.ts'),
    logDir,
    env: {
      TEMPORAL_PORT: String(p.coldTemporal),
      TEMPORAL_UI_PORT: String(p.coldUi),
      SANDBOX_PORT: String(p.coldSandbox),
      API_PORT: String(p.coldApi),
      CODEC_PORT: String(p.coldCodec),
      // Not measured here, and its default port may be taken by a stack the bench runs beside.
      WORKER_METRICS_ADDRESS: 'off',
      DATA_DIR: dataDir,
    },
  });
  const api = `http://127.0.0.1:${p.coldApi}`;
  let apiUpMs = NaN;
  let readyMs = NaN;
  let stopMs = NaN;
  try {
    for (;;) {
      if (!stack.running) throw new Error(`the local stack exited; see ${stack.logFile}`);
      if (performance.now() - t0 > 180_000) throw new Error('the local stack was not ready in 180 s');
      if (Number.isNaN(apiUpMs) && (await httpOk(`${api}/healthz`, 1_000))) apiUpMs = performance.now() - t0;
      if (await httpOk(`${api}/readyz`, 1_000)) {
        readyMs = performance.now() - t0;
        // Up by the time it is ready, when no probe of /healthz saw it first (a first answer slower than the probe's
        // second, or the API listening between that probe and this one).
        if (Number.isNaN(apiUpMs)) apiUpMs = readyMs;
        break;
      }
      await sleep(50);
    }
  } finally {
    // SIGTERM: the stack stops its parts in order (API and worker first), then exits.
    const s0 = performance.now();
    await stack.stop(90_000);
    stopMs = performance.now() - s0;
    if (!Number.isNaN(readyMs)) {
      log(
        `cold start: ready in ${(readyMs / 1000).toFixed(1)} s (API up at ${(apiUpMs / 1000).toFixed(1)} s); stopped in ${(stopMs / 1000).toFixed(1)} s`,
      );
    }
  }
  return { readyMs, apiUpMs, stopMs };
}

/**
 * `npm test -- --ci` in its own process group. "first": until the first test file reports (PASS/FAIL), then the
 * group is stopped (SIGTERM, then SIGKILL: jest, its workers and the servers they started). "full": to the end.
 */
/** A test file's result line: `PASS test/x.test.ts`, or with the tier the project's reporter names (`PASS unit test/...`). */
const TEST_RESULT = /^(PASS|FAIL) (?:[a-z-]+ )?(\S+\.test\.[cm]?[jt]s)/m;
const FAILED_FILE = /^FAIL (?:[a-z-]+ )?(\S+\.test\.[cm]?[jt]s)/gm;

export async function npmTestPhase(
  mode: 'first' | 'full',
  logDir: string,
  log: (m: string) => void,
): Promise<NpmTestResults> {
  const loadBefore = loadAverage();
  log(`npm test (${mode === 'first' ? 'to the first test result' : 'the whole run'})...`);
  const t0 = performance.now();
  const child = startProcess({
    name: 'npm-test',
    command: 'npm',
    args: ['test', '--', '--ci'],
    logDir,
    // An interrupted bench stops the whole run, not npm alone.
    stopsAsGroup: true,
    env: { FORCE_COLOR: '0' },
  });
  let firstResultMs = NaN;
  let firstResult = '';
  const limit = mode === 'first' ? 300_000 : 1_800_000;
  while (child.running && performance.now() - t0 < limit) {
    if (!firstResult) {
      const text = child.output();
      const m = TEST_RESULT.exec(text);
      if (m) {
        firstResultMs = performance.now() - t0;
        firstResult = `${m[1]} ${m[2]}`;
        log(`npm test: first result after ${(firstResultMs / 1000).toFixed(1)} s (${firstResult})`);
        if (mode === 'first') break;
      }
    }
    await sleep(100);
  }
  let fullMs: number | undefined;
  let exitCode: number | null | undefined;
  if (mode === 'full' && !child.running) {
    fullMs = performance.now() - t0;
    exitCode = (await child.exited).code;
  }
  // The whole group (npm, jest, its workers and every server a test started): SIGTERM, then SIGKILL after 5 s.
  await child.stop(5_000, 'SIGTERM', true);
  const text = child.output();
  const summary = text.split('\n').filter((l) => /^(Test Suites|Tests|Snapshots|Time):/.test(l));
  const failed = [...new Set([...text.matchAll(FAILED_FILE)].map((m) => m[1]!))];
  if (fullMs !== undefined)
    log(`npm test: whole run ${(fullMs / 1000).toFixed(0)} s, exit ${exitCode}; ${summary.join('; ')}`);
  return {
    mode,
    firstResultMs,
    firstResult,
    ...(fullMs !== undefined ? { fullMs, exitCode, summary, failed } : {}),
    loadBefore,
    loadAfter: loadAverage(),
    at: new Date().toISOString(),
  };
}

/** The last whole `npm test` run measured by `npm run bench -- --only tests --npm-test full`. */
export const NPM_TEST_FULL_FILE = path.join(ROOT, 'bench', 'npm-test-full.json');

export async function saveFullNpmTest(r: NpmTestResults): Promise<void> {
  await writeFile(NPM_TEST_FULL_FILE, `${JSON.stringify(r, null, 2)}\n`);
}

export async function readFullNpmTest(): Promise<NpmTestResults | undefined> {
  try {
    return JSON.parse(await readFile(NPM_TEST_FULL_FILE, 'utf8')) as NpmTestResults;
  } catch {
    return undefined;
  }
}
