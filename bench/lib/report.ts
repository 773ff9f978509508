// docs/performance.md and docs/webhook-latency.svg from one run's results.
import type { AloneRun } from '../api-alone';
import type { AckLayerResults } from '../ack-layers';
import { LAYER_SHARE_LIMIT, layerCosts, layersOverLimit, layersSection } from './layers-report';
import { GENERATOR_WARM_BURSTS } from './load';
import type { ColdStartResults, NpmTestResults } from '../phases/cold';
import type { SustainedResults } from '../phases/sustained';
import { fmtCpuPerJourney, type ThroughputResults, type ThroughputRun } from '../phases/throughput';
import type { AbResult, TuningResults } from '../phases/tuning';
import type { WaitingResults } from '../phases/waiting';
import type {
  BurstResults,
  BurstRun,
  OutageResults,
  StoreOutage,
  TemporalState,
  WebhookLevel,
  WebhookResults,
} from '../phases/webhook';
import { bucketFloor, fmtBatch, fmtBoundSeconds, fmtGc } from './api-metrics';
import type { Options } from './context';
import type { DeliveryCheck, RawSignalRun } from './deliveries';
import type { loadAverage, Machine } from './machine';
import type { InboxStore } from './stack';
import { fmtBytes, fmtMs } from './stats';
import { CPU_CEILING, sustainedSection, sustainedSvg } from './sustained-report';
import { compareWithCommitted, comparisonMarkdown, type Comparison } from './regression';
import { cpuWeights, temporalStoreLine } from './sections';
import { lineChartSvg, type Series } from './svg';

type Load = ReturnType<typeof loadAverage>;

export interface Results {
  startedAt: string;
  finishedAt?: string;
  durationSeconds?: number;
  command: string;
  options: Omit<Options, 'phases'> & { phases: string[] };
  machine: Machine;
  loadBefore: Load;
  loadAfter?: Load;
  /** Whole-machine CPU busy share, every 5 s. */
  cpuBusy: number[];
  /** The share the hypervisor took (steal), every 5 s; absent in older results. */
  cpuSteal?: number[];
  /** Wall time of each phase. */
  phaseSeconds: Record<string, number>;
  stackStartSeconds?: number;
  /** The workflow bundle built ahead that the bench's worker runs, as the image's does (absent: bundled at start). */
  workerBundle?: { bytes: number; ms: number };
  postgresStartSeconds?: number;
  alone?: AloneRun[];
  /** Each layer of the acknowledgement left out in turn (bench/ack-layers.ts). */
  layers?: AckLayerResults;
  cold?: ColdStartResults;
  npmTest?: NpmTestResults;
  npmTestFull?: NpmTestResults;
  webhook?: WebhookResults;
  burst?: BurstResults;
  outage?: OutageResults;
  /** Temporal's raw signal rate (a client's signal loop, the forwarder's concurrency), beside each drain. */
  rawSignals?: RawSignalRun[];
  /** Every parked journey's snapshot against every 200 the API gave. */
  delivery?: DeliveryCheck;
  /** Steady rates held for minutes (opt-in: --only sustained). */
  sustained?: SustainedResults;
  throughput?: ThroughputResults;
  tuning?: TuningResults;
  waiting?: WaitingResults;
  errors: string[];
}

const GIB = 1024 ** 3;
const STORES: InboxStore[] = ['files', 'postgres'];
const ms = (v: number | undefined) => fmtMs(v);
const s1 = (v: number) => (Number.isFinite(v) ? `${v.toFixed(1)} s` : '–');
const pct = (v: number) => `${(v * 100).toFixed(0)} %`;
const pct1 = (v: number) => `${(v * 100).toFixed(1)} %`;
const met = (ok: boolean) => (ok ? '**met**' : '**missed**');
const per = (v: number | undefined) => (v === undefined || !Number.isFinite(v) ? '–' : `${v.toFixed(0)}/s`);

function by(v: number, limit: number): string {
  return `${(v / limit).toFixed(1)}x the limit (${fmtMs(v)} vs ${fmtMs(limit)})`;
}

function cpuCell(cpu: Record<string, number> | undefined, key: string): string {
  const v = cpu?.[key];
  return v === undefined ? '–' : `${(v * 100).toFixed(0)} %`;
}

function throughputRow(r: ThroughputRun): string {
  return `| ${r.label} | ${r.completed}/${r.n} | ${s1(r.wallSeconds)} | **${r.perSecond.toFixed(1)}/s** | ${ms(r.timeToCompleteMs.p50)} | ${ms(r.timeToCompleteMs.p99)} | ${ms(r.startMs.p50)} / ${ms(r.startMs.p99)} | ${fmtCpuPerJourney(r.cpuPerJourney)} |`;
}

/** `33.1 and 34.6/s`: the rates of the runs a row pools (and the CPU the hypervisor took in each, when measured). */
export function runRates(r: ThroughputRun | undefined): string {
  const rates = r?.runsPerSecond ?? (r ? [r.perSecond] : []);
  const join = (xs: string[]) => xs.join(xs.length === 2 ? ' and ' : ', ');
  const steal = r?.runsSteal ?? (r?.steal !== undefined ? [r.steal] : undefined);
  return (
    `${join(rates.map((x) => x.toFixed(1)))}/s` +
    (steal ? ` (the hypervisor took ${join(steal.map((x) => (x * 100).toFixed(1)))} % of the CPU)` : '')
  );
}

/** The share of the raw ceiling the journeys should reach. */
const THROUGHPUT_TARGET = 0.8;
/** Seconds from Temporal ready after its restart to the forwarder's first signal: its probe asks once a second. */
const RESUME_TARGET_S = 5;

/** A level of the webhook runs: Temporal up (section 1) or stopped (the outage). */
function levelOf(r: Results, store: InboxStore, temporal: TemporalState, rate: number): WebhookLevel | undefined {
  const levels = temporal === 'up' ? r.webhook?.levels : r.outage?.stores.find((s) => s.store === store)?.down;
  return levels?.find((l) => l.store === store && l.rate === rate);
}

const burstOf = (r: Results, store: InboxStore, temporal: TemporalState): BurstRun | undefined =>
  r.burst?.runs.find((b) => b.store === store && b.temporal === temporal);

const aloneAt = (r: Results, store: InboxStore, rate: number) =>
  r.alone?.find((a) => a.rate === rate && a.burst === undefined && (a.store ?? 'files') === store);
const aloneBurst = (r: Results, store: InboxStore) =>
  r.alone?.find((a) => a.burst !== undefined && (a.store ?? 'files') === store);

const probeOf = (r: Results, store: InboxStore) => r.webhook?.probes.find((p) => p.store === store);

/** Temporal's raw signal rate measured beside this store's drain (or any), in the given pattern. */
const rawRate = (r: Results, store: InboxStore, perJourney: number) => {
  const runs = (r.rawSignals ?? []).filter((x) => (x.perJourney ?? 1) === perJourney);
  return runs.find((x) => x.after === store) ?? runs[0];
};

export interface Targets {
  rows: { target: string; figure: string; verdict: string }[];
}

/** How far the API may be above its floor (the bare route with one durable write) where an absolute target is missed. */
const FLOOR_RATIO_LIMIT = 3;

/** An acknowledgement figure against its floor measured in the same run, where the absolute target was missed. */
interface FloorCheck {
  store: InboxStore;
  what: string;
  api: number;
  floor: number;
}

/** `; the floor …`: appended to a missed row's verdict (nothing where the run measured no floor). */
function floorNote(c: FloorCheck | undefined): string {
  if (!c) return '';
  const ratio = c.api / c.floor;
  return (
    `; its floor in this run (the bare route with one durable write) ${ms(c.floor)}: the API ${ratio.toFixed(1)}x it, ` +
    (ratio <= FLOOR_RATIO_LIMIT ? `within ${FLOOR_RATIO_LIMIT}x` : `over ${FLOOR_RATIO_LIMIT}x`)
  );
}

export function targets(r: Results): Targets {
  const rows: Targets['rows'] = [];
  const floorChecks: FloorCheck[] = [];
  for (const store of STORES) {
    const l = levelOf(r, store, 'up', 500);
    if (!l) continue;
    const v = l.api.latencyMs.p99;
    const f = !(v < 10) && l.floor ? { store, what: '500/s p99', api: v, floor: l.floor.latencyMs.p99 } : undefined;
    if (f) floorChecks.push(f);
    rows.push({
      target: `Webhook ack p99 < 10 ms at 500/s (Temporal up, ${store})`,
      figure: ms(v),
      verdict: v < 10 ? met(true) : `${met(false)}: ${by(v, 10)}${floorNote(f)}`,
    });
  }
  for (const store of STORES) {
    const l = levelOf(r, store, 'up', 1000);
    if (!l) continue;
    const v = l.api.latencyMs.max;
    const f = !(v < 100) && l.floor ? { store, what: '1000/s max', api: v, floor: l.floor.latencyMs.max } : undefined;
    if (f) floorChecks.push(f);
    rows.push({
      target: `Webhook ack max < 100 ms at 1000/s (Temporal up, ${store})`,
      figure: `max ${ms(v)} (p99.9 ${ms(l.api.latencyMs.p999)})`,
      verdict: v < 100 ? met(true) : `${met(false)}: ${by(v, 100)}${floorNote(f)}`,
    });
  }
  for (const store of STORES) {
    const l = levelOf(r, store, 'up', 500);
    if (!l?.bare) continue;
    const api = l.api.latencyMs.p99;
    const bare = l.bare.latencyMs.p99;
    const ratio = api / bare;
    rows.push({
      target: `Webhook ack p99 ≤ 3x the bare route's at 500/s (Temporal up, ${store})`,
      figure: `${ms(api)} vs bare ${ms(bare)} = ${ratio.toFixed(1)}x`,
      verdict:
        ratio <= 3 ? met(true) : `${met(false)}: ${(ratio / 3).toFixed(1)}x the limit (3x bare = ${ms(3 * bare)})`,
    });
  }
  for (const temporal of ['up', 'down'] as const) {
    for (const store of STORES) {
      const b = burstOf(r, store, temporal);
      if (!b) continue;
      const v = b.pooled.p99;
      const f = !(v < 100) && b.floor ? { store, what: 'bursts p99', api: v, floor: b.floor.p99 } : undefined;
      if (f) floorChecks.push(f);
      rows.push({
        target: `Burst of ${b.size} simultaneous callbacks: ack p99 < 100 ms (Temporal ${temporal === 'up' ? 'up' : 'stopped'}, ${store})`,
        figure: `${ms(v)} (${b.bursts.length} bursts, max ${ms(b.pooled.max)}; the bare route's ${ms(b.bare?.p99)}${b.floor ? `, the floor's ${ms(b.floor.p99)}` : ''})`,
        verdict:
          v < 100 && b.ok === b.sent
            ? met(true)
            : `${met(false)}: ${v < 100 ? `${b.sent - b.ok} not 200` : by(v, 100)}${floorNote(f)}`,
      });
    }
  }
  for (const store of STORES) {
    const n = burstOf(r, store, 'up')?.newConnections;
    if (!n || n.bursts === undefined) continue;
    const v = n.api.p99;
    const notOk = (n.sent ?? 0) - (n.ok ?? 0);
    const f =
      !(v < 100) && n.floor ? { store, what: 'bursts on new connections p99', api: v, floor: n.floor.p99 } : undefined;
    if (f) floorChecks.push(f);
    rows.push({
      target: `Burst of 200 callbacks on new connections: ack p99 < 100 ms (Temporal up, ${store})`,
      figure: `${ms(v)} (${n.bursts} bursts, max ${ms(n.api.max)}; the bare route's ${ms(n.bare.p99)}${n.floor ? `, the floor's ${ms(n.floor.p99)}` : ''})`,
      verdict:
        v < 100 && notOk === 0
          ? met(true)
          : `${met(false)}: ${v < 100 ? `${notOk} not 200` : by(v, 100)}${floorNote(f)}`,
    });
  }
  for (const store of STORES) {
    // Measured where the run had the floor: the 500/s level (webhook) or the bursts with Temporal up.
    if (!levelOf(r, store, 'up', 500)?.floor && !burstOf(r, store, 'up')?.floor) continue;
    const missed = floorChecks.filter((c) => c.store === store);
    const over = missed.filter((c) => c.api / c.floor > FLOOR_RATIO_LIMIT);
    const worst = Math.max(...missed.map((c) => c.api / c.floor));
    rows.push({
      target: `Every acknowledgement target missed is at most ${FLOOR_RATIO_LIMIT}x its floor measured in the same run (the bare route with one durable write; Temporal up, ${store})`,
      figure: missed.length
        ? `the farthest ${worst.toFixed(1)}x: ` +
          missed.map((c) => `${c.what} ${ms(c.api)} vs ${ms(c.floor)} = ${(c.api / c.floor).toFixed(1)}x`).join('; ')
        : 'none missed',
      verdict:
        over.length === 0
          ? met(true)
          : `${met(false)}: ${over.map((c) => `${c.what} ${(c.api / c.floor).toFixed(1)}x`).join(', ')}`,
    });
  }
  if (r.layers?.runs.length) {
    const over = layersOverLimit(r.layers);
    const stores = layerCosts(r.layers);
    const worst = stores.flatMap((s) => s.costs.filter((c) => !c.floor)).sort((a, b) => b.share - a.share)[0];
    rows.push({
      target: `Every layer of the acknowledgement under ${LAYER_SHARE_LIMIT * 100} % of its time at 500/s (the durable write aside; ${stores.map((s) => s.store).join(', ')})`,
      figure: worst
        ? `the costliest: ${worst.layer} on ${worst.store}, ${(worst.inProcessUs ?? worst.abUs ?? 0).toFixed(0)} µs = ${(worst.share * 100).toFixed(1)} %`
        : '–',
      verdict:
        over.length === 0
          ? met(true)
          : `${met(false)}: ${over.map((c) => `${c.layer} (${c.store}) ${(c.share * 100).toFixed(1)} %`).join(', ')}`,
    });
  }
  const d = r.delivery;
  if (d) {
    const ok = d.missing === 0 && d.unexpected === 0 && d.duplicateEntries === 0 && !d.unqueried;
    rows.push({
      target: 'Every acknowledged callback applied exactly once (both stores, Temporal up and stopped)',
      figure:
        `${d.recorded} recorded / ${d.acked} acknowledged + ${d.rawSignals} raw signals; ` +
        `${d.missing} missing, ${d.unexpected} unexpected, ${d.duplicateEntries} twice` +
        (d.unqueried ? `; ${d.unqueried} journeys could not be queried` : ''),
      verdict: ok
        ? met(true)
        : d.unqueried && d.missing === 0
          ? `${met(false)}: not every journey could be checked`
          : met(false),
    });
  }
  const restarts = r.outage?.stores ?? [];
  if (restarts.length) {
    const late = restarts.filter((s) => !(s.resumeSeconds <= RESUME_TARGET_S));
    rows.push({
      target: `After Temporal's restart the forwarder signals again within ${RESUME_TARGET_S} s (${restarts.map((s) => s.store).join(', ')})`,
      figure: restarts.map((s) => `${s.store} ${s1(s.resumeSeconds)}`).join(', '),
      verdict:
        late.length === 0
          ? met(true)
          : `${met(false)}: ${late.map((s) => `${s.store} ${s1(s.resumeSeconds)}`).join(', ')} (its probe asks once a second)`,
    });
  }
  if (r.throughput) {
    rows.push({
      target: 'Journey throughput at least 80 % of the raw ceiling',
      figure: `${r.throughput.gfe.perSecond.toFixed(1)}/s vs ${r.throughput.raw.perSecond.toFixed(1)}/s = ${pct(r.throughput.ratio)}`,
      verdict:
        r.throughput.ratio >= THROUGHPUT_TARGET
          ? met(true)
          : `${met(false)}: ${pct(r.throughput.ratio)} of the ceiling` +
            (r.throughput.rawVisible && r.throughput.ratioVisible !== undefined
              ? `; the raw shape telling Temporal what a journey tells it ran at ` +
                `${r.throughput.rawVisible.perSecond.toFixed(1)}/s (${pct(r.throughput.rawVisible.perSecond / r.throughput.raw.perSecond)} ` +
                `of raw), the journeys at ${pct(r.throughput.ratioVisible)} of that`
              : '') +
            ' (see *What stands in the way*)',
    });
  }
  if (r.waiting) {
    const m = r.waiting.memoryLimit;
    // In a memory cgroup the RSS cannot pass the limit: what counts there is that no worker was killed for it.
    const killed = m ? (m.oomKills ?? 0) > 0 : false;
    const ok = r.waiting.rssPeak < GIB && !killed;
    rows.push({
      target: `Worker RSS < 1 GiB with ${r.waiting.n.toLocaleString('en')} journeys parked`,
      figure:
        `${fmtBytes(r.waiting.rssParked)} parked, ${fmtBytes(r.waiting.rssPeak)} peak (${r.waiting.parked.toLocaleString('en')} parked)` +
        (m
          ? `; the worker in a ${m.limitMiB.toLocaleString('en')} MiB memory cgroup, as the chart's container` +
            `${m.heapLimitMiB !== undefined ? ` (Node.js heap limit ${m.heapLimitMiB.toFixed(0)} MiB)` : ''}, ` +
            `${m.oomKills ?? 0} killed for memory`
          : ''),
      verdict: r.waiting.parked < r.waiting.n ? `${met(ok)} for ${r.waiting.parked} parked only` : met(ok),
    });
  }
  return { rows };
}

const STORE_COLOR: Record<InboxStore, { up: string; down: string }> = {
  files: { up: '#1f77b4', down: '#d62728' },
  postgres: { up: '#8c564b', down: '#e377c2' },
};
const FLOOR_COLOR: Record<InboxStore, string> = { files: '#17becf', postgres: '#bcbd22' };

export function latencyChart(r: Results): string {
  const series: Series[] = [];
  const add = (
    levels: WebhookLevel[],
    pick: 'api' | 'bare' | 'floor',
    name: string,
    color: string,
    qs: ('p50' | 'p99' | 'p999')[],
  ) => {
    if (!levels.length) return;
    const styles = { p50: [undefined, 'p50'], p99: ['6 3', 'p99'], p999: ['2 3', 'p99.9'] } as const;
    for (const q of qs) {
      const [dash, label] = styles[q];
      series.push({
        label: `${name} ${label}`,
        color,
        ...(dash ? { dash } : {}),
        points: levels.flatMap((l) => {
          const s = l[pick]?.latencyMs;
          return s ? [{ x: l.rate, y: s[q] }] : [];
        }),
      });
    }
  };
  for (const store of STORES) {
    const up = (r.webhook?.levels ?? []).filter((l) => l.store === store);
    add(up, 'api', `API ${store}, up`, STORE_COLOR[store].up, ['p50', 'p99', 'p999']);
  }
  // The bare route ran beside each store's levels: the first store's runs stand for it.
  const bareLevels = (r.webhook?.levels ?? []).filter((l) => l.store === (r.webhook?.levels[0]?.store ?? 'files'));
  add(bareLevels, 'bare', 'bare Fastify', '#2ca02c', ['p50', 'p99', 'p999']);
  // The floor of each store: the bare route with one durable write on it.
  for (const store of STORES) {
    const floors = (r.webhook?.levels ?? []).filter((l) => l.store === store && l.floor);
    add(floors, 'floor', `floor ${store}`, FLOOR_COLOR[store], ['p99']);
  }
  for (const store of STORES) {
    const down = r.outage?.stores.find((s) => s.store === store)?.down ?? [];
    add(down, 'api', `API ${store}, stopped`, STORE_COLOR[store].down, ['p50', 'p99']);
  }
  const levels = r.options.levels;
  return lineChartSvg(series, {
    title: 'Webhook acknowledgement latency against offered load, per callback inbox',
    subtitle: `files or postgres inbox, Temporal up or stopped; open loop; ${r.options.levelSeconds} s per level; ${r.machine.cores} cores`,
    xLabel: 'callbacks per second (offered, fixed rate)',
    yLabel: 'latency (log scale)',
    xTicks: levels,
    height: Math.max(520, 100 + series.length * 20),
    marks: [
      { y: 10, label: 'target p99 at 500/s: 10 ms', color: '#ff7f0e' },
      { y: 100, label: 'limit at 1000/s: 100 ms', color: '#9467bd' },
    ],
  });
}

function abRow(x: AbResult): string {
  const range = (v: number[]) => [Math.min(...v), Math.max(...v)] as const;
  const [aLo, aHi] = range(x.a.values);
  const [bLo, bHi] = range(x.b.values);
  const mean = (v: number[]) => v.reduce((p, q) => p + q, 0) / v.length;
  const change = (mean(x.b.values) - mean(x.a.values)) / mean(x.a.values);
  const overlap = Math.max(aLo, bLo) <= Math.min(aHi, bHi);
  const bBetter = x.better === 'lower' ? bHi < aLo : bLo > aHi;
  const verdict = overlap
    ? `no difference beyond the noise (${change >= 0 ? '+' : ''}${(change * 100).toFixed(0)} % on the means)`
    : `**${bBetter ? 'B' : 'A'} better** (B ${change >= 0 ? '+' : ''}${(change * 100).toFixed(0)} % against A, on the means)`;
  const fmt = (v: number[]) => v.map((n) => `${n.toFixed(1)} ${x.unit}`).join(', ');
  return `| ${x.what} | ${x.a.label} | ${x.b.label} | ${fmt(x.a.values)} | ${fmt(x.b.values)} | ${verdict} |`;
}

/** This run's figures of the inbox, for the table of changes (the "after" side). */
/** Whether the postgres inbox ran on the synchronous cluster (runs from before the option ran on one server). */
const synchronous = (r: Results) => (r.options.database ?? 'single') === 'synchronous';

/** The PostgreSQL of the postgres inbox, in words. */
function databaseWords(r: Results): string {
  return synchronous(r)
    ? 'a primary with a synchronous standby under Patroni (etcd, HAProxy in front), as `npm run start:production` runs it: a commit returns once the standby has the WAL on disk'
    : 'one PostgreSQL server (`--postgres single`): a commit waits for its own disk alone';
}

/** The API alone's p99 at 500/s and 1,000/s on each store, in this run. */
/** This run's floors at 500/s (p99) and under bursts (p99), for the changes table. */
function floorAfter(r: Results): string {
  const parts = STORES.flatMap((store) => {
    const l = levelOf(r, store, 'up', 500)?.floor;
    const b = burstOf(r, store, 'up')?.floor;
    if (!l && !b) return [];
    return [`${store}: 500/s p99 ${l ? ms(l.latencyMs.p99) : '–'}, bursts of 200 p99 ${b ? ms(b.p99) : '–'}`];
  });
  return parts.length ? `This run: ${parts.join('; ')} (section 1)` : 'Not measured in this run';
}

function aloneAfter(r: Results): string {
  const parts = STORES.flatMap((store) => {
    const [a, b] = [aloneAt(r, store, 500), aloneAt(r, store, 1000)];
    return a || b ? [`${store} ${ms(a?.latencyMs.p99)} and ${ms(b?.latencyMs.p99)}`] : [];
  });
  return parts.length > 0
    ? `the API alone p99 at 500/s and 1,000/s: ${parts.join('; ')}`
    : 'the API alone not measured';
}

function inboxAfter(r: Results, stores: InboxStore[] = STORES): string {
  const parts: string[] = [];
  for (const store of stores) {
    const a = levelOf(r, store, 'up', 500);
    const b = levelOf(r, store, 'up', 1000);
    const d = levelOf(r, store, 'down', 500);
    const o = r.outage?.stores.find((s) => s.store === store);
    if (!a && !b && !d) continue;
    parts.push(
      `${store}: Temporal up 500/s p99 ${ms(a?.api.latencyMs.p99)}, 1000/s max ${ms(b?.api.latencyMs.max)}; ` +
        `stopped 500/s p99 ${ms(d?.api.latencyMs.p99)}` +
        (o ? `; drained at ${per(o.drainRate)}` : ''),
    );
  }
  return parts.length
    ? `This run (section 1): ${parts.join('. ')}.`
    : 'See section 1 of a run with the webhook phases.';
}

/** Changes made on the strength of the bench, measured while developing it (before and after, same machine). */
function developmentTuning(r: Results): string[] {
  return [
    '### What was changed, and what it was worth',
    '',
    'Measured while building this bench (2026-11-21, this machine, load average 3 to 8 from other work): ' +
      'consecutive `npm run bench` runs before and after each change. Code changes cannot be switched within one ' +
      'run; each row gives both sides as measured.',
    '',
    '| Change | Before | After |',
    '|---|---|---|',
    '| **Callbacks are acknowledged from a durable inbox, not from a signal** (src/inbox/, ' +
      'src/api/routes/webhooks/exam-service.ts). Before, the webhook signalled the journey and waited up to a signal budget ' +
      '(`WEBHOOK_SIGNAL_BUDGET_MS`, 50 ms) before it spooled the callback to a file of its own; now every callback ' +
      'is appended to the callback inbox (files or PostgreSQL, group-committed) and answered, and the forwarder ' +
      'signals in the background. | The signal budget and spool (the full run of 2026-11-21 08:14 UTC, load ' +
      'average 5.55): Temporal up 500/s p99 235.3 ms, 1000/s max 426.2 ms; Temporal stopped 500/s p99 11.2 ms, ' +
      '1000/s max 52.5 ms; the spooled backlog drained at 251/s after the restart | ' +
      `${inboxAfter(r)} |`,
    '| **The forwarder sends no new signal while the webhook is slow** (src/inbox/forwarder.ts, ' +
      'src/inbox/ack-pressure.ts; 2026-11-24). Before, pressure (one answer over 5 ms in the last 250 ms) only cut the ' +
      'signals to one in flight every 20 ms: about 50 a second, each costing the Temporal server and the worker ' +
      'several milliseconds of CPU beside the load. Now three slow answers within a second hold every fresh ' +
      'callback in the inbox until the surge has passed (at most `FORWARDER_MAX_DEFER_MS`, 10 s); the signal thread ' +
      'loads before the API listens (its start took a core for a second beside the first callbacks); the file ' +
      'inbox holds waiting callbacks as JSON text, not object graphs; the next segment is zero-filled a megabyte at ' +
      'a time. | The full run of 2026-11-23 16:12 UTC: 500/s p99 files 37.7 ms, PostgreSQL 19.8 ms, the Temporal ' +
      "server 45 % and the worker 32 % of a core during the load, the API's event loop waiting for a CPU 22 %; bursts " +
      'of 200 with Temporal up p99 133.0 and 133.5 ms, PostgreSQL with Temporal stopped 125.7 ms (3 of 4 missed) | ' +
      'The full run of 2026-11-24 03:04 UTC: 500/s p99 files 12.2 ms, PostgreSQL 19.7 ms; bursts of 200 met in ' +
      'all four conditions (p99 67.7 to 83.4 ms) |',
    '| **A surge holds the forwarder until it has passed, and the API runs with one V8 background thread** ' +
      '(src/inbox/ack-pressure.ts, src/api/node-flags.ts; 2026-11-24). Per-request traces of the load generator beside ' +
      "the API's threads (schedstat) and its inbox writes showed the stalls at 500/s coming every 1.1 s: the " +
      'pressure ended at the first second without three slow answers (quiet because the forwarder had stopped), ' +
      'the forwarder sent 10 to 60 signals, the Temporal server and the worker took both cores for 100-300 ms, and ' +
      'the webhook stalled 20-30 ms. Now the surge lasts while callbacks keep coming at half the rate it began at ' +
      '(at most `FORWARDER_MAX_DEFER_MS` after the answers were last slow). ' +
      "And V8's four background threads (collector helpers, optimizing compiler), runnable at once after a burst " +
      "of work, kept the API's event loop waiting for a CPU: `--v8-pool-size=1` wherever the API is started. | " +
      'The full run of 2026-11-24 03:04 UTC: 500/s p99 files 12.2 ms, PostgreSQL 19.7 ms; 100/s p99 10.2 and ' +
      '18.7 ms; quick paired runs (files, 500/s) with four V8 threads p99 12.7 and 7.1 ms, p99.9 22.2 and 17.1 ms | ' +
      'This run: the Targets table above and section 1; quick paired runs with one V8 thread p99 7.0 and 6.4 ms, ' +
      'p99.9 9.6 and 8.3 ms |',
    '| **`WORKER_MAX_CACHED_WORKFLOWS` default 1,000 instead of 2,000** (src/config.ts). Each cached journey costs the ' +
      'worker 0.2 to 0.3 MiB, and the cache, not the number of parked journeys, sets its RSS (the in-run A/B in ' +
      'section 3 repeats the comparison). Patients wake their ' +
      "journeys over days, so a wake rarely finds its journey cached either way; the cache's use is the burst of " +
      'tasks right after a start and a quick 1 -> 2 -> 3, which 1,000 covers at this throughput. | 7,652 parked ' +
      '(the first full run, 07:46 UTC): RSS 1.15 GiB, peak 1.21 GiB, over the 1 GiB target; waking cached journeys ' +
      '42.9/s, evicted 21.4/s | 3,000 parked: RSS 716 MiB once the cache was full (1,198 parked), 785 MiB at 3,000; ' +
      'waking cached journeys 99/s, evicted 64/s (a quieter moment) |',
    '| **The PostgreSQL inbox commits on a synchronous standby** (scripts/lib/stack/postgres-cluster.ts; ' +
      '2026-11-27). The production topology runs PostgreSQL as a primary with a synchronous standby (Patroni), so ' +
      'the loss of one database host loses no acknowledged callback; a commit now waits for the standby to flush ' +
      "the WAL as well as the primary, and the bench's postgres inbox runs on the same shape, through HAProxy. | " +
      'One server (the full run of 2026-11-26 16:24 UTC): Temporal up 500/s p99 20.6 ms, 1000/s max 50.5 ms; ' +
      'stopped 500/s p99 7.6 ms; drained at 318/s; one INSERT alone p50 0.2 ms, p99 0.7 ms | ' +
      `${synchronous(r) ? inboxAfter(r, ['postgres']) : 'This run was on one server (`--postgres single`).'} |`,
    "| **The bench's Temporal dev server no longer re-reads its search attributes for every call, and keeps its " +
      "store in memory** (scripts/lib/stack/parts.ts, bench/run.ts `--temporal-store`; 2026-11-29). The CLI's " +
      '`start-dev` forces `system.forceSearchAttributesCacheRefreshOnRead`, so every start, signal and visibility ' +
      "write read the cluster's metadata from SQLite again (43,514 reads in one shape of section 6's last run), CPU " +
      "taken from the webhook on the same two cores; and its SQLite file shared the inbox's disk, which a " +
      "deployment's Temporal does not. | The full run of 2026-11-29 05:57 UTC: files 500/s p99 34.8 ms, 1,000/s " +
      'max 251.6 ms | ' +
      '`npm run bench -- --only webhook --stores files --levels 500,1000` (14:02 UTC): the refresh off, store on ' +
      'disk: 500/s p99 7.3 ms, 1,000/s max 26.5 ms; in memory: 6.8 ms, 14.5 ms |',
    '| **The forwarder yields to a burst the webhook is taking** (src/inbox/callback-path.ts `BURST_TAKING`, ' +
      'src/inbox/forwarder.ts `webhookBusy`; 2026-11-29). Pressure is learnt from answers, which a burst gives at ' +
      "its end; woken by the burst's first write, the forwarder claimed and opened the next entries on the same " +
      'event loop meanwhile. Now, with 16 or more callbacks read and waiting for their write at once, it neither ' +
      'claims nor starts a signal until they are answered (at most a second at a time). | `npm run bench -- --only ' +
      'alone,webhook,burst --stores postgres` (15:29 UTC): bursts of 200 with Temporal up p99 144.1, 140.3 and 116.8 ' +
      'ms; on new connections 131.6, 98.7 and 96.4 ms | The same (15:45 UTC): 70.0, 73.0 and 86.6 ms; on new ' +
      "connections 75.5, 117.4 and 112.4 ms (the bare route's on new connections 70.2 ms) |",
    '| **Settles ride with appends** (src/inbox/files.ts, src/inbox/postgres.ts, `INBOX_SETTLES`; 2026-11-29). The ' +
      "record that the forwarder signalled an entry made the webhook's next append wait for a flush of its own " +
      '(files: a write; PostgreSQL: a commit waiting for the synchronous standby). A lost settle loses nothing (the ' +
      'entry is signalled again and the journey knows its delivery id), so the files inbox writes settles in the ' +
      "next append's record (on their own only after 100 ms without a write) and the PostgreSQL claim commits with " +
      '`synchronous_commit = off`. | `INBOX_SETTLES=durable npm run bench -- --only alone,webhook` (18:17 UTC), the ' +
      'API alone p99: files 500/s 8.3 ms, 1,000/s 8.4 ms; postgres 500/s 11.1 ms, 1,000/s 50.8 ms | The same ' +
      'deferred (18:05 and 18:22 UTC): files 5.0 and 3.9 ms, 5.2 and 4.4 ms; postgres 11.0 and 9.9 ms, 15.8 and ' +
      '22.5 ms. With Temporal up, postgres: 500/s p99 22.2 and 20.4 ms durable, 24.3, 23.8 and 25.2 ms deferred ' +
      '(its forwarder holds back at this level: settles hardly run); bursts of 200 (`--only webhook,burst ' +
      '--stores postgres`, 19:19 and 19:22 UTC) p99 71.2, 89.9, 75.0 and on new connections 88.1, 147.9, 86.2 ms ' +
      `durable; 66.5, 60.1, 87.6 and 64.2, 83.9, 53.9 ms deferred. This run: ${aloneAfter(r)} |`,
    '| **The patient key file takes new keys and bindings in journals** (src/patient-keys/file-store.ts, ' +
      "src/patient-keys/line-journal.ts; 2026-11-29). Each new patient's key rewrote the whole file on the API's " +
      'event loop, and each reader (the worker, the codec server) read it whole again for each patient it had not ' +
      "seen; each bind synced the bindings' journal on its own. Now a new key is a line appended to `<file>.keys`, " +
      'which the file takes in at its next rewrite, its start and its stop; keys and binds that arrive during a ' +
      'sync share the next. | With 1,000 and 3,000 keys: an insert 3.5 and 11.6 ms of CPU, a first read 1.5 and ' +
      '4.1 ms; 40 binds at once, 40 syncs | With 1,000 and 10,000 keys: an insert 426 and 328 µs, a first read ' +
      "374 and 293 µs (section 7); 40 binds or keys at once, at most 3 syncs (the key store's tests) |",
    '| **Each acknowledgement level and burst also runs against its floor** (bench/bare-server.ts `BARE_STORE`, ' +
      "bench/phases/webhook.ts; 2026-11-29): the bare route storing each callback's body with one durable write on " +
      "the store (the inbox's segment log, or an INSERT committed on the synchronous standby too), callbacks " +
      'arriving during a write sharing the next, and nothing else. A missed acknowledgement target names it and ' +
      'how far the API is above it, and a target per store asks that every missed one be within 3x of it. | ' +
      'The floor was estimated from the durable write alone on an idle stack and the inbox histograms | ' +
      `${floorAfter(r)} |`,
    '| **Throughput is measured in two mirrored rounds, after a warm-up that has completed** (bench/phases/' +
      'throughput.ts; 2026-11-29). One run of each kind, the journeys last, five warm-up journeys started and not ' +
      "waited for: the journeys' first run went at three quarters of the rate of a second (the API's and the " +
      "worker's code still being compiled), and a drift of the server over the phase weighed on one side. Now raw, " +
      'visible, GFE, then GFE, visible, raw, each row pooling its runs, after 30 warm-up journeys that have ' +
      'completed. | `npm run bench -- --only throughput` (18:30 UTC), five warm-ups: GFE 19.9 then 26.2/s, raw ' +
      '32.4 and 34.3/s (68 % pooled); the full run of 15:54 UTC (one round): 60 % | The same with the warm-up ' +
      `(18:32 UTC): GFE 25.1 and 26.5/s, raw 36.3 and 32.4/s (75 %). This run: ${
        r.throughput ? `${pct(r.throughput.ratio)}` : 'not measured'
      } |`,
    "| **Throughput's runs wait on counts of their own workflows** (bench/phases/throughput.ts; 2026-11-30). Each " +
      "run listed every workflow its query matched, earlier runs' too, every second until its last one closed: the " +
      'server paid more for that list with each run, and the raw kinds, whose query matched every raw run, paid ' +
      "most, on the same cores as the workflows measured. Now two counts of the run's own workflows (started since " +
      'its first start) each second, and one list at the end. | `npm run bench -- --only throughput` (03:53 UTC): ' +
      'raw 25.5 and 20.3/s, visible 20.1 and 19.0/s, GFE 18.4 and 15.6/s: 75 % | The same at 03:57 UTC: raw 29.4 ' +
      `and 28.6/s, visible 22.0 and 22.5/s, GFE 18.6 and 19.2/s: 65 %: the runs of a kind agree, and the ceiling is higher. This run: ${
        r.throughput ? `${pct(r.throughput.ratio)}` : 'not measured'
      } |`,
    "| **A journey whose start names today's rules records no patch marker** (src/workflows/journey-rules.ts; " +
      "2026-11-30). The API names the rules in the journey's input; a worker that knows them runs them without " +
      '`patched()`: no marker event and no upsert of TemporalChangeVersion, a write to the visibility store. Replayed, ' +
      'the markers of a history still decide first (a first task run by an earlier release during a ramp). | ' +
      '`npm run bench -- --only throughput` (03:57 UTC): GFE 18.6 and 19.2/s, the server 45.9 and 46.1 ms and the ' +
      'worker 33.1 and 31.2 ms of CPU per journey: 65 % of raw | The same (04:49 and 04:53 UTC): GFE 21.8 and 22.4/s, ' +
      'then 23.2 and 23.9/s; the server 35.0 to 38.6 ms, the worker 25.0 to 27.2 ms per journey: 73 % and 82 % of ' +
      `raw (the raw runs 26.1 to 31.7/s). This run: ${r.throughput ? `${pct(r.throughput.ratio)}` : 'not measured'} |`,
    '| **Through a burst the forwarder holds its signals** (src/inbox/ack-pressure.ts `burst`, src/inbox/forwarder.ts; ' +
      '2026-11-30). Under pressure the adaptive policy kept two signals in flight: at 500/s the forwarder signalled ' +
      'about 250 a second through the level, and each woke the Temporal server and the worker (together about 85 % ' +
      "of a core) on the webhook's cores, its event loop waiting for a CPU 14-19 % of the time. Now pressure during " +
      'a burst (callbacks at twice the rate of the ten seconds before they rose, for at most 30 s) holds new signals, ' +
      'each callback at most `FORWARDER_MAX_DEFER_MS`, and the inbox drains at the full limit after it; the rise is ' +
      'measured from before it began, since the answers to a rise from quiet turn slow seconds into it. The earlier ' +
      'adaptive policy is `FORWARDER_POLICY=steady`. | `BENCH_API_ENV=\'{"FORWARDER_POLICY":"steady"}\' npm run ' +
      'bench -- --only webhook,burst` (10:43 and 11:02 UTC): 500/s p99 files 24.7 and 25.8 ms, PostgreSQL 25.2 and ' +
      '61.3 ms; 1,000/s max files 469.4 and 20.3 ms, PostgreSQL 77.2 and 174.5 ms; bursts of 200 on new connections ' +
      'p99 88.1 to 178.7 ms (5 of 12 over 100 ms); the last callback of the 500/s level applied 7.6 s (files) and 13.3 s ' +
      '(PostgreSQL) after its answer | The same with the default (10:53 UTC): 500/s p99 files 5.5 ms, PostgreSQL ' +
      '17.5 ms (its floor 7.8 ms); 1,000/s max 31.9 and 31.8 ms; the Temporal server and the worker 9 % and 7 % of a ' +
      'core through the 500/s level; bursts of 200 on new connections p99 65.2 to 97.9 ms (none over 100 ms); the ' +
      "500/s level's last callback applied 13.4 s (files) and 13.6 s (PostgreSQL) after its answer, the 1,000/s " +
      "level's 20.6 s against 19.8 s |",
    "| **The forwarder's cost is measured in one process too** (bench/ack-layers.ts; 2026-11-29), as the " +
      "other layers': the API with it running, each round until it has signalled and settled every callback, " +
      'against the API without it. Across processes it was the difference of two noisy loads. | The full run of ' +
      '15:54 UTC: 296 µs, 16.6 %, with the two every-layer runs 397 µs apart | `STORES=files,postgres ' +
      'LAYERS=forwarder node --import tsx bench/ack-layers.ts` (18:28 UTC): files 64.2 µs (4.8 %), postgres 156.4 ' +
      'µs (7.1 %); this run: see the layers table |',
    '',
    'Tried and **not** adopted (no difference beyond the noise, or worse):',
    '',
    '- Two PostgreSQL inbox inserts under way at once instead of one (a callback arriving during an insert starts ' +
      'the next instead of waiting for it; PostgreSQL flushes concurrent commits together): 500/s p99 25.1 ms ' +
      'against 25.7 ms with one (`--only alone,webhook,burst --stores postgres`, 15:29 and 15:37 UTC), and two ' +
      "inserts may commit a journey's callbacks out of their arrival order, which the inbox promises.",
    "- `UV_THREADPOOL_SIZE` 32 or 64 for the API (more threads for the spool's fsyncs, in the design before the " +
      "inbox): 500/s p50 329 ms and 664 ms against 435 ms and 2.03 s with the default 4, in runs where the API's " +
      'event loop waited for a CPU half the time: the threads were not what it waited for. (The inbox writes one ' +
      'file per group commit, one at a time, so it needs fewer.)',
    '- Dev-server SQLite `synchronous=off` instead of `normal`, and one task-queue partition instead of four ' +
      '(`matching.numTaskqueue{Read,Write}Partitions=1`): raw ceiling 18.5 and 20.0/s, and 26.7 and 21.0/s, against ' +
      "22.6 and 32.0/s with the stack's pragmas (300 raw workflows, fresh servers, interleaved): noise, so " +
      'scripts/local-stack.ts keeps `journal_mode=wal`, `synchronous=normal`. `npm run bench -- --extra-ab` repeats ' +
      'the pragma comparison in a run.',
    "- The caller's HTTP keep-alive: at 100/s, p50 5.1 and 4.0 ms with keep-alive against 4.9 and 4.2 ms with a new " +
      'connection per callback (loopback: a connection costs next to nothing here; `--extra-ab` repeats it).',
    '- A V8 heap cap for the worker (`NODE_OPTIONS=--max-old-space-size=384`): 3,000 parked with the 1,000 cache ' +
      'took 667 MiB against 785 MiB without it; lower, but a cap turns a burst of large attachments (up to 5 MiB ' +
      'each, 100 activities at once) into an out-of-memory crash, so it is left to deployments that know their load.',
    "- The worker's sizes (`WORKER_MAX_CONCURRENT_*`): the worker used well under a core in every phase; the Temporal " +
      'server, not the worker, set the pace (see the CPU shares above).',
  ];
}

/** Worker RSS per cached workflow (slope while the cache fills) and the plateau once it is full. */
export function rssModel(w: WaitingResults): { perWorkflowMiB: number; plateauMiB: number | undefined } | undefined {
  const filling = w.samples.filter((s) => s.parked > 50 && s.parked < w.cacheSize * 0.9 && Number.isFinite(s.rss));
  if (filling.length < 3) return undefined;
  const mx = filling.reduce((a, s) => a + s.parked, 0) / filling.length;
  const my = filling.reduce((a, s) => a + s.rss, 0) / filling.length;
  let num = 0;
  let den = 0;
  for (const s of filling) {
    num += (s.parked - mx) * (s.rss - my);
    den += (s.parked - mx) ** 2;
  }
  const full = w.samples.filter((s) => s.parked > w.cacheSize * 1.2 && Number.isFinite(s.rss));
  return {
    perWorkflowMiB: den > 0 ? num / den / 2 ** 20 : NaN,
    plateauMiB: full.length ? Math.max(...full.map((s) => s.rss)) / 2 ** 20 : undefined,
  };
}

/** Where the CPU went during a run, in words: each part's share of one core (of `cores`). */
function cpuWords(cpu: Record<string, number>, cores: number): string {
  const parts = [
    ['the Temporal server', 'temporal'],
    ['the worker', 'worker'],
    ['PostgreSQL', 'postgres'],
    ['the API', 'api'],
    ['the sandbox', 'sandbox'],
    ['the bench process (the client)', 'bench'],
  ]
    .filter(([, k]) => cpu[k!] !== undefined && cpu[k!]! >= 0.005)
    .map(([label, k]) => `${label} ${cpuCell(cpu, k!)}`);
  const total = ['temporal', 'worker', 'postgres', 'api', 'sandbox', 'bench'].reduce((a, k) => a + (cpu[k] ?? 0), 0);
  return `${parts.join(', ')} of a core (together ${pct(total)} of the machine's ${cores * 100} %)`;
}

/** What one durable write of a store is, as its probe measured it (runs before the segment log wrote whole files). */
function storeWrite(r: Results, store: InboxStore): string {
  if (store === 'postgres')
    return synchronous(r)
      ? 'one INSERT committed (the WAL flushed on the primary and on its synchronous standby)'
      : 'one INSERT committed (the WAL flushed)';
  return probeOf(r, store)?.method === 'log'
    ? 'one record appended to the log (a positioned write to a preallocated segment opened O_DSYNC)'
    : 'a callback-sized file written durably (temp file, fsync, rename, folder fsync: the probe of this run, heavier than the log append the inbox does)';
}

/** The measured facts behind a level's ack latency, for an explanation. */
function levelFacts(r: Results, l: WebhookLevel): string {
  const wait = l.cpu['api/main-waiting-for-cpu'];
  const probe = probeOf(r, l.store);
  const alone = aloneAt(r, l.store, l.rate);
  const facts = [
    `the API's own time from request to answer (its histogram) had its p50 ${fmtBoundSeconds(l.serverAck.p50)} and p99 ` +
      `${fmtBoundSeconds(l.serverAck.p99)}`,
    wait !== undefined
      ? `its event loop was ready to run but **waiting for a CPU ${pct(wait)} of the time** (running ${cpuCell(l.cpu, 'api/main')})`
      : undefined,
    `CPU: ${cpuWords(l.cpu, r.machine.cores)}`,
    l.figures.gc
      ? `its event loop's longest delay ${ms(l.figures.loopDelayMax * 1000)}, its garbage collector's pauses ${fmtGc(l.figures)}`
      : undefined,
    `the inbox took the ${l.figures.accepted} callbacks in ${fmtBatch(l.batch)}`,
    probe
      ? `one durable write on its own (${storeWrite(r, l.store)}, the stack idle) takes p50 ${ms(probe.latencyMs.p50)}, p99 ${ms(probe.latencyMs.p99)}`
      : undefined,
    l.forwardRate !== undefined
      ? `${l.depthAfter} of the ${l.figures.accepted} callbacks were still waiting in the inbox at the load's end (the forwarder defers while the webhook is slow), and it signalled ${per(l.forwardRate)} from the level's start until the inbox was empty`
      : undefined,
    `the generator was late handing requests over by ${ms(l.api.sendLagMs.p99)} at p99`,
    l.bare ? `the bare route just before: p99 ${ms(l.bare.latencyMs.p99)}, max ${ms(l.bare.latencyMs.max)}` : undefined,
    l.floor
      ? `the floor (the bare route with one durable write on this store) just before: p99 ${ms(l.floor.latencyMs.p99)}, max ${ms(l.floor.latencyMs.max)}`
      : undefined,
    alone
      ? `the API alone (fake Temporal, nothing else running) at this rate on this store: p99 ${ms(alone.latencyMs.p99)}, max ${ms(alone.latencyMs.max)}`
      : undefined,
  ].filter((x): x is string => x !== undefined);
  return facts.join('; ');
}

/** Why a level missed its limit, from what else the run measured (several reasons may hold at once). */
function verdictFor(r: Results, l: WebhookLevel, q: 'p99' | 'max', limit: number): string {
  const probe = probeOf(r, l.store);
  const alone = aloneAt(r, l.store, l.rate);
  const down = levelOf(r, l.store, 'down', l.rate);
  const wait = l.cpu['api/main-waiting-for-cpu'] ?? 0;
  const stack = ['temporal', 'worker'].reduce((a, k) => a + (l.cpu[k] ?? 0), 0);
  const reasons: string[] = [];
  let cpu = false;
  let storage = !!probe && probe.latencyMs[q] >= limit;
  const writeAbove = writeP99Above(l);
  if (q === 'p99' && writeAbove * 2 >= limit) {
    storage = true;
    reasons.push(
      `the inbox's own writes during this level had their p99 over ${ms(writeAbove)} (its write histogram) and a ` +
        `callback can wait for two of them: the storage under this load sets a floor at about ${ms(limit)}`,
    );
  }
  if (probe && probe.latencyMs[q] >= limit) {
    reasons.push(
      `one durable write on its own already takes ${q} ${ms(probe.latencyMs[q])} on this disk and every 200 waits ` +
        'for one (group commit shares a write, it does not shorten it): the storage sets the floor',
    );
  }
  if (down && down.api.latencyMs[q] < limit) {
    cpu = true;
    reasons.push(
      `with Temporal stopped, the same API on the same inbox met it in this run (${q} ${ms(down.api.latencyMs[q])}, ` +
        `its event loop waiting for a CPU ${pct(down.cpu['api/main-waiting-for-cpu'] ?? 0)} of the time): what ` +
        `Temporal up adds is the Temporal server and the worker running beside the webhook (${pct(stack)} of a ` +
        "core here), on the same cores and, for the Temporal server's own store, the same disk" +
        (l.forwardRate !== undefined
          ? ` (the forwarder signalled ${l.figures.accepted - l.depthAfter} of the ${l.figures.accepted} ` +
            'callbacks during the load, holding the rest for the surge)'
          : ''),
    );
  }
  if (alone && alone.latencyMs[q] < limit) {
    cpu = true;
    reasons.push(
      `the API alone (same inbox, a fake Temporal, nothing else running) met it (${q} ${ms(alone.latencyMs[q])}): ` +
        'the store and the webhook code are not what stands in the way',
    );
  }
  if (wait >= 0.15) {
    cpu = true;
    reasons.push(
      `the API's event loop waited for a CPU ${pct(wait)} of the time: the ${r.machine.cores} cores were short`,
    );
  }
  if (reasons.length === 0) {
    const serverP99 = l.serverAck.p99 !== undefined ? l.serverAck.p99 * 1000 : undefined;
    reasons.push(
      serverP99 !== undefined && serverP99 < l.api.latencyMs[q] / 3
        ? `the API answered within ${fmtBoundSeconds(l.serverAck.p99)} at p99 once it had the request: the rest of ` +
            "the time the request waited outside the handler (the kernel's queue, an event loop busy with other work, " +
            'the generator itself)'
        : stack < 0.15
          ? `the time is inside the API (its own histogram agrees) while the forwarder held its signals back (the ` +
            `Temporal server and the worker ${pct(stack)} of a core together): the webhook's event loop and the ` +
            'inbox write, in pauses that hold up every request that arrives during them'
          : 'the time is inside the API (its own histogram agrees): the webhook, the inbox write and the forwarder share ' +
            'one event loop, which the load and the forwarder keep busy',
    );
  }
  const cores =
    'cores for the API that the Temporal server and the worker do not compete for (its own machine or a container ' +
    'with CPU reserved; the 2-core machine here holds the whole stack and the load generator)';
  const disk = 'storage with a faster flush (local NVMe with power-loss protection)';
  const fix =
    cpu || storage
      ? ` What would meet it: ${[cpu ? cores : '', storage ? disk : ''].filter(Boolean).join('; and ')}.`
      : '';
  return `Measured: ${reasons.join('; ')}.${fix}`;
}

/**
 * The inbox's writes during the level itself (the API's write histogram), against 3x the bare route: a callback that
 * arrives while a write is under way waits for the rest of it and then for the write that carries it.
 */
function underLoad(l: WebhookLevel, down: WebhookLevel | undefined): string {
  const w = l.batch.writeSeconds;
  if (!w || w.p99 === undefined) return '';
  const above = writeP99Above(l);
  const stopped = down?.batch.writeSeconds?.p99;
  return (
    `. During this level each write itself took p50 ${fmtBoundSeconds(w.p50)} and p99 ${fmtBoundSeconds(w.p99)}` +
    (above > 0 ? ` (over ${ms(above)})` : '') +
    ` (the API's write histogram)` +
    (stopped !== undefined && stopped < w.p99
      ? `, against p99 ${fmtBoundSeconds(stopped)} at the same rate with Temporal stopped (the Temporal server's own ` +
        'store, on the same disk here, flushes beside the inbox)'
      : '') +
    ', and a callback that arrives while a write is under way waits for the rest of it, then for the write that ' +
    'carries it'
  );
}

/** The bucket bound the level's write-time p99 is above (ms; 0 without the histogram, as in older results). */
function writeP99Above(l: WebhookLevel): number {
  return (bucketFloor(l.figures.write ?? {}, 0.99) ?? 0) * 1000;
}

/** The API alone (nothing else running) at 500/s against 3x the bare route, when it did not meet it either. */
function aloneAgainstBare(r: Results, store: InboxStore, bare: number): string {
  const alone = aloneAt(r, store, 500);
  if (!alone || alone.latencyMs.p99 <= 3 * bare) return '';
  return (
    `. The API alone (a fake Temporal, no Temporal server, worker or sandbox running) answered 500/s on this store ` +
    `with p99 ${ms(alone.latencyMs.p99)} = ${(alone.latencyMs.p99 / bare).toFixed(1)}x this bare route: the ` +
    "durable acknowledgement with its forwarder's claims and settles beside it, and no stack, was over 3x too"
  );
}

/** What stands in the way of each missed target, from this run's own figures. */
function analysis(r: Results): string[] {
  const out: string[] = [];
  for (const [rate, limit, q] of [
    [500, 10, 'p99'],
    [1000, 100, 'max'],
  ] as const) {
    for (const store of STORES) {
      const l = levelOf(r, store, 'up', rate);
      if (!l) continue;
      const value = l.api.latencyMs[q];
      if (value < limit) continue;
      out.push(
        `- **Webhook ack ${q} at ${rate}/s, Temporal up, ${store}** (${ms(value)} against ${ms(limit)}): ` +
          `${levelFacts(r, l)}. ${verdictFor(r, l, q, limit)}`,
      );
    }
  }
  for (const store of STORES) {
    const l = levelOf(r, store, 'up', 500);
    if (!l?.bare) continue;
    const bare = l.bare.latencyMs.p99;
    const ratio = l.api.latencyMs.p99 / bare;
    if (ratio <= 3) continue;
    const probe = probeOf(r, store);
    const down = levelOf(r, store, 'down', 500);
    const floor = probe?.latencyMs.p50;
    out.push(
      `- **Ack p99 against the bare route at 500/s, Temporal up, ${store}** (${ratio.toFixed(1)}x: ` +
        `${ms(l.api.latencyMs.p99)} against ${ms(bare)}): the bare route writes nothing; every 200 of the API waits ` +
        `for ${storeWrite(r, store)}` +
        (floor !== undefined
          ? `, which on its own (the stack idle) takes p50 ${ms(floor)} and p99 ${ms(probe!.latencyMs.p99)}: ` +
            (floor >= 3 * bare
              ? `the median durable write alone is ${(floor / bare).toFixed(1)}x the bare route's p99, so 3x the bare route is below the floor of a durable acknowledgement on this machine`
              : probe!.latencyMs.p99 >= 3 * bare
                ? `its p99 alone is ${(probe!.latencyMs.p99 / bare).toFixed(1)}x the bare route's p99, so a durable acknowledgement cannot keep its p99 within 3x here even with nothing else running`
                : `within 3x of the bare route even at its p99 with the machine idle`)
          : '') +
        underLoad(l, down) +
        aloneAgainstBare(r, store, bare) +
        (down
          ? `. With Temporal stopped the same API and inbox answered 500/s with p99 ${ms(down.api.latencyMs.p99)} = ` +
            `${(down.api.latencyMs.p99 / bare).toFixed(1)}x the bare route`
          : '') +
        `. ${verdictFor(r, l, 'p99', 3 * bare)}`,
    );
  }
  for (const temporal of ['up', 'down'] as const) {
    for (const store of STORES) {
      const b = burstOf(r, store, temporal);
      if (!b || (b.pooled.p99 < 100 && b.ok === b.sent)) continue;
      const lagMax = Math.max(...b.bursts.map((x) => x.sendLagMs.max));
      const probe = probeOf(r, store);
      const other = burstOf(r, store, temporal === 'up' ? 'down' : 'up');
      const alone = aloneBurst(r, store);
      const verdicts: string[] = [];
      if (temporal === 'up' && other && other.pooled.p99 < 100) {
        verdicts.push(
          `with Temporal stopped the same bursts met it (p99 ${ms(other.pooled.p99)}): what Temporal up adds is the ` +
            'Temporal server and the worker (and the forwarder inside the API) on the same cores',
        );
      }
      if (alone && alone.latencyMs.p99 < 100) {
        verdicts.push(`the API alone (nothing else running) met it (p99 ${ms(alone.latencyMs.p99)})`);
      }
      if (b.bare && b.bare.p99 >= 50) {
        verdicts.push(
          `the bare route alone takes ${pct(b.bare.p99 / 100)} of the limit: the generator and the HTTP exchange of ` +
            `${b.size} requests at once on ${r.machine.cores} cores, before the API does any work`,
        );
      }
      out.push(
        `- **Burst of ${b.size}, Temporal ${temporal === 'up' ? 'up' : 'stopped'}, ${store}** (p99 ${ms(b.pooled.p99)}, ` +
          `max ${ms(b.pooled.max)}; ${b.ok}/${b.sent} 200): each burst took ${b.writes.join(', ')} inbox writes ` +
          `(group commit: ${fmtBatch(b.bursts[0]?.batch)} for the first)` +
          (probe ? `, each write on its own p50 ${ms(probe.latencyMs.p50)}, p99 ${ms(probe.latencyMs.p99)}` : '') +
          `, so the store is a few milliseconds of it; the API's own request-to-answer time had its p99 ` +
          `${fmtBoundSeconds(b.serverAck.p99)}; handing ${b.size} requests to its connections kept the generator up ` +
          `to ${ms(lagMax)} late, and the same bursts against the bare route, which does nothing, took p99 ` +
          `${ms(b.bare?.p99)}` +
          (b.newConnections
            ? `; on ${b.size} new connections opened by the burst itself, the API p99 ${ms(b.newConnections.api.p99)} ` +
              `and the bare route p99 ${ms(b.newConnections.bare.p99)}`
            : '') +
          (other && !verdicts[0]?.startsWith('with Temporal')
            ? `; with Temporal ${temporal === 'up' ? 'stopped' : 'up'} the same bursts had p99 ${ms(other.pooled.p99)}`
            : '') +
          (alone && !(alone.latencyMs.p99 < 100)
            ? `; the API alone took them with p99 ${ms(alone.latencyMs.p99)}`
            : '') +
          '. The callbacks queue for the event loop (reading, validating, sealing, answering each request), not for ' +
          `the store${verdicts.length ? `. Measured: ${verdicts.join('; ')}` : ''}.`,
      );
    }
  }
  const t = r.throughput;
  if (t && t.ratio < THROUGHPUT_TARGET) {
    const c = (run: ThroughputRun, k: string) => (run.cpuPerJourney?.[k] ?? NaN) * 1000;
    // Cores each process kept busy during a run: CPU per journey times journeys per second.
    const cores = (run: ThroughputRun, k: string) => (c(run, k) / 1000) * run.perSecond;
    const total = (run: ThroughputRun) =>
      Object.keys(run.cpuPerJourney ?? {}).reduce((sum, k) => sum + cores(run, k), 0);
    const serverBound = cores(t.gfe, 'temporal') >= CPU_CEILING;
    const v = t.rawVisible;
    out.push(
      `- **Throughput** (${pct(t.ratio)} of the raw ceiling). During the GFE run the Temporal dev server kept ` +
        `${pct(cores(t.gfe, 'temporal'))} of a core busy and all the processes together ${total(t.gfe).toFixed(2)} of ` +
        `the ${r.machine.cores} cores (the raw run: ${pct(cores(t.raw, 'temporal'))} and ${total(t.raw).toFixed(2)}): ` +
        (total(t.gfe) >= CPU_CEILING * r.machine.cores
          ? "the machine's cores, shared by the server and the engine's own processes, are the limit. "
          : serverBound
            ? 'the server kept about a core busy, the most of any process (a Go process, it can use more when the ' +
              'cores are free: the raw runs show how much). '
            : 'no process and not the machine was at its CPU ceiling. ') +
        `CPU per journey: the server ${c(t.gfe, 'temporal').toFixed(1)} ms against ${c(t.raw, 'temporal').toFixed(1)} ms ` +
        'per raw workflow; what a GFE journey asks of it beyond its raw twin is what a clinic sees of it (search ' +
        'attributes written at each stage it can be found in: a start with them, then inviting, awaiting consultation ' +
        'and completed; the ' +
        'heartbeat that records the invite as being sent; encrypted payloads). Beside it: the worker ' +
        `${c(t.gfe, 'worker').toFixed(1)} ms against ${c(t.raw, 'worker').toFixed(1)} ms (HTTP to the service, the ` +
        `payload codec, the journey's own code), the API ${c(t.gfe, 'api').toFixed(1)} ms (the start request, the ` +
        `webhook, the forwarder) and the sandbox standing in for the exam service ${c(t.gfe, 'sandbox').toFixed(1)} ms, ` +
        'which the raw run does not have' +
        (t.gfe.cpuPerJourney?.bench !== undefined && t.raw.cpuPerJourney?.bench !== undefined
          ? `; the bench's own load (the starts it sends, the counts it polls) ${c(t.gfe, 'bench').toFixed(1)} ms ` +
            `against ${c(t.raw, 'bench').toFixed(1)} ms.`
          : '.') +
        (v && t.ratioVisible !== undefined
          ? ` Measured apart in the same run: the raw shape telling Temporal what a journey tells it (and nothing ` +
            `else) ran at ${v.perSecond.toFixed(1)}/s, **${pct(v.perSecond / t.raw.perSecond)} of the raw ceiling**, ` +
            `the server spending ${c(v, 'temporal').toFixed(1)} ms per workflow (the journeys: ` +
            `${c(t.gfe, 'temporal').toFixed(1)} ms), and the journeys ran at **${pct(t.ratioVisible)} of it**. ` +
            (v.perSecond / t.raw.perSecond < THROUGHPUT_TARGET
              ? "So on this server the clinic's view of a journey alone, with no engine around it, is already below " +
                'the 80 % target.'
              : `So the clinic's view of a journey alone takes ${pct(1 - v.perSecond / t.raw.perSecond)} of the ` +
                `ceiling and leaves ${pct(v.perSecond / t.raw.perSecond)}.`) +
            (c(t.gfe, 'temporal') <= c(v, 'temporal') * 1.05
              ? " The server does no more for a journey than for that twin; the rest of the gap is the engine's own " +
                'work (the worker, the API, the sandbox) on the same two cores, which a deployment gives CPUs of ' +
                "their own, apart from the Temporal server's."
              : '')
          : ''),
    );
  }
  const w = r.waiting;
  if (w && (w.rssPeak >= GIB || w.parked < w.n)) {
    const m = rssModel(w);
    if (w.parked < w.n) {
      out.push(
        `- **Waiting journeys**: only ${w.parked.toLocaleString('en')} of ${w.n.toLocaleString('en')} parked in the ` +
          `time this run had (${w.parkPerSecond.toFixed(1)}/s: the Temporal server's pace on this machine, ` +
          'four workflow tasks and two activities per journey).' +
          (m?.plateauMiB !== undefined
            ? ` The worker's RSS had reached its plateau (${m.plateauMiB.toFixed(0)} MiB, the sticky cache full), ` +
              'which more parked journeys do not raise: they are evicted, not held.'
            : ''),
      );
    }
    if (w.rssPeak >= GIB) {
      out.push(
        `- **Worker RSS** ${fmtBytes(w.rssPeak)}: the worker at rest takes ${fmtBytes(w.rssIdle)} (Node.js, the ` +
          `tsx loader, ${r.workerBundle ? 'the workflow bundle built ahead' : 'webpack and the workflows it bundled at start'}, ` +
          `the SDK core), the sticky cache of ${w.cacheSize.toLocaleString('en')} journeys the rest, with garbage ` +
          'the heap keeps for a while; a smaller `WORKER_MAX_CACHED_WORKFLOWS` lowers it (section 3 has the A/B).',
      );
    }
  }
  return out;
}

function latencyRow(l: WebhookLevel, which: 'api' | 'bare' | 'floor'): string {
  const x = which === 'api' ? l.api : which === 'bare' ? l.bare! : l.floor!;
  const label =
    which === 'bare'
      ? `bare Fastify (beside ${l.store})`
      : which === 'floor'
        ? `floor: bare Fastify + one durable write (${l.store})`
        : `API, ${l.store} inbox, Temporal ${l.temporal === 'up' ? 'up' : '**stopped**'}`;
  // The API's event loop: its longest delay over the level (monitorEventLoopDelay through prom-client, reset at each
  // scrape: the scrape before the level and the one after it bound it).
  const loop = which === 'api' && Number.isFinite(l.figures.loopDelayMax) ? ms(l.figures.loopDelayMax * 1000) : '–';
  return `| ${label} | ${l.rate}/s | ${ms(x.latencyMs.p50)} | ${ms(x.latencyMs.p99)} | ${ms(x.latencyMs.p999)} | ${ms(x.latencyMs.max)} | ${x.ok}/${x.scheduled} | ${loop} |`;
}

function webhookSection(r: Results, L: string[]): void {
  const w = r.webhook;
  const o = r.options;
  const down = (r.outage?.stores ?? []).flatMap((s) => s.down);
  const all = [...(w?.levels ?? []), ...down];
  if (!all.length && !r.burst?.runs.length) return;
  L.push(
    '## 1. Webhook acknowledgement and the callback inbox',
    '',
    "**How a callback is acknowledged.** The webhook checks the URL's token, reads the body and appends the " +
      "callback to the **callback inbox**, durably, before it answers 200 with the callback's `deliveryId`: the " +
      'files inbox (`INBOX_STORE=files`, the default) appends one record to its log (a positioned write to a ' +
      'preallocated segment opened O_DSYNC: one data flush, no file-system journal commit), ' +
      `the PostgreSQL inbox (\`INBOX_STORE=postgres\`) commits one INSERT (on ${databaseWords(r)}). ` +
      '**Group commit**: every callback that ' +
      'arrives while a write is under way waits for the next write and shares it, so the writes per second stay ' +
      "bounded by the store's write time whatever the callback rate. Nothing in the answer waits for Temporal: the " +
      '**forwarder** signals the entries to their journeys in the background (`FORWARDER_CONCURRENCY` signals in ' +
      "flight, 16 by default; each journey's callbacks one at a time, in order; backing off while Temporal is away, " +
      'up to `FORWARDER_MAX_BACKOFF_MS`). **Acknowledgements first**: three or more webhook answers within a ' +
      'second slower than `FORWARDER_ACK_PRESSURE_MS` (5 ms) begin a surge, which lasts while the callbacks keep ' +
      'coming at half the rate they came at when it began (at most `FORWARDER_MAX_DEFER_MS`, 10 s, after the ' +
      'answers were last slow); during it the forwarder sends no new signal ' +
      '(each costs the Temporal server and the worker several milliseconds of CPU that the webhook shares on this ' +
      'machine), except for callbacks that have waited `FORWARDER_MAX_DEFER_MS` (10 s); so under a surge the ' +
      'callbacks wait in the inbox and are applied once it passes (the *ack -> applied* figures below).',
    '',
  );
  if (w) {
    L.push(
      `**The runs.** ${w.journeys} GFE journeys were started through the clinic API, each for a patient of its own ` +
        "(so every callback is sealed under that patient's data key in the inbox and in the history), and parked in " +
        `\`awaiting_consultation\` (${s1(w.parkSeconds)}); the load is valid event 1 callbacks, each with its journey's HMAC token, for ` +
        "patient exams that are not the journeys' own: each journey records every callback (`foreign`, then " +
        '`duplicate`) and keeps waiting, so the load never runs out of journeys. For each inbox store in turn the ' +
        `API was restarted on it; each level: the bare Fastify route (bench/bare-server.ts: same process shape, route ` +
        `and text parser, answers 200 at once, writes nothing) first, then ` +
        (w.levels.some((l) => l.floor)
          ? "the **floor** of a durable acknowledgement (the same route storing each callback's body with one " +
            'durable write on the store before it answers, callbacks that arrive during a write sharing the next ' +
            'one as in the inbox, and nothing else: no token, sealing, forwarder or metrics), then '
          : '') +
        `the API, each ${o.warmupSeconds} s warm-up ` +
        `at the level's rate (the bare route and the floor at most 2 s) and ${o.levelSeconds} s measured; then the bench waited ` +
        'for the inbox to be empty before the next level, so each level starts from the same state.',
      '',
      '**Load generator**: bench/loadgen.ts, its own process, open loop with undici (' +
        `${w.connections} keep-alive connections): request *i* is due at t0 + i/rate whatever happened to the ` +
        'earlier ones, and its latency runs from that due time to the answer, so a stall of the server (or of the ' +
        'generator) is counted in full: no coordinated omission.',
      '',
    );
  }
  L.push('![Webhook latency against load](webhook-latency.svg)', '');
  if (all.length) {
    L.push(
      '| Target | Rate | p50 | p99 | p99.9 | max | 200s | Event loop delay max |',
      '|---|---|---|---|---|---|---|---|',
    );
    for (const l of w?.levels ?? []) {
      if (l.bare) L.push(latencyRow(l, 'bare'));
      if (l.floor) L.push(latencyRow(l, 'floor'));
      L.push(latencyRow(l, 'api'));
    }
    for (const l of down) L.push(latencyRow(l, 'api'));
    L.push(
      '',
      "*Event loop delay max*: the API's event loop's longest delay over the level, warm-up included (Node.js's " +
        '`monitorEventLoopDelay`, `nodejs_eventloop_lag_max_seconds`): a long synchronous task, or the loop waiting ' +
        'for a CPU.',
      '',
      "**The inbox and the forwarder at each level** (the API's own `/metrics`, over the warm-up and the measured " +
        'run): *writes*: inbox writes (group commits) and callbacks per write (`journey_api_inbox_append_batch_size`, ' +
        "bucket bounds); *server-side*: the API's own time from request to answer (`journey_api_webhook_ack_seconds`, " +
        'bucket bounds); *waiting after*: inbox depth when the load stopped; *forwarder*: signals per second from the ' +
        "level's start to the empty inbox; *generator lag*: how late the generator itself handed requests over; " +
        "*GC*: the garbage collector's pauses of the API's main thread over the level, warm-up included " +
        "(`nodejs_gc_duration_seconds`, every kind; its time in all against the level's, the longest a bucket bound).",
      '',
      '| Inbox | Temporal | Rate | Writes | Server-side p50 / p99 | Waiting after | Empty after | Forwarder | Generator lag p99 | GC |',
      '|---|---|---|---|---|---|---|---|---|---|',
    );
    for (const l of all) {
      L.push(
        `| ${l.store} | ${l.temporal === 'up' ? 'up' : 'stopped'} | ${l.rate}/s | ${fmtBatch(l.batch)} | ${fmtBoundSeconds(l.serverAck.p50)} / ${fmtBoundSeconds(l.serverAck.p99)} | ${l.depthAfter} | ${l.drainSeconds !== undefined ? s1(l.drainSeconds) : '–'} | ${per(l.forwardRate)} | ${ms(l.api.sendLagMs.p99)} | ${fmtGc(l.figures)} |`,
      );
    }
    const probes = w?.probes ?? [];
    if (probes.length) {
      L.push(
        '',
        '**One durable write on its own** (before the levels, the stack idle, one at a time: the floor under every ' +
          `200): ${probes
            .map(
              (p) =>
                `${p.store} (${storeWrite(r, p.store)}): p50 ${ms(p.latencyMs.p50)}, p99 ${ms(p.latencyMs.p99)}, max ${ms(p.latencyMs.max)} over ${p.n}`,
            )
            .join('; ')}.`,
      );
    }
    const applied = (w?.levels ?? []).filter((l) => l.applied);
    if (applied.length) {
      L.push(
        '',
        '**From acknowledgement to applied.** The generator kept the `deliveryId` of every 200 with the wall-clock ' +
          'time it got it; after all the runs, every parked journey was queried (`snapshot`, what GET ' +
          '/v1/journeys/{id} shows): `journey.events[]` records each delivery with its `deliveryId` and `receivedAt`, ' +
          "the workflow's clock when it applied the signal (same machine, same clock; millisecond resolution). " +
          `Every acknowledged delivery of each measured level was looked up (all ${w?.journeys ?? ''} journeys ` +
          'queried, no sampling). While the callback rate is above what the forwarder can signal, the backlog grows ' +
          'through the level, and so does this delay.',
        '',
        '| Inbox | Rate | Applied / acknowledged | p50 | p99 | max | Forwarder |',
        '|---|---|---|---|---|---|---|',
        ...applied.map(
          (l) =>
            `| ${l.store} | ${l.rate}/s | ${l.applied!.matched}/${l.applied!.acked} | ${ms(l.applied!.ms.p50)} | ${ms(l.applied!.ms.p99)} | ${ms(l.applied!.ms.max)} | ${per(l.forwardRate)} |`,
        ),
      );
    }
    L.push(
      '',
      'Where the CPU went during each API run (share of one core, /proc/<pid>/stat; PostgreSQL: ' +
        (synchronous(r)
          ? "both nodes' servers and their backends, Patroni, etcd and HAProxy"
          : 'the server and its backends') +
        "; *waiting*: time the API's event loop thread was ready to run but had no CPU, " +
        '/proc/<pid>/schedstat):',
      '',
      '| Inbox | Temporal | Rate | Temporal server | worker | PostgreSQL | API (all threads) | API event loop | API event loop waiting | load generator |',
      '|---|---|---|---|---|---|---|---|---|---|',
      ...all.map(
        (l) =>
          `| ${l.store} | ${l.temporal === 'up' ? 'up' : 'stopped'} | ${l.rate}/s | ${cpuCell(l.cpu, 'temporal')} | ${cpuCell(l.cpu, 'worker')} | ${cpuCell(l.cpu, 'postgres')} | ${cpuCell(l.cpu, 'api')} | ${cpuCell(l.cpu, 'api/main')} | ${cpuCell(l.cpu, 'api/main-waiting-for-cpu')} | ${l.api.generatorCpuSeconds !== undefined ? `${l.api.generatorCpuSeconds.toFixed(1)} s in all` : '–'} |`,
      ),
      '',
    );
  }
  const bursts = r.burst?.runs ?? [];
  if (bursts.length) {
    L.push(
      '### Bursts',
      '',
      `${bursts[0]!.size} callbacks, one per journey, all due at the same instant, from a fresh generator process ` +
        `whose ${bursts[0]!.size} keep-alive connections were opened just before (a GET /healthz on each), its ` +
        `code warmed first by ${GENERATOR_WARM_BURSTS} unrecorded bursts of the same requests against the bare route (a ` +
        'fresh Node process hands its first requests over several times slower; the exam service is a sender that ' +
        'has been running); ' +
        `${bursts[0]!.bursts.length} bursts per condition, the figures over all of them; with Temporal up after the ` +
        'levels (each burst into an empty inbox, once the Temporal server and the worker had gone quiet: under 30 % ' +
        'of a core together, the journeys done applying the levels before), and with Temporal stopped after the ' +
        'outage levels (the backlog ' +
        'waiting). *Writes*: inbox writes each burst took; *bare route*: the same bursts against the bare route just ' +
        'before, the floor of the generator and the HTTP exchange on this machine; *floor*: the same bursts against ' +
        'the bare route storing each callback with one durable write on the store (Temporal up); *new connections*: ' +
        `one more burst each whose ${bursts[0]!.size} connections the burst itself opened (API / bare route / floor).`,
      '',
      '| Inbox | Temporal | p50 | p95 | p99 | max | 200s | Writes per burst | Server-side p99 | Bare route p99 | Floor p99 | New connections p99 | Ack -> applied p50 / p99 |',
      '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
      ...bursts.map((b) => {
        const n = b.newConnections;
        const fresh = n ? `${ms(n.api.p99)} / ${ms(n.bare.p99)}${n.floor ? ` / ${ms(n.floor.p99)}` : ''}` : '–';
        return `| ${b.store} | ${b.temporal === 'up' ? 'up' : 'stopped'} | ${ms(b.pooled.p50)} | ${ms(b.pooled.p95)} | ${ms(b.pooled.p99)} | ${ms(b.pooled.max)} | ${b.ok}/${b.sent} | ${b.writes.join(', ')} | ${fmtBoundSeconds(b.serverAck.p99)} | ${ms(b.bare?.p99)} | ${ms(b.floor?.p99)} | ${fresh} | ${b.applied ? `${ms(b.applied.ms.p50)} / ${ms(b.applied.ms.p99)}` : '–'} |`;
      }),
      '',
    );
  }
  if (r.alone?.length) {
    L.push(
      '### The API alone',
      '',
      "The API's own share, measured before the stack started (bench/api-alone.ts): the real API (routes, callback " +
        'inbox, forwarder, metrics) in its own process with a fake Temporal client whose signals take ' +
        `${r.alone[0]!.signalMs} ms (the forwarder keeps up, so its claims and settles run beside the webhook), under ` +
        'the same open-loop generator, then bursts of 200 like the ones below; no Temporal server, worker or sandbox ' +
        'competing for the CPU.',
      '',
      '| Inbox | Rate | p50 | p99 | p99.9 | max | Writes | API event loop | API other threads | PostgreSQL |',
      '|---|---|---|---|---|---|---|---|---|---|',
      ...r.alone.map(
        (a) =>
          `| ${a.store ?? 'files'} | ${a.burst !== undefined ? `bursts of ${a.burst}` : `${a.rate}/s`} | ${ms(a.latencyMs.p50)} | ${ms(a.latencyMs.p99)} | ${ms(a.latencyMs.p999)} | ${ms(a.latencyMs.max)} | ${fmtBatch(a.batch)} | ${cpuCell(a.cpu, 'main')} | ${cpuCell(a.cpu, 'node')} | ${cpuCell(a.cpu, 'postgres')} |`,
      ),
      '',
    );
  }
  outageSection(r, L);
}

function outageSection(r: Results, L: string[]): void {
  const stores: StoreOutage[] = r.outage?.stores ?? [];
  const raw = r.rawSignals ?? [];
  if (!stores.length && !raw.length && !r.delivery) return;
  L.push('### Temporal stopped, then started again', '');
  if (stores.length) {
    L.push(
      'For each store: the dev server stopped (SIGTERM), the same levels sent (in the table above), then the bursts; ' +
        "then the dev server started again. *Resumed after*: from Temporal ready to the forwarder's first signal " +
        '(what was left of its backoff); *drain*: from that first signal to an empty inbox (every signal accepted ' +
        'by the server); *caught up*: from the empty inbox until the Temporal server and the worker went quiet ' +
        '(under 30 % of a core together), the journeys applying what the server had accepted.',
      '',
      '| Inbox | Waiting at the restart | Failed attempts while down | Temporal ready in | Resumed after | Drained in | Forwarded | Drain rate | Caught up after | CPU during the drain |',
      '|---|---|---|---|---|---|---|---|---|---|',
      ...stores.map(
        (s) =>
          `| ${s.store} | ${s.depthAtRestart} | ${s.failedAttempts} | ${s1(s.restartMs / 1000)} | ${s1(s.resumeSeconds)} | ${s1(s.drainSeconds)} | ${s.forwarded} | **${per(s.drainRate)}** | ${Number.isFinite(s.catchUpSeconds) ? s1(s.catchUpSeconds) : 'over 60 s'} | ${cpuWords(s.drainCpu, r.machine.cores)} |`,
      ),
      '',
    );
  }
  if (raw.length) {
    L.push(
      "**Temporal's own signal rate here**, for comparison: a signal loop from a client (the same signalJourney " +
        'call the forwarder makes, the same callbacks, encrypted by the same payload codec) against the parked ' +
        `journeys, ${raw[0]!.concurrency} signals in flight (the forwarder's concurrency), never two at once to one ` +
        'journey, no API in between; each loop after the server and the worker had gone quiet. *Journeys in turn*: ' +
        'one signal per journey, then the next (live traffic); *32 in a row*: a journey gets 32 signals one after ' +
        "another (the forwarder's lanes while it drains a backlog: a claim takes up to 32 entries per journey).",
      '',
      '| Measured after | Pattern | In flight | Signals | Time | Signals/s | One signal p50 / p99 | CPU |',
      '|---|---|---|---|---|---|---|---|',
      ...raw.map(
        (x) =>
          `| the ${x.after} drain | ${(x.perJourney ?? 1) === 1 ? 'journeys in turn' : `${x.perJourney} in a row`} | ${x.concurrency} | ${x.ok}${x.errors ? ` (+${x.errors} failed)` : ''} | ${s1(x.seconds)} | **${per(x.perSecond)}** | ${ms(x.latencyMs.p50)} / ${ms(x.latencyMs.p99)} | ${x.cpu ? cpuWords(x.cpu, r.machine.cores) : '–'} |`,
      ),
      '',
    );
    const lines = stores.flatMap((s) => {
      const inRow = rawRate(r, s.store, 32);
      const inTurn = rawRate(r, s.store, 1);
      if (!inRow && !inTurn) return [];
      return [
        `${s.store}: drained at ${per(s.drainRate)}` +
          (inRow
            ? `, ${pct(s.drainRate / inRow.perSecond)} of the raw loop in runs of 32 (${per(inRow.perSecond)})`
            : '') +
          (inTurn
            ? `, ${pct(s.drainRate / inTurn.perSecond)} of it with the journeys in turn (${per(inTurn.perSecond)})`
            : ''),
      ];
    });
    const live = (r.webhook?.levels ?? []).filter((l) => l.rate === Math.max(...r.options.levels) && l.forwardRate);
    for (const l of live) {
      const inTurn = rawRate(r, l.store, 1);
      if (inTurn) {
        lines.push(
          `${l.store} at ${l.rate}/s with Temporal up: the forwarder signalled ${per(l.forwardRate)} from the level's ` +
            `start to its empty inbox, ${pct(l.forwardRate! / inTurn.perSecond)} of the raw loop with the journeys in turn`,
        );
      }
    }
    const above = stores.some((s) => {
      const inRow = rawRate(r, s.store, 32);
      return inRow !== undefined && s.drainRate > inRow.perSecond;
    });
    if (lines.length) {
      L.push(
        `**The forwarder against Temporal's raw rate.** ${lines.join('; ')}.` +
          (above
            ? ' Above 100 %: the raw loop is not a hard ceiling. Its client (the bench process, a third of a core) ' +
              'competes with the Temporal server and the worker for the same cores; the two rates are of the same ' +
              'order, so the forwarder signals about as fast as this Temporal server takes signals here.'
            : ''),
        '',
      );
    }
  }
  const d = r.delivery;
  if (d) {
    L.push(
      `**Exactly once.** After every run, the ${d.journeys} parked journeys recorded ${d.recorded} distinct deliveries ` +
        `(snapshot query of each, ${s1(d.sweepSeconds)}); the API acknowledged ${d.acked} callbacks to them ` +
        `(warm-ups, bursts and outage included) and the raw signal loop sent ${d.rawSignals}: ` +
        `${d.missing === 0 ? '**none missing**' : `**${d.missing} missing**`}, ${d.unexpected} unexpected, ` +
        `${d.duplicateEntries === 0 ? 'none recorded twice' : `**${d.duplicateEntries} recorded twice**`}` +
        (d.unqueried
          ? `; **${d.unqueried} journeys could not be queried** (after retries; first error: ${d.unqueriedError ?? 'unknown'}), their callbacks unchecked`
          : '') +
        `. The API's ` +
        `counters over its processes: ${d.accepted} accepted, ${d.forwarded} signals forwarded` +
        (d.forwarded > d.accepted
          ? ` (${d.forwarded - d.accepted} sent again: at least once, the journey keeps one record per deliveryId)`
          : '') +
        `. History growth: ${d.perJourney.toFixed(0)} callbacks per journey by the end (the bench's journeys take ` +
        "up to 5,000 each, `JOURNEY_CALLBACK_FLOOD_LIMIT`; a deployment's ask for a person past 100).",
      '',
    );
  }
}

/**
 * The whole report, the webhook latency plot, and (after a sustained run) the plot of inbox depth over time, which the
 * report links as `sustainedSvgLink` (relative to the report's folder). `against`: this run's targets against the
 * last committed report's (bench/lib/regression.ts; read from git when not given).
 */
export function renderReport(
  r: Results,
  o2: { sustainedSvgLink?: string; against?: Comparison } = {},
): { markdown: string; svg: string; sustainedSvg?: string } {
  const m = r.machine;
  const o = r.options;
  const L: string[] = [];
  const loadLine = (l: Load | undefined) => (l ? `${l.one} / ${l.five} / ${l.fifteen}` : '–');
  const mean = (xs: number[] | undefined) => (xs?.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);
  const busy = mean(r.cpuBusy);
  const steal = mean(r.cpuSteal);
  const stealMax = r.cpuSteal?.length ? Math.max(...r.cpuSteal) : NaN;
  L.push(
    '# Performance',
    '',
    `Measured by \`${r.command}\` (bench/run.ts) on ${r.startedAt.slice(0, 16).replace('T', ' ')} UTC, in ` +
      `${r.durationSeconds !== undefined ? `${(r.durationSeconds / 60).toFixed(1)} minutes` : '(unfinished)'}. ` +
      'The bench starts its own stack (Temporal dev server, exam-service sandbox, worker, API, and a PostgreSQL for ' +
      `the API's PostgreSQL inbox, ${databaseWords(r)}: each a child process, on ports 22200-22399, ` +
      'apart from the ports the Temporal ' +
      'dev server picks for its internal services, and a fresh folder under /tmp), makes every comparison within ' +
      'the one run, stops everything it started and writes this file and [webhook-latency.svg](webhook-latency.svg). ' +
      'This file is generated: edit bench/lib/report.ts, not the text.',
    '',
    '## Machine',
    '',
    '| | |',
    '|---|---|',
    `| CPU | ${m.cpuModel}, ${m.cores} cores (/proc/cpuinfo) |`,
    `| Memory | ${m.memTotalGiB.toFixed(1)} GiB (MemTotal), ${m.memAvailableGiB.toFixed(1)} GiB available at the start |`,
    `| OS | ${m.kernel} |`,
    `| Node.js | ${m.node} |`,
    `| Temporal | ${m.temporalCli}; TypeScript SDK ${m.temporalSdk} |`,
    `| Fastify | ${m.fastify} |`,
    `| Load average (1/5/15 min) | before ${loadLine(r.loadBefore)}; after ${loadLine(r.loadAfter)} |`,
    `| CPU busy during the run | ${Number.isFinite(busy) ? pct(busy) : '–'} on average (whole machine, /proc/stat, every 5 s) |`,
    ...(Number.isFinite(steal)
      ? [
          `| CPU taken by the hypervisor (steal) | ${pct1(steal)} on average, ${pct1(stealMax)} in the worst 5 s: time ` +
            'the machine had work to run and another guest of its host ran instead, which slows every figure of that moment and none shows |',
        ]
      : []),
    `| CPU weights | ${cpuWeights(o)} |`,
    `| Temporal's store | ${temporalStoreLine(o)} |`,
    '',
  );
  const quiet = r.loadBefore.five < m.cores * 0.25;
  L.push(
    quiet
      ? 'The machine was quiet when the run began.'
      : `**The machine was busy with other work during this run** (load average ${r.loadBefore.five} over the 5 minutes before it, on ${m.cores} cores): absolute figures are pessimistic, and the comparisons, made in the same run, are what to read.`,
    '',
  );
  if (r.errors.length) {
    L.push('**Errors in this run:**', '', ...r.errors.map((e) => `- ${e}`), '');
  }

  // ---- targets ----
  const t = targets(r);
  if (t.rows.length) {
    L.push('## Targets', '', '| Target | This run | |', '|---|---|---|');
    for (const row of t.rows) L.push(`| ${row.target} | ${row.figure} | ${row.verdict} |`);
    L.push('');
  }
  const why = analysis(r);
  if (why.length) L.push('### What stands in the way', '', ...why, '');
  // Against the last committed report (bench/lib/regression.ts), when there is one.
  L.push(...comparisonMarkdown(o2.against ?? compareWithCommitted(t.rows, r)));

  // ---- webhook, bursts, the API alone, the outage ----
  webhookSection(r, L);
  if (r.layers?.runs.length) {
    L.push('');
    L.push(...layersSection(r.layers));
  }

  // ---- throughput ----
  if (r.throughput) {
    const x = r.throughput;
    L.push(
      '## 2. Journey throughput',
      '',
      `${
        x.gfe.runsPerSecond
          ? `${x.gfe.n / x.gfe.runsPerSecond.length} GFE journeys in each of ${x.gfe.runsPerSecond.length} runs`
          : `${x.gfe.n} GFE journeys`
      } started through the API (\`POST /v1/journeys\` with an Idempotency-Key, ` +
        `${x.concurrency} requests in flight), each completed by the sandbox's simulated provider calling event 1 ` +
        `back through the webhook after ${x.providerDelayMs} ms (test mode). Against, in the same run, the raw ceiling ` +
        "of this server: bench/raw-workflows.ts has a GFE journey's plain shape (two activities for the exam list " +
        'and the invite, a timer, one signal: the shape the journey had before its exam list became a local ' +
        `activity) with empty activities whose "provider" signals after the same ${x.providerDelayMs} ms, no HTTP, ` +
        'no payload encryption, no search attributes, no patch marker, on its own worker and task queue.',
      '',
      '| Run | Completed | Wall | Journeys/s | Time to complete p50 | p99 | Start call p50 / p99 | CPU per journey |',
      '|---|---|---|---|---|---|---|---|',
      throughputRow(x.raw),
      ...(x.rawVisible ? [throughputRow(x.rawVisible)] : []),
      throughputRow(x.gfe),
      '',
      ...(x.order && x.gfe.runsPerSecond
        ? [
            `Each kind ran ${x.gfe.runsPerSecond.length} times, in this order: ${x.order.join(', ')} (every second round ` +
              'mirrors the one before it, so a drift of the server over the phase weighs on the ceiling and the ' +
              `journeys alike); each row pools its runs (journeys over their summed wall time). Each run: raw ` +
              `${runRates(x.raw)}; raw telling Temporal what a journey tells it ${runRates(x.rawVisible)}; GFE ` +
              `${runRates(x.gfe)}.`,
            '',
          ]
        : []),
      ...(x.rawVisible && x.ratioVisible !== undefined
        ? [
            "*Raw workflows telling Temporal what a journey tells it*: the raw shape started with the journey's " +
              'search attributes, its stage ' +
              "upserted as a journey's is (inviting; awaiting consultation with the exam status; completed) and " +
              "the invite's heartbeat awaited by the server (bench/raw-workflows.ts `visible`). It ran at " +
              `**${pct(x.rawVisible.perSecond / x.raw.perSecond)}** of the raw ceiling: what the clinic's and the ` +
              "operators' view of each journey costs this server. The journeys ran at " +
              `**${pct(x.ratioVisible)}** of it: the rest is the engine's own (HTTP to the API and the service, ` +
              'the payload codec, the webhook and the sandbox on the same two cores).',
            '',
          ]
        : []),
      `The GFE journeys ran at **${pct(x.ratio)}** of the raw ceiling. Time to complete runs from the start request ` +
        `to the workflow's close (server time) and includes the ${x.providerDelayMs} ms provider delay. *CPU per ` +
        'journey*: CPU milliseconds of each process (/proc) from the first start to the last close, over the journeys ' +
        "completed (the raw run's worker is its own; `bench` is the bench's own process, which sends the starts and " +
        'polls the counts on the same cores). Both workers, the Temporal server and the sandbox run with the same CPU ' +
        'weight (see *Machine*).',
      '',
      '**What a GFE journey asks of Temporal** (counted from the histories of journeys started through the API): before ' +
        `the rules of 2026-11, 41 events: 6 patch markers, each with the SDK's upsert of TemporalChangeVersion, and ` +
        '6 upserts of its own search attributes (three of them within one workflow task), 2 activities (the exam list ' +
        "and the invite), 4 workflow tasks. With today's rules (`journey-rules-2026-11`, since `journey-rules-2026-12`, `journey-rules-2027-01` and `journey-rules-2027-02`, " +
        'src/workflows/journey-rules.ts), 23 events: one patch marker for all the rules; since 2026-11-30, when the ' +
        'start names those rules (the API does), 21: no marker and no upsert of TemporalChangeVersion. The exam list read by a local ' +
        "activity (from the worker's cache, no activity task and no workflow task of its own), search attributes " +
        'written once per workflow task activation and only those that changed (the start request carries the first ' +
        'ones), 3 workflow tasks, 1 activity. Measured the day it changed (`npm run bench -- --only throughput`, ' +
        'consecutive runs, same machine): 18.5/s against a raw 29.0/s (64 %), the Temporal server 48.7 ms of CPU per ' +
        'journey with the markers merged alone; 22.7/s against 31.0/s (73 %) and 38.4 ms with the local activity.',
      '',
    );
  }

  // ---- waiting ----
  if (r.waiting) {
    const x = r.waiting;
    L.push(
      '## 3. Waiting journeys',
      '',
      `${x.n.toLocaleString('en')} GFE journeys started straight through the Temporal client (a valid JourneyInput, ` +
        `the API's options and search attributes; ${x.concurrency} starts in flight) against the sandbox, whose ` +
        'provider never acts for these test patients, so each parks in `awaiting_consultation`. The worker was ' +
        `restarted just before (default sizes: sticky cache ${x.cacheSize.toLocaleString('en')} workflows).` +
        (x.memoryLimit
          ? ` Every worker of this phase ran in a memory cgroup of ${x.memoryLimit.limitMiB.toLocaleString('en')} MiB, ` +
            "the limit the Helm chart gives a worker's container" +
            (x.memoryLimit.heapLimitMiB !== undefined
              ? `: Node.js sizes its heap to it (${x.memoryLimit.heapLimitMiB.toFixed(0)} MiB, against ` +
                `${fmtBytes(r.machine.heapLimitBytes ?? NaN)} on this host without a limit).`
              : '.')
          : ' The worker ran without a memory limit: Node.js sized its heap to the host.'),
      '',
      '| | |',
      '|---|---|',
      `| Parked | ${x.parked.toLocaleString('en')} of ${x.n.toLocaleString('en')} in ${s1(x.parkSeconds)} (${x.parkPerSecond.toFixed(1)}/s; all starts issued in ${s1(x.startSeconds)}) |`,
      `| Worker RSS idle (fresh) | ${fmtBytes(x.rssIdle)} |`,
      `| Worker RSS, all parked | **${fmtBytes(x.rssParked)}** |`,
      `| Worker RSS peak (parking and waking) | ${fmtBytes(x.rssPeak)} |`,
      `| Worker RSS after waking them all | ${fmtBytes(x.rssAfterWake)} |`,
      ...(x.memoryLimit
        ? [
            `| Memory cgroup (${x.memoryLimit.limitMiB.toLocaleString('en')} MiB): peak charged, page cache included | ` +
              `${fmtBytes(x.memoryLimit.atParked?.maxUsageBytes ?? NaN)} by the parking worker, ` +
              `${fmtBytes(x.memoryLimit.maxUsageBytes)} over the phase; the limit reached ${x.memoryLimit.limitHits.toLocaleString('en')} times; ` +
              `**${x.memoryLimit.oomKills ?? 0} process(es) killed for memory** |`,
          ]
        : []),
      `| Woken | ${x.wake.reduce((a, w) => a + w.completed, 0).toLocaleString('en')} completed in ${s1(x.wakeSeconds)}: **${x.wakePerSecond.toFixed(1)} journeys/s** |`,
      '',
      '| Wake | Completed | Time | Journeys/s | Webhook ack p50 / p99 | accepted / forwarded |',
      '|---|---|---|---|---|---|',
      ...x.wake.map(
        (w) =>
          `| ${w.label} | ${w.completed}/${w.n} | ${s1(w.seconds)} | ${w.perSecond.toFixed(1)} | ${ms(w.ackMs.p50)} / ${ms(w.ackMs.p99)} | ${w.figures.accepted} / ${w.figures.forwarded} |`,
      ),
      '',
      'Each journey was woken by its own event 1 (Approved) POSTed to the webhook (32 in flight), the most recently ' +
        'parked first: those are still in the sticky cache; the others were evicted and the worker replays each ' +
        "one's history before it can apply the signal.",
      '',
    );
    if (x.cacheAb?.length) {
      L.push(
        '**Cache size, A/B in this run.** After the parking, a fresh worker per cache size had the most recently ' +
          'parked journeys put back into its sticky cache, each by a `snapshot` query (a replay of its history), and ' +
          'its RSS was read; the default came last and woke the journeys.',
        '',
        '| Cache size | Journeys queried back | RSS fresh | RSS with the cache full | Replays/s |',
        '|---|---|---|---|---|',
        ...x.cacheAb.map(
          (c) =>
            `| ${c.cacheSize.toLocaleString('en')}${c.isDefault ? ' (default)' : ''} | ${c.touched.toLocaleString('en')} | ${fmtBytes(c.rssFresh)} | **${fmtBytes(c.rssAfter)}** | ${c.perSecond.toFixed(0)} |`,
        ),
        '',
      );
    }
    const model = rssModel(x);
    const ab = x.cacheAb ?? [];
    const big = ab.find((c) => !c.isDefault);
    const small = ab.find((c) => c.isDefault);
    // Only when the two caches held different numbers of journeys (fewer parked than the smaller cache: no slope).
    const cachedDiff =
      big && small ? Math.min(big.cacheSize, big.touched) - Math.min(small.cacheSize, small.touched) : 0;
    const cacheCost =
      big && small && cachedDiff > 0 ? (big.rssAfter - small.rssAfter) / 2 ** 20 / cachedDiff : undefined;
    if (model) {
      L.push(
        `**What the cache size does.** While the sticky cache (\`WORKER_MAX_CACHED_WORKFLOWS\`, default ` +
          `${x.cacheSize.toLocaleString('en')}) filled, the worker's RSS grew by about ` +
          `**${model.perWorkflowMiB.toFixed(2)} MiB per parked journey**` +
          (model.plateauMiB !== undefined
            ? `; once it was full, RSS rose more slowly and reached ${model.plateauMiB.toFixed(0)} MiB however many more parked (the least recently used are evicted, to be replayed from history when their callback comes)`
            : '') +
          '. That slope holds the work of parking too (activities, HTTP, garbage the heap keeps for a while); the ' +
          'A/B above isolates the cache: ' +
          (cacheCost !== undefined
            ? `about **${cacheCost.toFixed(2)} MiB per cached journey**, so a cache of 500 / 1,000 / 2,000 / 5,000 costs ` +
              `${[500, 1000, 2000, 5000].map((c) => fmtBytes(c * cacheCost * 2 ** 20)).join(' / ')} over the worker's ` +
              `${fmtBytes(x.rssIdle)} at rest. `
            : 'see its table. ') +
          'A larger cache saves replays (the wake rates above: cached against evicted journeys) and costs that memory; ' +
          'it bounds the worker whatever the number of parked journeys, which only the Temporal server stores.',
        '',
      );
    }
    const rows = x.samples.filter(
      (_, i) => i % Math.max(1, Math.ceil(x.samples.length / 12)) === 0 || i === x.samples.length - 1,
    );
    L.push('RSS while parking:', '', '| t | parked | worker RSS |', '|---|---|---|');
    for (const s of rows) L.push(`| ${s.t.toFixed(0)} s | ${s.parked.toLocaleString('en')} | ${fmtBytes(s.rss)} |`);
    L.push('');
    if (x.note) L.push(`Note: ${x.note}.`, '');
  }

  // ---- cold start ----
  if (r.cold || r.npmTest || r.npmTestFull) {
    L.push('## 4. Cold starts', '');
    if (r.cold) {
      L.push(
        `- **Local stack** (\`npm start\`, i.e. scripts/local-stack.ts, with the Temporal tools already installed so ` +
          'its install check is a no-op; fresh data folder; dev server with its UI, codec server, sandbox, worker, ' +
          `API): spawn to the first 200 of \`/readyz\` in **${s1(r.cold.readyMs / 1000)}** (the API answered ` +
          `\`/healthz\` at ${s1(r.cold.apiUpMs / 1000)}); stopped by SIGTERM in ${s1(r.cold.stopMs / 1000)}.`,
      );
    }
    if (r.stackStartSeconds !== undefined) {
      L.push(
        `- The bench's own stack (headless dev server, sandbox, then worker and API together): ${s1(r.stackStartSeconds)}.`,
      );
    }
    if (r.workerBundle) {
      L.push(
        `- The worker runs as the image's does, on the workflow bundle built ahead without tracing ` +
          `(\`WORKFLOW_BUNDLE_PATH\`; ${(r.workerBundle.bytes / 1024).toFixed(0)} KiB, built in ${s1(r.workerBundle.ms / 1000)} ` +
          'before the stack started).',
      );
    }
    if (r.npmTest) {
      L.push(
        `- **\`npm test\`**: ${
          r.npmTest.mode === 'first'
            ? `time to the first test result in this run: **${s1(r.npmTest.firstResultMs / 1000)}** (\`${r.npmTest.firstResult}\`); the run was then stopped (the whole suite does not fit the bench's time beside the rest).`
            : `the whole run took **${s1((r.npmTest.fullMs ?? NaN) / 1000)}** (exit ${r.npmTest.exitCode}); first result after ${s1(r.npmTest.firstResultMs / 1000)}.`
        }`,
      );
    }
    if (r.npmTestFull && r.npmTest?.mode !== 'full') {
      const f = r.npmTestFull;
      L.push(
        `- **Whole \`npm test\`** from a separate run (\`npm run bench -- --only tests --npm-test full\`, ${f.at.slice(0, 16).replace('T', ' ')} UTC, ` +
          `load average ${f.loadBefore.one} before, ${f.loadAfter.one} after): **${s1((f.fullMs ?? NaN) / 1000)}**, exit ${f.exitCode}` +
          `${f.summary?.length ? ` (${f.summary.join('; ').replace(/\s+/g, ' ')})` : ''}` +
          `${f.failed?.length ? `; failed: ${f.failed.map((x) => `\`${x}\``).join(', ')}` : ''}.${f.note ? ` ${f.note}` : ''}`,
      );
    }
    L.push('');
  }

  // ---- tuning ----
  L.push('## Tuning', '');
  if (r.tuning?.ab.length) {
    L.push(
      '### A/B in this run',
      '',
      'Each pair interleaved (A B B A), so drift of the machine hits both sides; the verdict counts a difference only ' +
        "when the two sides' ranges do not overlap.",
      '',
      '| What | A | B | A values | B values | Verdict |',
      '|---|---|---|---|---|---|',
    );
    for (const x of r.tuning.ab) L.push(abRow(x));
    L.push('');
  }
  L.push(...developmentTuning(r), '');
  L.push(
    '## How to run',
    '',
    '```sh',
    'npm run bench                                   # everything (45 to 52 minutes, hard limit 52)',
    'npm run bench -- --quick                        # small sizes (development); the report goes to the work folder',
    'npm run bench -- --only webhook,burst,outage    # some phases: cold, tests, alone, webhook, burst, outage,',
    '                                                #   throughput, tuning, waiting',
    'npm run bench -- --only webhook --stores postgres   # the inbox phases on one store (files, postgres)',
    'npm run bench -- --only tests --npm-test full   # a whole npm test, kept in bench/npm-test-full.json for this report',
    'npm run bench -- --only sustained --out docs/performance.md   # section 5 only (about an hour): steady rates',
    '                                                #   (--sustained-rates, --sustained-seconds, --stores,',
    '                                                #   --forwarder-policies a,b), the rest of the file kept',
    '```',
    '',
    `Where this run's time went: ${Object.entries(r.phaseSeconds ?? {})
      .map(([k, v]) => `${k} ${v.toFixed(0)} s`)
      .join(', ')}.`,
    '',
    `This run: levels ${o.levels.join(', ')}/s, ${o.levelSeconds} s each after ${o.warmupSeconds} s warm-up; ` +
      `${o.hookJourneys} webhook journeys; inbox stores ${(o.stores ?? ['files']).join(', ')}; ` +
      `${o.burstRepeats ?? '–'} bursts of 200 per condition; ${o.throughputJourneys} throughput journeys; ` +
      `${o.waitingJourneys.toLocaleString('en')} waiting journeys; provider delay ${o.providerDelayMs} ms; ` +
      `${o.startConcurrency} starts in flight. Every child's output is in the work folder's logs/ (its path is printed at the end).`,
    '',
    sustainedSection(r, o2.sustainedSvgLink),
    '',
  );
  const depth = sustainedSvg(r);
  return { markdown: `${L.join('\n')}\n`, svg: latencyChart(r), ...(depth ? { sustainedSvg: depth } : {}) };
}
