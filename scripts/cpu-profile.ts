// `npm run profile -- <file.cpuprofile> [--svg out.svg] [--title "..."] [--top 20]`: where a process spent its CPU,
// from a V8 CPU profile (`node --cpu-prof`; the bench's API takes it with BENCH_API_NODE_ARGS): a Markdown table of
// the functions with the most time of their own and of the time by origin (the engine's code, each package, Node.js,
// the garbage collector), and with --svg a flame graph. Idle time is left out.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { flameGraphSvg, summarizeProfile, type CpuProfile, type ProfileSummary } from './lib/cpu-profile';

const ROOT = path.resolve(__dirname, '..');

/** The summary as Markdown: the busy time, the top functions by self time, and self time by origin. */
export function profileMarkdown(s: ProfileSummary, top: number): string {
  const pct = (ms: number) => (s.busyMs > 0 ? ((ms / s.busyMs) * 100).toFixed(1) : '0.0');
  const cell = (t: string) => t.replace(/\|/g, '\\|');
  return [
    `CPU busy ${s.busyMs.toFixed(0)} ms of ${s.wallMs.toFixed(0)} ms profiled (${s.wallMs > 0 ? ((s.busyMs / s.wallMs) * 100).toFixed(1) : '0.0'} % of one core).`,
    '',
    '| Function | Origin | Self ms | Self % | Total ms | Total % |',
    '|---|---|---|---|---|---|',
    ...s.functions
      .slice(0, top)
      .map(
        (f) =>
          `| \`${cell(f.name)}\` | ${cell(f.origin)} | ${f.selfMs.toFixed(1)} | ${pct(f.selfMs)} | ${f.totalMs.toFixed(1)} | ${pct(f.totalMs)} |`,
      ),
    '',
    '| Origin | Self ms | Self % |',
    '|---|---|---|',
    ...s.origins.slice(0, top).map((o) => `| ${cell(o.origin)} | ${o.selfMs.toFixed(1)} | ${pct(o.selfMs)} |`),
  ].join('\n');
}

function main() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { svg: { type: 'string' }, title: { type: 'string' }, top: { type: 'string', default: '20' } },
  });
  const file = positionals[0];
  if (!file) {
    console.error('usage: npm run profile -- <file.cpuprofile> [--svg out.svg] [--title "..."] [--top 20]');
    process.exit(2);
  }
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  if (!Array.isArray(profile.nodes)) throw new Error(`${file} is not a V8 CPU profile (no nodes)`);
  console.log(profileMarkdown(summarizeProfile(profile, ROOT), Number(values.top)));
  if (values.svg) {
    writeFileSync(values.svg, flameGraphSvg(profile, ROOT, { title: values.title ?? path.basename(file) }));
    console.error(`flame graph written to ${values.svg}`);
  }
}

if (require.main === module) main();
