// `npm run bench:growth`'s pure parts: what one step measured, how a figure grew from one step to the next (named by
// comparing its change with the change in parked journeys), and the markdown section the run writes. Nothing here
// starts, reads or measures anything.
import { fmtBytes, fmtMs } from './stats';
import { lineChartSvg, niceTicks, panelsChartSvg, type Series } from './svg';
import type { WakeResult, WaveResult } from './growth-wave';

export const GROWTH_BEGIN = '<!-- begin: npm run bench:growth -->';
export const GROWTH_END = '<!-- end: npm run bench:growth -->';

export interface Latency {
  /** Samples taken (each one request, one after the other). */
  n: number;
  p50: number;
  p99: number;
  /** Each sample (ms), in the order taken. */
  samples?: number[];
}

/** What one step measured, once the journeys of the step were parked. */
export interface GrowthStep {
  /** The step asked for (journeys parked in all). */
  target: number;
  /** Journeys parked (awaiting_consultation, running) when the step was measured. */
  journeys: number;
  /** Parked by this run on the way to the step (the rest were there already, from a kept data folder). */
  parkedNow: number;
  /** Seconds this run spent parking them (client starts, the API starts, until all were parked). */
  parkSeconds: number;
  /** The clinic API's own start (POST /v1/journeys), measured at this step. */
  apiStart: Latency & { refused: number };
  /** PostgreSQL: bytes of the tables of each database (pg_total_relation_size: heap, indexes, TOAST). */
  bytes: {
    total: number;
    byDatabase: Record<string, number>;
    /** The largest tables, database.table. */
    largest: { table: string; bytes: number }[];
    /** Before the first journey of the data folder was parked (its empty tables), when this data folder knows it. */
    baseline?: number;
  };
  /** GET /v1/journeys: the first page, and a page deep into the list (its token walked to first). */
  list: { first: Latency; deep: Latency & { page: number; pageSize: number } };
  /**
   * `count`: the clinic API has no count route (src/api/routes/v1); the admin API's search answers one with its first
   * page (GET /admin/journeys, pageSize 1), by clinic and by clinic and stage.
   */
  count: { byClinic: Latency & { value: number | null }; byStage: Latency & { value: number | null } };
  /**
   * `npm run ops`: its dry run (the first page of 10 with its count and each journey's attention codes, runOps as the
   * command runs it), and the listing a batch action makes before it acts (every page, newest first).
   */
  ops: {
    query: string;
    dryRun: Latency;
    /** `page`: each request of the listing (a page of ops' LIST_PAGE_SIZE), timed on its own. */
    listAll: { ms: number; matched: number; pages: number; page?: Latency };
  };
  /** Each worker's RSS (VmRSS) once the step was parked and measured. */
  workerRss: number[];
  /** Each process of the Temporal server (one, or a node each when split): its RSS. */
  temporalRss?: number[];
  /** A share of the step's journeys with their one reminder due at about one moment: how late they fired. */
  wave?: WaveResult;
  /** The oldest parked journeys sent their event 1 at once: how fast they were applied. */
  wake?: WakeResult;
  /**
   * PostgreSQL's write-ahead log written (every database of the server): while the step's journeys were parked, per
   * journey parked; and while its callbacks were applied, per callback.
   */
  wal?: {
    perJourney: number;
    perCallback?: number;
    /** The tables' growth over the callbacks applied (their journeys completed), per callback. */
    tablesPerCallback?: number;
  };
  /**
   * CPU milliseconds of each part (worker, temporal, api, postgres): while the step's journeys were parked, per
   * journey parked (its start, its preparation, its timers set); and while its callbacks were applied, per callback.
   */
  cpu?: { perJourney: Record<string, number>; perCallback?: Record<string, number> };
  /** When the step was measured (ISO 8601). */
  at: string;
}

export interface GrowthRunOptions {
  steps: number[];
  apiStarts: number;
  apiConcurrency: number;
  samples: number;
  deepPages: number;
  /** The share of each step's journeys in its reminder wave. */
  waveShare?: number;
  /** Journeys woken by their callback at each step. */
  wake?: number;
  [option: string]: unknown;
}

export interface GrowthRun {
  began: string;
  finished?: string;
  machine: string;
  loadBefore: string;
  loadAfter?: string;
  database: 'single' | 'cluster';
  workers: number;
  clinicId: string;
  /** The run's options, as given (the data folder named only as given or fresh). */
  options: GrowthRunOptions;
  steps: GrowthStep[];
  errors: string[];
}

// ---- growth ----------------------------------------------------------------------------------------------------------

export type Growth = 'constant' | 'slower than linear' | 'linear' | 'faster than linear';

export interface GrowthVerdict {
  growth: Growth;
  /**
   * The figure's change against the journeys' change on a log scale: log(b/a) / log(nb/na). 0 for a figure that did
   * not move, 1 for one that grew in proportion to the journeys, 2 for one that grew with their square.
   */
  exponent: number;
}

/** Below this exponent a figure is constant; up to LINEAR_FROM slower than linear; up to FASTER_FROM linear. */
export const CONSTANT_BELOW = 0.2;
export const LINEAR_FROM = 0.8;
export const FASTER_FROM = 1.25;

/**
 * How a figure grew from one step (`a` journeys, figure `fa`) to the next (`b`, `fb`): the ratio of the figure's
 * change to the journey count's change, on a log scale (the exponent). A change no larger than `noise` (in the
 * figure's unit: a few milliseconds of latency, some MiB of memory) is constant whatever its ratio, and so is a
 * figure that fell. Undefined when there is nothing to compare (no growth in journeys, a figure missing or not above 0).
 */
export function classifyGrowth(a: number, fa: number, b: number, fb: number, noise = 0): GrowthVerdict | undefined {
  if (!(a > 0) || !(b > a) || !Number.isFinite(fa) || !Number.isFinite(fb) || !(fa > 0) || !(fb > 0)) {
    return undefined;
  }
  const exponent = Math.log(fb / fa) / Math.log(b / a);
  if (fb - fa <= noise || exponent < CONSTANT_BELOW) return { growth: 'constant', exponent };
  if (exponent < LINEAR_FROM) return { growth: 'slower than linear', exponent };
  if (exponent <= FASTER_FROM) return { growth: 'linear', exponent };
  return { growth: 'faster than linear', exponent };
}

/** A figure the report follows from step to step: how to read it from a step, show it, and what is noise for it. */
export interface Figure {
  name: string;
  value: (s: GrowthStep) => number | undefined;
  format: (v: number) => string;
  /** A change of at most this much is constant (the figure's own unit). */
  noise: number;
}

const MiB = 2 ** 20;
const ms = (v: number) => fmtMs(v);
const sum = (xs: number[] | undefined) => (xs && xs.length > 0 ? xs.reduce((x, y) => x + y, 0) : undefined);
const sumRss = (s: GrowthStep) => sum(s.workerRss);

/** The figures of the growth table, in its order. */
export const FIGURES: Figure[] = [
  {
    // Over the empty tables when the data folder knows them: their fixed size is not a journey's.
    name: 'PostgreSQL bytes (all tables)',
    value: (s) => s.bytes.total - (s.bytes.baseline ?? 0),
    format: (v) => fmtSize(v),
    noise: 4 * MiB,
  },
  {
    name: 'Parking time per journey',
    value: (s) => (s.parkedNow > 0 ? (s.parkSeconds * 1000) / s.parkedNow : undefined),
    format: ms,
    noise: 1,
  },
  { name: 'API start p50', value: (s) => s.apiStart.p50, format: ms, noise: 3 },
  { name: 'API start p99', value: (s) => s.apiStart.p99, format: ms, noise: 10 },
  { name: 'List, first page p50', value: (s) => s.list.first.p50, format: ms, noise: 3 },
  { name: 'List, first page p99', value: (s) => s.list.first.p99, format: ms, noise: 10 },
  { name: 'List, page deep p50', value: (s) => s.list.deep.p50, format: ms, noise: 3 },
  { name: 'List, page deep p99', value: (s) => s.list.deep.p99, format: ms, noise: 10 },
  { name: 'Count by clinic p50', value: (s) => s.count.byClinic.p50, format: ms, noise: 3 },
  { name: 'Count by clinic p99', value: (s) => s.count.byClinic.p99, format: ms, noise: 10 },
  { name: 'Count by stage p50', value: (s) => s.count.byStage.p50, format: ms, noise: 3 },
  { name: 'Count by stage p99', value: (s) => s.count.byStage.p99, format: ms, noise: 10 },
  { name: 'ops dry run p50', value: (s) => s.ops.dryRun.p50, format: ms, noise: 5 },
  { name: 'ops batch listing (all pages)', value: (s) => s.ops.listAll.ms, format: ms, noise: 5 },
  { name: 'ops batch listing, a page p99', value: (s) => s.ops.listAll.page?.p99, format: ms, noise: 10 },
  { name: 'Worker RSS', value: sumRss, format: (v) => fmtBytes(v), noise: 32 * MiB },
  {
    name: 'CPU per journey parked (all parts)',
    value: (s) => sum(Object.values(s.cpu?.perJourney ?? {}).filter(Number.isFinite)),
    format: (v) => `${v.toFixed(1)} ms`,
    noise: 3,
  },
  { name: 'WAL per journey parked', value: (s) => s.wal?.perJourney, format: (v) => fmtSize(v), noise: 4096 },
  { name: 'Temporal server RSS', value: (s) => sum(s.temporalRss), format: (v) => fmtBytes(v), noise: 32 * MiB },
  { name: 'Reminder wave: the last, late by', value: (s) => s.wave?.sentLate.max, format: ms, noise: 250 },
  {
    // A rate falls as things get worse; its inverse grows, as the other figures do.
    name: 'Wake: time per callback applied',
    value: (s) => (s.wake && s.wake.perSecond > 0 ? 1000 / s.wake.perSecond : undefined),
    format: ms,
    noise: 1,
  },
];

/** Each figure's growth between consecutive steps (ordered by journeys), figure by figure. */
export function growthBetween(steps: GrowthStep[], figures: Figure[] = FIGURES) {
  const ordered = [...steps].sort((x, y) => x.journeys - y.journeys);
  return figures.map((f) => ({
    figure: f,
    changes: ordered.slice(1).map((b, i) => {
      const a = ordered[i]!;
      const fa = f.value(a);
      const fb = f.value(b);
      const verdict =
        fa === undefined || fb === undefined ? undefined : classifyGrowth(a.journeys, fa, b.journeys, fb, f.noise);
      return { from: a.journeys, to: b.journeys, fa, fb, verdict };
    }),
  }));
}

// ---- rendering -------------------------------------------------------------------------------------------------------

const int = (n: number) => Math.round(n).toLocaleString('en');

function fmtSize(v: number): string {
  if (!Number.isFinite(v)) return '–';
  if (v >= 1024 ** 3) return `${(v / 1024 ** 3).toFixed(2)} GiB`;
  if (v >= MiB) return `${(v / MiB).toFixed(1)} MiB`;
  if (v >= 1024) return `${(v / 1024).toFixed(1)} KiB`;
  return `${v.toFixed(0)} B`;
}

const pair = (l: Latency) => `${fmtMs(l.p50)} / ${fmtMs(l.p99)}`;

/** `name (exponent)`, or a dash where there is nothing to compare. */
export function verdictText(v: GrowthVerdict | undefined): string {
  return v ? `${v.growth} (${v.exponent.toFixed(2)})` : '–';
}

/** The steps' table: one row per step, each figure of a later step followed by its growth since the step before. */
export function renderStepsTable(steps: GrowthStep[]): string {
  const ordered = [...steps].sort((x, y) => x.journeys - y.journeys);
  const growth = (f: string, i: number) => {
    if (i === 0) return '';
    const figure = FIGURES.find((x) => x.name === f)!;
    const a = ordered[i - 1]!;
    const b = ordered[i]!;
    const fa = figure.value(a);
    const fb = figure.value(b);
    const v =
      fa === undefined || fb === undefined ? undefined : classifyGrowth(a.journeys, fa, b.journeys, fb, figure.noise);
    return v ? ` *${v.growth}*` : '';
  };
  const rows = ordered.map((s, i) => {
    const perJourney = s.bytes.total / s.journeys;
    const marginal =
      s.bytes.baseline !== undefined
        ? ` (${fmtSize((s.bytes.total - s.bytes.baseline) / s.journeys)} over the empty tables)`
        : '';
    const parking =
      s.parkedNow > 0
        ? `${int(s.parkedNow)} in ${s.parkSeconds.toFixed(0)} s (${(s.parkedNow / s.parkSeconds).toFixed(1)}/s)`
        : 'already parked';
    const rss = s.workerRss.length > 0 ? s.workerRss.map((r) => fmtBytes(r)).join(', ') : '–';
    return (
      `| ${int(s.journeys)} | ${parking}${growth('Parking time per journey', i)} | ` +
      `${fmtSize(s.bytes.total)}: ${fmtSize(perJourney)}${marginal}${growth('PostgreSQL bytes (all tables)', i)} | ` +
      `${pair(s.apiStart)}${s.apiStart.refused ? `, ${s.apiStart.refused} refused` : ''}${growth('API start p50', i)} | ` +
      `${pair(s.list.first)}${growth('List, first page p50', i)} | ` +
      `${pair(s.list.deep)} (page ${s.list.deep.page})${growth('List, page deep p50', i)} | ` +
      `${pair(s.count.byClinic)}${growth('Count by clinic p50', i)} | ` +
      `${pair(s.count.byStage)}${growth('Count by stage p50', i)} | ` +
      `${pair(s.ops.dryRun)}${growth('ops dry run p50', i)} | ` +
      `${fmtMs(s.ops.listAll.ms)}: ${int(s.ops.listAll.matched)} in ${s.ops.listAll.pages} pages` +
      `${s.ops.listAll.page ? `, a page ${pair(s.ops.listAll.page)}` : ''}${growth('ops batch listing (all pages)', i)} | ` +
      `${rss}${growth('Worker RSS', i)} |`
    );
  });
  return [
    '| Journeys parked | Parked by this run | PostgreSQL: all tables, per journey | API start p50 / p99 | List, first page p50 / p99 | List, a page deep p50 / p99 | Count by clinic p50 / p99 | Count by stage p50 / p99 | `ops` dry run p50 / p99 | `ops` batch listing (each page p50 / p99) | Worker RSS |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

/** The wake-ups and the server's memory: one row per step. */
export function renderWakeTable(steps: GrowthStep[]): string {
  const ordered = [...steps].sort((x, y) => x.journeys - y.journeys);
  const rows = ordered.map((s) => {
    const w = s.wave;
    const wave = w
      ? `${int(w.fired)} of ${int(w.journeys)} fired; due within ${fmtMs(w.dueSpreadMs)}; timer late p50 / p99 / max ` +
        `${fmtMs(w.timerLate.p50)} / ${fmtMs(w.timerLate.p99)} / ${fmtMs(w.timerLate.max)}; resend scheduled late ` +
        `p50 / p99 / max ${fmtMs(w.sentLate.p50)} / ${fmtMs(w.sentLate.p99)} / **${fmtMs(w.sentLate.max)}**; passed in ${fmtMs(w.passedMs)}` +
        (w.passedMs > 0 ? ` (${(w.fired / (w.passedMs / 1000)).toFixed(1)} reminders/s)` : '')
      : '–';
    const k = s.wake;
    const wake = k
      ? `${int(k.applied)} of ${int(k.journeys)} applied${k.not200 ? ` (${k.not200} not 200)` : ''}, ` +
        `**${k.perSecond.toFixed(1)}/s**; applied after p50 / p99 / max ${fmtMs(k.appliedAfter.p50)} / ` +
        `${fmtMs(k.appliedAfter.p99)} / ${fmtMs(k.appliedAfter.max)}; ack p99 ${fmtMs(k.ack.p99)}`
      : '–';
    const trss = s.temporalRss && s.temporalRss.length > 0 ? s.temporalRss.map((r) => fmtBytes(r)).join(', ') : '–';
    const wal = s.wal
      ? `${fmtSize(s.wal.perJourney)} per journey parked` +
        (s.wal.perCallback !== undefined ? `, ${fmtSize(s.wal.perCallback)} per callback applied` : '') +
        (s.wal.tablesPerCallback !== undefined
          ? ` (the tables grew ${fmtSize(s.wal.tablesPerCallback)} per callback)`
          : '')
      : '–';
    const cpuText = (c: Record<string, number> | undefined) =>
      c
        ? Object.entries(c)
            .filter(([, v]) => Number.isFinite(v))
            .map(([k, v]) => `${k} ${v.toFixed(1)}`)
            .join(', ')
        : '–';
    const cpu = s.cpu
      ? `per journey parked: ${cpuText(s.cpu.perJourney)}` +
        (s.cpu.perCallback ? `; per callback: ${cpuText(s.cpu.perCallback)}` : '')
      : '–';
    return `| ${int(s.journeys)} | ${wave} | ${wake} | ${trss} | ${wal} | ${cpu} |`;
  });
  return [
    '| Journeys parked | Reminder wave | Callbacks to the oldest parked | Temporal server RSS | PostgreSQL WAL written | CPU ms |',
    '|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

/** The growth table: one row per figure, one column per change of step, each named with its exponent. */
export function renderGrowthTable(steps: GrowthStep[]): string {
  const g = growthBetween(steps);
  const changes = g[0]?.changes ?? [];
  if (changes.length === 0) return '';
  const head = `| Figure | ${changes.map((c) => `${int(c.from)} → ${int(c.to)}`).join(' | ')} |`;
  const rule = `|---|${changes.map(() => '---').join('|')}|`;
  const rows = g.map(
    ({ figure, changes: cs }) =>
      `| ${figure.name} | ${cs
        .map((c) =>
          c.fa === undefined || c.fb === undefined
            ? '–'
            : `${figure.format(c.fa)} → ${figure.format(c.fb)}: ${verdictText(c.verdict)}`,
        )
        .join(' | ')} |`,
  );
  return [head, rule, ...rows].join('\n');
}

/** The whole section, between its markers. */
export function renderGrowthSection(run: GrowthRun): string {
  const steps = [...run.steps].sort((x, y) => x.journeys - y.journeys);
  const last = steps[steps.length - 1];
  const lines = [
    GROWTH_BEGIN,
    '## Growth with the number of parked journeys',
    '',
    `Measured by \`npm run bench:growth\` (bench/growth.ts), ${run.began.slice(0, 16).replace('T', ' ')} UTC, on ${run.machine}; load average before ${run.loadBefore}${run.loadAfter ? `, after ${run.loadAfter}` : ''}. The production topology (ProductionStack: the Temporal server on PostgreSQL ${run.database === 'cluster' ? '(a primary with a synchronous standby under Patroni)' : '(one server)'}, the PostgreSQL callback inbox, the patient keys and audit trail in PostgreSQL, ${run.workers} worker${run.workers === 1 ? '' : 's'}, API replicas behind HAProxy; no identity provider). This section is generated (bench/lib/growth-report.ts).`,
    '',
    `Each step parks GFE journeys (exam 101, the default timings: the reminders and the consultation deadline the journey sets) of clinic \`${run.clinicId}\`, each for a patient of its own, until the step's count waits in \`awaiting_consultation\`: started straight through the Temporal client as the API would (each bound to its patient's data key first, so every payload is sealed for the patient and the key is on the audit trail), and ${run.options.apiStarts} more through the clinic API (\`POST /v1/journeys\`, ${run.options.apiConcurrency} at once) whose start latency is the step's *API start*. Then, one request at a time (${run.options.samples} each, those that reach Temporal's visibility started at least 250 ms apart: its frontend answers a namespace 10 visibility requests a second by default, and one over the limit waits for the client's retry): the clinic's list (\`GET /v1/journeys\`, its first page of 20 and a page of 100 deep into the list, its token walked to first); *count*: the clinic API has no count route, so the admin API's search, whose first page carries the count (\`GET /admin/journeys\`, pageSize 1), by clinic and by clinic and stage; an operator's batch query as \`npm run ops\` makes it (its dry run: the first 10 with the count and their attention codes; and the listing a batch action makes before it acts, every page of the page size ops asks for, each page timed). *PostgreSQL*: \`pg_total_relation_size\` of every table of Temporal's two databases (temporal, temporal_visibility), the inbox, the patient keys and the audit trail, per parked journey. *Growth*: each figure's change from one step to the next against the journeys' change, as the exponent log(figure ratio) / log(journey ratio) (PostgreSQL's bytes over its empty tables when the data folder knew them): below ${CONSTANT_BELOW} (or a change within the figure's noise) constant, below ${LINEAR_FROM} slower than linear, up to ${FASTER_FROM} linear, above faster than linear.`,
    '',
    renderStepsTable(steps),
    '',
    ...(run.options.svgDir === 'given'
      ? [
          '![Latency against the journeys parked](growth-latency.svg)',
          '',
          '![Size against the journeys parked](growth-size.svg)',
          '',
        ]
      : []),
    `*Reminder wave*: ${run.options.waveShare !== undefined ? `${Math.round(run.options.waveShare * 100)} %` : 'a share'} of each step's journeys are parked last, each with its one reminder offset so that it falls due at about one moment after the step is parked (the offset counts from the journey's own invite, so they fall due within the spread shown); once due, each journey's history says when its timer was due, when the server fired it and when the journey scheduled the resend (*late*: after the due time). *Callbacks*: the oldest ${run.options.wake !== undefined ? int(run.options.wake) : ''} journeys still waiting (the sandbox's oldest pending invites) each get their event 1 (Approved) through the webhook, 32 at once; *applied after*: from the first callback sent to each journey's completion (its close time); the rate is the journeys over the time to the last.`,
    '',
    renderWakeTable(steps),
    '',
  ];
  const growth = renderGrowthTable(steps);
  if (growth) lines.push('Growth from step to step (exponent in brackets):', '', growth, '');
  if (last) {
    const largest = last.bytes.largest
      .slice(0, 5)
      .map((t) => `${t.table} ${fmtSize(t.bytes)}`)
      .join(', ');
    if (largest) lines.push(`The largest tables at ${int(last.journeys)} journeys: ${largest}.`, '');
  }
  if (run.errors.length > 0) lines.push('**Errors in this run:**', '', ...run.errors.map((e) => `- ${e}`), '');
  lines.push(GROWTH_END);
  return lines.join('\n');
}

/** `existing` with the section between the growth markers replaced, or the section appended at its end. */
export function withGrowthSection(existing: string, section: string): string {
  if (!section.startsWith(GROWTH_BEGIN) || !section.endsWith(GROWTH_END)) {
    throw new Error('the growth section starts and ends with its markers');
  }
  const at = existing.indexOf(GROWTH_BEGIN);
  const to = existing.indexOf(GROWTH_END);
  if (at >= 0 && to > at) return existing.slice(0, at) + section + existing.slice(to + GROWTH_END.length);
  return `${existing.trimEnd()}\n\n${section}\n`;
}

// ---- charts ----------------------------------------------------------------------------------------------------------

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#e377c2', '#17becf'];

/**
 * Two charts against the journeys parked: the latencies (p99, log scale, with the 1 s a query may take) and the sizes
 * (PostgreSQL per journey, the processes' memory).
 */
export function renderGrowthSvgs(run: GrowthRun): { latency: string; size: string } {
  const steps = [...run.steps].sort((x, y) => x.journeys - y.journeys);
  const xTicks = niceTicks(Math.max(...steps.map((s) => s.journeys), 1));
  // The steps grow tenfold: on a log axis each has its own place.
  const stepTicks = steps.map((s) => s.journeys);
  const line = (label: string, value: (s: GrowthStep) => number | undefined, i: number, dash?: string): Series => ({
    label,
    color: COLORS[i % COLORS.length]!,
    ...(dash ? { dash } : {}),
    points: steps.flatMap((s) => {
      const y = value(s);
      return y !== undefined && Number.isFinite(y) ? [{ x: s.journeys, y }] : [];
    }),
  });
  const when = run.began.slice(0, 16).replace('T', ' ');
  const latency = lineChartSvg(
    [
      line('API start p99', (s) => s.apiStart.p99, 0),
      line('list, first page p99', (s) => s.list.first.p99, 1),
      line('list, a page deep p99', (s) => s.list.deep.p99, 2),
      line('count by stage p99', (s) => s.count.byStage.p99, 3),
      line('ops dry run p99', (s) => s.ops.dryRun.p99, 4),
      line('ops listing, a page p99', (s) => s.ops.listAll.page?.p99, 5),
      line('reminder wave, the last late by', (s) => s.wave?.sentLate.max, 6, '6 3'),
      line('callbacks, the last applied after', (s) => s.wake?.appliedAfter.max, 7, '6 3'),
    ],
    {
      title: 'Latency against the journeys parked',
      subtitle: `npm run bench:growth, ${when} UTC`,
      xLabel: 'journeys parked (log scale)',
      yLabel: 'latency (log scale)',
      xTicks: stepTicks.length > 0 ? stepTicks : xTicks,
      xLog: stepTicks.length > 0,
      marks: [{ y: 1000, label: '1 s: a query at most', color: '#d62728' }],
    },
  );
  const perJourney = (s: GrowthStep) => (s.bytes.total - (s.bytes.baseline ?? 0)) / s.journeys / 1024;
  const mib = (xs: number[] | undefined) => {
    const v = sum(xs);
    return v === undefined ? undefined : v / MiB;
  };
  const size = panelsChartSvg(
    [
      {
        title: 'PostgreSQL per journey parked (KiB, over the empty tables)',
        series: [line('KiB per journey', perJourney, 0)],
      },
      {
        title: 'Memory (MiB)',
        series: [
          line('worker RSS', (s) => mib(s.workerRss), 1),
          line('Temporal server RSS', (s) => mib(s.temporalRss), 2),
        ],
      },
    ],
    {
      title: 'Size against the journeys parked',
      subtitle: `npm run bench:growth, ${when} UTC`,
      xLabel: 'journeys parked',
      yLabel: '',
    },
  );
  return { latency, size };
}
