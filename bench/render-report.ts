// Renders docs/performance.md and the plots again from a run's results (bench/last-run.json by default), after a
// change to bench/lib/report.ts, without measuring again (with the comparison against the last committed report). Results of a sustained-only run (its work folder's
// results.json) replace only the sustained section; the sustained plot goes beside the report.
//
//   node --import tsx bench/render-report.ts [results.json] [out.md] [out.svg]
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { compareWithCommitted } from './lib/regression';
import { renderReport, targets, type Results } from './lib/report';
import { keepSections, spliceSustainedSection } from './lib/sections';

const root = path.resolve(__dirname, '..');
const [
  input = path.join(root, 'bench/last-run.json'),
  md = path.join(root, 'docs/performance.md'),
  svg = path.join(root, 'docs/webhook-latency.svg'),
] = process.argv.slice(2);
const results = JSON.parse(readFileSync(input, 'utf8')) as Results;
const depthSvg = path.join(path.dirname(md), 'sustained-inbox-depth.svg');
// As the bench does: this run's targets against the last committed report's, as a section of the report.
const out = renderReport(results, {
  sustainedSvgLink: path.relative(path.dirname(md), depthSvg),
  against: compareWithCommitted(targets(results).rows, results),
});
const sustainedOnly =
  results.options.phases.includes('sustained') && results.options.phases.every((p) => p === 'sustained');
writeFileSync(md, sustainedOnly ? spliceSustainedSection(md, out.markdown) : keepSections(md, out.markdown));
if (!sustainedOnly) writeFileSync(svg, out.svg);
if (out.sustainedSvg) writeFileSync(depthSvg, out.sustainedSvg);
console.log(
  `wrote ${md}${sustainedOnly ? ' (its sustained section)' : ` and ${svg}`}${out.sustainedSvg ? ` and ${depthSvg}` : ''} from ${input}`,
);
