// What the demo prints: a line per journey while they run (redrawn on a terminal, a line per change otherwise) and
// the table of results at the end.
import { table } from '../lib/cli';
import { durationMs, fmtSeconds, type Run } from './follow';
import { eventsSeen, outcomeOf } from './verify';

const useColor = () => process.stdout.isTTY && !process.env.NO_COLOR;
const paint = (code: number, text: string) => (useColor() ? `\x1b[${code}m${text}\x1b[0m` : text);
export const green = (t: string) => paint(32, t);
export const red = (t: string) => paint(31, t);
export const dim = (t: string) => paint(2, t);

export function runState(run: Run): string {
  if (run.timedOut) return 'TIMEOUT';
  if (!run.done) return '...';
  return run.problems.length === 0 ? 'ok' : 'FAIL';
}

/** Why a journey waits or went wrong: an attention, the last error, or a problem reading it. */
export function detailOf(run: Run, long: boolean): string | undefined {
  const j = run.view?.journey;
  const attention = j?.attention?.[0];
  if (attention) return long ? `${attention.code}: ${attention.message}` : `needs attention: ${attention.code}`;
  if (run.note) return run.note;
  if (j?.lastError) {
    return `last error: ${j.lastError.kind} in ${j.lastError.operation}${long ? `: ${j.lastError.message}` : ''}`;
  }
  return undefined;
}

function progressLine(run: Run, labelWidth: number): string {
  const stage = run.view?.journey.stage ?? 'starting';
  const detail = detailOf(run, false);
  return [
    run.s.label.padEnd(labelWidth),
    runState(run).padEnd(7),
    stage.padEnd(22),
    `events ${eventsSeen(run.events)}`.padEnd(20),
    fmtSeconds(durationMs(run)).padStart(7),
    detail ? `  ${detail}` : '',
  ].join('  ');
}

/** Set once the demo is being interrupted: the progress stops printing. */
let muted = false;

export function muteProgress() {
  muted = true;
}

/** A line per journey refreshed in place on a terminal; a line per change otherwise (CI, pipes). */
export class Progress {
  private readonly live = process.stdout.isTTY === true && !process.env.CI;
  private readonly width: number;
  private drawn = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly last = new Map<Run, string>();
  private readonly t0 = Date.now();

  constructor(private readonly runs: Run[]) {
    this.width = Math.max(...runs.map((r) => r.s.label.length));
  }

  start() {
    if (this.live) {
      this.draw();
      this.timer = setInterval(() => this.draw(), 250);
    }
  }

  changed(run: Run) {
    if (muted) return;
    if (this.live) return this.draw();
    const stage = run.view?.journey.stage ?? 'starting';
    const detail = detailOf(run, false);
    const key = [runState(run), stage, eventsSeen(run.events), detail ?? ''].join('|');
    if (this.last.get(run) === key) return;
    this.last.set(run, key);
    const at = `[${fmtSeconds(Date.now() - this.t0).padStart(7)}]`;
    const note = detail ? ` (${detail})` : '';
    const state = runState(run) === '...' ? '' : ` -> ${runState(run)}`;
    console.log(`${at} ${run.s.label}: ${stage}, events ${eventsSeen(run.events)}${note}${state}`);
  }

  stop() {
    if (this.timer) clearInterval(this.timer);
    if (this.live) this.draw();
  }

  private draw() {
    if (muted) return;
    const columns = process.stdout.columns || 120;
    let out = this.drawn > 0 ? `\x1b[${this.drawn}A` : '';
    for (const r of this.runs) {
      let line = progressLine(r, this.width);
      if (line.length > columns - 1) line = line.slice(0, columns - 2) + '…';
      const state = runState(r);
      const coloured = state === 'ok' ? green(line) : state === 'FAIL' || state === 'TIMEOUT' ? red(line) : line;
      out += `\x1b[2K${coloured}\n`;
    }
    process.stdout.write(out);
    this.drawn = this.runs.length;
  }
}

export function resultTable(runs: Run[]): string {
  const rows = [['scenario', 'result', 'outcome', 'events', 'duration']];
  for (const r of runs) {
    const outcome = r.timedOut ? `not finished (${r.view?.journey.stage ?? 'never read'})` : outcomeOf(r.view);
    rows.push([r.s.label, runState(r), outcome, eventsSeen(r.events), fmtSeconds(durationMs(r))]);
  }
  const lines = table(rows, { rule: true }).split('\n');
  return lines.map((l, i) => (i < 2 ? l : runState(runs[i - 2]!) === 'ok' ? green(l) : red(l))).join('\n');
}
