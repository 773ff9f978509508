// Tuning, measured as A/B pairs within the run, interleaved (A B B A ...) so the machine's drift hits both sides.
//
// - The webhook's signal budget (WEBHOOK_SIGNAL_BUDGET_MS): how long a callback waits for its signal before it is
//   spooled. The API is restarted with each value; the same load goes to the same parked journeys.
// - (--extra-ab) HTTP keep-alive of the caller: the same webhook load on keep-alive connections and on a new
//   connection each.
// - (--extra-ab) SQLite pragmas of the dev server (scripts/local-stack.ts passes journal_mode=wal and
//   synchronous=normal): the raw workflow ceiling on fresh dev servers with the stack's pragmas and with none.
import path from 'node:path';
import type { Ctx } from '../lib/context';
import { runLoad } from '../lib/load';
import { stopChild } from '../lib/proc';
import { TEMPORAL_DEFAULT_PRAGMAS } from '../lib/stack';
import type { LevelResult } from '../loadgen';
import { rawThroughput } from './throughput';
import type { HookState } from './webhook';

export interface AbResult {
  name: string;
  what: string;
  unit: string;
  better: 'higher' | 'lower';
  a: { label: string; values: number[] };
  b: { label: string; values: number[] };
}

export interface TuningResults {
  ab: AbResult[];
}

async function webhookLevel(ctx: Ctx, hooks: HookState, rate: number, seconds: number, keepAlive = true) {
  const runs = await runLoad(
    {
      origin: ctx.stack.apiUrl,
      targets: hooks.targets,
      levels: [
        { name: 'warm-up', rate, durationMs: 1_000, record: false },
        { name: `${rate}/s`, rate, durationMs: seconds * 1000, record: true },
      ],
      connections: 128,
      timeoutMs: 15_000,
      keepAlive,
    },
    ctx.workDir,
    ctx.logDir,
    120_000,
  );
  return runs.find((r) => r.record)!;
}

/** Waits for the spool to empty (the previous load's late work) so a level starts from the same state. */
async function settle(ctx: Ctx) {
  const { handOff } = await import('../lib/api-metrics');
  const until = Date.now() + 30_000;
  while (Date.now() < until && (await handOff(ctx.stack.apiUrl)).spoolDepth > 0)
    await new Promise((r) => setTimeout(r, 250));
}

async function budgetAb(ctx: Ctx, hooks: HookState): Promise<AbResult[]> {
  const variants = [
    { label: '50 ms (default)', env: { WEBHOOK_SIGNAL_BUDGET_MS: '50' } },
    { label: '5 ms', env: { WEBHOOK_SIGNAL_BUDGET_MS: '5' } },
  ];
  const rates = [100];
  const p99: Record<string, number[][]> = { '50 ms (default)': [[]], '5 ms': [[]] };
  for (const order of [variants, [...variants].reverse()]) {
    for (const v of order) {
      await ctx.stack.stopApi();
      await ctx.stack.startApi(v.env);
      for (const [i, rate] of rates.entries()) {
        await settle(ctx);
        const r: LevelResult = await webhookLevel(ctx, hooks, rate, 5);
        p99[v.label]![i]!.push(r.latencyMs.p99);
        ctx.log(
          `tuning: signal budget ${v.label} at ${rate}/s: p50 ${r.latencyMs.p50.toFixed(1)} p99 ${r.latencyMs.p99.toFixed(1)} ms`,
        );
      }
    }
  }
  await ctx.stack.stopApi();
  await ctx.stack.startApi();
  return rates.map((rate, i) => ({
    name: `signal-budget-${rate}`,
    what: `Webhook ack p99 at ${rate}/s, WEBHOOK_SIGNAL_BUDGET_MS`,
    unit: 'ms',
    better: 'lower',
    a: { label: variants[0]!.label, values: p99[variants[0]!.label]![i]! },
    b: { label: variants[1]!.label, values: p99[variants[1]!.label]![i]! },
  }));
}

async function keepAliveAb(ctx: Ctx, hooks: HookState): Promise<AbResult> {
  const a: number[] = [];
  const b: number[] = [];
  for (const order of [
    [true, false],
    [false, true],
  ]) {
    for (const keepAlive of order) {
      await settle(ctx);
      const r = await webhookLevel(ctx, hooks, 100, 5, keepAlive);
      (keepAlive ? a : b).push(r.latencyMs.p50);
      ctx.log(
        `tuning: caller ${keepAlive ? 'with' : 'without'} keep-alive at 100/s: p50 ${r.latencyMs.p50.toFixed(1)} p99 ${r.latencyMs.p99.toFixed(1)} ms`,
      );
    }
  }
  return {
    name: 'keep-alive',
    what: 'Webhook ack p50 at 100/s, the caller on keep-alive connections or a new connection per callback',
    unit: 'ms',
    better: 'lower',
    a: { label: 'keep-alive', values: a },
    b: { label: 'Connection: close', values: b },
  };
}

async function pragmaAb(ctx: Ctx): Promise<AbResult> {
  const n = Math.max(50, Math.round(ctx.o.throughputJourneys * 0.67));
  const a: number[] = [];
  const b: number[] = [];
  const base = ctx.o.portBase + 60;
  for (const [round, order] of [
    ['stack', 'default'],
    ['default', 'stack'],
  ].entries()) {
    for (const variant of order) {
      const server = await ctx.stack.startDevServer(
        `temporal-ab-${variant}-${round}`,
        { grpc: base, http: base + 1, metrics: base + 2 },
        path.join(ctx.stack.o.dataDir, `ab-${variant}-${round}.db`),
        variant === 'stack' ? TEMPORAL_DEFAULT_PRAGMAS : [],
      );
      try {
        const run = await rawThroughput(ctx, n, `ab-${variant}-${round}`, variant, `127.0.0.1:${base}`);
        (variant === 'stack' ? a : b).push(run.perSecond);
        ctx.log(`tuning: SQLite ${variant} pragmas, round ${round + 1}: ${run.perSecond.toFixed(1)} raw workflows/s`);
      } finally {
        await stopChild(server, 20_000);
      }
    }
  }
  return {
    name: 'sqlite-pragmas',
    what: `Raw workflow ceiling (${n} workflows, a fresh dev server each), SQLite pragmas`,
    unit: 'workflows/s',
    better: 'higher',
    a: { label: TEMPORAL_DEFAULT_PRAGMAS.join(', '), values: a },
    b: { label: 'dev-server defaults', values: b },
  };
}

export async function tuningPhase(ctx: Ctx, hooks: HookState | undefined, extra: boolean): Promise<TuningResults> {
  const ab: AbResult[] = [];
  if (hooks) ab.push(...(await budgetAb(ctx, hooks)));
  if (extra && hooks) ab.push(await keepAliveAb(ctx, hooks));
  if (extra) ab.push(await pragmaAb(ctx));
  return { ab };
}
