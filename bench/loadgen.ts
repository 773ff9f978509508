// Open-loop HTTP load generator (its own process, so the bench's bookkeeping never delays a send). Request i of a
// level is due at t0 + i/rate whatever happened to the earlier ones, and its latency is measured from that due
// time, not from when it was actually written: a stalled server cannot slow the generator down and hide its own
// stall (no coordinated omission). Levels run back to back on the same keep-alive connection pool. A burst level
// makes all its requests due at the same instant (as many connections as the pool allows). With `collect`, the
// webhook's answers are read for their deliveryId, kept with the wall-clock time of the 200 (to match each callback
// with the time its journey applied it).
//
//   node --import tsx bench/loadgen.ts <spec.json> <result.json>
import { readFileSync, writeFileSync } from 'node:fs';
import { Pool } from 'undici';
import { summarize, type Summary } from './lib/stats';

export interface LoadLevel {
  name: string;
  /** Requests per second. */
  rate: number;
  durationMs: number;
  /** False for a warm-up: sent, not reported. */
  record: boolean;
  /** A burst: this many requests, all due at the level's start (rate and durationMs are then ignored). */
  burst?: number;
  /** A pause before the level starts (after the previous one's answers, for a recorded one). */
  pauseBeforeMs?: number;
}

export interface LoadSpec {
  origin: string;
  /** Sent round robin. */
  targets: { path: string; body: string }[];
  levels: LoadLevel[];
  connections: number;
  timeoutMs: number;
  /** False: every request on a new connection (Connection: close). */
  keepAlive: boolean;
  /** Read each 2xx answer's deliveryId (the webhook's body) and keep it with the time of the answer. */
  collect?: boolean;
  /** Return each recorded level's latencies too (to pool several bursts). */
  keepSamples?: boolean;
  /**
   * Before the levels: open every connection of the pool (that many GETs of this path at once, answered), so the
   * levels run on established keep-alive connections.
   */
  warmPath?: string;
  /**
   * Before anything else: this many bursts of the targets (POSTs, as many at once as there are connections) against
   * another origin, unrecorded, so that the generator's own code (undici, promises, JSON) is compiled before it is
   * measured: a fresh Node process hands its first requests over several times slower. The bare route takes them, so
   * nothing reaches the server measured.
   */
  warmBursts?: { origin: string; count: number };
  /** Keep each recorded answer at least this slow (ms) with its due time, for attribution (at most 5,000). */
  slowMs?: number;
}

export interface LevelResult {
  name: string;
  record: boolean;
  rate: number;
  durationMs: number;
  scheduled: number;
  ok: number;
  non2xx: number;
  errors: number;
  statuses: Record<string, number>;
  /** From each request's due time to its answer. */
  latencyMs: Summary;
  /** From the moment the request was handed to the connection pool (what a closed-loop tool would report). */
  serviceMs: Summary;
  /** How late the generator itself was in handing requests over (its own CPU starvation). */
  sendLagMs: Summary;
  achievedRps: number;
  /** CPU the generator process used in all (same figure on every level of a run). */
  generatorCpuSeconds?: number;
  /** With `collect`: [deliveryId, wall-clock ms of the answer, index of the target] of each 2xx. */
  deliveries?: [string, number, number][];
  /** With `keepSamples`: every latency of the level (ms). */
  latencySamples?: number[];
  /** With `slowMs`: [wall-clock ms the request was due, ms to its answer] of each answer at least that slow. */
  slow?: [number, number][];
}

/** Wall-clock milliseconds with the monotonic clock's resolution. */
const wallNow = () => performance.timeOrigin + performance.now();

async function main() {
  const [specFile, resultFile] = process.argv.slice(2);
  if (!specFile || !resultFile) throw new Error('usage: loadgen <spec.json> <result.json>');
  const spec = JSON.parse(readFileSync(specFile, 'utf8')) as LoadSpec;
  const pool = new Pool(spec.origin, {
    connections: spec.connections,
    pipelining: 1,
    keepAliveTimeout: 30_000,
    headersTimeout: spec.timeoutMs,
    bodyTimeout: spec.timeoutMs,
  });
  if (spec.warmBursts) {
    const warm = new Pool(spec.warmBursts.origin, { connections: spec.connections, pipelining: 1 });
    for (let b = 0; b < spec.warmBursts.count; b++) {
      await Promise.all(
        spec.targets.map((t) =>
          warm
            .request({ method: 'POST', path: t.path, headers: { 'content-type': 'application/json' }, body: t.body })
            .then((res) => res.body.dump()),
        ),
      );
      await new Promise((r) => setTimeout(r, 50));
    }
    await warm.close();
  }
  if (spec.warmPath) {
    await Promise.all(
      Array.from({ length: spec.connections }, () =>
        pool.request({ method: 'GET', path: spec.warmPath! }).then((res) => res.body.dump()),
      ),
    );
  }
  // Development: BENCH_LOADGEN_TRACE=<folder> keeps [wall-clock due ms, latency ms] of every recorded request.
  const traceDir = process.env.BENCH_LOADGEN_TRACE;
  const trace: [number, number][] | undefined = traceDir ? [] : undefined;
  const inflight = new Set<Promise<void>>();
  const finish: (() => LevelResult)[] = [];
  let target = 0;

  for (const level of spec.levels) {
    const latencies: number[] = [];
    const service: number[] = [];
    const lags: number[] = [];
    const statuses: Record<string, number> = {};
    let ok = 0;
    let non2xx = 0;
    let errors = 0;
    let lastDone = 0;
    const deliveries: [string, number, number][] = [];
    const slow: [number, number][] = [];
    const total = level.burst ?? Math.round((level.rate * level.durationMs) / 1000);
    const interval = level.burst !== undefined ? 0 : 1000 / level.rate;
    if (level.pauseBeforeMs) await new Promise((r) => setTimeout(r, level.pauseBeforeMs));
    const t0 = performance.now();
    let next = 0;
    const mine = new Set<Promise<void>>();

    const send = (due: number) => {
      const index = target++ % spec.targets.length;
      const t = spec.targets[index]!;
      const sentAt = performance.now();
      lags.push(sentAt - due);
      const p: Promise<void> = pool
        .request({
          method: 'POST',
          path: t.path,
          headers: { 'content-type': 'application/json' },
          body: t.body,
          reset: !spec.keepAlive,
        })
        .then(
          async (res) => {
            const status = res.statusCode;
            if (spec.collect && status >= 200 && status < 300) {
              const text = await res.body.text();
              const at = wallNow();
              const id = /"deliveryId":"([^"]+)"/.exec(text)?.[1];
              if (id) deliveries.push([id, at, index]);
            } else {
              await res.body.dump();
            }
            statuses[status] = (statuses[status] ?? 0) + 1;
            if (status >= 200 && status < 300) ok++;
            else non2xx++;
          },
          (err: unknown) => {
            errors++;
            const code = (err as { code?: string }).code ?? 'error';
            statuses[code] = (statuses[code] ?? 0) + 1;
          },
        )
        .then(() => {
          const done = performance.now();
          lastDone = Math.max(lastDone, done);
          latencies.push(done - due);
          if (spec.slowMs !== undefined && level.record && done - due >= spec.slowMs && slow.length < 5_000)
            slow.push([Math.round(performance.timeOrigin + due), Math.round((done - due) * 10) / 10]);
          service.push(done - sentAt);
          if (trace && level.record)
            trace.push([Math.round((performance.timeOrigin + due) * 10) / 10, Math.round((done - due) * 100) / 100]);
          inflight.delete(p);
          mine.delete(p);
        });
      inflight.add(p);
      mine.add(p);
    };

    await new Promise<void>((resolve) => {
      const tick = () => {
        const now = performance.now();
        while (next < total && t0 + next * interval <= now) {
          send(t0 + next * interval);
          next++;
        }
        if (next >= total) return resolve();
        const wait = t0 + next * interval - performance.now();
        setTimeout(tick, Math.max(0, Math.min(wait, 5)));
      };
      tick();
    });
    // A recorded level's answers are all in before the next level starts; a warm-up runs straight into it.
    if (level.record) await Promise.all([...mine]);
    finish.push(() => ({
      name: level.name,
      record: level.record,
      rate: level.rate,
      durationMs: level.durationMs,
      scheduled: total,
      ok,
      non2xx,
      errors,
      statuses,
      latencyMs: summarize(latencies),
      serviceMs: summarize(service),
      sendLagMs: summarize(lags),
      achievedRps: total / ((lastDone - t0) / 1000),
      ...(spec.collect ? { deliveries } : {}),
      ...(spec.keepSamples && level.record ? { latencySamples: latencies } : {}),
      ...(spec.slowMs !== undefined && level.record ? { slow } : {}),
    }));
  }
  await Promise.all([...inflight]);
  await pool.close();
  if (traceDir && trace) writeFileSync(`${traceDir}/loadgen-${process.pid}.json`, JSON.stringify(trace));
  const cpu = process.cpuUsage();
  const results = finish.map((f) => f());
  for (const r of results) r.generatorCpuSeconds = (cpu.user + cpu.system) / 1e6;
  writeFileSync(resultFile, JSON.stringify(results, null, 2));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
