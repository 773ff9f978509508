// docs/performance.md is written by several runs: `npm run bench` renders the whole file, `npm run bench:scale` only
// its scaling section between the scale markers, `npm run bench -- --only sustained` only the sustained section
// between its markers, and `npm run bench:patient-keys` only the per-patient keys' section. Each keeps what the others
// wrote.
import { existsSync, readFileSync } from 'node:fs';
import { GROWTH_BEGIN, GROWTH_END } from './growth-report';

export const SCALE_START = '<!-- scale:start -->';
export const SCALE_END = '<!-- scale:end -->';
export const SUSTAINED_START = '<!-- sustained:start -->';
export const SUSTAINED_END = '<!-- sustained:end -->';
export const PATIENT_KEYS_START = '<!-- patient-keys:start -->';
export const PATIENT_KEYS_END = '<!-- patient-keys:end -->';
export const ERASURE_START = '<!-- erasure:start -->';
export const ERASURE_END = '<!-- erasure:end -->';

/** Who got the CPU first in a run: the bench's options that set it (bench/lib/context.ts). */
export function cpuWeights(o: { backgroundNice?: number; backgroundGroup?: string }): string {
  if ((o.backgroundNice ?? 0) <= 0) return 'every process at nice 0 (`--background-nice 0`)';
  return (
    `the Temporal server, the worker and the sandbox at nice ${o.backgroundNice} (process and session autogroup)` +
    (o.backgroundGroup
      ? ', in a cpu cgroup of the lowest weight (`cpu.shares` 2 or `cpu.weight` 1, as a best-effort container: they ' +
        'run on the CPU the others leave)'
      : '') +
    ", the API, PostgreSQL and the load generator at 0: the share a deployment reserves for the webhook (its own cores, or a container's CPU request, which is a cgroup weight); " +
    (o.backgroundGroup ? '`--background-cpu nice` leaves the group out, ' : '') +
    '`--background-nice 0` runs them all alike'
  );
}

/** Where the Temporal dev server kept its store in a run (bench/lib/context.ts temporalStore). */
export function temporalStoreLine(o: { temporalStore?: 'memory' | 'disk'; temporalStoreDir?: string }): string {
  if (o.temporalStoreDir)
    return (
      "the dev server's SQLite file in memory (tmpfs, /dev/shm), as a deployment keeps Temporal's store on machines " +
      "of its own: the only flushes on this disk are the inbox's and its PostgreSQL's; `--temporal-store disk` puts it " +
      'on the disk beside them'
    );
  if (o.temporalStore === 'memory') return "on the disk beside the inbox's (no /dev/shm here)";
  // Runs before the option (and `--temporal-store disk`): the run's work folder.
  return "the dev server's SQLite file on the disk beside the inbox's (`--temporal-store disk`)";
}

interface Markers {
  start: string;
  end: string;
}
const SCALE: Markers = { start: SCALE_START, end: SCALE_END };
const SUSTAINED: Markers = { start: SUSTAINED_START, end: SUSTAINED_END };
const PATIENT_KEYS: Markers = { start: PATIENT_KEYS_START, end: PATIENT_KEYS_END };
const ERASURE: Markers = { start: ERASURE_START, end: ERASURE_END };
const GROWTH: Markers = { start: GROWTH_BEGIN, end: GROWTH_END };

function sectionOf(text: string, m: Markers): string | undefined {
  const start = text.indexOf(m.start);
  const end = text.indexOf(m.end, start);
  return start >= 0 && end > start ? text.slice(start, end + m.end.length) : undefined;
}

/** A section with nothing between its markers (what a report without that run renders). */
const isEmpty = (section: string, m: Markers) => section.slice(m.start.length, -m.end.length).trim() === '';

/**
 * The text with `section` in place of its `m` section; without one, inserted before the `before` section when the
 * text has that, else appended.
 */
function withSection(text: string, m: Markers, section: string, before?: Markers): string {
  const start = text.indexOf(m.start);
  const end = text.indexOf(m.end, start);
  if (start >= 0 && end > start) return `${text.slice(0, start)}${section}${text.slice(end + m.end.length)}`;
  const at = before ? text.indexOf(before.start) : -1;
  if (at >= 0) return `${text.slice(0, at)}${section}\n\n${text.slice(at)}`;
  return `${text.trimEnd()}\n\n${section}\n`;
}

/** The file's text with `section` in place of its scale section (appended when it has none). */
export function withScaleSection(text: string, section: string): string {
  return withSection(text, SCALE, section);
}

/** The file's text with `section` in place of its per-patient keys' section (appended when it has none). */
export function withPatientKeysSection(text: string, section: string): string {
  return withSection(text, PATIENT_KEYS, section);
}

/** The file's text with `section` in place of its erasure section (appended when it has none). */
export function withErasureSection(text: string, section: string): string {
  return withSection(text, ERASURE, section);
}

/** A freshly rendered report, with the scale section the file at `file` already had (if any) at its end. */
export function keepScaleSection(file: string, markdown: string): string {
  const kept = existsSync(file) ? sectionOf(readFileSync(file, 'utf8'), SCALE) : undefined;
  return kept ? withScaleSection(markdown, kept) : markdown;
}

/**
 * A freshly rendered report with what the file at `file` already had that this run did not measure: its scale
 * section, its growth section, its per-patient keys' section, and its sustained section when the report's own is empty (a run without the sustained phase).
 */
export function keepSections(file: string, markdown: string): string {
  if (!existsSync(file)) return markdown;
  const old = readFileSync(file, 'utf8');
  let out = markdown;
  const ownSustained = sectionOf(out, SUSTAINED);
  const keptSustained = sectionOf(old, SUSTAINED);
  if (keptSustained && !isEmpty(keptSustained, SUSTAINED) && (!ownSustained || isEmpty(ownSustained, SUSTAINED))) {
    out = withSection(out, SUSTAINED, keptSustained, SCALE);
  }
  const keptScale = sectionOf(old, SCALE);
  if (keptScale) out = withScaleSection(out, keptScale);
  // npm run bench:growth's section, after the scale section and before the per-patient keys'.
  const keptGrowth = sectionOf(old, GROWTH);
  if (keptGrowth) out = withSection(out, GROWTH, keptGrowth, PATIENT_KEYS);
  const keptKeys = sectionOf(old, PATIENT_KEYS);
  if (keptKeys) out = withPatientKeysSection(out, keptKeys);
  const keptErasure = sectionOf(old, ERASURE);
  return keptErasure ? withErasureSection(out, keptErasure) : out;
}

/**
 * A run of the sustained phase alone: the file at `file` as it is, with the sustained section of `markdown` (a freshly
 * rendered report) in place of its own (before the scale section when it had none); the whole report when there is
 * no file yet.
 */
export function spliceSustainedSection(file: string, markdown: string): string {
  const section = sectionOf(markdown, SUSTAINED);
  if (!existsSync(file) || !section) return markdown;
  return withSection(readFileSync(file, 'utf8'), SUSTAINED, section, SCALE);
}
