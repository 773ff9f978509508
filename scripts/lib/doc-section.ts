// docs/reliability.md is written by several runs: the dev-server fault run owns the top, and each other run owns a
// section of its own below KEPT_MARKER, between a begin and an end line, replaced whole by its next run.

/** The line after which docs/reliability.md holds other measurements: a full run rewrites what is above it only. */
export const KEPT_MARKER = '<!-- other measurements below: npm run test:faults keeps them -->';

/** `existing` with the section between `begin` and `end` replaced (or added after KEPT_MARKER), the rest as it was. */
export function withSection(existing: string, begin: string, end: string, section: string): string {
  if (!section.startsWith(begin) || !section.endsWith(end)) throw new Error('a section starts and ends with its lines');
  const at = existing.indexOf(begin);
  const to = existing.indexOf(end);
  if (at >= 0 && to > at) return existing.slice(0, at) + section + existing.slice(to + end.length);
  const kept = existing.indexOf(KEPT_MARKER);
  if (kept < 0) return `${existing.trimEnd()}\n\n${KEPT_MARKER}\n\n${section}\n`;
  const after = kept + KEPT_MARKER.length;
  return `${existing.slice(0, after)}\n\n${section}\n${existing.slice(after)}`;
}
