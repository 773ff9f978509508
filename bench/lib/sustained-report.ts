// The sustained phase in the report: whether each run kept apply lag bounded, the knee per store (and forwarding
// policy) with what limited the first rate above it, the section of docs/performance.md (between its own markers, so
// other runs keep it) and the plot of inbox depth over time.
import type { SustainedResults, SustainedRun } from '../phases/sustained';
import { fmtBoundSeconds } from './api-metrics';
import type { DeliveryCheck } from './deliveries';
import type { Machine, loadAverage } from './machine';
import { cpuWeights, SUSTAINED_END, SUSTAINED_START } from './sections';
import { fmtMs } from './stats';
import { panelsChartSvg, type Panel } from './svg';

/** Apply lag p99 must stay below this for a rate to count as bounded. */
export const APPLY_LAG_P99_LIMIT_MS = 5_000;
/** The acknowledgement targets up to the knee (issue 28). */
export const ACK_P99_LIMIT_MS = 10;
export const ACK_MAX_LIMIT_MS = 100;
/** A process at this share of one core (or the machine at this share of all its cores) is at its CPU ceiling. */
export const CPU_CEILING = 0.9;

/**
 * The inbox counts as growing over the last minute when its fitted slope is above this: 2 % of the rate, at least 1
 * callback/s (the depth saws up and down with the forwarder's claims and holds; a line through a flat saw is ~0).
 */
export const growthLimit = (rate: number) => Math.max(1, 0.02 * rate);

interface SectionInput {
  command: string;
  startedAt: string;
  machine: Machine;
  loadBefore: ReturnType<typeof loadAverage>;
  loadAfter?: ReturnType<typeof loadAverage>;
  options?: { backgroundNice?: number; backgroundGroup?: string };
  sustained?: SustainedResults;
  delivery?: DeliveryCheck;
}

export interface RunVerdict {
  bounded: boolean;
  /** Apply lag p99 (ms) used for the verdict: per callback when the sweep found them, else the server's bound. */
  lagP99Ms: number;
  lagSource: 'per callback' | 'server histogram bound';
  growing: boolean;
  drained: boolean;
  /** Why it is not bounded (empty when it is). */
  why: string[];
}

export function verdictOf(run: SustainedRun): RunVerdict {
  const a = run.applied;
  let lagP99Ms: number;
  let lagSource: RunVerdict['lagSource'];
  if (a && a.matched > 0) {
    lagSource = 'per callback';
    // Callbacks acknowledged but not found applied count as an unbounded lag: past 1 % of them, p99 is unbounded.
    lagP99Ms = (a.acked - a.matched) / Math.max(1, a.acked) > 0.01 ? Infinity : a.ms.p99;
  } else {
    lagSource = 'server histogram bound';
    lagP99Ms = run.serverLag.p99 === undefined ? NaN : run.serverLag.p99 * 1000;
  }
  const lagOk = lagSource === 'per callback' ? lagP99Ms < APPLY_LAG_P99_LIMIT_MS : lagP99Ms <= APPLY_LAG_P99_LIMIT_MS;
  const growing = !(run.growth.perSecond <= growthLimit(run.rate));
  const drained = Number.isFinite(run.drainSeconds);
  const why: string[] = [];
  if (!lagOk)
    why.push(
      `apply lag p99 ${Number.isFinite(lagP99Ms) ? fmtMs(lagP99Ms) : a && a.matched < a.acked ? `unbounded (${a.acked - a.matched} of ${a.acked} not found applied)` : 'unknown'}`,
    );
  if (growing)
    why.push(`the inbox growing ${fmtRate(run.growth.perSecond)} over the load's last ${run.growth.windowSeconds} s`);
  if (!drained) why.push(`the inbox not empty ${run.drainLimitSeconds} s after the load stopped`);
  return { bounded: lagOk && !growing && drained, lagP99Ms, lagSource, growing, drained, why };
}

const fmtRate = (v: number) => (Number.isFinite(v) ? `${v >= 0 ? '+' : ''}${v.toFixed(1)}/s` : '–');
const pct = (v: number | undefined) => (v === undefined || !Number.isFinite(v) ? '–' : `${(v * 100).toFixed(0)} %`);

const PROCESSES: [key: string, label: string][] = [
  ['temporal', 'the Temporal dev server'],
  ['worker', 'the worker'],
  ['api', 'the API (all its threads)'],
  ['api/main', "the API's event loop"],
  ['postgres', 'PostgreSQL'],
  ['sandbox', 'the sandbox'],
  ['loadgen', 'the load generator'],
];

/** What was at its CPU ceiling in a run: processes (or the API's threads) near a core, the machine near all cores. */
export function ceilingOf(run: SustainedRun, cores: number): string {
  const hot: string[] = [];
  for (const [key, label] of PROCESSES) {
    const v = run.cpu[key];
    if (v !== undefined && v >= CPU_CEILING) hot.push(`${label} at ${pct(v)} of a core`);
  }
  for (const [key, v] of Object.entries(run.cpu)) {
    if (!key.startsWith('api/') || key === 'api/main' || key === 'api/main-waiting-for-cpu') continue;
    if (v >= CPU_CEILING) hot.push(`the API's ${key.slice(4)} thread(s) at ${pct(v)} of a core`);
  }
  const machine = `the machine ${pct(run.machineBusy)} busy (${cores} cores)`;
  const top = PROCESSES.filter(([k]) => k !== 'api/main' && run.cpu[k] !== undefined)
    .map(([k, label]) => [label, run.cpu[k]!] as const)
    .sort((x, y) => y[1] - x[1])
    .slice(0, 3)
    .map(([label, v]) => `${label} ${pct(v)}`)
    .join(', ');
  const waiting = run.cpu['api/main-waiting-for-cpu'];
  const wait = waiting !== undefined ? `; the API's event loop waited for a CPU ${pct(waiting)} of the time` : '';
  if (run.machineBusy >= CPU_CEILING) {
    // What the bench's own processes used of the busy cores; the rest was other work on the machine.
    const own = ['temporal', 'worker', 'api', 'postgres', 'sandbox', 'loadgen', 'bench'].reduce(
      (sum, k) => sum + (Number.isFinite(run.cpu[k]) ? run.cpu[k]! : 0),
      0,
    );
    const other = run.machineBusy * cores - own;
    const split =
      other >= 0.25
        ? `; the bench's processes ${(own * 100).toFixed(0)} % of a core, other work on the machine ${(other * 100).toFixed(0)} % of a core`
        : '';
    return `**the machine's ${cores} cores** (${pct(run.machineBusy)} busy${split}${hot.length ? `; ${hot.join(', ')}` : ''}; the largest shares: ${top})${wait}`;
  }
  if (hot.length) return `**${hot.join(', ')}** (${machine})${wait}`;
  return (
    `no process at its CPU ceiling (${machine}; the largest shares: ${top})${wait}: the limit was not CPU here but how ` +
    `fast the forwarder signalled (${run.appliedRate.toFixed(0)}/s applied of ${run.rate}/s offered during the load)`
  );
}

export interface Knee {
  store: string;
  policy?: string;
  /** The highest rate with every rate up to it bounded (undefined: not even the lowest). */
  knee?: number;
  /** The first rate measured that was not bounded. */
  above?: SustainedRun;
  /** Rates above the first unbounded one that were bounded again (noise). */
  boundedAgain: number[];
  runs: SustainedRun[];
}

const keyOf = (r: SustainedRun) => `${r.store}\u0000${r.policy ?? ''}`;

export function knees(s: SustainedResults): Knee[] {
  const groups = new Map<string, SustainedRun[]>();
  for (const r of s.runs) groups.set(keyOf(r), [...(groups.get(keyOf(r)) ?? []), r]);
  return [...groups.values()].map((runs) => {
    const sorted = [...runs].sort((a, b) => a.rate - b.rate);
    const first = sorted.findIndex((r) => !verdictOf(r).bounded);
    const upTo = first < 0 ? sorted : sorted.slice(0, first);
    const above = first < 0 ? undefined : sorted[first];
    return {
      store: sorted[0]!.store,
      ...(sorted[0]!.policy !== undefined ? { policy: sorted[0]!.policy } : {}),
      ...(upTo.length ? { knee: upTo.at(-1)!.rate } : {}),
      ...(above ? { above } : {}),
      boundedAgain:
        first < 0
          ? []
          : sorted
              .slice(first + 1)
              .filter((r) => verdictOf(r).bounded)
              .map((r) => r.rate),
      runs: sorted,
    };
  });
}

/**
 * Where a slow answer (max over ACK_MAX_LIMIT_MS) was made, from the API's side of the run: its own answer time, its
 * inbox writes and its event loop. An answer the API made quickly was slow on the way (the generator, the network
 * stack, the machine); one whose write was as slow was the storage; one with a long event-loop delay, the API.
 */
export function stallNote(r: SustainedRun): string | undefined {
  const max = r.ack.latencyMs.max;
  if (!(max >= ACK_MAX_LIMIT_MS) || !r.stalls) return undefined;
  const bound = (v: number | undefined) =>
    v === undefined ? '–' : Number.isFinite(v) ? `≤ ${fmtMs(v)}` : 'over its largest bucket';
  const { serverAckMaxMs, writeMaxMs, loopDelayMaxMs } = r.stalls;
  const parts = [
    `the API's own answer time ${bound(serverAckMaxMs)}`,
    `its inbox writes ${bound(writeMaxMs)}`,
    ...(loopDelayMaxMs !== undefined ? [`its event loop's longest delay ${fmtMs(loopDelayMaxMs)}`] : []),
  ];
  const slow = r.slowAnswers;
  if (slow?.length) {
    const onDisk = slow.filter((x) => x.diskMs !== undefined);
    parts.push(
      `${slow.length} answer${slow.length === 1 ? '' : 's'} at or over ${ACK_MAX_LIMIT_MS} ms, ` +
        (onDisk.length === slow.length
          ? `${slow.length === 1 ? 'it' : 'each'} while the disk's own probe write stalled ` +
            `(${fmtMs(Math.max(...onDisk.map((x) => x.diskMs!)))} at most, ${diskWhen(slow)})`
          : onDisk.length
            ? `${onDisk.length} of them while the disk's own probe write stalled (${diskWhen(onDisk)}), ` +
              `${slow.length - onDisk.length} with the disk fast`
            : 'none while the disk was slow'),
    );
  }
  return `the ${fmtMs(max)} answer at ${r.rate}/s: ${parts.join(', ')}`;
}

/** When the slow answers were due (seconds into the load), grouped a second apart: "at 149.7 s", "at 12.1-12.4 s". */
function diskWhen(slow: { t: number }[]): string {
  const ts = slow.map((x) => x.t).sort((a, b) => a - b);
  const groups: [number, number][] = [];
  for (const t of ts) {
    const last = groups.at(-1);
    if (last && t - last[1] <= 1) last[1] = t;
    else groups.push([t, t]);
  }
  const shown = groups
    .slice(0, 4)
    .map(([a, b]) => (a === b ? `${a.toFixed(1)} s` : `${a.toFixed(1)}-${b.toFixed(1)} s`));
  return `at ${shown.join(', ')}${groups.length > 4 ? ` and ${groups.length - 4} more moments` : ''} into the load`;
}

/**
 * True when a run missed the acknowledgement targets for its max alone (p99 met), and every answer at or over the max
 * target came while the disk's own durable write stalled too.
 */
export function missedOnlyForTheDisk(r: SustainedRun): boolean {
  const slow = r.slowAnswers;
  return (
    slow !== undefined &&
    slow.length > 0 &&
    slow.every((x) => x.diskMs !== undefined) &&
    r.ack.latencyMs.p99 < ACK_P99_LIMIT_MS
  );
}

/** The knee in a sentence (markdown). */
export function kneeLine(k: Knee, cores: number): string {
  const name = `${k.store}${k.policy !== undefined ? `, policy \`${k.policy}\`` : ''}`;
  const rates = k.runs.map((r) => r.rate);
  let text: string;
  if (k.knee === undefined) {
    text = `**Knee (${name}): below ${rates[0]}/s**: not even the lowest rate measured kept apply lag bounded`;
  } else if (!k.above) {
    text = `**Knee (${name}): at least ${k.knee}/s**: every rate measured (up to ${k.knee}/s) kept apply lag bounded; the knee is above the range measured`;
  } else {
    text = `**Knee (${name}): ${k.knee}/s**, the highest rate up to which apply lag stayed bounded`;
  }
  if (k.above) {
    const v = verdictOf(k.above);
    text +=
      `. At ${k.above.rate}/s${k.knee === undefined ? '' : ', the first rate above it'}: ${v.why.join('; ')}. ` +
      `Measured limit there: ${ceilingOf(k.above, cores)}`;
    if (k.boundedAgain.length)
      text += `. (${k.boundedAgain.map((r) => `${r}/s`).join(', ')} above it met the criteria again: noise, or a limit that is not steady)`;
  } else if (k.runs.length) {
    const top = k.runs.at(-1)!;
    text += `. At ${top.rate}/s: ${ceilingOf(top, cores)}`;
  }
  // The acknowledgement targets up to the knee.
  const under = k.runs.filter((r) => k.knee !== undefined && r.rate <= k.knee);
  if (under.length) {
    const missed = under.filter(
      (r) => !(r.ack.latencyMs.p99 < ACK_P99_LIMIT_MS && r.ack.latencyMs.max < ACK_MAX_LIMIT_MS),
    );
    text +=
      `. Up to the knee, acknowledgement p99 < ${ACK_P99_LIMIT_MS} ms and max < ${ACK_MAX_LIMIT_MS} ms: ` +
      (missed.length
        ? `**missed** at ${missed.map((r) => `${r.rate}/s (p99 ${fmtMs(r.ack.latencyMs.p99)}, max ${fmtMs(r.ack.latencyMs.max)})`).join(', ')}` +
          (missed.every(missedOnlyForTheDisk)
            ? `: every answer over ${ACK_MAX_LIMIT_MS} ms came while the disk's own durable write stalled (the probe beside the load), the limit of this machine's disk, not of the API`
            : '')
        : '**met** at every rate');
  }
  // Above the knee: the acknowledgement stays fast, the backlog grows no faster than the excess, and drains.
  const knee = k.knee;
  const over = knee === undefined ? [] : k.runs.filter((r) => r.rate > knee);
  if (knee !== undefined && over.length) {
    text +=
      '. Above it: ' +
      over
        .map((r) => {
          const a = r.ack.latencyMs;
          const fast = a.p99 < ACK_P99_LIMIT_MS && a.max < ACK_MAX_LIMIT_MS;
          const excess = r.rate - knee;
          const within = r.growth.perSecond <= excess * 1.02 + 1;
          const drain = Number.isFinite(r.drainSeconds)
            ? `drained in ${r.drainSeconds.toFixed(1)} s${Number.isFinite(r.drainRate) && r.drainSeconds >= 1 ? ` at ${r.drainRate.toFixed(0)}/s` : ''}`
            : `**not drained** within ${r.drainLimitSeconds} s`;
          return (
            `at ${r.rate}/s the acknowledgement ${fast ? 'stayed fast' : '**slowed**'} (p99 ${fmtMs(a.p99)}, max ` +
            `${fmtMs(a.max)}), the inbox grew ${fmtRate(r.growth.perSecond)} against an excess of ${excess}/s over ` +
            `the knee (${within ? 'no faster' : '**faster**'}), ${drain}`
          );
        })
        .join('; ');
  }
  const stalls = k.runs.flatMap((r) => stallNote(r) ?? []);
  if (stalls.length) text += `. Where the slowest answers were made: ${stalls.join('; ')}`;
  return `${text}.`;
}

const cell = (cpu: Record<string, number>, key: string) => pct(cpu[key]);

function runRow(r: SustainedRun, withPolicy: boolean): string {
  const a = r.ack.latencyMs;
  const v = verdictOf(r);
  const applied = r.applied;
  const other = r.ack.non2xx + r.ack.errors;
  const lag = (q: 'p50' | 'p99' | 'max') => (applied && applied.matched > 0 ? fmtMs(applied.ms[q]) : '–');
  const cells = [
    ...(withPolicy ? [r.policy !== undefined ? `\`${r.policy}\`` : '(default)'] : []),
    `${r.rate}/s`,
    `${r.ack.ok}/${r.ack.scheduled}${other ? ` (${other} not 200)` : ''}`,
    fmtMs(a.p50),
    fmtMs(a.p99),
    fmtMs(a.p999),
    fmtMs(a.max),
    r.disk ? `${fmtMs(r.disk.p99Ms)} / ${fmtMs(r.disk.maxMs)}` : '–',
    lag('p50'),
    lag('p99'),
    lag('max'),
    fmtBoundSeconds(r.serverLag.p99),
    `${r.depthAtStop}`,
    `${r.depthMax}`,
    fmtRate(r.growth.perSecond),
    Number.isFinite(r.drainSeconds) ? `${r.drainSeconds.toFixed(1)} s` : `over ${r.drainLimitSeconds} s`,
    `${r.appliedRate.toFixed(0)}/s`,
    cell(r.cpu, 'temporal'),
    cell(r.cpu, 'worker'),
    cell(r.cpu, 'api'),
    cell(r.cpu, 'api/main'),
    cell(r.cpu, 'postgres'),
    cell(r.cpu, 'sandbox'),
    cell(r.cpu, 'loadgen'),
    pct(r.machineBusy),
    v.bounded ? 'yes' : `**no**`,
  ];
  return `| ${cells.join(' | ')} |`;
}

/**
 * How the default forwarding policy was chosen, for a run that measured one policy only (`--forwarder-policies
 * surge,adaptive` measures both again, side by side, and replaces this with its own tables).
 */
const POLICY_COMPARISON = [
  '### How the forwarding policy was chosen',
  '',
  'Measured side by side in one run (`--forwarder-policies surge,adaptive`, 2026-11-26 00:12 UTC, 150 and 250/s, ' +
    '180 s each, both stores, the Temporal server, worker and sandbox at nice 10 without the cpu group, the machine ' +
    'busy with other work, load average 1.94): the **surge** rule (hold every new signal while the answers are slow) ' +
    'applied 43-47 signals/s at every rate and store while the machine stood half idle, and left 19,361-38,471 ' +
    'callbacks in the inbox at the stop (apply lag p99 137-159 s), with the acknowledgement p99 at 6.6-10.2 ms; the ' +
    '**adaptive** policy (halve the signals in flight under pressure, down to 2, never hold) applied what came at ' +
    '150/s on both stores (apply lag p99 136 ms files, 1.0 s PostgreSQL; inbox empty at the stop) and 248/s of 250/s ' +
    'on files, with the acknowledgement p99 at 12.3-15.9 ms at 150/s. The adaptive policy became the default; the ' +
    "acknowledgement's p99 was then brought under 10 ms by giving the webhook its CPU share as a deployment does " +
    '(*CPU weights* above), not by holding the journeys back.',
  '',
  "**Pressure counts the webhook's own time** (2026-11-26). A flush the disk stalls on holds every answer of that " +
    'moment at once: in a run at 100/s on PostgreSQL that day (05:01 UTC, 180 s), one stall of the disk (its own ' +
    'probe write took 292 ms) made 28 answers of 100 ms or more at once, the adaptive policy took that for pressure ' +
    "and cut the forwarder's signals in flight to 2, and the journeys' apply lag p99 reached **8.7 s** (inbox up to " +
    '662) at a rate the stack applies with ease; on PostgreSQL the commit alone often passes the 5 ms threshold. ' +
    "Since then pressure counts each answer's time less its wait for the durable write " +
    '(docs/design-notes.md#acknowledgement-pressure). In the run above, the first with it, against the run before ' +
    'it (02:22 UTC): the files knee rose from 200/s to at least 300/s (at 300/s the inbox had grown +36.7/s, now ' +
    '-6.2/s, with apply lag p99 2.75 s instead of 18.4 s) and the PostgreSQL knee from 150/s to 200/s (apply lag ' +
    'p99 at 200/s 887 ms instead of 5.9 s), with the acknowledgement p99 at 4.5-9.9 ms up to the knee.',
];

/** The section of docs/performance.md, between its markers (empty markers without a sustained run). */
export function sustainedSection(r: SectionInput, svgLink = 'sustained-inbox-depth.svg'): string {
  const s = r.sustained;
  if (!s) return `${SUSTAINED_START}\n${SUSTAINED_END}`;
  const L: string[] = [SUSTAINED_START, '## 5. Sustained load', ''];
  const load = (l: SectionInput['loadBefore'] | undefined) => (l ? `${l.one} / ${l.five} / ${l.fifteen}` : '–');
  const withPolicy = s.policies.length > 0;
  L.push(
    `Measured by \`${r.command}\` (bench/run.ts, phase \`sustained\`) on ${r.startedAt.slice(0, 16).replace('T', ' ')} UTC, ` +
      `${r.machine.cpuModel}, ${r.machine.cores} cores; load average before ${load(r.loadBefore)}, after ${load(r.loadAfter)}. ` +
      'This section is generated (bench/lib/sustained-report.ts) and kept when other phases are run.',
    '',
    `Each rate held for **${s.seconds} s** (after ${s.warmupSeconds} s at the same rate, not in the figures), Temporal up, ` +
      `against the ${s.journeys} journeys parked as in section 1 (their callbacks, ${s.connections} keep-alive ` +
      'connections, the open-loop generator), each inbox store in turn; before each rate the inbox was empty and the ' +
      'Temporal server and the worker quiet; after it, the bench waited for the inbox to empty, at most ' +
      `${s.drainLimitSeconds} s. *Ack*: the generator's latency from each request's due time to its answer. ` +
      "*Apply lag*: from each 200 (the generator's clock) to its journey applying the callback (the journey's " +
      '`receivedAt`, read from every journey at the end of the run); *server p99*: the bucket bound of the ' +
      "API's `journey_api_callback_forward_delay_seconds` over the load and the drain, as a cross-check. *Inbox*: " +
      '`journey_api_inbox_depth` scraped every second; *growth*: the slope of a least-squares line through the last ' +
      `${Math.min(60, s.seconds)} s of the load. *Applied*: signals the forwarder sent per second during the load ` +
      `(\`FORWARDER_CONCURRENCY\` ${s.forwarderConcurrency}). *CPU*: share of one core over the load (/proc); ` +
      "*machine*: busy share of all the machine's cores (/proc/stat). *Disk write*: the disk's own durable write " +
      'beside the load (bench/lib/disk-probe.ts: 1.5 KB written O_DSYNC every 100 ms into a preallocated file of ' +
      'the data folder, timed in a thread of its own), the least an acknowledgement that waits for durability can ' +
      'take at that moment; each answer at or over the max target is matched with the probe writes it overlapped. ' +
      'A rate is **bounded** when apply lag p99 < ' +
      `${APPLY_LAG_P99_LIMIT_MS / 1000} s, the inbox is not growing (slope at most 2 % of the rate, at least 1/s) ` +
      `and it drained within ${s.drainLimitSeconds} s; the **knee** is the highest rate up to which every rate was ` +
      `bounded; a process at ${pct(CPU_CEILING)} of a core or more (or the machine at ${pct(CPU_CEILING)} of its ` +
      'cores) is at its CPU ceiling.' +
      (r.options ? ` CPU weights: ${cpuWeights(r.options)}.` : '') +
      (withPolicy
        ? ` Forwarding policies compared in this run (the API restarted with \`FORWARDER_POLICY\` set to each): ${s.policies.map((p) => `\`${p}\``).join(', ')}.`
        : ''),
    '',
  );
  if (r.loadBefore.five >= r.machine.cores * 0.25) {
    L.push(
      `**The machine was busy with other work** (load average ${r.loadBefore.five} over the 5 minutes before the run, ` +
        `on ${r.machine.cores} cores): the *machine* column counts that work too, and the absolute figures are pessimistic.`,
      '',
    );
  }
  L.push(`![Inbox depth over time at each sustained rate](${svgLink})`, '');
  const all = knees(s);
  const stores = [...new Set(s.runs.map((x) => x.store))];
  for (const store of stores) {
    const runs = s.runs.filter((x) => x.store === store);
    L.push(
      `### ${store === 'files' ? 'Files inbox' : store === 'postgres' ? 'PostgreSQL inbox' : store}`,
      '',
      `| ${withPolicy ? 'Policy | ' : ''}Rate | 200s | Ack p50 | Ack p99 | Ack p99.9 | Ack max | Disk write p99 / max | Apply lag p50 | Apply lag p99 | Apply lag max | Server p99 | Inbox at stop | Inbox max | Growth, last ${Math.min(60, s.seconds)} s | Empty after | Applied | Temporal | Worker | API | API event loop | PostgreSQL | Sandbox | Load generator | Machine | Bounded |`,
      `|${withPolicy ? '---|' : ''}---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|`,
      ...runs.map((x) => runRow(x, withPolicy)),
      '',
      ...all.filter((k) => k.store === store).flatMap((k) => [kneeLine(k, r.machine.cores), '']),
    );
  }
  const unmatched = s.runs.filter((x) => !x.applied);
  if (unmatched.length) {
    L.push(
      `Apply lag per callback is missing for ${unmatched.length} run(s) (the sweep of the journeys did not run or failed): their verdicts use the server's bound.`,
      '',
    );
  }
  const d = r.delivery;
  if (d) {
    L.push(
      `**Exactly once** (every callback this run acknowledged, all phases): ${d.recorded} deliveries recorded by the ` +
        `${d.journeys} journeys for ${d.acked} acknowledged; ${d.missing} missing, ${d.unexpected} unexpected, ` +
        `${d.duplicateEntries} recorded twice${d.unqueried ? `, ${d.unqueried} journeys could not be queried` : ''}. ` +
        `History growth: ${d.perJourney.toFixed(0)} callbacks per journey by the end.`,
      '',
    );
  }
  if (s.skipped.length) L.push(`Not run: ${s.skipped.join('; ')}.`, '');
  if (!withPolicy) L.push(...POLICY_COMPARISON, '');
  L.push(SUSTAINED_END);
  return L.join('\n');
}

const RATE_COLORS = ['#1f77b4', '#2ca02c', '#ff7f0e', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#17becf'];

/** Inbox depth over time: a panel per store (and policy), a line per rate; undefined without a sustained run. */
export function sustainedSvg(r: SectionInput): string | undefined {
  const s = r.sustained;
  if (!s?.runs.length) return undefined;
  const rates = [...new Set(s.runs.map((x) => x.rate))].sort((a, b) => a - b);
  const panels: Panel[] = [];
  const groups = new Map<string, SustainedRun[]>();
  for (const x of s.runs) groups.set(keyOf(x), [...(groups.get(keyOf(x)) ?? []), x]);
  for (const runs of groups.values()) {
    const first = runs[0]!;
    panels.push({
      title: `${first.store} inbox${first.policy !== undefined ? `, policy ${first.policy}` : ''}`,
      series: runs.map((x) => ({
        label: `${x.rate}/s${verdictOf(x).bounded ? '' : ' (not bounded)'}`,
        color: RATE_COLORS[rates.indexOf(x.rate) % RATE_COLORS.length]!,
        ...(verdictOf(x).bounded ? {} : { dash: '6 3' }),
        points: x.samples.map((p) => ({ x: p.t, y: p.depth })),
      })),
      xMarks: [{ x: first.stopAt, label: 'load stops', color: '#555' }],
    });
  }
  return panelsChartSvg(panels, {
    title: 'Callbacks waiting in the inbox during sustained load and the drain after it',
    subtitle: `${s.seconds} s at each rate (after ${s.warmupSeconds} s warm-up), then up to ${s.drainLimitSeconds} s to drain; journey_api_inbox_depth every second; ${r.machine.cores} cores`,
    xLabel: 'seconds since the load began',
    yLabel: 'inbox depth (callbacks)',
  });
}
