// A short account of a jest run, for the last lines of a CI log (where a long log is cut, the end is what is read):
//
//   npx tsx scripts/test-digest.ts <results.json>      (jest --json --outputFile=<results.json>)
//
// Each file that failed, its time, and its failing tests with the first line of each failure; then the machine the
// run had: CPU, cores, load, memory and the disk's durable-write latency measured now (a run that failed by timeouts
// on a machine whose disk takes a second to sync says so). Exit 0: the digest never decides a build.
import { closeSync, mkdtempSync, openSync, constants, readFileSync, rmSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

interface AssertionResult {
  fullName?: string;
  title?: string;
  status?: string;
  failureMessages?: string[];
}

interface FileResult {
  name?: string;
  status?: string;
  message?: string;
  startTime?: number;
  endTime?: number;
  assertionResults?: AssertionResult[];
}

export interface JestResults {
  numTotalTestSuites?: number;
  numFailedTestSuites?: number;
  numTotalTests?: number;
  numFailedTests?: number;
  startTime?: number;
  success?: boolean;
  testResults?: FileResult[];
}

/** Colours, and the lines after the first: a failure's first line is what says what went wrong. */
export function firstLine(message: string, width = 180): string {
  const plain = message.replace(/\u001b\[[0-9;]*m/g, ''); // eslint-disable-line no-control-regex
  const line =
    plain
      .split('\n')
      .map((l) => l.trim())
      .find((l) => l !== '' && !/^●/.test(l)) ?? '';
  return line.length > width ? `${line.slice(0, width - 1)}…` : line;
}

/** The digest's lines: at most `perFile` failing tests named per file, at most `maxFiles` files. */
export function digest(results: JestResults, root: string, o: { perFile?: number; maxFiles?: number } = {}): string[] {
  const perFile = o.perFile ?? 4;
  const maxFiles = o.maxFiles ?? 12;
  const files = results.testResults ?? [];
  const relative = (file = '?') => (file.startsWith(`${root}/`) ? file.slice(root.length + 1) : file);
  const failed = files.filter(
    (f) => f.status === 'failed' || (f.assertionResults ?? []).some((a) => a.status === 'failed'),
  );
  const lines = [
    `Test digest: ${failed.length} of ${results.numTotalTestSuites ?? files.length} files failed, ` +
      `${results.numFailedTests ?? 0} of ${results.numTotalTests ?? 0} tests`,
  ];
  for (const f of failed.slice(0, maxFiles)) {
    const secs = f.startTime && f.endTime ? ` (${((f.endTime - f.startTime) / 1000).toFixed(0)} s)` : '';
    lines.push(`FAIL ${relative(f.name)}${secs}`);
    const tests = (f.assertionResults ?? []).filter((a) => a.status === 'failed');
    if (tests.length === 0) lines.push(`  ${firstLine(f.message ?? 'the file did not run')}`);
    for (const t of tests.slice(0, perFile)) {
      lines.push(`  ✕ ${t.fullName ?? t.title ?? '?'}: ${firstLine(t.failureMessages?.[0] ?? '')}`);
    }
    if (tests.length > perFile) lines.push(`  … and ${tests.length - perFile} more`);
  }
  if (failed.length > maxFiles) lines.push(`… and ${failed.length - maxFiles} more files`);
  return lines;
}

/** Durable-write latency now: `writes` 4 KiB writes to a file opened O_DSYNC in `dir` (ms: p50, max). */
export function syncLatency(dir: string, writes = 40): { p50Ms: number; maxMs: number } {
  const folder = mkdtempSync(path.join(dir, 'sync-probe-'));
  const times: number[] = [];
  try {
    const fd = openSync(path.join(folder, 'probe.bin'), constants.O_CREAT | constants.O_WRONLY | constants.O_DSYNC);
    const block = Buffer.alloc(4096, 0x5a);
    for (let i = 0; i < writes; i += 1) {
      const t0 = performance.now();
      writeSync(fd, block, 0, block.length, (i % 16) * block.length);
      times.push(performance.now() - t0);
    }
    closeSync(fd);
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
  times.sort((a, b) => a - b);
  return { p50Ms: times[Math.floor(times.length / 2)] ?? NaN, maxMs: times.at(-1) ?? NaN };
}

/** One line on the machine: CPU, cores, load averages, available memory, durable-write latency. */
export function machineLine(dir: string): string {
  const cpus = os.cpus();
  const load = os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
  const sync = syncLatency(dir);
  return (
    `Machine: ${cpus[0]?.model.trim() ?? 'unknown CPU'}, ${cpus.length} cores, load ${load}, ` +
    `${(os.freemem() / 2 ** 30).toFixed(1)} of ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB free, ` +
    `durable 4 KiB write p50 ${sync.p50Ms.toFixed(2)} ms, max ${sync.maxMs.toFixed(2)} ms`
  );
}

if (require.main === module) {
  const file = process.argv[2];
  const root = path.resolve(__dirname, '..');
  const lines: string[] = [];
  try {
    if (!file) throw new Error('usage: tsx scripts/test-digest.ts <jest results.json>');
    lines.push(...digest(JSON.parse(readFileSync(file, 'utf8')) as JestResults, root));
  } catch (err) {
    lines.push(`Test digest: no results to read (${err instanceof Error ? err.message : String(err)})`);
  }
  try {
    lines.push(machineLine(root));
  } catch (err) {
    lines.push(`Machine: not measured (${err instanceof Error ? err.message : String(err)})`);
  }
  console.log(`\n${lines.join('\n')}`);
}
