// `npm run capacity`: docs/capacity.md, what 10 thousand to 10 million journeys a month need, computed from the costs
// the last `npm run bench:growth` measured (bench/growth-last.json) and the assumptions (bench/lib/capacity-model.ts).
//
//   npm run capacity                                   regenerate docs/capacity.md
//   npm run capacity -- --check                        fail when docs/capacity.md is not what the inputs give
//   npm run capacity -- --sizes 50000,500000 --prescription-share 0.8 --out /tmp/capacity.md   your own traffic
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_ASSUMPTIONS, measuredCosts, renderCapacity, type Assumptions } from './lib/capacity-model';
import type { GrowthRun } from './lib/growth-report';

const ROOT = path.resolve(__dirname, '..');
export const GROWTH_LAST = path.join(ROOT, 'bench', 'growth-last.json');
export const CAPACITY_DOC = path.join(ROOT, 'docs', 'capacity.md');

/** Each assumption a flag can change: its flag, and how it sets the assumptions. */
const NUMBERS: Record<string, (a: Assumptions, v: number) => void> = {
  'prescription-share': (a, v) => (a.prescriptionShare = v),
  'redelivery-factor': (a, v) => (a.redeliveryFactor = v),
  reminders: (a, v) => (a.remindersPerJourney = v),
  'open-days-gfe': (a, v) => (a.openDays.gfe = v),
  'open-days-rx': (a, v) => (a.openDays.rx = v),
  'retention-days': (a, v) => (a.retentionDays = v),
  'audit-years': (a, v) => (a.auditYears = v),
  'business-days': (a, v) => (a.businessDays = v),
  'business-hours': (a, v) => (a.businessHours = v),
  'peak-factor': (a, v) => (a.peakFactor = v),
  'cpu-target': (a, v) => (a.cpuTarget = v),
  'attachments-mib': (a, v) => (a.attachmentsMiB = v),
  'attachment-grace-days': (a, v) => (a.attachmentGraceDays = v),
  'executions-per-shard': (a, v) => (a.executionsPerShard = v),
  'shard-headroom': (a, v) => (a.shardHeadroom = v),
};

export function parseCapacityOptions(argv: string[]): {
  assumptions: Assumptions;
  check: boolean;
  out: string;
  input: string;
} {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      check: { type: 'boolean', default: false },
      out: { type: 'string' },
      input: { type: 'string' },
      sizes: { type: 'string' },
      help: { type: 'boolean', default: false },
      ...Object.fromEntries(Object.keys(NUMBERS).map((k) => [k, { type: 'string' as const }])),
    },
  });
  if (values.help) {
    console.log(
      `npm run capacity -- [--check] [--out FILE] [--input GROWTH_JSON] [--sizes N,N,...] ${Object.keys(NUMBERS)
        .map((k) => `[--${k} N]`)
        .join(' ')}`,
    );
    process.exit(0);
  }
  const a: Assumptions = structuredClone(DEFAULT_ASSUMPTIONS);
  for (const [flag, set] of Object.entries(NUMBERS)) {
    const raw = (values as Record<string, unknown>)[flag];
    if (typeof raw !== 'string') continue;
    const v = Number(raw);
    if (!Number.isFinite(v) || v < 0) throw new Error(`--${flag}: a number of at least 0, not ${raw}`);
    set(a, v);
  }
  if (a.prescriptionShare > 1) throw new Error('--prescription-share: a share from 0 to 1');
  if (!(a.cpuTarget > 0 && a.cpuTarget <= 1)) throw new Error('--cpu-target: a share above 0, at most 1');
  if (typeof values.sizes === 'string') {
    a.sizes = values.sizes.split(',').map((s) => {
      const n = Number(s.trim().replace(/_/g, ''));
      if (!Number.isInteger(n) || n < 1) throw new Error(`--sizes: whole numbers of journeys a month, not ${s}`);
      return n;
    });
  }
  return {
    assumptions: a,
    check: values.check ?? false,
    out: path.resolve(typeof values.out === 'string' ? values.out : CAPACITY_DOC),
    input: path.resolve(typeof values.input === 'string' ? values.input : GROWTH_LAST),
  };
}

/** The page the inputs give. */
export function capacityPage(input = GROWTH_LAST, assumptions = DEFAULT_ASSUMPTIONS): string {
  const run = JSON.parse(readFileSync(input, 'utf8')) as GrowthRun;
  return renderCapacity(measuredCosts(run), assumptions);
}

function main() {
  const o = parseCapacityOptions(process.argv.slice(2));
  const page = capacityPage(o.input, o.assumptions);
  if (o.check) {
    const current = readFileSync(o.out, 'utf8');
    if (current !== page) {
      console.error(
        `${path.relative(ROOT, o.out)} is not what ${path.relative(ROOT, o.input)} gives: run npm run capacity`,
      );
      process.exit(1);
    }
    console.log(`${path.relative(ROOT, o.out)} is up to date`);
    return;
  }
  writeFileSync(o.out, page);
  console.log(`written to ${path.relative(ROOT, o.out)}`);
}

if (require.main === module) {
  try {
    main();
  } catch (err) {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  }
}
