// The report's table of the acknowledgement's layers (bench/ack-layers.ts): what each costs per callback, in CPU and
// in latency, measured by leaving it out, against the acknowledgement's own time at 500/s.
import { ACK_LAYERS, type AckLayerResults, type LayerName, type LayerRun } from './ack-layer-names';
import type { InboxStore } from './stack';

/** Layers that are the acknowledgement's floor (the durable write the interface's 200 means), not a cost on top. */
const FLOOR: ReadonlySet<LayerName> = new Set(['store-write', 'standby']);
/** A layer may cost at most this share of the acknowledgement's time at 500/s (its p50, every layer on). */
export const LAYER_SHARE_LIMIT = 0.1;

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const f1 = (v: number) => v.toFixed(1);
const us = (v: number) => `${Math.round(v)}`;
const signed = (v: number, digits = 0) => `${v >= 0 ? '+' : '−'}${Math.abs(v).toFixed(digits)}`;

export interface LayerCost {
  store: InboxStore;
  layer: LayerName;
  /** CPU per callback on the event loop, measured in one process (the steadier figure), µs; with its rounds' range. */
  inProcessUs?: number;
  inProcessSpread?: [number, number];
  /** The same across processes under the load: every layer on, less without it (main thread), µs. */
  abUs?: number;
  /** Its share of the acknowledgement's time at 500/s (p50, every layer on), from the in-process cost when there is one. */
  share: number;
  /** The load run without the layer, when there was one. */
  without?: LayerRun;
  floor: boolean;
}

export interface StoreLayers {
  store: InboxStore;
  /** Every layer on: the two passes, averaged. */
  all: { p50: number; p99: number; max: number; burstP99: number; cpuMain: number; cpuTotal: number };
  /** How far the two passes with every layer on differ (the noise to read each difference against). */
  noise: { cpuMain: number; p99: number; burstP99: number };
  costs: LayerCost[];
}

export function layerCosts(results: AckLayerResults): StoreLayers[] {
  const { runs, cpu } = results;
  const stores = [...new Set(runs.map((r) => r.store))];
  return stores.flatMap((store) => {
    const mine = runs.filter((r) => r.store === store);
    const alls = mine.filter((r) => r.layer === 'all');
    if (alls.length === 0) return [];
    const all = {
      p50: mean(alls.map((r) => r.latencyMs.p50)),
      p99: mean(alls.map((r) => r.latencyMs.p99)),
      max: mean(alls.map((r) => r.latencyMs.max)),
      burstP99: mean(alls.map((r) => r.burstMs.p99)),
      cpuMain: mean(alls.map((r) => r.cpuUsPerCallback.main)),
      cpuTotal: mean(alls.map((r) => r.cpuUsPerCallback.total)),
    };
    const spread = (f: (r: LayerRun) => number) =>
      alls.length < 2 ? 0 : Math.max(...alls.map(f)) - Math.min(...alls.map(f));
    const noise = {
      cpuMain: spread((r) => r.cpuUsPerCallback.main),
      p99: spread((r) => r.latencyMs.p99),
      burstP99: spread((r) => r.burstMs.p99),
    };
    const layers = [
      ...new Set([...mine.map((r) => r.layer), ...cpu.filter((c) => c.store === store).map((c) => c.layer)]),
    ].filter((l) => l !== 'all' && l !== 'bare-route');
    const costs = layers.map((layer): LayerCost => {
      const without = mine.find((r) => r.layer === layer);
      const measured = cpu.find((c) => c.store === store && c.layer === layer);
      const abUs = without ? all.cpuMain - without.cpuUsPerCallback.main : undefined;
      const cost = measured?.usPerCallback ?? abUs ?? 0;
      return {
        store,
        layer,
        ...(measured ? { inProcessUs: measured.usPerCallback, inProcessSpread: measured.spread } : {}),
        ...(abUs !== undefined ? { abUs } : {}),
        share: cost / (all.p50 * 1000),
        ...(without ? { without } : {}),
        floor: FLOOR.has(layer),
      };
    });
    return [{ store, all, noise, costs }];
  });
}

/** The layers over the limit (floor layers aside), each store. */
export function layersOverLimit(results: AckLayerResults): LayerCost[] {
  return layerCosts(results).flatMap((s) => s.costs.filter((c) => !c.floor && c.share >= LAYER_SHARE_LIMIT));
}

export function layersSection(results: AckLayerResults): string[] {
  const { runs, cpu } = results;
  const L: string[] = [];
  const stores = layerCosts(results);
  if (stores.length === 0) return L;
  const seconds = runs[0] ? runs[0].sent / runs[0].rate - 2 : 0;
  const rounds = cpu[0] ? `${cpu[0].rounds} rounds of ${cpu[0].perRound}` : 'rounds';
  L.push('## The acknowledgement, layer by layer');
  L.push('');
  L.push(
    `bench/ack-layers.ts: the API as a deployment builds it (its request log at LOG_LEVEL info, the payload keys, each ` +
      `callback sealed for its journey's patient under a file key store, the audit trail, the forwarder beside the ` +
      `webhook signalling a fake Temporal whose signals take 5 ms), alone on the machine, measured two ways. ` +
      `**In one process** (the cost): the API with every layer and the API without one layer, built side by side, take ` +
      `the same callbacks in alternating ${rounds} (Fastify's inject: the route, its hooks and the durable write, ` +
      `no socket); a layer's cost is the median of the rounds' differences in the event loop's CPU per callback (the ` +
      `forwarder's: the API with it running, each round until it has signalled and settled them all, against the API ` +
      `without it). ` +
      `**Across processes under load** (the effect): the API is started again without each layer in turn and takes ` +
      `${runs[0]?.rate ?? 500} callbacks a second (2 s warm-up, ${seconds} s measured, open loop) for 100 journeys, ` +
      `then bursts of 200 callbacks at once on 200 connections the burst opens (the generator warmed first on a bare ` +
      `route of its own, as the bench's bursts are); the API with every layer runs first and last, and how far those ` +
      `two runs differ is the noise each difference there is read against (larger than most layers' cost). ` +
      `*Share* is a layer's cost against the acknowledgement's own time at 500/s (its p50 with every layer on); the ` +
      `target is under ${LAYER_SHARE_LIMIT * 100} % for every layer but the durable write itself, the ` +
      `acknowledgement's floor. The throttles (sign-in limits, clinic quotas) are not on the webhook's path: they are ` +
      `the clinic and operator routes' hooks, and a wrong token is a 404 before its body is read; nor is the audit ` +
      `trail (the webhook writes no audit record), which its row measures.`,
  );
  const bare = runs.find((r) => r.layer === 'bare-route');
  if (bare) {
    L.push('');
    L.push(
      `**The floor: the bare route** (bench/bare-server.ts, the same load): 500/s p50 ${bare.latencyMs.p50.toFixed(2)} ` +
        `ms, p99 ${f1(bare.latencyMs.p99)} ms, max ${f1(bare.latencyMs.max)} ms; bursts of 200 p99 ` +
        `${f1(bare.burstMs.p99)} ms; CPU per request ${us(bare.cpuUsPerCallback.main)} µs on the main thread ` +
        `(${us(bare.cpuUsPerCallback.total)} µs on all threads): reading a request and writing an answer on this ` +
        `machine, before any of the engine's work.`,
    );
  }
  for (const s of stores) {
    const loop = runs
      .filter((r) => r.store === s.store && r.layer === 'all' && r.loopDelayMaxMs !== undefined)
      .map((r) => r.loopDelayMaxMs!);
    const inProcessAll = cpu.filter((c) => c.store === s.store).map((c) => c.allUs);
    L.push('');
    L.push(
      `**${s.store} inbox.** Every layer on: 500/s p50 ${s.all.p50.toFixed(2)} ms, p99 ${f1(s.all.p99)} ms, max ` +
        `${f1(s.all.max)} ms; bursts of 200 p99 ${f1(s.all.burstP99)} ms; CPU per callback under the load ` +
        `${us(s.all.cpuMain)} µs on the main thread, ${us(s.all.cpuTotal)} µs on all threads` +
        (bare
          ? ` (${(s.all.cpuMain / Math.max(1, bare.cpuUsPerCallback.main)).toFixed(1)}x the bare route's, ` +
            `p99 ${(s.all.p99 / Math.max(0.001, bare.latencyMs.p99)).toFixed(1)}x)`
          : '') +
        (inProcessAll.length
          ? `; in one process (no socket) ${us(Math.min(...inProcessAll))}-${us(Math.max(...inProcessAll))} µs`
          : '') +
        (loop.length ? `; the event loop's longest delay at 500/s ${loop.map(f1).join(' and ')} ms` : '') +
        `. The two load runs with every layer on differ by ` +
        `${us(s.noise.cpuMain)} µs of CPU, ${f1(s.noise.p99)} ms at p99 and ${f1(s.noise.burstP99)} ms on bursts.`,
    );
    L.push('');
    L.push(
      '| Layer left out | What it is | CPU per callback, in one process (µs; rounds) | Across processes under load (µs, main thread) | Share of the ack at 500/s | p50 with it / without (ms) | p99 with it / without (ms) | Bursts of 200 p99 with it / without (ms) |',
    );
    L.push('|---|---|---|---|---|---|---|---|');
    for (const c of s.costs) {
      const pct = `${(c.share * 100).toFixed(1)} %`;
      const share = c.floor ? `${pct} (the floor)` : c.share >= LAYER_SHARE_LIMIT ? `**${pct}**` : pct;
      const w = c.without;
      L.push(
        `| ${c.layer} | ${ACK_LAYERS[c.layer]} | ` +
          (c.inProcessUs !== undefined
            ? `${f1(c.inProcessUs)} (${f1(c.inProcessSpread![0])} to ${f1(c.inProcessSpread![1])})`
            : '–') +
          ` | ${c.abUs !== undefined ? signed(c.abUs) : '–'} | ${share} | ` +
          (w
            ? `${s.all.p50.toFixed(2)} / ${w.latencyMs.p50.toFixed(2)} | ${f1(s.all.p99)} / ${f1(w.latencyMs.p99)} | ` +
              `${f1(s.all.burstP99)} / ${f1(w.burstMs.p99)} |`
            : '– | – | – |'),
      );
    }
  }
  const over = layersOverLimit(results);
  L.push('');
  L.push(
    over.length === 0
      ? `Every layer (the durable write aside) costs under ${LAYER_SHARE_LIMIT * 100} % of the acknowledgement's time at 500/s on each store.`
      : `Over ${LAYER_SHARE_LIMIT * 100} % of the acknowledgement's time at 500/s: ${over
          .map((c) => `${c.layer} on ${c.store} (${(c.share * 100).toFixed(1)} %)`)
          .join('; ')}.`,
  );
  L.push('');
  return L;
}
