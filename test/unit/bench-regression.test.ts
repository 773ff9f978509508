// The bench's comparison with the last committed report (bench/lib/regression.ts): the Targets table of a real report
// parsed, and the verdicts on hand-made pairs of figures.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  chooseReport,
  compareTargets,
  comparisonMarkdown,
  comparisonText,
  isPartial,
  parseReport,
  regressionLine,
  targetRow,
  thresholdOf,
  verdictOf,
  type Comparison,
  type TargetRow,
} from '../../bench/lib/regression';

const REPORT = path.resolve(__dirname, '../../docs/performance.md');

const P99 = 'Webhook ack p99 < 10 ms at 500/s (Temporal up, files)';
const MAX = 'Webhook ack max < 100 ms at 1000/s (Temporal up, files)';
const RATIO = "Webhook ack p99 ≤ 3x the bare route's at 500/s (Temporal up, files)";
const THROUGHPUT = 'Journey throughput at least 80 % of the raw ceiling';
const RSS = 'Worker RSS < 1 GiB with 10,000 journeys parked';
const DELIVERY = 'Every acknowledged callback applied exactly once (both stores, Temporal up and stopped)';

const missed = (why = '') => `**missed**${why}`;
const met = '**met**';
const row = (target: string, figure: string, verdict: string): TargetRow => targetRow(target, figure, verdict);

describe('parseReport on the committed report (docs/performance.md)', () => {
  const text = readFileSync(REPORT, 'utf8');
  const parsed = parseReport(text);

  it("reads the machine's CPU", () => {
    expect(parsed.machine).toMatch(/, \d+ cores$/);
    expect(text).toContain(`| CPU | ${parsed.machine} (/proc/cpuinfo) |`);
  });

  it("reads the run's date from the first paragraph", () => {
    const line = text.split('\n').find((l) => l.startsWith('Measured by `npm run bench'));
    expect(parsed.date).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}$/);
    expect(line).toContain(`on ${parsed.date} UTC`);
  });

  it('has a row for each line of the Targets table, and no other', () => {
    const lines = text.split('\n');
    const start = lines.indexOf('## Targets');
    const end = lines.findIndex((l, i) => i > start && l.startsWith('#'));
    const body = lines.slice(start + 1, end).filter((l) => l.startsWith('| ') && !l.startsWith('| Target |'));
    expect(parsed.rows.length).toBeGreaterThan(0);
    expect(parsed.rows.map((r) => `| ${r.target} | ${r.figure} |`)).toEqual(
      body.map((l) => l.split(' | ').slice(0, 2).join(' | ') + ' |'),
    );
  });

  it('reads met or missed from every verdict, as the cell says', () => {
    const lines = text.split('\n');
    for (const r of parsed.rows) {
      const line = lines.find((l) => l.startsWith(`| ${r.target} |`)) ?? '';
      expect(r.met).toBe(line.includes('| **met**'));
      expect(line.includes('| **met**') || line.includes('| **missed**')).toBe(true);
    }
  });

  it("takes each headline in the unit of its target's threshold", () => {
    for (const r of parsed.rows) {
      const threshold = thresholdOf(r.target);
      // A row may say what it measured in words alone ("none missed": no target of that store was missed).
      if (!threshold || !/\d/.test(r.figure)) continue;
      expect({ target: r.target, unit: r.unit, finite: Number.isFinite(r.value) }).toEqual({
        target: r.target,
        unit: threshold.unit,
        finite: true,
      });
    }
    const latency = parsed.rows.find((r) => r.target === P99);
    if (latency) expect(latency.value).toBe(Number.parseFloat(latency.figure));
    const ratio = parsed.rows.find((r) => r.target === RATIO);
    if (ratio) expect(`${ratio.value?.toFixed(1)}x`).toBe(/= ([\d.]+x)/.exec(ratio.figure)?.[1]);
    const share = parsed.rows.find((r) => r.target === THROUGHPUT);
    if (share) expect(`${share.value} %`).toBe(/= (\d+ %)/.exec(share.figure)?.[1]);
  });
});

describe('parseReport on a hand-made report', () => {
  const text = [
    '# Performance',
    '',
    'Measured by `npm run bench -- --quick` (bench/run.ts) on 2026-01-02 03:04 UTC, in 9.0 minutes. The bench...',
    '',
    '## Targets',
    '',
    '| Target | This run | |',
    '|---|---|---|',
    `| ${P99} | 1.25 s | ${missed(': 125.0x the limit')} |`,
    `| ${MAX} | max 47.9 ms (p99.9 44.9 ms) | ${met} |`,
    `| ${RATIO} | 14.1 ms vs bare 1.6 ms = 8.7x | ${missed(': 2.9x the limit (3x bare = 4.9 ms)')} |`,
    `| ${THROUGHPUT} | 20.5/s vs 30.1/s = 68 % | ${missed(': 68 % of the ceiling')} |`,
    `| ${RSS} | 1.04 GiB parked, 1.25 GiB peak (10,000 parked) | ${missed()} |`,
    `| ${DELIVERY} | 10 recorded / 10 acknowledged; 0 missing | ${met} |`,
    '| A target in no known wording | – | ? |',
    '',
    '### What stands in the way',
    '',
    '| Not | a | target |',
    '',
    '## Against the last committed report',
    '',
    '| Target | Last report | This run | |',
    '|---|---|---|---|',
    `| ${P99} | 1.0 ms (met) | 2.0 ms (met) | same |`,
  ].join('\n');

  it('parses each row: name, figure, met or missed, headline and unit', () => {
    const parsed = parseReport(text);
    expect(parsed.date).toBe('2026-01-02 03:04');
    expect(parsed.rows).toEqual([
      { target: P99, figure: '1.25 s', met: false, value: 1250, unit: 'ms' },
      { target: MAX, figure: 'max 47.9 ms (p99.9 44.9 ms)', met: true, value: 47.9, unit: 'ms' },
      { target: RATIO, figure: '14.1 ms vs bare 1.6 ms = 8.7x', met: false, value: 8.7, unit: 'x' },
      { target: THROUGHPUT, figure: '20.5/s vs 30.1/s = 68 %', met: false, value: 68, unit: '%' },
      { target: RSS, figure: '1.04 GiB parked, 1.25 GiB peak (10,000 parked)', met: false, value: 1280, unit: 'MiB' },
      { target: DELIVERY, figure: '10 recorded / 10 acknowledged; 0 missing', met: true },
      { target: 'A target in no known wording', figure: '–', met: undefined },
    ]);
  });

  it('reads the direction of each target from its wording', () => {
    expect(thresholdOf(P99)).toEqual({ direction: 'lower', unit: 'ms' });
    expect(thresholdOf(RATIO)).toEqual({ direction: 'lower', unit: 'x' });
    expect(thresholdOf(THROUGHPUT)).toEqual({ direction: 'higher', unit: '%' });
    expect(thresholdOf(RSS)).toEqual({ direction: 'lower', unit: 'MiB' });
    expect(thresholdOf(DELIVERY)).toBeUndefined();
  });

  it('finds no date and no rows in a text without them', () => {
    expect(parseReport('# Performance\n\nnothing measured\n')).toEqual({ date: undefined, rows: [] });
  });

  it("reads the machine's CPU from its Machine table", () => {
    const withMachine = text.replace(
      '## Targets',
      '## Machine\n\n| | |\n|---|---|\n| CPU | AMD EPYC, 2 cores (/proc/cpuinfo) |\n\n## Targets',
    );
    expect(parseReport(withMachine).machine).toBe('AMD EPYC, 2 cores');
    expect(parseReport(text).machine).toBeUndefined();
  });
});

describe('verdictOf', () => {
  const latency = (ms: number, ok = ms < 10) => row(P99, `${ms.toFixed(1)} ms`, ok ? met : missed());
  const burst = (ms: number) => row(MAX, `max ${ms.toFixed(1)} ms (p99.9 1.0 ms)`, ms < 100 ? met : missed());
  const share = (p: number) => row(THROUGHPUT, `20.0/s vs 30.0/s = ${p} %`, p >= 80 ? met : missed());
  const rss = (mib: number) => row(RSS, `${mib} MiB parked, ${mib} MiB peak (10,000 parked)`, met);

  it('calls met -> missed a regression, however small the change', () => {
    expect(verdictOf(latency(9.9), latency(10.1))).toEqual({
      verdict: 'regression',
      why: 'met -> missed; +0.2 ms, +2 %',
    });
    expect(verdictOf(latency(10.1), latency(9.9)).verdict).toBe('improved');
  });

  it('calls a latency 10 % worse the same', () => {
    expect(verdictOf(burst(20), burst(22)).verdict).toBe('same');
    expect(verdictOf(burst(50), burst(55)).verdict).toBe('same');
  });

  it('calls a latency 40 % and 5 ms worse a regression, and the mirror improved', () => {
    expect(verdictOf(burst(12.5), burst(17.5))).toEqual({ verdict: 'regression', why: '+5.0 ms, +40 %' });
    expect(verdictOf(burst(17.5), burst(12.5)).verdict).toBe('improved');
  });

  it('needs both margins: 50 % worse by 1 ms, or 3 ms worse by 10 %, is the same', () => {
    expect(verdictOf(burst(2), burst(3)).verdict).toBe('same');
    expect(verdictOf(burst(30), burst(33)).verdict).toBe('same');
  });

  it('calls a share of the ceiling 10 points lower a regression, 4 points the same', () => {
    expect(verdictOf(share(68), share(58))).toEqual({ verdict: 'regression', why: '-10 points' });
    expect(verdictOf(share(68), share(64)).verdict).toBe('same');
    expect(verdictOf(share(58), share(68)).verdict).toBe('improved');
  });

  it('judges memory by 25 % and 50 MiB', () => {
    expect(verdictOf(rss(690), rss(760)).verdict).toBe('same');
    expect(verdictOf(rss(690), rss(900)).verdict).toBe('regression');
    expect(verdictOf(rss(900), rss(690)).verdict).toBe('improved');
  });

  it('falls back on met or missed when a cell has no figure, and says when it cannot tell', () => {
    expect(verdictOf(row(P99, '–', met), row(P99, '–', met))).toEqual({
      verdict: 'same',
      why: 'met both times; no figure to compare',
    });
    expect(verdictOf(row(P99, '–', met), row(P99, '–', missed())).verdict).toBe('regression');
    expect(verdictOf(row(P99, '–', 'unclear'), row(P99, '12.0 ms', 'unclear')).verdict).toBe('not comparable');
    expect(verdictOf(row(DELIVERY, '3 missing', missed()), row(DELIVERY, '0 missing', met)).verdict).toBe('improved');
  });
});

describe('compareTargets', () => {
  const before = [row(P99, '9.0 ms', met), row(MAX, 'max 40.0 ms', met), row(THROUGHPUT, '= 70 %', missed())];
  const now = [row(P99, '12.0 ms', missed()), row(MAX, 'max 41.0 ms', met), row(RSS, '600 MiB peak', met)];

  it("matches by name, lists this run's new targets and the report's missing ones", () => {
    expect(compareTargets(before, now, false).map((r) => [r.target, r.verdict])).toEqual([
      [P99, 'regression'],
      [MAX, 'same'],
      [RSS, 'new in this run'],
      [THROUGHPUT, 'gone from this run'],
    ]);
  });

  it('calls the missing ones not measured in a partial run, never a regression', () => {
    const rows = compareTargets(before, [], true);
    expect(rows.map((r) => r.verdict)).toEqual([
      'not measured in this run',
      'not measured in this run',
      'not measured in this run',
    ]);
  });

  it('matches names exactly', () => {
    const renamed = compareTargets([row(P99, '9.0 ms', met)], [row(`${P99} `, '30.0 ms', missed())], false);
    expect(renamed.map((r) => r.verdict)).toEqual(['new in this run', 'gone from this run']);
  });

  it('renders the section and the console lines, regressions named and in bold', () => {
    const c: Comparison = {
      available: true,
      date: '2026-01-02 03:04',
      commit: 'HEAD',
      partial: false,
      rows: compareTargets(before, now, false),
    };
    const md = comparisonMarkdown(c);
    expect(md[0]).toBe('## Against the last committed report');
    expect(md).toContain('| Target | Last report (2026-01-02 03:04) | This run | |');
    expect(md).toContain(
      `| ${P99} | 9.0 ms (met) | 12.0 ms (missed) | **regression**: met -> missed; +3.0 ms, +33 % |`,
    );
    expect(md).toContain(`| ${MAX} | 40.0 ms (met) | 41.0 ms (met) | same: +1.0 ms, +3 % |`);
    const text = comparisonText(c);
    expect(text[text.length - 1]).toBe(`1 regression against the report of 2026-01-02 03:04 UTC: ${P99}`);
    expect(regressionLine({ ...c, rows: compareTargets(before, before, false) })).toBe(
      'no regression against the report of 2026-01-02 03:04 UTC',
    );
  });

  it('renders no section without a committed report, and says so on the console', () => {
    const c: Comparison = { available: false, reason: 'no committed report to compare with', now };
    expect(comparisonMarkdown(c)).toEqual([]);
    expect(comparisonText(c)).toEqual([
      `target: ${P99}: 12.0 ms (missed)`,
      `target: ${MAX}: 41.0 ms (met)`,
      `target: ${RSS}: 600 MiB (met)`,
      'no committed report to compare with',
    ]);
  });
});

describe('chooseReport: the report to compare with', () => {
  const report = (date: string, cpu: string) =>
    [
      `Measured by \`npm run bench\` (bench/run.ts) on ${date} UTC, in 50.0 minutes.`,
      '',
      '## Machine',
      '',
      '| | |',
      '|---|---|',
      `| CPU | ${cpu}, 2 cores (/proc/cpuinfo) |`,
      '',
      '## Targets',
      '',
      '| Target | This run | |',
      '|---|---|---|',
      `| ${P99} | 5.0 ms | ${met} |`,
    ].join('\n');
  const INTEL = 'Intel(R) Xeon(R) Processor';
  const history: [string, string][] = [
    ['HEAD', report('2026-11-30 19:16', INTEL)],
    ['732feb9', report('2026-11-30 19:16', INTEL)],
    ['a961c0f', report('2026-11-30 16:19', INTEL)],
    ['cc0f7c9', report('2026-11-29 18:39', 'AMD EPYC')],
    ['ad85a37', report('2026-11-29 15:54', 'AMD EPYC')],
  ];
  const pick = (found: ReturnType<typeof chooseReport>) =>
    'reason' in found
      ? found.reason
      : [found.commit, found.report.date, found.report.machine, found.newer?.commit, found.newer?.report.date];

  it("takes the newest report of this run's CPU, and names the newer one of another CPU it passed over", () => {
    expect(pick(chooseReport(history, '2026-12-01 03:55', 'AMD EPYC, 2 cores'))).toEqual([
      'cc0f7c9',
      '2026-11-29 18:39',
      'AMD EPYC, 2 cores',
      'HEAD',
      '2026-11-30 19:16',
    ]);
    expect(pick(chooseReport(history, '2026-12-01 03:55', `${INTEL}, 2 cores`))).toEqual([
      'HEAD',
      '2026-11-30 19:16',
      `${INTEL}, 2 cores`,
      undefined,
      undefined,
    ]);
  });

  it("skips this run's own report, committed in several commits, for the one before it", () => {
    expect(pick(chooseReport(history, '2026-11-30 19:16', `${INTEL}, 2 cores`))).toEqual([
      'a961c0f',
      '2026-11-30 16:19',
      `${INTEL}, 2 cores`,
      undefined,
      undefined,
    ]);
  });

  it('takes the newest when no report is of this CPU, or the CPU is not known', () => {
    for (const machine of ['Another CPU, 4 cores', undefined]) {
      expect(pick(chooseReport(history, '2026-12-01 03:55', machine))).toEqual([
        'HEAD',
        '2026-11-30 19:16',
        `${INTEL}, 2 cores`,
        undefined,
        undefined,
      ]);
    }
  });

  it('says why there is nothing to compare with', () => {
    expect(chooseReport([], '2026-12-01 03:55')).toEqual({ reason: 'no committed report to compare with' });
    expect(chooseReport(history.slice(0, 2), '2026-11-30 19:16')).toEqual({
      reason:
        'no committed report of another run than this one (2026-11-30 19:16 UTC) with targets and a date to compare with',
    });
  });

  it('says in the section and the last line which CPU each side ran on', () => {
    const rows = compareTargets([row(P99, '5.0 ms', met)], [row(P99, '5.5 ms', met)], false);
    const base = { available: true as const, date: '2026-11-29 18:39', commit: 'cc0f7c9', partial: false, rows };
    const passedOver: Comparison = {
      ...base,
      machine: 'AMD EPYC, 2 cores',
      thisMachine: 'AMD EPYC, 2 cores',
      newer: { date: '2026-11-30 19:16', commit: 'HEAD', machine: `${INTEL}, 2 cores` },
    };
    expect(comparisonMarkdown(passedOver)[2]).toContain(
      'measured on 2026-11-29 18:39 UTC on AMD EPYC, 2 cores), matched by name. The newest committed report ' +
        `(2026-11-30 19:16 UTC, \`HEAD\`) was measured on ${INTEL}, 2 cores, another CPU than this run's`,
    );
    expect(regressionLine(passedOver)).toBe(
      'no regression against the report of 2026-11-29 18:39 UTC (the last from this CPU; the newest, of ' +
        `2026-11-30 19:16 UTC, was measured on ${INTEL}, 2 cores)`,
    );
    const across: Comparison = { ...base, machine: `${INTEL}, 2 cores`, thisMachine: 'AMD EPYC, 2 cores' };
    expect(comparisonMarkdown(across)[2]).toContain(
      "That report was measured on another CPU than this run's (AMD EPYC, 2 cores), and no committed report is of " +
        'this one: a figure that moved may have moved with the hardware, not with the code.',
    );
    expect(regressionLine(across)).toBe(
      `no regression against the report of 2026-11-29 18:39 UTC (measured on another CPU, ${INTEL}, 2 cores; this ` +
        'run on AMD EPYC, 2 cores)',
    );
    expect(regressionLine({ ...base, machine: 'AMD EPYC, 2 cores', thisMachine: 'AMD EPYC, 2 cores' })).toBe(
      'no regression against the report of 2026-11-29 18:39 UTC',
    );
  });
});

describe('isPartial', () => {
  const all = ['cold', 'tests', 'alone', 'layers', 'webhook', 'burst', 'outage', 'throughput', 'tuning', 'waiting'];
  const run = (phases: string[], more: { quickSizes?: boolean; stores?: string[] } = {}) => ({
    startedAt: '2026-01-02T03:04:05.000Z',
    options: { phases, stores: ['files', 'postgres'], ...more },
  });

  it('is a run of every default phase on both stores at full sizes that is whole', () => {
    expect(isPartial(run(all))).toBe(false);
    expect(isPartial(run(['webhook', 'burst']))).toBe(true);
    expect(isPartial(run(all, { quickSizes: true }))).toBe(true);
    expect(isPartial(run(all, { stores: ['files'] }))).toBe(true);
  });
});
