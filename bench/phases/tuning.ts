// Tuning, measured as A/B pairs within the run, interleaved (A B B A ...) so the machine's drift hits both sides.
//
// - The forwarder's concurrency (FORWARDER_CONCURRENCY, default 16: signals in flight at once): the API restarted
//   with each value (files inbox, Temporal up), the same 500/s load to the same parked journeys; the webhook's ack
//   p99 (the forwarder competes with the webhook for the API's event loop and the machine's cores) and the
//   forwarder's rate from the load's start to an empty inbox.
// - (--extra-ab) HTTP keep-alive of the caller: the same webhook load on keep-alive connections and on a new
//   connection each.
// - (--extra-ab) SQLite pragmas of the dev server (scripts/local-stack.ts passes journal_mode=wal and
//   synchronous=normal): the raw workflow ceiling on fresh dev servers with the stack's pragmas and with none.
import path from 'node:path';
import { apiFigures } from '../lib/api-metrics';
import type { Ctx } from '../lib/context';
import { runLoad } from '../lib/load';
import { TEMPORAL_DEFAULT_PRAGMAS } from '../../scripts/lib/stack/parts';
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

/** Waits for the inbox to empty (the previous load's late work) so a level starts from the same state. */
async function settle(ctx: Ctx, timeoutMs = 60_000): Promise<number> {
  const t0 = performance.now();
  const until = Date.now() + timeoutMs;
  while (Date.now() < until && (await apiFigures(ctx.stack.apiUrl)).inboxDepth > 0)
    await new Promise((r) => setTimeout(r, 200));
  return (performance.now() - t0) / 1000;
}

async function forwarderAb(ctx: Ctx, hooks: HookState): Promise<AbResult[]> {
  const variants = [
    { label: '16 (default)', value: '16' },
    { label: '4', value: '4' },
  ];
  const rate = 500;
  const seconds = ctx.o.quickSizes ? 3 : 4;
  const p99: Record<string, number[]> = {};
  const rates: Record<string, number[]> = {};
  for (const order of [variants, [...variants].reverse()]) {
    for (const v of order) {
      await ctx.stack.restartApi('files', { FORWARDER_CONCURRENCY: v.value });
      await settle(ctx);
      const f0 = (await apiFigures(ctx.stack.apiUrl)).forwarded;
      const t0 = performance.now();
      const r: LevelResult = await webhookLevel(ctx, hooks, rate, seconds);
      await settle(ctx, Math.max(30_000, Math.min(120_000, ctx.remainingMs() - 300_000)));
      const forwarded = (await apiFigures(ctx.stack.apiUrl)).forwarded - f0;
      const perSecond = forwarded / ((performance.now() - t0) / 1000);
      (p99[v.label] ??= []).push(r.latencyMs.p99);
      (rates[v.label] ??= []).push(perSecond);
      ctx.log(
        `tuning: FORWARDER_CONCURRENCY ${v.label} at ${rate}/s: ack p50 ${r.latencyMs.p50.toFixed(1)} p99 ${r.latencyMs.p99.toFixed(1)} ms; forwarder ${perSecond.toFixed(0)}/s to an empty inbox`,
      );
    }
  }
  await ctx.stack.restartApi('files');
  const [a, b] = variants as [(typeof variants)[0], (typeof variants)[0]];
  return [
    {
      name: 'forwarder-concurrency-ack',
      what: `Webhook ack p99 at ${rate}/s (files inbox, Temporal up), FORWARDER_CONCURRENCY`,
      unit: 'ms',
      better: 'lower',
      a: { label: a.label, values: p99[a.label]! },
      b: { label: b.label, values: p99[b.label]! },
    },
    {
      name: 'forwarder-concurrency-rate',
      what: `Forwarder rate from the ${rate}/s load's start to an empty inbox, FORWARDER_CONCURRENCY`,
      unit: 'signals/s',
      better: 'higher',
      a: { label: a.label, values: rates[a.label]! },
      b: { label: b.label, values: rates[b.label]! },
    },
  ];
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
        path.join(ctx.stack.o.temporalStoreDir ?? ctx.stack.o.dataDir, `ab-${variant}-${round}.db`),
        variant === 'stack' ? TEMPORAL_DEFAULT_PRAGMAS : [],
      );
      try {
        const run = await rawThroughput(ctx, n, `ab-${variant}-${round}`, variant, { address: `127.0.0.1:${base}` });
        (variant === 'stack' ? a : b).push(run.perSecond);
        ctx.log(`tuning: SQLite ${variant} pragmas, round ${round + 1}: ${run.perSecond.toFixed(1)} raw workflows/s`);
      } finally {
        await server.stop(20_000);
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
  if (hooks) ab.push(...(await forwarderAb(ctx, hooks)));
  if (extra && hooks) ab.push(await keepAliveAb(ctx, hooks));
  if (extra) ab.push(await pragmaAb(ctx));
  return { ab };
}
