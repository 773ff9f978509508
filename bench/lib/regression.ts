// This run's targets against the last committed report's (docs/performance.md at HEAD, or the newest version measured
// on this run's CPU when HEAD's is another CPU's): each target's figure then and now, and whether it regressed,
// improved or stayed the same. For the console at the end of `npm run bench` and for the
// report's "Against the last committed report" section.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { OPT_IN_PHASES, PHASES } from './context';

const ROOT = path.resolve(__dirname, '../..');
const REPORT = 'docs/performance.md';

export type Unit = 'ms' | '%' | 'MiB' | 'x';
/** Which way is better for a target, read from its wording ("<", "≤", "at least"...). */
export type Direction = 'lower' | 'higher';

/** One row of a report's Targets table (or of this run's targets). */
export interface TargetRow {
  target: string;
  /** The "This run" cell as written. */
  figure: string;
  /** From the verdict cell: **met** / **missed**; undefined when it says neither. */
  met: boolean | undefined;
  /** The figure the target is judged on, in `unit` (ms, %, MiB or x); undefined when the cell has none. */
  value?: number;
  unit?: Unit;
}

export interface ReportTargets {
  /** "2026-11-27 04:38" (UTC), from the report's "Measured by `npm run bench` ... on <date> UTC" line. */
  date: string | undefined;
  /** "AMD EPYC, 2 cores", from the report's Machine table (its CPU row); undefined when it has none. */
  machine?: string;
  rows: TargetRow[];
}

export type Verdict =
  | 'regression'
  | 'improved'
  | 'same'
  | 'not comparable'
  | 'new in this run'
  | 'not measured in this run'
  | 'gone from this run';

export interface ComparedTarget {
  target: string;
  before?: TargetRow;
  now?: TargetRow;
  verdict: Verdict;
  /** What decided the verdict, e.g. "met -> missed" or "+5.9 ms, +42 %". */
  why?: string;
}

export type Comparison =
  | { available: false; reason: string; now: TargetRow[] }
  | {
      available: true;
      /** The committed report's date ("2026-11-27 04:38", UTC) and the commit it was read from. */
      date: string;
      commit: string;
      /** The CPU the report was measured on, and this run's, when both are known ("AMD EPYC, 2 cores"). */
      machine?: string;
      thisMachine?: string;
      /** A newer committed report passed over because it was measured on another CPU than this run's. */
      newer?: { date: string; commit: string; machine: string };
      /** A run of some phases, stores or --quick sizes: targets it did not reach are "not measured", not gone. */
      partial: boolean;
      rows: ComparedTarget[];
    };

/** Above this much worse (relative) AND the unit's margin (absolute), a figure regressed; the mirror: improved. */
export const RELATIVE_MARGIN = 0.25;
export const ABSOLUTE_MARGIN: Record<Unit, number> = { ms: 2, '%': 5, MiB: 50, x: 0.5 };

const NUMBER = String.raw`(\d[\d,]*(?:\.\d+)?)`;
const UNIT_PATTERN: Record<Unit, RegExp> = {
  ms: new RegExp(String.raw`${NUMBER}\s*(ms|s)\b`, 'g'),
  '%': new RegExp(String.raw`${NUMBER}\s*(%)`, 'g'),
  MiB: new RegExp(String.raw`${NUMBER}\s*(KiB|MiB|GiB)\b`, 'g'),
  x: new RegExp(String.raw`${NUMBER}\s*(x)\b`, 'g'),
};
const SCALE: Record<string, number> = { ms: 1, s: 1000, '%': 1, KiB: 1 / 1024, MiB: 1, GiB: 1024, x: 1 };
const num = (s: string) => Number(s.replace(/,/g, ''));

/** The threshold in a target's wording: "p99 < 10 ms" -> lower ms, "at least 80 %" -> higher %, "< 1 GiB" -> MiB. */
export function thresholdOf(target: string): { direction: Direction; unit: Unit } | undefined {
  const m =
    /(<=?|≤|>=?|≥|at most|at least|under|below|above|over)\s*\d[\d,]*(?:\.\d+)?\s*(ms|s|%|KiB|MiB|GiB|x)(?![A-Za-z])/.exec(
      target,
    );
  if (!m) return undefined;
  const [, word = '', written = ''] = m;
  const direction: Direction = /^(<|≤|at most|under|below)/.test(word) ? 'lower' : 'higher';
  const unit: Unit = written === 's' ? 'ms' : /iB$/.test(written) ? 'MiB' : (written as Unit);
  return { direction, unit };
}

/**
 * The number a figure cell headlines, in the unit of the target's threshold (else the first number with any known
 * unit): the first such number, except for memory, where the one marked "peak" (what the RSS target is judged on).
 */
export function headlineOf(target: string, figure: string): { value: number; unit: Unit } | undefined {
  const wanted = thresholdOf(target)?.unit;
  const units: Unit[] = wanted ? [wanted] : ['ms', '%', 'MiB', 'x'];
  for (const unit of units) {
    const found = [...figure.matchAll(UNIT_PATTERN[unit])].map((m) => {
      const [all, n = '', written = ''] = m;
      return {
        value: num(n) * (SCALE[written] ?? NaN),
        peak: figure.slice(m.index + all.length).startsWith(' peak'),
      };
    });
    const pick = (unit === 'MiB' ? found.find((f) => f.peak) : undefined) ?? found[0];
    if (pick && Number.isFinite(pick.value)) return { value: pick.value, unit };
  }
  return undefined;
}

/** A Targets row from its three cells. */
export function targetRow(target: string, figure: string, verdict: string): TargetRow {
  const met = /^\*\*met\*\*/.test(verdict.trim()) ? true : /^\*\*missed\*\*/.test(verdict.trim()) ? false : undefined;
  return { target, figure, met, ...headlineOf(target, figure) };
}

/** The date and the Targets table of a report (docs/performance.md as `npm run bench` renders it). */
export function parseReport(markdown: string): ReportTargets {
  const date = /^Measured by `[^`]*` .*? on (\d{4}-\d{2}-\d{2} \d{2}:\d{2}) UTC/m.exec(markdown)?.[1];
  const lines = markdown.split('\n');
  const start = lines.findIndex((l) => l.trim() === '## Targets');
  const rows: TargetRow[] = [];
  if (start >= 0) {
    for (const line of lines.slice(start + 1)) {
      if (/^#{1,6} /.test(line)) break;
      if (!line.startsWith('|')) continue;
      const cells = line
        .trim()
        .replace(/^\||\|$/g, '')
        .split('|')
        .map((c) => c.trim());
      const [target = '', ...rest] = cells;
      const verdict = rest.pop() ?? '';
      if (rest.length < 1 || target === 'Target' || /^:?-+:?$/.test(target)) continue;
      // A figure holding a "|" of its own: the target is the first cell, the verdict the last.
      rows.push(targetRow(target, rest.join(' | '), verdict));
    }
  }
  const machine = /^\| CPU \| (.+?)(?: \(\/proc\/cpuinfo\))? \|$/m.exec(markdown)?.[1];
  return { date, ...(machine ? { machine } : {}), rows };
}

const fmt = (v: number, unit: Unit) =>
  unit === 'x'
    ? `${v.toFixed(1)}x`
    : unit === '%'
      ? `${v.toFixed(0)} %`
      : `${v.toFixed(unit === 'MiB' ? 0 : 1)} ${unit}`;

/**
 * How much worse `now` is than `before`: absolutely (in the unit) and relatively. Lower-is-better figures relative to
 * `before`; a share of a ceiling (higher-is-better %) relative to what it lacked of 100 % (68 % -> 58 % is 10 points
 * and 31 % more missing: a share near its top cannot fall by a quarter of itself before being long broken);
 * other higher-is-better figures relative to `now`.
 */
function worseBy(before: number, now: number, unit: Unit, direction: Direction): { abs: number; rel: number } {
  const rel = (delta: number, base: number) => (base > 0 ? delta / base : delta > 0 ? Infinity : 0);
  if (direction === 'lower') return { abs: now - before, rel: rel(now - before, before) };
  if (unit === '%') return { abs: before - now, rel: rel(before - now, 100 - before) };
  return { abs: before - now, rel: rel(before - now, now) };
}

/** The verdict for one target found in both. */
export function verdictOf(before: TargetRow, now: TargetRow): { verdict: Verdict; why?: string } {
  const direction = thresholdOf(now.target)?.direction;
  const unit = before.unit === now.unit ? now.unit : undefined;
  let figures: { worse: boolean; better: boolean; why: string } | undefined;
  if (before.value !== undefined && now.value !== undefined && unit && direction) {
    const margin = ABSOLUTE_MARGIN[unit];
    const worse = worseBy(before.value, now.value, unit, direction);
    const better = worseBy(now.value, before.value, unit, direction);
    const delta = now.value - before.value;
    const sign = delta > 0 ? '+' : delta < 0 ? '-' : '±';
    figures = {
      worse: worse.rel > RELATIVE_MARGIN && worse.abs > margin,
      better: better.rel > RELATIVE_MARGIN && better.abs > margin,
      why:
        `${sign}${fmt(Math.abs(delta), unit).replace(' %', ' points')}` +
        (unit === '%' || before.value === 0 ? '' : `, ${sign}${Math.abs((100 * delta) / before.value).toFixed(0)} %`),
    };
  }
  const also = figures ? `; ${figures.why}` : '';
  if (before.met === true && now.met === false) return { verdict: 'regression', why: `met -> missed${also}` };
  if (before.met === false && now.met === true) return { verdict: 'improved', why: `missed -> met${also}` };
  if (figures) {
    return { verdict: figures.worse ? 'regression' : figures.better ? 'improved' : 'same', why: figures.why };
  }
  if (before.met !== undefined && before.met === now.met) {
    return { verdict: 'same', why: `${before.met ? 'met' : 'missed'} both times; no figure to compare` };
  }
  return { verdict: 'not comparable', why: 'no figure to compare, and not met or missed in both' };
}

/** Each target of either side, matched by name (exactly), in this run's order, then those of the report alone. */
export function compareTargets(before: TargetRow[], now: TargetRow[], partial: boolean): ComparedTarget[] {
  const old = new Map(before.map((r) => [r.target, r]));
  const current = new Set(now.map((r) => r.target));
  return [
    ...now.map((n): ComparedTarget => {
      const b = old.get(n.target);
      return b
        ? { target: n.target, before: b, now: n, ...verdictOf(b, n) }
        : { target: n.target, now: n, verdict: 'new in this run' };
    }),
    ...before
      .filter((b) => !current.has(b.target))
      .map((b): ComparedTarget => ({
        target: b.target,
        before: b,
        verdict: partial ? 'not measured in this run' : 'gone from this run',
      })),
  ];
}

function git(args: string[]): string | undefined {
  const r = spawnSync('git', args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 2 ** 20 });
  return r.status === 0 && !r.error ? r.stdout : undefined;
}

/** A committed report found to compare with, and why it was chosen over a newer one. */
export interface FoundReport {
  report: ReportTargets;
  commit: string;
  /** The newest committed report, passed over for this one because it was measured on another CPU. */
  newer?: { report: ReportTargets; commit: string };
}

/**
 * The report to compare with, among committed versions newest first (`[commit, text]`): the newest from another run
 * than this one (`ownDate`) measured on this run's CPU (`ownMachine`). Figures move between machines by more than
 * between runs, so when the newest report is another machine's, the newest of this machine's is the one compared
 * with, and the newer one is named; when no report is of this machine (or its machine is not known), the newest.
 */
export function chooseReport(
  versions: Iterable<[commit: string, text: string]>,
  ownDate?: string,
  ownMachine?: string,
): FoundReport | { reason: string } {
  let newest: { report: ReportTargets; commit: string } | undefined;
  let seen = false;
  for (const [commit, text] of versions) {
    seen = true;
    const report = parseReport(text);
    if (report.date === ownDate || !report.rows.length || !report.date) continue;
    // One run's report committed in several commits: the first (newest) of them stands for it.
    if (newest?.report.date === report.date) continue;
    const sameMachine = !ownMachine || !report.machine || report.machine === ownMachine;
    if (sameMachine) return newest ? { report, commit, newer: newest } : { report, commit };
    newest ??= { report, commit };
  }
  if (newest) return newest;
  return {
    reason: seen
      ? `no committed report of another run${ownDate ? ` than this one (${ownDate} UTC)` : ''} with targets and a ` +
        'date to compare with'
      : 'no committed report to compare with',
  };
}

/**
 * The last committed report: docs/performance.md at HEAD, or, when that is this very run's report (its results
 * rendered again after the report was committed) or another CPU's, the newest earlier version from another run on
 * this CPU (chooseReport), looking back over the file's last 50 versions.
 */
export function committedReport(ownDate?: string, ownMachine?: string): FoundReport | { reason: string } {
  function* versions(): Generator<[string, string]> {
    const head = git(['show', `HEAD:${REPORT}`]);
    if (head === undefined) return;
    yield ['HEAD', head];
    for (const commit of (git(['log', '--format=%h', '-n', '50', 'HEAD', '--', REPORT]) ?? '').split('\n')) {
      const text = commit ? git(['show', `${commit}:${REPORT}`]) : undefined;
      if (text !== undefined) yield [commit, text];
    }
  }
  return chooseReport(versions(), ownDate, ownMachine);
}

/** What a run's results say of its extent (a Results is one). */
export interface RunExtent {
  startedAt: string;
  options: { phases: string[]; quickSizes?: boolean; stores?: string[] };
  /** The machine it ran on (its CPU), as the report's Machine table names it. */
  machine?: { cpuModel: string; cores: number };
}

/** A run's CPU as its report's Machine table names it: "AMD EPYC, 2 cores". */
export const machineOf = (run: RunExtent) =>
  run.machine ? `${run.machine.cpuModel}, ${run.machine.cores} cores` : undefined;

/** A run of some phases or stores, or at --quick sizes: it cannot be expected to have every target. */
export function isPartial(run: RunExtent): boolean {
  const phases = new Set(run.options.phases);
  return (
    PHASES.some((p) => !OPT_IN_PHASES.includes(p) && !phases.has(p)) ||
    run.options.quickSizes === true ||
    (run.options.stores !== undefined && !['files', 'postgres'].every((s) => run.options.stores?.includes(s)))
  );
}

/** The date a report gives for a run: its start, minutes, UTC. */
export const runDate = (run: RunExtent) => run.startedAt.slice(0, 16).replace('T', ' ');

/** This run's targets (report.ts `targets(r).rows`) against the last committed report's. */
export function compareWithCommitted(
  rows: { target: string; figure: string; verdict: string }[],
  run: RunExtent,
): Comparison {
  const now = rows.map((r) => targetRow(r.target, r.figure, r.verdict));
  const thisMachine = machineOf(run);
  const found = committedReport(runDate(run), thisMachine);
  if ('reason' in found) return { available: false, reason: found.reason, now };
  const partial = isPartial(run);
  const newer = found.newer;
  return {
    available: true,
    date: found.report.date ?? '?',
    commit: found.commit,
    ...(found.report.machine && thisMachine ? { machine: found.report.machine, thisMachine } : {}),
    ...(newer?.report.machine
      ? { newer: { date: newer.report.date ?? '?', commit: newer.commit, machine: newer.report.machine } }
      : {}),
    partial,
    rows: compareTargets(found.report.rows, now, partial),
  };
}

/**
 * A side's figure in short: its headline and met/missed; without a headline the whole cell (`brief`: met/missed
 * alone, when it says which).
 */
function side(r: TargetRow | undefined, brief = false): string {
  if (!r) return '–';
  const verdict = r.met === undefined ? undefined : r.met ? 'met' : 'missed';
  if (r.value === undefined || !r.unit)
    return brief && verdict ? verdict : `${r.figure}${verdict ? ` (${verdict})` : ''}`;
  return `${fmt(r.value, r.unit)}${verdict ? ` (${verdict})` : ''}`;
}

const regressions = (c: Comparison) => (c.available ? c.rows.filter((r) => r.verdict === 'regression') : []);

/** The report's section "Against the last committed report" (empty when there is nothing to compare with). */
export function comparisonMarkdown(c: Comparison): string[] {
  if (!c.available) return [];
  const esc = (s: string) => s.replace(/\|/g, '\\|');
  const L = [
    '## Against the last committed report',
    '',
    `This run's targets against those of the report committed last${c.newer ? ' from a run on this CPU' : ''} ` +
      `(\`git show ${c.commit}:${REPORT}\`, measured on ${c.date} UTC${c.machine ? ` on ${c.machine}` : ''}), ` +
      `matched by name.${machineNote(c)} A **regression** is a target met then and missed now, or a figure worse ` +
      `by more than ${RELATIVE_MARGIN * 100} % and by more than ${ABSOLUTE_MARGIN.ms} ms (a latency), ` +
      `${ABSOLUTE_MARGIN['%']} points (a share of a ceiling: its ${RELATIVE_MARGIN * 100} % taken of what it lacks ` +
      `of 100 %), ${ABSOLUTE_MARGIN.MiB} MiB (memory) or ${ABSOLUTE_MARGIN.x}x (a ratio); **improved** is the mirror; ` +
      'the rest is the same, within what runs differ by.' +
      (c.partial ? ' This run measured only some of them: the others are not measured in this run.' : ''),
    '',
    `| Target | Last report (${c.date}) | This run | |`,
    '|---|---|---|---|',
  ];
  for (const r of c.rows) {
    const verdict = r.verdict === 'regression' ? '**regression**' : r.verdict;
    L.push(
      `| ${esc(r.target)} | ${esc(side(r.before))} | ${esc(side(r.now))} | ${verdict}${r.why ? `: ${esc(r.why)}` : ''} |`,
    );
  }
  L.push('');
  return L;
}

/** The comparison for the console: each of this run's targets (and the report's it lacks), then the verdict line. */
export function comparisonText(c: Comparison): string[] {
  if (!c.available) {
    return [...c.now.map((r) => `target: ${r.target}: ${side(r, true)}`), regressionLine(c)];
  }
  const unmeasured = c.rows.filter((r) => r.verdict === 'not measured in this run');
  const shown = c.rows.filter((r) => r.verdict !== 'not measured in this run');
  const width = Math.max(0, ...shown.map((r) => r.verdict.length));
  const L = [
    `against the report committed last${c.newer ? ' from this CPU' : ''} (${c.commit}, measured on ${c.date} UTC` +
      `${c.machine ? ` on ${c.machine}` : ''}):`,
  ];
  for (const r of shown) {
    const label = r.verdict === 'regression' ? 'REGRESSION' : r.verdict;
    L.push(
      `  ${label.padEnd(width)}  ${r.target}: ${side(r.before, true)} -> ${side(r.now, true)}${r.why ? ` (${r.why})` : ''}`,
    );
  }
  if (unmeasured.length) {
    L.push(`  ${unmeasured.length} of the report's targets not measured in this run (a partial run)`);
  }
  L.push(regressionLine(c));
  return L;
}

/** Whether the report compared with is another CPU's than this run's. */
const otherMachine = (c: Comparison & { available: true }) =>
  c.machine !== undefined && c.thisMachine !== undefined && c.machine !== c.thisMachine;

/** What the section says of the machines: a newer report passed over, or a comparison across two CPUs. */
function machineNote(c: Comparison & { available: true }): string {
  if (c.newer) {
    return (
      ` The newest committed report (${c.newer.date} UTC, \`${c.newer.commit}\`) was measured on ${c.newer.machine}, ` +
      `another CPU than this run's: figures move between machines by more than between runs, so it is not the one ` +
      `compared with.`
    );
  }
  if (otherMachine(c)) {
    return (
      ` That report was measured on another CPU than this run's (${c.thisMachine}), and no committed report is of ` +
      `this one: a figure that moved may have moved with the hardware, not with the code.`
    );
  }
  return '';
}

/** The last line: every regression by name, or that there is none. */
export function regressionLine(c: Comparison): string {
  if (!c.available) return c.reason;
  const found = regressions(c);
  const against =
    `the report of ${c.date} UTC` +
    (otherMachine(c) ? ` (measured on another CPU, ${c.machine}; this run on ${c.thisMachine})` : '') +
    (c.newer
      ? ` (the last from this CPU; the newest, of ${c.newer.date} UTC, was measured on ${c.newer.machine})`
      : '');
  return found.length
    ? `${found.length} regression${found.length > 1 ? 's' : ''} against ${against}: ${found.map((r) => r.target).join('; ')}`
    : `no regression against ${against}`;
}
