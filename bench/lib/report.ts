// docs/performance.md and docs/webhook-latency.svg from one run's results.
import type { AloneRun } from '../api-alone';
import type { ColdStartResults, NpmTestResults } from '../phases/cold';
import type { ThroughputResults, ThroughputRun } from '../phases/throughput';
import type { AbResult, TuningResults } from '../phases/tuning';
import type { WaitingResults } from '../phases/waiting';
import type { OutageResults, WebhookResults } from '../phases/webhook';
import type { Options } from './context';
import type { loadAverage, Machine } from './machine';
import { fmtBytes, fmtMs, type Summary } from './stats';
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
  /** Wall time of each phase. */
  phaseSeconds: Record<string, number>;
  stackStartSeconds?: number;
  alone?: AloneRun[];
  cold?: ColdStartResults;
  npmTest?: NpmTestResults;
  npmTestFull?: NpmTestResults;
  webhook?: WebhookResults;
  outage?: OutageResults;
  throughput?: ThroughputResults;
  tuning?: TuningResults;
  waiting?: WaitingResults;
  errors: string[];
}

const GIB = 1024 ** 3;
const ms = (v: number | undefined) => fmtMs(v);
const s1 = (v: number) => `${v.toFixed(1)} s`;
const pct = (v: number) => `${(v * 100).toFixed(0)} %`;
const met = (ok: boolean) => (ok ? '**met**' : '**missed**');

function by(v: number, limit: number): string {
  return `${(v / limit).toFixed(1)}x the limit (${fmtMs(v)} vs ${fmtMs(limit)})`;
}

function latencyRow(label: string, rate: number, l: { latencyMs: Summary; ok: number; scheduled: number }): string {
  return `| ${label} | ${rate}/s | ${ms(l.latencyMs.p50)} | ${ms(l.latencyMs.p99)} | ${ms(l.latencyMs.p999)} | ${ms(l.latencyMs.max)} | ${l.ok}/${l.scheduled} |`;
}

function throughputRow(r: ThroughputRun): string {
  return `| ${r.label} | ${r.completed}/${r.n} | ${s1(r.wallSeconds)} | **${r.perSecond.toFixed(1)}/s** | ${ms(r.timeToCompleteMs.p50)} | ${ms(r.timeToCompleteMs.p99)} | ${ms(r.startMs.p50)} / ${ms(r.startMs.p99)} |`;
}

export interface Targets {
  rows: { target: string; figure: string; verdict: string }[];
}

export function targets(r: Results): Targets {
  const rows: Targets['rows'] = [];
  const at = (levels: { rate: number; api: { latencyMs: Summary } }[] | undefined, rate: number) =>
    levels?.find((l) => l.rate === rate)?.api.latencyMs;
  const up500 = at(r.webhook?.up, 500);
  if (up500) {
    rows.push({
      target: 'Webhook ack p99 < 10 ms at 500/s (Temporal up)',
      figure: ms(up500.p99),
      verdict: up500.p99 < 10 ? met(true) : `${met(false)}: ${by(up500.p99, 10)}`,
    });
  }
  const up1000 = at(r.webhook?.up, 1000);
  if (up1000) {
    rows.push({
      target: 'Webhook ack never above 100 ms at 1000/s (Temporal up)',
      figure: `max ${ms(up1000.max)} (p99.9 ${ms(up1000.p999)})`,
      verdict: up1000.max <= 100 ? met(true) : `${met(false)}: ${by(up1000.max, 100)}`,
    });
  }
  const down500 = at(r.outage?.down, 500);
  if (down500) {
    rows.push({
      target: 'Webhook ack p99 < 10 ms at 500/s (Temporal stopped)',
      figure: ms(down500.p99),
      verdict: down500.p99 < 10 ? met(true) : `${met(false)}: ${by(down500.p99, 10)}`,
    });
  }
  const down1000 = at(r.outage?.down, 1000);
  if (down1000) {
    rows.push({
      target: 'Webhook ack never above 100 ms at 1000/s (Temporal stopped)',
      figure: `max ${ms(down1000.max)} (p99.9 ${ms(down1000.p999)})`,
      verdict: down1000.max <= 100 ? met(true) : `${met(false)}: ${by(down1000.max, 100)}`,
    });
  }
  if (r.outage) {
    rows.push({
      target: 'Every spooled callback forwarded after the restart',
      figure: `${r.outage.recordedByJourneys} recorded / ${r.outage.ackedInTotal} acknowledged`,
      verdict: met(r.outage.missing === 0),
    });
  }
  if (r.throughput) {
    rows.push({
      target: 'Journey throughput at least half the raw ceiling',
      figure: `${r.throughput.gfe.perSecond.toFixed(1)}/s vs ${r.throughput.raw.perSecond.toFixed(1)}/s = ${pct(r.throughput.ratio)}`,
      verdict:
        r.throughput.ratio >= 0.5
          ? met(true)
          : `${met(false)}: ${pct(r.throughput.ratio)} of the ceiling, ${(0.5 / r.throughput.ratio).toFixed(1)}x short`,
    });
  }
  if (r.waiting) {
    rows.push({
      target: `Worker RSS < 1 GiB with ${r.waiting.n.toLocaleString('en')} journeys parked`,
      figure: `${fmtBytes(r.waiting.rssParked)} parked, ${fmtBytes(r.waiting.rssPeak)} peak (${r.waiting.parked.toLocaleString('en')} parked)`,
      verdict:
        r.waiting.parked < r.waiting.n
          ? `${met(r.waiting.rssPeak < GIB)} for ${r.waiting.parked} parked only`
          : met(r.waiting.rssPeak < GIB),
    });
  }
  return { rows };
}

export function latencyChart(r: Results): string {
  const series: Series[] = [];
  const add = (
    levels: { rate: number; api?: { latencyMs: Summary }; bare?: { latencyMs: Summary } }[] | undefined,
    pick: 'api' | 'bare',
    name: string,
    color: string,
  ) => {
    if (!levels?.length) return;
    for (const [q, dash, label] of [
      ['p50', undefined, 'p50'],
      ['p99', '6 3', 'p99'],
      ['p999', '2 3', 'p99.9'],
    ] as const) {
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
  add(r.webhook?.up, 'api', 'API, Temporal up', '#1f77b4');
  add(r.outage?.down, 'api', 'API, Temporal stopped', '#d62728');
  add(r.webhook?.up, 'bare', 'bare Fastify', '#2ca02c');
  const levels = r.options.levels;
  return lineChartSvg(series, {
    title: 'Webhook acknowledgement latency against offered load',
    subtitle: `open loop, measured from each request's scheduled time; ${r.options.levelSeconds} s per level; ${r.machine.cores} cores, load ${r.loadBefore.one} at the start`,
    xLabel: 'callbacks per second (offered, fixed rate)',
    yLabel: 'latency (log scale)',
    xTicks: levels,
    marks: [
      { y: 10, label: 'target p99 at 500/s: 10 ms', color: '#ff7f0e' },
      { y: 100, label: 'limit: 100 ms', color: '#9467bd' },
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

/** Changes made on the strength of the bench, measured while developing it (before and after, same machine). */
const DEVELOPMENT_TUNING = [
  '### What was changed, and what it was worth',
  '',
  'Measured while building this bench (2026-11-21, this machine, load average 3 to 8 from other work): ' +
    'consecutive `npm run bench -- --quick ...` runs before and after each change, levels of 4 s. Code changes ' +
    'cannot be switched within one run; each row gives both sides as measured.',
  '',
  '| Change | Before | After |',
  '|---|---|---|',
  '| **The webhook no longer waits out its signal budget when Temporal is known to be away or slow** ' +
    '(src/api/callback-delivery.ts). While the last ' +
    'signal failed because Temporal did not answer, a callback is spooled without a signal attempt (one probe a ' +
    'second; the first signal that lands ends it and wakes the forwarder from its backoff); while 4 or more first ' +
    'signals are late, it is spooled at once and its signal sent beside it; above 512 late signals, spooled alone. ' +
    'Before, every callback waited the 50 ms budget, and during an outage each one then kept a signal retrying on ' +
    'the wire for up to 10 s. | Temporal stopped: 500/s p50 89.8 ms, p99 222 ms; 1000/s p50 872 ms, p99 1.21 s ' +
    '(4 s levels). The API alone (bench/api-alone.ts) with signals taking 200 ms: 500/s p50 52.8 ms, p99 82 ms; ' +
    '1000/s p50 1.01 s, p99 1.67 s | Temporal stopped: 500/s p50 2.4 ms, p99 12.8 ms; 1000/s p50 2.1 ms, p99 ' +
    '10.7 ms (another run: 1.7 / 7.7 and 1.8 / 12.0 ms). The API alone, same fake: 500/s p50 1.7 ms, p99 7.2 ms; ' +
    '1000/s p50 1.8 ms, p99 7.7 ms |',
  '| **The forwarder sends 16 spooled callbacks at once** (src/api/callback-delivery.ts; one at a time per ' +
    'journey, so each journey keeps its ' +
    'order), and is woken only for entries that are its work (before, every late callback made it list the spool ' +
    'folder again). | 8,000 spooled callbacks drained in 42.5 s and 39.3 s after the restart | 33.1 s and 29.4 s ' +
    '(interleaved with the runs before): about 25 % faster; the rest is the server (Temporal and the worker at ' +
    'about 1.4 cores during the drain) |',
  '| **`WORKER_MAX_CACHED_WORKFLOWS` default 1,000 instead of 2,000** (src/config.ts). Each cached journey costs the ' +
    'worker 0.2 to 0.3 MiB, and the cache, not the number of parked journeys, sets its RSS (the in-run A/B in ' +
    'section 3 repeats the comparison). Patients wake their ' +
    "journeys over days, so a wake rarely finds its journey cached either way; the cache's use is the burst of " +
    'tasks right after a start and a quick 1 -> 2 -> 3, which 1,000 covers at this throughput. | 7,652 parked ' +
    '(the first full run, 07:46 UTC): RSS 1.15 GiB, peak 1.21 GiB, over the 1 GiB target; waking cached journeys ' +
    '42.9/s, evicted 21.4/s | 3,000 parked: RSS 716 MiB once the cache was full (1,198 parked), 785 MiB at 3,000; ' +
    'waking cached journeys 99/s, evicted 64/s (a quieter moment) |',
  '',
  'Tried and **not** adopted (no difference beyond the noise, or worse):',
  '',
  "- `UV_THREADPOOL_SIZE` 32 or 64 for the API (more threads for the spool's fsyncs): 500/s p50 329 ms and 664 ms " +
    "against 435 ms and 2.03 s with the default 4, in runs where the API's event loop waited for a CPU half the " +
    'time: the threads were not what it waited for.',
  '- Dev-server SQLite `synchronous=off` instead of `normal`, and one task-queue partition instead of four ' +
    '(`matching.numTaskqueue{Read,Write}Partitions=1`): raw ceiling 18.5 and 20.0/s, and 26.7 and 21.0/s, against ' +
    "22.6 and 32.0/s with the stack's pragmas (300 raw workflows, fresh servers, interleaved): noise, so " +
    'scripts/local-stack.ts keeps `journal_mode=wal`, `synchronous=normal`. `npm run bench -- --extra-ab` repeats ' +
    'the pragma comparison in a run.',
  "- The caller's HTTP keep-alive: at 100/s, p50 5.1 and 4.0 ms with keep-alive against 4.9 and 4.2 ms with a new " +
    'connection per callback (loopback: a connection costs next to nothing here; `--extra-ab` repeats it).',
  '- A 5 ms signal budget instead of 50 ms: see the A/B above; the default stays 50 ms unless that row says B.',
  '- A V8 heap cap for the worker (`NODE_OPTIONS=--max-old-space-size=384`): 3,000 parked with the 1,000 cache ' +
    'took 667 MiB against 785 MiB without it; lower, but a cap turns a burst of large attachments (up to 5 MiB ' +
    'each, 100 activities at once) into an out-of-memory crash, so it is left to deployments that know their load.',
  "- The worker's sizes (`WORKER_MAX_CONCURRENT_*`): the worker used well under a core in every phase; the Temporal " +
    'server, not the worker, set the pace (see the CPU shares above).',
];

function cpuCell(cpu: Record<string, number> | undefined, key: string): string {
  const v = cpu?.[key];
  return v === undefined ? '–' : `${(v * 100).toFixed(0)} %`;
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

const aloneAt = (r: Results, rate: number) => r.alone?.find((a) => a.rate === rate && a.signalMs >= 100);

/** What stands in the way of each missed target, from this run's own figures. */
function analysis(r: Results): string[] {
  const out: string[] = [];
  const drainRate = r.outage ? r.outage.forwardedAfterRestart / Math.max(r.outage.drainSeconds, 0.001) : undefined;
  for (const rate of [500, 1000]) {
    const l = r.webhook?.up.find((x) => x.rate === rate);
    if (!l) continue;
    const limit = rate === 500 ? 10 : 100;
    const value = rate === 500 ? l.api.latencyMs.p99 : l.api.latencyMs.max;
    if (value <= limit) continue;
    const wait = l.cpu['api/main-waiting-for-cpu'];
    out.push(
      `- **Webhook at ${rate}/s with Temporal up** (${rate === 500 ? 'p99' : 'max'} ${fmtMs(value)}): every callback ` +
        `becomes a signal, and ${rate}/s is more than this Temporal server absorbs here` +
        (drainRate ? ` (it took the spooled backlog at ${drainRate.toFixed(0)} signals/s after the outage)` : '') +
        `. The API keeps acknowledging (${l.handOff.spooled} of ${l.api.scheduled + Math.round(rate * r.options.warmupSeconds)} went to the spool), but it shares ` +
        `${r.machine.cores} cores with the Temporal server (${cpuCell(l.cpu, 'temporal')} of a core), the worker ` +
        `(${cpuCell(l.cpu, 'worker')}), the load generator and the machine's other work` +
        (wait !== undefined
          ? `: the API's event loop was ready to run but **waiting for a CPU ${(wait * 100).toFixed(0)} % of the time** ` +
            `(running ${cpuCell(l.cpu, 'api/main')})`
          : '') +
        `. The bare route in the same run: p99 ${fmtMs(l.bare?.latencyMs.p99)}` +
        (aloneAt(r, rate)
          ? `; the API alone, with nothing competing and a Temporal that takes 200 ms per signal: p99 ${fmtMs(aloneAt(r, rate)!.latencyMs.p99)}, max ${fmtMs(aloneAt(r, rate)!.latencyMs.max)}`
          : '') +
        '. What would meet it: cores for the ' +
        'API that Temporal does not compete for (its own machine or container with CPU reserved), and a Temporal ' +
        "server that takes the signal rate (more history shards on a real database rather than the dev server's " +
        'SQLite file).',
    );
  }
  for (const rate of [500, 1000]) {
    const l = r.outage?.down.find((x) => x.rate === rate);
    if (!l) continue;
    const limit = rate === 500 ? 10 : 100;
    const value = rate === 500 ? l.api.latencyMs.p99 : l.api.latencyMs.max;
    if (value <= limit) continue;
    out.push(
      `- **Webhook at ${rate}/s with Temporal stopped** (${rate === 500 ? 'p99' : 'max'} ${fmtMs(value)}): each ` +
        'acknowledgement is a durable spool write (temp file, fsync, rename, folder fsync) and nothing else; the ' +
        `API's event loop waited for a CPU ${cpuCell(l.cpu, 'api/main-waiting-for-cpu')} of the time and the ` +
        `generator itself was late by up to ${fmtMs(l.api.sendLagMs.p99)} (p99). The tail is the machine's.`,
    );
  }
  const t = r.throughput;
  if (t && t.ratio < 0.5) {
    out.push(
      `- **Throughput** (${pct(t.ratio)} of the raw ceiling): a GFE journey costs more than its raw twin: its start ` +
        `goes through the API (describe, catalog check, start: p50 ${fmtMs(t.gfe.startMs.p50)}), it upserts its ` +
        'search attributes at each stage change (six upserts, each a visibility write), encrypts every payload, and ' +
        'its callback travels sandbox -> webhook -> signal. The Temporal server is the bottleneck of both runs.',
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
          'tsx loader, the bundled workflow code, the SDK core), the sticky cache of ' +
          `${w.cacheSize.toLocaleString('en')} journeys the rest, with garbage the heap keeps for a while; a smaller ` +
          '`WORKER_MAX_CACHED_WORKFLOWS` lowers it (section 3 has the A/B).',
      );
    }
  }
  return out;
}

export function renderReport(r: Results): { markdown: string; svg: string } {
  const m = r.machine;
  const o = r.options;
  const L: string[] = [];
  const loadLine = (l: Load | undefined) => (l ? `${l.one} / ${l.five} / ${l.fifteen}` : '–');
  const busy = r.cpuBusy.length ? r.cpuBusy.reduce((a, b) => a + b, 0) / r.cpuBusy.length : NaN;
  L.push(
    '# Performance',
    '',
    `Measured by \`${r.command}\` (bench/run.ts) on ${r.startedAt.slice(0, 16).replace('T', ' ')} UTC, in ` +
      `${r.durationSeconds !== undefined ? `${(r.durationSeconds / 60).toFixed(1)} minutes` : '(unfinished)'}. ` +
      'The bench starts its own stack (Temporal dev server, exam-service sandbox, worker, API: each a child process, ' +
      'on ports 22200-22399, apart from the ports the Temporal dev server picks for its internal services, and a ' +
      'fresh folder under /tmp), makes every comparison within the one run, stops ' +
      'everything it started and writes this file and [webhook-latency.svg](webhook-latency.svg). ' +
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

  // ---- webhook ----
  if (r.webhook) {
    const w = r.webhook;
    L.push(
      '## 1. Webhook acknowledgement latency',
      '',
      `${w.journeys} GFE journeys were started and parked in \`awaiting_consultation\` (${s1(w.parkSeconds)}); the ` +
        "load is valid event 1 callbacks, each with its journey's HMAC token, for patient exams that are not the " +
        "journeys' own: each journey records every callback (`foreign`, then `duplicate`) and keeps waiting, so the " +
        'load never runs out of journeys. ' +
        `Each level: ${o.warmupSeconds} s warm-up at the level's rate, then ${o.levelSeconds} s measured; the API and ` +
        'a bare Fastify route (bench/bare-server.ts: same process shape, route and text parser, answers 200 at once) ' +
        'in turn at each level.',
      '',
      '**Load generator**: bench/loadgen.ts, its own process, open loop with undici (' +
        `${w.connections} keep-alive connections): request *i* is due at t0 + i/rate whatever happened to the ` +
        'earlier ones, and its latency runs from that due time to the answer, so a stall of the server (or of the ' +
        'generator) is counted in full: no coordinated omission. (Not autocannon: its `overallRate` waits for free ' +
        'connections and measures from the actual send.)',
      '',
      '![Webhook latency against load](webhook-latency.svg)',
      '',
      '| Target | Rate | p50 | p99 | p99.9 | max | 200s |',
      '|---|---|---|---|---|---|---|',
    );
    for (const l of w.up) {
      L.push(latencyRow('API (Temporal up)', l.rate, l.api));
      if (l.bare) L.push(latencyRow('bare Fastify', l.rate, l.bare));
    }
    for (const l of r.outage?.down ?? []) L.push(latencyRow('API (Temporal **stopped**)', l.rate, l.api));
    L.push('', 'How the API handed the callbacks off (its own counters, `/metrics`):', '');
    L.push('| Temporal | Rate | signalled within the budget | spooled | generator lag p99 | service time p99 |');
    L.push('|---|---|---|---|---|---|');
    for (const l of w.up) {
      L.push(
        `| up | ${l.rate}/s | ${l.handOff.signalled} | ${l.handOff.spooled} | ${ms(l.api.sendLagMs.p99)} | ${ms(l.api.serviceMs.p99)} |`,
      );
    }
    for (const l of r.outage?.down ?? []) {
      L.push(
        `| stopped | ${l.rate}/s | ${l.handOff.signalled} | ${l.handOff.spooled} | ${ms(l.api.sendLagMs.p99)} | ${ms(l.api.serviceMs.p99)} |`,
      );
    }
    L.push(
      '',
      '*Generator lag*: how late the generator itself handed requests to its connection pool (CPU starvation of ' +
        'the generator); *service time*: from that hand-over to the answer (what a closed-loop tool would report).',
      '',
      "Where the CPU went during each API run (share of one core, /proc/<pid>/stat; *waiting*: time the API's " +
        'event loop thread was ready to run but had no CPU, /proc/<pid>/schedstat):',
      '',
      '| Temporal | Rate | Temporal server | worker | API (all threads) | API event loop | API event loop waiting | load generator |',
      '|---|---|---|---|---|---|---|---|',
    );
    const cpuRow = (
      state: string,
      l: { rate: number; cpu: Record<string, number>; api: { generatorCpuSeconds?: number; durationMs: number } },
    ) =>
      `| ${state} | ${l.rate}/s | ${cpuCell(l.cpu, 'temporal')} | ${cpuCell(l.cpu, 'worker')} | ${cpuCell(l.cpu, 'api')} | ${cpuCell(l.cpu, 'api/main')} | ${cpuCell(l.cpu, 'api/main-waiting-for-cpu')} | ${l.api.generatorCpuSeconds !== undefined ? `${l.api.generatorCpuSeconds.toFixed(1)} s in all` : '–'} |`;
    for (const l of w.up) L.push(cpuRow('up', l));
    for (const l of r.outage?.down ?? []) L.push(cpuRow('stopped', l));
    L.push('');
  }
  if (r.alone?.length) {
    L.push(
      '### The API alone',
      '',
      "The API's own share, measured before the stack started (bench/api-alone.ts): the real API (routes, spool, " +
        'forwarder, metrics) in its own process with a fake Temporal client whose signals take 5 ms (a fast server: ' +
        'callbacks are signalled within the budget) or 200 ms (a slow one: they go to the spool beside their signal), ' +
        'under the same open-loop generator; no Temporal server, worker or sandbox competing for the CPU.',
      '',
      '| Signal takes | Rate | p50 | p99 | p99.9 | max | API event loop | API other threads |',
      '|---|---|---|---|---|---|---|---|',
      ...r.alone.map(
        (a) =>
          `| ${a.signalMs} ms | ${a.rate}/s | ${ms(a.latencyMs.p50)} | ${ms(a.latencyMs.p99)} | ${ms(a.latencyMs.p999)} | ${ms(a.latencyMs.max)} | ${cpuCell(a.cpu, 'main')} | ${cpuCell(a.cpu, 'node')} |`,
      ),
      '',
    );
  }
  if (r.outage) {
    const x = r.outage;
    L.push(
      '### Temporal stopped, then started again',
      '',
      `The dev server was stopped (SIGTERM) and the same loads sent: ${x.downAcked} callbacks acknowledged ` +
        `(${x.downNot200} not 200), ${x.spooledWhileDown} spooled. After the restart (ready in ` +
        `${s1(x.restartMs / 1000)}) the forwarder emptied the spool in ${s1(x.drainSeconds)} ` +
        `(${x.forwardedAfterRestart} forwarded, ${(x.forwardedAfterRestart / Math.max(x.drainSeconds, 0.001)).toFixed(0)}/s).`,
      '',
      `**Count**: the parked journeys recorded ${x.recordedByJourneys} distinct deliveries (snapshot query of each); ` +
        `the API acknowledged ${x.ackedInTotal} callbacks to them in this run (warm-ups included): ` +
        `${x.missing === 0 ? '**none missing**' : `**${x.missing} missing**`}. History growth: ` +
        `${x.perJourney.toFixed(0)} callbacks per journey by the end, a few events each in its history.`,
      '',
    );
  }

  // ---- throughput ----
  if (r.throughput) {
    const x = r.throughput;
    L.push(
      '## 2. Journey throughput',
      '',
      `${x.gfe.n} GFE journeys started through the API (\`POST /v1/journeys\` with an Idempotency-Key, ` +
        `${x.concurrency} requests in flight), each completed by the sandbox's simulated provider calling event 1 ` +
        `back through the webhook after ${x.providerDelayMs} ms (test mode). Against, in the same run, the raw ceiling ` +
        "of this server: bench/raw-workflows.ts has a GFE journey's shape (activities `getExamCatalog` and " +
        '`createInvite`, a timer, one signal; counted from a recorded GFE history: 2 activities, 1 signal, 1 timer) ' +
        `with empty activities whose "provider" signals after the same ${x.providerDelayMs} ms, no HTTP, no payload ` +
        'encryption, no search attributes, on its own worker and task queue.',
      '',
      '| Run | Completed | Wall | Journeys/s | Time to complete p50 | p99 | Start call p50 / p99 |',
      '|---|---|---|---|---|---|---|',
      throughputRow(x.raw),
      throughputRow(x.gfe),
      '',
      `The GFE journeys ran at **${pct(x.ratio)}** of the raw ceiling. Time to complete runs from the start request ` +
        `to the workflow's close (server time) and includes the ${x.providerDelayMs} ms provider delay.`,
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
        `restarted just before (default sizes: sticky cache ${x.cacheSize.toLocaleString('en')} workflows).`,
      '',
      '| | |',
      '|---|---|',
      `| Parked | ${x.parked.toLocaleString('en')} of ${x.n.toLocaleString('en')} in ${s1(x.parkSeconds)} (${x.parkPerSecond.toFixed(1)}/s; all starts issued in ${s1(x.startSeconds)}) |`,
      `| Worker RSS idle (fresh) | ${fmtBytes(x.rssIdle)} |`,
      `| Worker RSS, all parked | **${fmtBytes(x.rssParked)}** |`,
      `| Worker RSS peak (parking and waking) | ${fmtBytes(x.rssPeak)} |`,
      `| Worker RSS after waking them all | ${fmtBytes(x.rssAfterWake)} |`,
      `| Woken | ${x.wake.reduce((a, w) => a + w.completed, 0).toLocaleString('en')} completed in ${s1(x.wakeSeconds)}: **${x.wakePerSecond.toFixed(1)} journeys/s** |`,
      '',
      '| Wake | Completed | Time | Journeys/s | Webhook ack p50 / p99 | signalled / spooled |',
      '|---|---|---|---|---|---|',
      ...x.wake.map(
        (w) =>
          `| ${w.label} | ${w.completed}/${w.n} | ${s1(w.seconds)} | ${w.perSecond.toFixed(1)} | ${ms(w.ackMs.p50)} / ${ms(w.ackMs.p99)} | ${w.handOff.signalled} / ${w.handOff.spooled} |`,
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
    const cacheCost =
      big && small && big.cacheSize !== small.cacheSize
        ? (big.rssAfter - small.rssAfter) /
          2 ** 20 /
          (Math.min(big.cacheSize, big.touched) - Math.min(small.cacheSize, small.touched))
        : undefined;
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
    if (r.npmTest) {
      L.push(
        `- **\`npm test\`**: ${
          r.npmTest.mode === 'first'
            ? `time to the first test result in this run: **${s1(r.npmTest.firstResultMs / 1000)}** (\`${r.npmTest.firstResult}\`); the run was then stopped (the whole suite does not fit the bench's 15 minutes beside the rest).`
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
  L.push(...DEVELOPMENT_TUNING, '');
  L.push(
    '## How to run',
    '',
    '```sh',
    'npm run bench                                   # everything (about 12-14 minutes, hard limit 14.5)',
    'npm run bench -- --quick                        # small sizes (development); the report goes to the work folder',
    'npm run bench -- --only webhook,outage          # some phases: cold, tests, alone, webhook, outage, throughput, tuning, waiting',
    'npm run bench -- --only tests --npm-test full   # a whole npm test, kept in bench/npm-test-full.json for this report',
    '```',
    '',
    `Where this run's time went: ${Object.entries(r.phaseSeconds ?? {})
      .map(([k, v]) => `${k} ${v.toFixed(0)} s`)
      .join(', ')}.`,
    '',
    `This run: levels ${o.levels.join(', ')}/s, ${o.levelSeconds} s each after ${o.warmupSeconds} s warm-up; ` +
      `${o.hookJourneys} webhook journeys; ${o.throughputJourneys} throughput journeys; ` +
      `${o.waitingJourneys.toLocaleString('en')} waiting journeys; provider delay ${o.providerDelayMs} ms; ` +
      `${o.startConcurrency} starts in flight. Every child's output is in the work folder's logs/, printed at the end.`,
    '',
  );
  return { markdown: `${L.join('\n')}\n`, svg: latencyChart(r) };
}
