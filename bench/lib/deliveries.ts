// What the journeys did with the callbacks: each acknowledged delivery (its deliveryId from the webhook's 200, and
// the wall-clock time the load generator got that 200) matched with the journey's own record of it (snapshot query:
// journey.events[], receivedAt = the workflow's clock when the signal was applied). Gives the time from
// acknowledgement to applied, and the exactly-once count. And Temporal's own signal rate on this machine: a direct
// signal loop from a client against the parked journeys, no API in between.
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { toJourneyCallback } from '../../src/inbox/reading';
import { parseCallback } from '../../src/exam-service/schemas';
import { signalJourney } from '../../src/inbox/forwarder';
import { journeyWorkflowId, snapshotQuery, type CallbackSignal } from '../../src/contract/definitions';
import { pool } from './journeys';
import { sleep } from '../../scripts/lib/processes';
import { summarize, type Summary } from './stats';

export interface AppliedSummary {
  /** 200s of the measured level (or burst). */
  acked: number;
  /** Of those, found applied in their journey. */
  matched: number;
  /** Journey's receivedAt (workflow clock, ms resolution) minus the time the generator got the 200. */
  ms: Summary;
  /** False: every delivery was looked up (all journeys were queried), not a sample. */
  sampled: boolean;
}

/** Acknowledged deliveries waiting for the sweep that tells when each was applied. */
export interface PendingApplied {
  target: { applied?: AppliedSummary };
  deliveries: [string, number][];
}

export interface Sweep {
  /** deliveryId -> the journey's receivedAt (epoch ms). */
  applied: Map<string, number>;
  /** Journeys whose snapshot could not be read (after retries): their deliveries are unknown, not missing. */
  failed: { journeyId: string; error: string }[];
  /** Event entries whose deliveryId appeared more than once in the same journey. */
  duplicateEntries: number;
  journeys: number;
  seconds: number;
}

/**
 * Every journey's snapshot: when it applied each delivery it recorded. A worker that is behind (workflow tasks timing
 * out and tried again, as after an outage's backlog) has the server refuse queries of those journeys for a while
 * ("Workflow Task in failed state"): a journey refused is asked again after the others, with pauses, for up to
 * `patienceMs`; only one still refused then is unknown.
 */
export async function sweep(
  client: Client,
  journeyIds: string[],
  concurrency = 8,
  patienceMs = 120_000,
): Promise<Sweep> {
  const t0 = performance.now();
  const applied = new Map<string, number>();
  let duplicateEntries = 0;
  const query = (id: string) => client.workflow.getHandle(journeyWorkflowId(id)).query(snapshotQuery);
  const refused = new Map<string, string>();
  const ask = async (id: string) => {
    let snap: Awaited<ReturnType<typeof query>>;
    try {
      snap = await query(id);
    } catch (err) {
      const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : '';
      refused.set(id, `${err instanceof Error ? err.message : String(err)}${cause}`);
      return;
    }
    refused.delete(id);
    const seen = new Set<string>();
    for (const e of snap.events) {
      if (seen.has(e.deliveryId)) duplicateEntries++;
      seen.add(e.deliveryId);
      applied.set(e.deliveryId, Date.parse(e.receivedAt));
    }
  };
  await pool(journeyIds, concurrency, ask);
  const giveUpAt = Date.now() + patienceMs;
  for (let round = 1; refused.size > 0 && Date.now() < giveUpAt; round++) {
    await sleep(Math.min(2_000 * round, 15_000, Math.max(0, giveUpAt - Date.now())));
    await pool([...refused.keys()], concurrency, ask);
  }
  const failed = [...refused].map(([journeyId, error]) => ({ journeyId, error }));
  return { applied, failed, duplicateEntries, journeys: journeyIds.length, seconds: (performance.now() - t0) / 1000 };
}

export function appliedSummary(deliveries: [string, number][], s: Sweep): AppliedSummary {
  const delays: number[] = [];
  for (const [id, ackAt] of deliveries) {
    const at = s.applied.get(id);
    if (at !== undefined) delays.push(at - ackAt);
  }
  return { acked: deliveries.length, matched: delays.length, ms: summarize(delays), sampled: false };
}

export interface DeliveryCheck {
  /** 200s the API gave to the parked journeys' callbacks in the webhook, burst and outage runs (warm-ups too). */
  acked: number;
  /** Signals sent straight to the journeys by the raw signal loop (attempts; also recorded by them). */
  rawSignals: number;
  /** Distinct deliveries the journeys recorded. */
  recorded: number;
  /** Acknowledged but not recorded by its journey (journeys that could be queried). */
  missing: number;
  /** Journeys whose snapshot could not be read, and the first error. */
  unqueried: number;
  unqueriedError?: string;
  /** Recorded but neither acknowledged nor sent by the raw loop. */
  unexpected: number;
  duplicateEntries: number;
  /** The API's own counters summed over its runs: accepted callbacks, signals the forwarder sent. */
  accepted: number;
  forwarded: number;
  journeys: number;
  perJourney: number;
  sweepSeconds: number;
}

export function deliveryCheck(
  s: Sweep,
  acked: Map<string, number>,
  raw: Set<string>,
  counters: { accepted: number; forwarded: number },
  journeyOf: Map<string, string>,
): DeliveryCheck {
  const unknown = new Set(s.failed.map((f) => f.journeyId));
  let missing = 0;
  for (const id of acked.keys()) if (!s.applied.has(id) && !unknown.has(journeyOf.get(id) ?? '')) missing++;
  let unexpected = 0;
  for (const id of s.applied.keys()) if (!acked.has(id) && !raw.has(id)) unexpected++;
  return {
    acked: acked.size,
    rawSignals: raw.size,
    recorded: s.applied.size,
    missing,
    unqueried: s.failed.length,
    ...(s.failed[0] ? { unqueriedError: s.failed[0].error } : {}),
    unexpected,
    duplicateEntries: s.duplicateEntries,
    accepted: counters.accepted,
    forwarded: counters.forwarded,
    journeys: s.journeys,
    perJourney: s.applied.size / Math.max(1, s.journeys),
    sweepSeconds: s.seconds,
  };
}

export interface RawSignalRun {
  /** The inbox whose drain this run followed (the raw rate is measured beside each drain). */
  after: string;
  concurrency: number;
  /**
   * Signals to one journey in a row before the next: 1 (journeys in turn, as live traffic spreads) or the
   * forwarder's claim size per journey (a drained backlog: each lane signals its journey's entries one after another).
   */
  perJourney: number;
  seconds: number;
  ok: number;
  errors: number;
  perSecond: number;
  /** One signal call (client to Temporal's answer). */
  latencyMs: Summary;
  cpu?: Record<string, number>;
}

/**
 * Temporal's signal rate here: `concurrency` signals in flight, each journey one at a time (the forwarder's shape),
 * the callbacks the webhook would have built, through the same client code (signalJourney), for `seconds`.
 */
export async function rawSignalLoop(
  client: Client,
  journeyIds: string[],
  bodies: string[],
  o: {
    concurrency: number;
    perJourney: number;
    seconds: number;
    timeoutMs: number;
    after: string;
    sent: Set<string>;
  },
): Promise<RawSignalRun> {
  // The callbacks as the webhook builds them (parsed and normalised once, before the clock starts).
  const templates = bodies.map((text) => {
    const parsed = parseCallback(text);
    if (!parsed.ok) throw new Error('a raw signal body is not a callback');
    return { callback: toJourneyCallback(parsed.event), raw: JSON.parse(text) as unknown };
  });
  const latencies: number[] = [];
  let ok = 0;
  let errors = 0;
  const t0 = performance.now();
  const until = t0 + o.seconds * 1000;
  let n = 0;
  // Worker w signals the journeys w, w + c, w + 2c...: never two signals in flight to one journey.
  await Promise.all(
    Array.from({ length: Math.min(o.concurrency, journeyIds.length) }, async (_, w) => {
      const mine = journeyIds.filter((_j, i) => i % o.concurrency === w);
      for (let k = 0; performance.now() < until; k++) {
        const journeyId = mine[Math.floor(k / o.perJourney) % mine.length]!;
        const signal: CallbackSignal = {
          deliveryId: randomUUID(),
          receivedAt: new Date().toISOString(),
          ...templates[n++ % templates.length]!,
        };
        // Every attempt counts as sent: a signal whose answer timed out may still have been applied.
        o.sent.add(signal.deliveryId);
        const t = performance.now();
        const r = await signalJourney(client, journeyId, signal, o.timeoutMs);
        latencies.push(performance.now() - t);
        if (r.ok) ok++;
        else errors++;
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  return {
    after: o.after,
    concurrency: o.concurrency,
    perJourney: o.perJourney,
    seconds,
    ok,
    errors,
    perSecond: ok / seconds,
    latencyMs: summarize(latencies),
  };
}
