// docs/capacity.md's arithmetic: what a deployment needs for a number of journeys a month, computed from the costs
// `npm run bench:growth` measured (bench/growth-last.json) and a few stated assumptions about the clinics' traffic.
// Pure: nothing here reads, starts or measures anything (bench/capacity.ts writes the page).
import type { GrowthRun, GrowthStep } from './growth-report';

/** What the page assumes about the traffic; each is stated on the page, next to what it changes. */
export interface Assumptions {
  /** Journeys started a month, one column each. */
  sizes: number[];
  /** Share of journeys that are prescription exams (the rest good faith exams). */
  prescriptionShare: number;
  /** Callbacks a good faith exam gets (event 1) and a prescription exam (events 1, 2, 3). */
  callbacks: { gfe: number; rx: number };
  /** Deliveries the service repeats (it retries what it thinks failed): callbacks times this. */
  redeliveryFactor: number;
  /** Reminders sent per journey (a patient who does not take the exam at once). */
  remindersPerJourney: number;
  /** Days a journey stays open: a good faith exam until its consultation; a prescription exam until shipped. */
  openDays: { gfe: number; rx: number };
  /** Days Temporal keeps a closed journey's history (the namespace's retention). */
  retentionDays: number;
  /** Years the audit trail is kept (AUDIT_CHECKPOINT_RETENTION_DAYS, 2190 days). */
  auditYears: number;
  /** The clinics' working time, when starts and callbacks come: days a month, hours a day. */
  businessDays: number;
  businessHours: number;
  /** The busiest hour against the working hours' average. */
  peakFactor: number;
  /** The share of a core a part is sized to use at the busiest hour. */
  cpuTarget: number;
  /** Attachments a journey uploads (MiB), kept until this many days after it ends. */
  attachmentsMiB: number;
  attachmentGraceDays: number;
  /** Open executions a history shard is planned for, and the headroom the shard count leaves for growth. */
  executionsPerShard: number;
  shardHeadroom: number;
  minShards: number;
  /** Replicas of each stateless part at least (one can fail or roll). */
  minReplicas: number;
}

export const DEFAULT_ASSUMPTIONS: Assumptions = {
  sizes: [10_000, 1_000_000, 10_000_000],
  prescriptionShare: 0.5,
  callbacks: { gfe: 1, rx: 3 },
  redeliveryFactor: 1.2,
  remindersPerJourney: 1,
  openDays: { gfe: 2, rx: 10 },
  retentionDays: 30,
  auditYears: 6,
  businessDays: 22,
  businessHours: 10,
  peakFactor: 2,
  cpuTarget: 0.5,
  attachmentsMiB: 1,
  attachmentGraceDays: 7,
  executionsPerShard: 10_000,
  shardHeadroom: 2,
  minShards: 16,
  minReplicas: 2,
};

/** The parts whose CPU the growth run measured. */
export const PARTS = ['api', 'worker', 'temporal', 'postgres'] as const;
export type Part = (typeof PARTS)[number];

/** The measured costs the page is computed from, each from one step of one growth run. */
export interface MeasuredCosts {
  run: { began: string; machine: string; database: string };
  /** The step the costs come from (the largest with every figure), and the journeys parked there. */
  step: number;
  /** PostgreSQL's tables over their empty size, per open journey, without the audit trail (counted on its own). */
  bytesPerOpenJourney: number;
  /** The audit trail's table per journey (kept for years, unlike the rest). */
  auditBytesPerJourney: number;
  /** The tables' growth per callback applied (0 when it was not measured or shrank). */
  tableBytesPerCallback: number;
  /** PostgreSQL's write-ahead log per journey parked, and per callback applied. */
  walPerJourney: number;
  walPerCallback: number;
  /** CPU ms per journey parked (its start and preparation), and per callback applied, by part. */
  cpuPerJourney: Record<Part, number>;
  cpuPerCallback: Record<Part, number>;
  /** The API's CPU per start through it (the growth run starts most journeys straight through Temporal). */
  apiCpuPerStart: number;
  /** RSS of one worker (its cache bounded) and of the Temporal server at that step. */
  workerRss: number;
  temporalRss: number;
  /** The reminder wave there: journeys due at once, and how late the last fired (ms). */
  wave?: { journeys: number; lastLateMs: number };
}

const finite = (v: number | undefined): v is number => v !== undefined && Number.isFinite(v);

/** The largest step whose costs are all there. */
function costStep(run: GrowthRun): GrowthStep {
  const ordered = [...run.steps].sort((a, b) => b.journeys - a.journeys);
  const complete = ordered.find(
    (s) =>
      s.cpu?.perCallback &&
      s.wal?.perCallback !== undefined &&
      PARTS.every((p) => finite(s.cpu!.perJourney[p]) && finite(s.cpu!.perCallback![p])) &&
      finite(s.wal.perJourney) &&
      Number.isFinite(s.bytes.total),
  );
  if (!complete)
    throw new Error('no step of the growth run has every cost (CPU, WAL, bytes): run npm run bench:growth');
  return complete;
}

/** The costs of a growth run (bench/growth-last.json). */
export function measuredCosts(run: GrowthRun): MeasuredCosts {
  const s = costStep(run);
  const audit = s.bytes.byDatabase.journey_audit ?? 0;
  const pick = (r: Record<string, number>) => Object.fromEntries(PARTS.map((p) => [p, r[p]!])) as Record<Part, number>;
  const apiStarts = run.options.apiStarts;
  return {
    run: { began: run.began, machine: run.machine, database: run.database },
    step: s.journeys,
    bytesPerOpenJourney: (s.bytes.total - (s.bytes.baseline ?? 0) - audit) / s.journeys,
    auditBytesPerJourney: audit / s.journeys,
    tableBytesPerCallback: Math.max(0, s.wal?.tablesPerCallback ?? 0),
    walPerJourney: s.wal!.perJourney,
    walPerCallback: s.wal!.perCallback!,
    cpuPerJourney: pick(s.cpu!.perJourney),
    cpuPerCallback: pick(s.cpu!.perCallback!),
    // The API's CPU over the step went to its own starts (and its background work), not to the client's.
    apiCpuPerStart: apiStarts > 0 ? (s.cpu!.perJourney.api! * s.parkedNow) / apiStarts : s.cpu!.perJourney.api!,
    workerRss: s.workerRss.length > 0 ? Math.max(...s.workerRss) : NaN,
    temporalRss: (s.temporalRss ?? []).reduce((a, b) => a + b, 0),
    ...(s.wave ? { wave: { journeys: s.wave.journeys, lastLateMs: s.wave.sentLate.max } } : {}),
  };
}

export interface Sizing {
  perMonth: number;
  /** Journeys started a second: on average over the month, and at the busiest hour. */
  startsAverage: number;
  startsPeak: number;
  /** Callbacks and reminders (each wakes a journey) a second at the busiest hour. */
  wakesPeak: number;
  callbacksPerJourney: number;
  /** Journeys open at once, and closed ones Temporal still keeps. */
  open: number;
  closedKept: number;
  /** PostgreSQL: the engine's and Temporal's tables, the audit trail once it holds its years, and WAL. */
  tablesBytes: number;
  auditBytes: number;
  auditBytesPerYear: number;
  walPerDay: number;
  walPeakPerSecond: number;
  /** Cores each part needs at the busiest hour at the CPU target. */
  cores: Record<Part, number>;
  workers: number;
  workerMemory: number;
  /** The Temporal server's memory, grown with the open journeys as it grew in the run. */
  temporalMemory: number;
  apiReplicas: number;
  historyShards: number;
  objectStoreBytes: number;
}

const MONTH_DAYS = 365.25 / 12;
const nextPowerOfTwo = (n: number) => 2 ** Math.ceil(Math.log2(Math.max(1, n)));

/** What `perMonth` journeys a month need, from the measured costs and the assumptions. */
export function size(perMonth: number, c: MeasuredCosts, a: Assumptions = DEFAULT_ASSUMPTIONS): Sizing {
  const p = a.prescriptionShare;
  const callbacksPerJourney = ((1 - p) * a.callbacks.gfe + p * a.callbacks.rx) * a.redeliveryFactor;
  const wakesPerJourney = callbacksPerJourney + a.remindersPerJourney;
  const openDays = (1 - p) * a.openDays.gfe + p * a.openDays.rx;
  const workingSeconds = a.businessDays * a.businessHours * 3600;
  const startsPeak = (perMonth / workingSeconds) * a.peakFactor;
  const wakesPeak = startsPeak * wakesPerJourney;
  const open = (perMonth * openDays) / MONTH_DAYS;
  const closedKept = (perMonth * a.retentionDays) / MONTH_DAYS;
  const closedBytes = c.bytesPerOpenJourney + callbacksPerJourney * c.tableBytesPerCallback;
  const coresOf = (part: Part) => {
    const perStart = part === 'api' ? c.apiCpuPerStart : c.cpuPerJourney[part];
    // A reminder wakes the journey as a callback does, without the webhook: the API's share is the callbacks'.
    const wakes = part === 'api' ? startsPeak * callbacksPerJourney : wakesPeak;
    return (startsPeak * perStart + wakes * c.cpuPerCallback[part]) / 1000 / a.cpuTarget;
  };
  const cores = Object.fromEntries(PARTS.map((part) => [part, coresOf(part)])) as Record<Part, number>;
  const workers = Math.max(a.minReplicas, Math.ceil(cores.worker));
  return {
    perMonth,
    startsAverage: perMonth / (MONTH_DAYS * 86_400),
    startsPeak,
    wakesPeak,
    callbacksPerJourney,
    open,
    closedKept,
    tablesBytes: open * c.bytesPerOpenJourney + closedKept * closedBytes,
    auditBytes: perMonth * 12 * a.auditYears * c.auditBytesPerJourney,
    auditBytesPerYear: perMonth * 12 * c.auditBytesPerJourney,
    walPerDay: (perMonth / MONTH_DAYS) * (c.walPerJourney + wakesPerJourney * c.walPerCallback),
    walPeakPerSecond: startsPeak * c.walPerJourney + wakesPeak * c.walPerCallback,
    cores,
    workers,
    workerMemory: workers * c.workerRss,
    temporalMemory: (open * c.temporalRss) / c.step,
    apiReplicas: Math.max(a.minReplicas, Math.ceil(cores.api)),
    historyShards: Math.max(a.minShards, nextPowerOfTwo((open * a.shardHeadroom) / a.executionsPerShard)),
    objectStoreBytes: (perMonth * a.attachmentsMiB * 2 ** 20 * (openDays + a.attachmentGraceDays)) / MONTH_DAYS,
  };
}

// ---- the page ----------------------------------------------------------------------------------------------------

const MiB = 2 ** 20;
const GiB = 2 ** 30;
const TiB = 2 ** 40;

export function fmtBytesShort(v: number): string {
  if (!Number.isFinite(v)) return '–';
  if (v >= TiB) return `${(v / TiB).toFixed(1)} TiB`;
  if (v >= GiB) return `${(v / GiB).toFixed(1)} GiB`;
  if (v >= MiB) return `${(v / MiB).toFixed(0)} MiB`;
  return `${(v / 1024).toFixed(1)} KiB`;
}

const int = (n: number) => Math.round(n).toLocaleString('en');
/** Two significant digits below 10, whole numbers above. */
const rate = (n: number) => (n >= 10 ? n.toFixed(0) : n > 0 ? String(Number(n.toPrecision(2))) : '0');
const cores = rate;

/** docs/capacity.md, whole. */
export function renderCapacity(c: MeasuredCosts, a: Assumptions = DEFAULT_ASSUMPTIONS): string {
  const sizes = a.sizes.map((n) => size(n, c, a));
  const head = `| | ${sizes.map((s) => `${int(s.perMonth)} a month`).join(' | ')} |`;
  const rule = `|---|${sizes.map(() => '---:').join('|')}|`;
  const row = (name: string, f: (s: Sizing) => string) => `| ${name} | ${sizes.map(f).join(' | ')} |`;
  const cpuMs = (r: Record<Part, number>) => PARTS.map((p) => `${p} ${r[p].toFixed(1)}`).join(', ');
  const when = c.run.began.slice(0, 16).replace('T', ' ');
  const p = a.prescriptionShare;
  return [
    '# Capacity',
    '',
    '<!-- Generated by `npm run capacity` (bench/capacity.ts, bench/lib/capacity-model.ts) from bench/growth-last.json: do not edit by hand. -->',
    '',
    'What a deployment needs for a number of journeys a month, computed from the costs `npm run bench:growth` measured',
    `on the production topology (its report: [Growth with the number of parked journeys](performance.md#growth-with-the-number-of-parked-journeys), run ${when} UTC on ${c.run.machine}),`,
    "and the assumptions below about the clinics' traffic. Change an assumption with `npm run capacity -- --<name> <value>`",
    '(`--help` lists them) to size your own; the page is regenerated, never edited.',
    '',
    '## What a deployment needs',
    '',
    head,
    rule,
    row('Journeys started a second: average / busiest hour', (s) => `${rate(s.startsAverage)} / ${rate(s.startsPeak)}`),
    row('Journeys woken a second at the busiest hour (callbacks and reminders)', (s) => rate(s.wakesPeak)),
    row('Journeys open at once', (s) => int(s.open)),
    row(`Closed journeys Temporal keeps (${a.retentionDays} days)`, (s) => int(s.closedKept)),
    row('**Temporal history shards** (chosen once, for good)', (s) => `**${int(s.historyShards)}**`),
    row("**PostgreSQL**: Temporal's tables, the inbox, the patient keys", (s) => `**${fmtBytesShort(s.tablesBytes)}**`),
    row(
      `PostgreSQL: the audit trail after ${a.auditYears} years (a year)`,
      (s) => `${fmtBytesShort(s.auditBytes)} (${fmtBytesShort(s.auditBytesPerYear)})`,
    ),
    row(
      'PostgreSQL: WAL written a day / at the busiest hour',
      (s) => `${fmtBytesShort(s.walPerDay)} / ${fmtBytesShort(s.walPeakPerSecond)}/s`,
    ),
    row('PostgreSQL: cores at the busiest hour', (s) => cores(s.cores.postgres)),
    row('Temporal server: cores at the busiest hour', (s) => cores(s.cores.temporal)),
    row('Temporal server: memory (as it grew with the journeys parked)', (s) => fmtBytesShort(s.temporalMemory)),
    row(
      '**Workers** (cores at the busiest hour; memory)',
      (s) => `**${s.workers}** (${cores(s.cores.worker)}; ${fmtBytesShort(s.workerMemory)})`,
    ),
    row('**API replicas** (cores at the busiest hour)', (s) => `**${s.apiReplicas}** (${cores(s.cores.api)})`),
    row('Object store: attachments held', (s) => fmtBytesShort(s.objectStoreBytes)),
    '',
    `Cores are sized so that each part runs at ${Math.round(a.cpuTarget * 100)} % of them at the busiest hour; workers and API replicas are at least ${a.minReplicas} (one can fail or roll over), one core each. The history shards are a power of two for ${a.shardHeadroom}x the open journeys at ${int(a.executionsPerShard)} open executions a shard (Temporal runs tens of thousands a shard; the count cannot change once the cluster has started, so choose it for the largest column you will reach), at least ${a.minShards}.`,
    '',
    '## The measured costs',
    '',
    'The growth run parks good faith exams; a prescription exam is counted as one with its two more callbacks, each at',
    "a callback's measured cost (its prescription and shipment activities are of the same kind as those measured).",
    '',
    `From the step of ${int(c.step)} journeys parked (the largest with every figure), ${c.run.database === 'cluster' ? 'PostgreSQL as a primary with a synchronous standby' : 'one PostgreSQL server'}:`,
    '',
    '| Cost | Measured | How |',
    '|---|---|---|',
    `| PostgreSQL per open journey | ${fmtBytesShort(c.bytesPerOpenJourney)} | every table of Temporal's two databases, the inbox and the patient keys over their empty size, divided by the journeys parked |`,
    `| Audit trail per journey | ${fmtBytesShort(c.auditBytesPerJourney)} | the audit trail's table, divided by the journeys parked |`,
    `| Tables' growth per callback | ${fmtBytesShort(c.tableBytesPerCallback)} | the tables before and after the oldest parked journeys got their event 1 and completed |`,
    `| WAL per journey / per callback | ${fmtBytesShort(c.walPerJourney)} / ${fmtBytesShort(c.walPerCallback)} | \`pg_current_wal_lsn()\` before and after parking the step, and around the callbacks |`,
    `| CPU ms per journey parked | ${cpuMs(c.cpuPerJourney)} | each part's CPU time (/proc) over the parking, divided by the journeys parked |`,
    `| CPU ms per callback | ${cpuMs(c.cpuPerCallback)} | each part's CPU time over the callbacks until their journeys completed |`,
    `| API CPU ms per start through it | ${c.apiCpuPerStart.toFixed(1)} | the API's CPU over the step, divided by the starts that went through it (an upper bound: its background work is in it) |`,
    `| Worker RSS (its cache bounded) | ${fmtBytesShort(c.workerRss)} | VmRSS with ${int(c.step)} journeys parked |`,
    `| Temporal server RSS | ${fmtBytesShort(c.temporalRss)} | VmRSS of its processes (one here) |`,
    ...(c.wave
      ? [
          `| A reminder wave | the last of ${int(c.wave.journeys)} late by ${(c.wave.lastLateMs / 1000).toFixed(1)} s | reminders falling due at one moment, from each journey's history |`,
        ]
      : []),
    '',
    'The CPU figures come from one two-core machine running every part at once, where the parts wait for each other:',
    'they are upper bounds for the same work on machines of their own.',
    '',
    '## The assumptions',
    '',
    '| Assumption | Value | Changes |',
    '|---|---|---|',
    `| Prescription exams among journeys (\`--prescription-share\`) | ${Math.round(p * 100)} % | callbacks and how long journeys stay open |`,
    `| Callbacks a journey gets: good faith / prescription; repeated deliveries (\`--redelivery-factor\`) | ${a.callbacks.gfe} / ${a.callbacks.rx}; x${a.redeliveryFactor} | wakes, WAL, worker and API cores |`,
    `| Reminders a journey sends (\`--reminders\`) | ${a.remindersPerJourney} | wakes |`,
    `| Days a journey is open: good faith / prescription (\`--open-days-gfe\`, \`--open-days-rx\`) | ${a.openDays.gfe} / ${a.openDays.rx} | open journeys, shards, PostgreSQL, attachments |`,
    `| Days Temporal keeps a closed journey (\`--retention-days\`; the namespace's retention) | ${a.retentionDays} | PostgreSQL |`,
    `| Years the audit trail is kept (\`--audit-years\`) | ${a.auditYears} | PostgreSQL |`,
    `| Working time: days a month, hours a day (\`--business-days\`, \`--business-hours\`); busiest hour over its average (\`--peak-factor\`) | ${a.businessDays}, ${a.businessHours}; x${a.peakFactor} | every rate and core |`,
    `| Share of a core used at the busiest hour (\`--cpu-target\`) | ${Math.round(a.cpuTarget * 100)} % | cores, workers, API replicas |`,
    `| Attachments per journey (\`--attachments-mib\`), kept after it ends (\`--attachment-grace-days\`) | ${a.attachmentsMiB} MiB, ${a.attachmentGraceDays} days | the object store |`,
    `| Open executions a shard is planned for (\`--executions-per-shard\`), headroom (\`--shard-headroom\`) | ${int(a.executionsPerShard)}, x${a.shardHeadroom} | shards |`,
    '',
    '## What grows, and what to do about it',
    '',
    "- **PostgreSQL's size is Temporal's visibility.** Its SQL visibility table carries 72 indexes (one per search",
    '  attribute column Temporal reserves), and every search attribute a journey sets writes a new row version into all',
    '  of them: that table is the largest of the deployment (the report lists the largest tables). Past about a million',
    "  journeys a month, run Temporal's visibility on Elasticsearch or OpenSearch (its Helm chart does; docs/deploy.md),",
    "  which keeps PostgreSQL to the histories and the engine's own tables; and keep autovacuum aggressive on",
    '  `executions_visibility` so the dead row versions are reclaimed.',
    '- **The audit trail is kept for years** and so grows without end in PostgreSQL; its checkpoints go to the object',
    '  store with Object Lock. Partition the table by month if it outgrows the rest.',
    "- **Listing is linear in what is listed.** Temporal's frontend spends 1 to 1.5 ms per execution it lists from SQL",
    "  visibility, whatever the number parked (the report: each page of `npm run ops`' listing): `npm run ops` lists a",
    '  batch in pages of 250 and the clinic API pages by 100 at most, so that a request stays well under a second; an',
    '  operator acting on 100,000 journeys waits minutes for the listing alone.',
    '- **Shards cannot be added later.** A cluster that starts with too few is replaced, not grown: choose the column',
    '  you will reach, not the one you start with.',
    '',
  ].join('\n');
}
