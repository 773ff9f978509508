// Renders docs/performance.md and the latency plot again from a run's results (bench/last-run.json by default),
// after a change to bench/lib/report.ts, without measuring again.
//
//   node --import tsx bench/render-report.ts [results.json] [out.md] [out.svg]
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { renderReport, type Results } from './lib/report';
import { keepScaleSection } from './lib/sections';

const root = path.resolve(__dirname, '..');
const [
  input = path.join(root, 'bench/last-run.json'),
  md = path.join(root, 'docs/performance.md'),
  svg = path.join(root, 'docs/webhook-latency.svg'),
] = process.argv.slice(2);
const results = JSON.parse(readFileSync(input, 'utf8')) as Results;
const out = renderReport(results);
writeFileSync(md, keepScaleSection(md, out.markdown));
writeFileSync(svg, out.svg);
console.log(`wrote ${md} and ${svg} from ${input}`);
