// docs/performance.md is written by two benches: `npm run bench` renders the whole file, `npm run bench:scale` only
// its scaling section between these markers. Each keeps what the other wrote.
import { existsSync, readFileSync } from 'node:fs';

export const SCALE_START = '<!-- scale:start -->';
export const SCALE_END = '<!-- scale:end -->';

function scaleSection(text: string): string | undefined {
  const start = text.indexOf(SCALE_START);
  const end = text.indexOf(SCALE_END);
  return start >= 0 && end > start ? text.slice(start, end + SCALE_END.length) : undefined;
}

/** The file's text with `section` in place of its scale section (appended when it has none). */
export function withScaleSection(text: string, section: string): string {
  const start = text.indexOf(SCALE_START);
  const end = text.indexOf(SCALE_END);
  return start >= 0 && end > start
    ? `${text.slice(0, start)}${section}${text.slice(end + SCALE_END.length)}`
    : `${text.trimEnd()}\n\n${section}\n`;
}

/** A freshly rendered report, with the scale section the file at `file` already had (if any) at its end. */
export function keepScaleSection(file: string, markdown: string): string {
  const kept = existsSync(file) ? scaleSection(readFileSync(file, 'utf8')) : undefined;
  return kept ? withScaleSection(markdown, kept) : markdown;
}
