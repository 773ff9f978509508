// The forwarder over both inbox stores, with a fake Temporal client: per-journey arrival order at bounded
// concurrency, backoff while Temporal does not answer (no hot loop, nothing lost), dead letters for journeys that are
// gone (but not for one its finished journey had taken: an answer lost as Temporal came back), a refused signal that
// holds its journey's later callbacks back, and prompt wake-ups on appends (PostgreSQL: another replica's append, by
// NOTIFY).
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import {
  InboxForwarder,
  temporalUnreachable,
  type ForwarderPolicy,
  type InboxForwarderOptions,
} from '../../src/inbox/forwarder';
import type { CallbackInbox } from '../../src/inbox/types';
import type { CallbackSignal } from '../../src/contract/definitions';
import { fileHarness, postgresHarness, signalFor, type StoreHarness } from './support';

/** A gRPC error as @temporalio/client reports it (code, details, metadata). */
function grpcError(code: number, message = 'unavailable'): Error {
  return Object.assign(new Error(message), { code, details: message, metadata: {} });
}

type SignalFn = (workflowId: string, signal: CallbackSignal) => Promise<void>;

/** What a journey's snapshot query answers with: the deliveries it recorded (or a failure to answer). */
type QueryFn = (workflowId: string) => Promise<{ events: { deliveryId: string }[] }>;

function fakeTemporal(signal: SignalFn, query?: QueryFn) {
  const calls: { workflowId: string; deliveryId: string }[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const client = {
    workflow: {
      getHandle: (workflowId: string) => ({
        signal: async (_def: unknown, arg: CallbackSignal) => {
          calls.push({ workflowId, deliveryId: arg.deliveryId });
          maxInFlight = Math.max(maxInFlight, ++inFlight);
          try {
            await signal(workflowId, arg);
          } finally {
            inFlight--;
          }
        },
        query: async () => {
          if (!query) throw new Error('no query expected');
          return query(workflowId);
        },
      }),
    },
    connection: { withDeadline: <T>(_deadline: number, fn: () => Promise<T>) => fn() },
  };
  return { client: client as unknown as Client, calls, maxInFlight: () => maxInFlight };
}

const silentLog = { warn: () => undefined, error: () => undefined };
const sent = (calls: { workflowId: string; deliveryId: string }[], journeyId: string) =>
  calls.filter((c) => c.workflowId === `journey-${journeyId}`).map((c) => c.deliveryId);

it('tells an unreachable Temporal from a refused call', () => {
  expect(temporalUnreachable(grpcError(14))).toBe(true); // UNAVAILABLE
  expect(temporalUnreachable(grpcError(4))).toBe(true); // DEADLINE_EXCEEDED
  expect(temporalUnreachable(Object.assign(new Error('wrapped'), { cause: grpcError(14) }))).toBe(true);
  expect(temporalUnreachable(grpcError(3))).toBe(false); // INVALID_ARGUMENT
  expect(temporalUnreachable(new Error('codec failed'))).toBe(false);
});

describe.each([
  ['files', fileHarness],
  ['postgres', postgresHarness],
] as const)('inbox forwarder (%s)', (_kind, makeHarness) => {
  let h: StoreHarness;
  let inbox: CallbackInbox;
  const forwarders: InboxForwarder[] = [];

  beforeAll(async () => {
    h = await makeHarness();
  }, 60_000);
  afterAll(async () => h?.teardown());
  beforeEach(async () => {
    await h.reset();
    inbox = await h.open();
  });
  afterEach(async () => {
    for (const f of forwarders.splice(0)) await f.stop();
  });

  function forwarder(
    client: Client,
    o: {
      concurrency?: number;
      idlePollMs?: number;
      on?: CallbackInbox;
      pressure?: () => boolean;
      burst?: () => boolean;
      maxDeferMs?: number;
      probe?: () => Promise<boolean>;
      maxBackoffMs?: number;
      policy?: ForwarderPolicy;
      webhookBusy?: () => boolean;
      yieldMaxMs?: number;
      gatherMs?: number;
      log?: InboxForwarderOptions['log'];
    } = {},
  ) {
    const f = new InboxForwarder({
      inbox: o.on ?? inbox,
      temporal: client,
      signalTimeoutMs: 1_000,
      concurrency: o.concurrency ?? 4,
      claimJourneys: 8,
      claimPerJourney: 5,
      minBackoffMs: 20,
      maxBackoffMs: o.maxBackoffMs ?? 200,
      idlePollMs: o.idlePollMs ?? 200,
      log: o.log ?? silentLog,
      ...(o.pressure ? { pressure: o.pressure, recoverMs: 50 } : {}),
      ...(o.burst ? { burst: o.burst } : {}),
      ...(o.maxDeferMs !== undefined ? { maxDeferMs: o.maxDeferMs } : {}),
      ...(o.probe ? { probe: o.probe } : {}),
      ...(o.policy ? { policy: o.policy } : {}),
      ...(o.webhookBusy ? { webhookBusy: o.webhookBusy } : {}),
      ...(o.yieldMaxMs !== undefined ? { yieldMaxMs: o.yieldMaxMs } : {}),
      ...(o.gatherMs !== undefined ? { gatherMs: o.gatherMs } : {}),
    });
    forwarders.push(f);
    return f;
  }

  async function appendInterleaved(journeys: string[], n: number): Promise<Record<string, string[]>> {
    const order: Record<string, string[]> = Object.fromEntries(journeys.map((j) => [j, []]));
    for (let i = 0; i < n; i++) {
      const journeyId = journeys[i % journeys.length]!;
      const signal = signalFor();
      order[journeyId]!.push(signal.deliveryId);
      await inbox.append(journeyId, signal);
    }
    return order;
  }

  it('forwards several journeys at once, at most `concurrency`, each journey in its arrival order', async () => {
    const journeys = ['a', 'b', 'c', 'd', 'e', 'f'];
    const order = await appendInterleaved(journeys, 60);
    const t = fakeTemporal(() => new Promise((r) => setTimeout(r, 2 + Math.random() * 10)));
    const f = forwarder(t.client, { concurrency: 3 });
    f.start();
    expect(await f.drained(20_000)).toBe(true);
    for (const j of journeys) expect(sent(t.calls, j)).toEqual(order[j]);
    expect(t.calls).toHaveLength(60);
    expect(t.maxInFlight()).toBeLessThanOrEqual(3);
    expect(t.maxInFlight()).toBeGreaterThan(1);
  });

  it('backs off while Temporal does not answer, loses nothing, and forwards everything once it is back', async () => {
    const order = await appendInterleaved(['a', 'b'], 10);
    let up = false;
    const t = fakeTemporal(() => (up ? Promise.resolve() : Promise.reject(grpcError(14))));
    const lines: { level: string; obj: Record<string, unknown>; msg: string }[] = [];
    const record = (level: string) => (obj: object, msg: string) =>
      lines.push({ level, obj: obj as Record<string, unknown>, msg });
    const f = forwarder(t.client, { log: { info: record('info'), warn: record('warn'), error: record('error') } });
    f.start();
    await new Promise((r) => setTimeout(r, 1_000));
    // A backoff doubling to 200 ms: a handful of attempts in a second, not a hot loop; each journey's first entry
    // only (a failed one holds its journey's later entries back).
    expect(t.calls.length).toBeGreaterThan(0);
    expect(t.calls.length).toBeLessThan(40);
    expect(new Set(t.calls.map((c) => c.deliveryId))).toEqual(new Set([order.a![0], order.b![0]]));
    expect((await inbox.stats()).depth).toBe(10);

    up = true;
    expect(await f.drained(10_000)).toBe(true);
    for (const j of ['a', 'b']) {
      const got = sent(t.calls, j);
      // The first entry tried during the outage and once more after it, then each later entry once, in order.
      expect(got.slice(got.lastIndexOf(order[j]![0]!))).toEqual(order[j]);
    }
    // Said once when the outage began (not once per failed signal) and once when it ended, with its figures.
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      ['warn', 'Temporal unreachable: callbacks wait in the inbox and are signalled once it answers'],
      ['info', 'Temporal answers the signals again: the forwarder signals the callbacks the inbox kept'],
    ]);
    const failedDuringOutage = t.calls.length - 10;
    expect(lines[1]!.obj.failedSignals).toBe(failedDuringOutage);
    expect(lines[1]!.obj.unreachableSeconds).toBeGreaterThanOrEqual(0.5);
  });

  it('makes dead letters of callbacks whose journey is gone, without holding the others back', async () => {
    const order = await appendInterleaved(['gone', 'alive'], 6);
    const t = fakeTemporal((workflowId) =>
      workflowId === 'journey-gone'
        ? Promise.reject(new WorkflowNotFoundError('workflow not found', workflowId, undefined))
        : Promise.resolve(),
    );
    const f = forwarder(t.client);
    f.start();
    expect(await f.drained(10_000)).toBe(true);
    expect(sent(t.calls, 'alive')).toEqual(order.alive);
    const letters = (await inbox.deadLetters.list({ limit: 10 })).letters;
    expect(letters.map((l) => [l.journeyId, l.reason, l.deliveryId])).toEqual(
      order.gone!.map((d) => ['gone', 'journey_not_found', d]),
    );
  });

  it('settles a retried callback its journey took before finishing (the answer was lost), and dead-letters a late one', async () => {
    // As Temporal comes back: the first signal of 'done' is applied but its answer misses the deadline; the journey
    // then finishes on it, so the retry meets a finished journey. The journey's snapshot says whether it has it.
    const [applied, late] = [signalFor(), signalFor()];
    await inbox.append('done', applied);
    await inbox.append('done', late);
    const recorded: { deliveryId: string }[] = [];
    let finished = false;
    const t = fakeTemporal(
      (workflowId, s) => {
        if (finished) {
          return Promise.reject(
            new WorkflowNotFoundError('workflow execution already completed', workflowId, undefined),
          );
        }
        recorded.push({ deliveryId: s.deliveryId });
        finished = true;
        return Promise.reject(grpcError(4, 'deadline exceeded'));
      },
      () => Promise.resolve({ events: recorded }),
    );
    const f = forwarder(t.client);
    f.start();
    expect(await f.drained(10_000)).toBe(true);
    expect(sent(t.calls, 'done')).toEqual([applied.deliveryId, applied.deliveryId, late.deliveryId]);
    const letters = (await inbox.deadLetters.list({ limit: 10 })).letters;
    expect(letters.map((l) => [l.reason, l.deliveryId])).toEqual([['journey_finished', late.deliveryId]]);
  });

  it('dead-letters a callback to a finished journey that cannot be asked (no worker answers its query)', async () => {
    const s = signalFor();
    await inbox.append('closed', s);
    const t = fakeTemporal(
      (workflowId) =>
        Promise.reject(new WorkflowNotFoundError('workflow execution already completed', workflowId, undefined)),
      () => Promise.reject(grpcError(4, 'deadline exceeded')),
    );
    const f = forwarder(t.client);
    f.start();
    expect(await f.drained(10_000)).toBe(true);
    const letters = (await inbox.deadLetters.list({ limit: 10 })).letters;
    expect(letters.map((l) => [l.reason, l.deliveryId])).toEqual([['journey_finished', s.deliveryId]]);
  });

  it('retries a refused signal later and keeps that journey in order meanwhile', async () => {
    const order = await appendInterleaved(['flaky', 'steady'], 8);
    let refusals = 2;
    const t = fakeTemporal((workflowId) =>
      workflowId === 'journey-flaky' && refusals-- > 0 ? Promise.reject(grpcError(3, 'refused')) : Promise.resolve(),
    );
    const f = forwarder(t.client);
    f.start();
    expect(await f.drained(10_000)).toBe(true);
    const flaky = sent(t.calls, 'flaky');
    // The first entry was tried three times (two refusals) before any later entry went out.
    expect(flaky.slice(0, 3)).toEqual([order.flaky![0], order.flaky![0], order.flaky![0]]);
    expect(flaky.slice(2)).toEqual(order.flaky);
    expect(sent(t.calls, 'steady')).toEqual(order.steady);
  });

  it('wakes on an append instead of waiting for its poll (PostgreSQL: another replica appending)', async () => {
    const t = fakeTemporal(() => Promise.resolve());
    const f = forwarder(t.client, { idlePollMs: 60_000 });
    f.start();
    await new Promise((r) => setTimeout(r, 300));
    const other = h.kind === 'postgres' ? await h.open() : inbox;
    const s = signalFor();
    const t0 = Date.now();
    await other.append('woken', s);
    while (t.calls.length === 0 && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 10));
    expect(t.calls.map((c) => c.deliveryId)).toEqual([s.deliveryId]);
    // Well before the 60 s poll: the wake-up did it (the bound is loose: this machine is shared).
    expect(Date.now() - t0).toBeLessThan(10_000);
  });

  it('gathers a trickle of callbacks into a few claims, each journey still in its arrival order', async () => {
    // Each claim's round trips and parsing run on the webhook's event loop whatever it carries: one at each append
    // would carry a callback or two. The forwarder lets them gather for gatherMs after it wakes.
    const counting = (gatherMs: number) => {
      let claims = 0;
      const counted: CallbackInbox = {
        kind: inbox.kind,
        deadLetters: inbox.deadLetters,
        init: () => inbox.init(),
        append: (j, s, a) => inbox.append(j, s, a),
        claim: async (j, p) => {
          const c = await inbox.claim(j, p);
          if (c) claims++;
          return c;
        },
        stats: () => inbox.stats(),
        onAppend: (l) => inbox.onAppend(l),
        close: () => inbox.close(),
      };
      return { counted, claims: () => claims, gatherMs };
    };
    const run = async (gatherMs: number) => {
      const c = counting(gatherMs);
      const t = fakeTemporal(() => Promise.resolve());
      const f = forwarder(t.client, { on: c.counted, gatherMs, idlePollMs: 60_000 });
      f.start();
      const order: Record<string, string[]> = { a: [], b: [] };
      for (let i = 0; i < 24; i++) {
        const j = i % 2 ? 'b' : 'a';
        const s = signalFor();
        order[j]!.push(s.deliveryId);
        await inbox.append(j, s);
        await new Promise((r) => setTimeout(r, 5));
      }
      expect(await f.drained(20_000)).toBe(true);
      await f.stop();
      for (const j of ['a', 'b']) expect(sent(t.calls, j)).toEqual(order[j]);
      return c.claims();
    };
    // 24 appends 5 ms or more apart: in 400 ms pauses a handful of claims at most, where a claim at each wake-up
    // takes about one each.
    const gathered = await run(400);
    expect(gathered).toBeLessThanOrEqual(4);
    const atOnce = await run(0);
    expect(atOnce).toBeGreaterThan(gathered);
  });

  it('surge: sends nothing new while acknowledgements are slow, back up to the limit after', async () => {
    const journeys = ['a', 'b', 'c', 'd', 'e', 'f'];
    const order = await appendInterleaved(journeys, 36);
    let pressure = true;
    const t = fakeTemporal(() => new Promise((r) => setTimeout(r, 5)));
    const f = forwarder(t.client, { concurrency: 2, pressure: () => pressure, maxDeferMs: 60_000, policy: 'surge' });
    f.start();
    await new Promise((r) => setTimeout(r, 500));
    // Fresh callbacks wait (durably) while the webhook is slow.
    expect(t.calls).toHaveLength(0);
    expect((await inbox.stats()).depth).toBe(36);
    pressure = false;
    expect(await f.drained(20_000)).toBe(true);
    for (const j of journeys) expect(sent(t.calls, j)).toEqual(order[j]);
    expect(f.currentLimit).toBeGreaterThan(1);
  });

  it('surge: under lasting pressure, still signals a callback that has waited its longest deferral, one at a time', async () => {
    const journeys = ['a', 'b', 'c', 'd'];
    const order = await appendInterleaved(journeys, 12);
    const t = fakeTemporal(() => new Promise((r) => setTimeout(r, 5)));
    const f = forwarder(t.client, { concurrency: 4, pressure: () => true, maxDeferMs: 300, policy: 'surge' });
    const t0 = Date.now();
    f.start();
    expect(await f.drained(20_000)).toBe(true);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
    expect(t.maxInFlight()).toBe(1);
    for (const j of journeys) expect(sent(t.calls, j)).toEqual(order[j]);
  });

  it('adaptive (the default): under lasting pressure that is no burst nothing waits, with fewer signals in flight (not below its floor of 2)', async () => {
    const journeys = ['a', 'b', 'c', 'd', 'e', 'f'];
    const order = await appendInterleaved(journeys, 36);
    // Signals slow enough (40 ms) for the limit to halve a few times (at most every 100 ms) before the end.
    const t = fakeTemporal(() => new Promise((r) => setTimeout(r, 40)));
    // A deferral far longer than the test: under the surge policy nothing would go at all.
    // The default policy.
    const f = forwarder(t.client, { concurrency: 8, pressure: () => true, maxDeferMs: 60_000 });
    f.start();
    expect(await f.drained(20_000)).toBe(true);
    expect(t.calls).toHaveLength(36);
    expect(f.currentLimit).toBe(2);
    expect(t.maxInFlight()).toBeLessThanOrEqual(8);
    for (const j of journeys) expect(sent(t.calls, j)).toEqual(order[j]);
  });

  it('adaptive: holds new signals through a burst, then drains at the limit it had, in order', async () => {
    const journeys = ['a', 'b', 'c', 'd', 'e', 'f'];
    const order = await appendInterleaved(journeys, 36);
    let pressure = true;
    const t = fakeTemporal(() => new Promise((r) => setTimeout(r, 5)));
    const f = forwarder(t.client, {
      concurrency: 8,
      pressure: () => pressure,
      burst: () => pressure,
      maxDeferMs: 60_000,
    });
    f.start();
    await new Promise((r) => setTimeout(r, 500));
    // The callbacks came faster than the journeys took them: they wait (durably) until the burst has passed.
    expect(t.calls).toHaveLength(0);
    expect((await inbox.stats()).depth).toBe(36);
    // Nothing went, so nothing was halved: the drain after it runs at the full limit.
    expect(f.currentLimit).toBe(8);
    pressure = false;
    expect(await f.drained(20_000)).toBe(true);
    for (const j of journeys) expect(sent(t.calls, j)).toEqual(order[j]);
    expect(t.maxInFlight()).toBeGreaterThan(2);
  });

  it('adaptive: holds through a burst the webhook felt while its answers are fast again (no pressure now)', async () => {
    const journeys = ['a', 'b'];
    const order = await appendInterleaved(journeys, 10);
    let felt = true;
    const t = fakeTemporal(() => new Promise((r) => setTimeout(r, 5)));
    const f = forwarder(t.client, { concurrency: 4, pressure: () => false, burst: () => felt, maxDeferMs: 60_000 });
    f.start();
    await new Promise((r) => setTimeout(r, 300));
    expect(t.calls).toHaveLength(0);
    felt = false;
    expect(await f.drained(20_000)).toBe(true);
    expect(f.currentLimit).toBe(4);
    for (const j of journeys) expect(sent(t.calls, j)).toEqual(order[j]);
  });

  it('adaptive: a burst that outlasts the longest deferral holds each callback that long, then paces it (never one at a time)', async () => {
    const journeys = ['a', 'b', 'c', 'd', 'e', 'f'];
    const order = await appendInterleaved(journeys, 24);
    const t = fakeTemporal(() => new Promise((r) => setTimeout(r, 40)));
    const f = forwarder(t.client, { concurrency: 8, pressure: () => true, burst: () => true, maxDeferMs: 300 });
    const t0 = Date.now();
    f.start();
    expect(await f.drained(20_000)).toBe(true);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
    expect(t.calls).toHaveLength(24);
    // Past the deferral the callbacks go as under any other pressure: the limit halved to its floor of 2, not 1.
    expect(t.maxInFlight()).toBeGreaterThanOrEqual(2);
    expect(f.currentLimit).toBe(2);
    for (const j of journeys) expect(sent(t.calls, j)).toEqual(order[j]);
  });

  it('steady: holds nothing through a burst (fewer signals in flight only)', async () => {
    const journeys = ['a', 'b', 'c'];
    const order = await appendInterleaved(journeys, 12);
    const t = fakeTemporal(() => new Promise((r) => setTimeout(r, 5)));
    const f = forwarder(t.client, {
      concurrency: 4,
      pressure: () => true,
      burst: () => true,
      maxDeferMs: 60_000,
      policy: 'steady',
    });
    f.start();
    expect(await f.drained(20_000)).toBe(true);
    for (const j of journeys) expect(sent(t.calls, j)).toEqual(order[j]);
  });

  it('yields to a burst the webhook is taking: claims nothing while it lasts, at most its longest yield, then drains', async () => {
    const journeys = ['a', 'b', 'c'];
    const order = await appendInterleaved(journeys, 9);
    let busy = true;
    const t = fakeTemporal(() => Promise.resolve());
    const f = forwarder(t.client, { webhookBusy: () => busy, yieldMaxMs: 60_000 });
    f.start();
    await new Promise((r) => setTimeout(r, 400));
    expect(t.calls).toHaveLength(0);
    expect((await inbox.stats()).depth).toBe(9);
    busy = false;
    expect(await f.drained(20_000)).toBe(true);
    for (const j of journeys) expect(sent(t.calls, j)).toEqual(order[j]);
    // A webhook busy for ever holds each claim and each signal back at most its longest yield.
    await f.stop();
    await appendInterleaved(['d'], 2);
    const g = forwarder(t.client, { webhookBusy: () => true, yieldMaxMs: 100 });
    const t0 = Date.now();
    g.start();
    expect(await g.drained(20_000)).toBe(true);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(90);
    expect(sent(t.calls, 'd')).toHaveLength(2);
  });

  it('cuts a long backoff short once Temporal answers again (probe once a second)', async () => {
    await appendInterleaved(['a'], 3);
    let up = false;
    const t = fakeTemporal(() => (up ? Promise.resolve() : Promise.reject(grpcError(14))));
    const f = forwarder(t.client, { maxBackoffMs: 60_000, probe: () => Promise.resolve(up) });
    f.start();
    // Long enough for the backoff to pass a few seconds (20 ms doubling).
    await new Promise((r) => setTimeout(r, 3_000));
    up = true;
    const t0 = Date.now();
    expect(await f.drained(10_000)).toBe(true);
    // Within about a probe interval, not the rest of a 60 s backoff.
    expect(Date.now() - t0).toBeLessThan(5_000);
  });
});
