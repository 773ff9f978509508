/**
 * A jest reporter: after a whole run, a summary of each tier (jest.config.js's projects: unit, integration,
 * topology): its files and tests, how many failed, the time its files ran (summed over the workers) and when in the
 * run its first file started and its last ended; then the slowest files, which is where a long run's minutes go.
 */
class TierSummary {
  constructor(_globalConfig, options = {}) {
    this.slowest = options.slowest ?? 5;
    this.print = options.print ?? ((line) => process.stderr.write(`${line}\n`));
  }

  onRunStart(_results, _options) {
    this.runStart = Date.now();
  }

  onRunComplete(_contexts, results) {
    const runStart = this.runStart ?? results.startTime;
    const tiers = new Map();
    const files = [];
    for (const r of results.testResults) {
      const tier = r.displayName?.name ?? r.displayName ?? 'tests';
      const t = tiers.get(tier) ?? {
        files: 0,
        failedFiles: 0,
        tests: 0,
        failedTests: 0,
        busy: 0,
        first: Infinity,
        last: 0,
      };
      const start = r.perfStats?.start ?? runStart;
      const end = r.perfStats?.end ?? start;
      t.files += 1;
      t.failedFiles += r.numFailingTests > 0 || r.testExecError ? 1 : 0;
      t.tests += r.numPassingTests + r.numFailingTests + (r.numPendingTests ?? 0);
      t.failedTests += r.numFailingTests;
      t.busy += Math.max(0, end - start);
      t.first = Math.min(t.first, start);
      t.last = Math.max(t.last, end);
      tiers.set(tier, t);
      files.push({ tier, file: r.testFilePath, ms: Math.max(0, end - start) });
    }
    if (tiers.size === 0) return;
    const s = (ms) => `${(ms / 1000).toFixed(0)} s`;
    const at = (ms) => {
      const secs = Math.max(0, Math.round((ms - runStart) / 1000));
      return `${Math.floor(secs / 60)}:${String(secs % 60).padStart(2, '0')}`;
    };
    const width = Math.max(...[...tiers.keys()].map((k) => k.length));
    this.print('');
    this.print(
      `Tiers (of this run's ${s(Date.now() - runStart)}; "ran": the files' own times summed over the workers):`,
    );
    for (const [tier, t] of tiers) {
      const failed = t.failedFiles ? `, ${t.failedFiles} file(s) and ${t.failedTests} test(s) FAILED` : ', all passed';
      this.print(
        `  ${tier.padEnd(width)}  ${t.files} file${t.files === 1 ? '' : 's'}, ${t.tests} tests${failed}; ran ${s(t.busy)}, ` +
          `from ${at(t.first)} to ${at(t.last)} into the run`,
      );
    }
    const cwd = process.cwd();
    const slow = files.sort((a, b) => b.ms - a.ms).slice(0, this.slowest);
    this.print(
      `The slowest files: ${slow.map((f) => `${f.file.startsWith(cwd) ? f.file.slice(cwd.length + 1) : f.file} ${s(f.ms)}`).join(', ')}`,
    );
  }
}

module.exports = TierSummary;
