// A full `npm run bench` writes docs/performance.md anew; the sections other benches wrote into it (the scale run,
// the growth run, the per-patient keys and the erasure) are kept, each in its place, and a run's own sections win.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GROWTH_BEGIN, GROWTH_END } from '../../bench/lib/growth-report';
import {
  ERASURE_END,
  ERASURE_START,
  PATIENT_KEYS_END,
  PATIENT_KEYS_START,
  SCALE_END,
  SCALE_START,
  keepSections,
} from '../../bench/lib/sections';

const section = (start: string, end: string, body: string) => `${start}\n${body}\n${end}`;

describe('keepSections', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'report-sections-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("keeps the scale, growth, per-patient keys' and erasure sections of the file, in that order", () => {
    const file = path.join(dir, 'performance.md');
    writeFileSync(
      file,
      [
        '# Performance (old run)',
        section(SCALE_START, SCALE_END, '## 6. Scaling out (kept)'),
        section(GROWTH_BEGIN, GROWTH_END, '## Growth with the number of parked journeys (kept)'),
        section(PATIENT_KEYS_START, PATIENT_KEYS_END, '## 7. Per-patient data keys (kept)'),
        section(ERASURE_START, ERASURE_END, '### Erasing a patient (kept)'),
      ].join('\n\n'),
    );
    const out = keepSections(file, '# Performance (this run)\n\n## 1. Webhook\n');
    const at = (text: string) => out.indexOf(text);
    expect(at('# Performance (this run)')).toBe(0);
    expect(out).not.toContain('old run');
    expect(at('## 1. Webhook')).toBeLessThan(at('(kept)'));
    expect(at('Scaling out (kept)')).toBeLessThan(at('Growth with the number of parked journeys (kept)'));
    expect(at('Growth with the number of parked journeys (kept)')).toBeLessThan(at('Per-patient data keys (kept)'));
    expect(at('Per-patient data keys (kept)')).toBeLessThan(at('Erasing a patient (kept)'));
    expect(out.split(GROWTH_BEGIN)).toHaveLength(2);
  });

  it('leaves a report as it is when the file has none of them, or is not there', () => {
    const file = path.join(dir, 'performance.md');
    expect(keepSections(file, '# Performance\n')).toBe('# Performance\n');
    writeFileSync(file, '# Performance (old run)\n');
    expect(keepSections(file, '# Performance\n')).toBe('# Performance\n');
  });
});
