// How the webhook hands a callback to Temporal when Temporal is slow or away (src/api/callback-delivery.ts), with a
// fake client: while Temporal is unreachable callbacks are spooled without a signal attempt (one probe a second),
// while several signals are late the next callback is spooled at once beside its signal, and the forwarder sends a
// journey's spooled callbacks in their order.
import { readdirSync } from 'node:fs';
import type { Client } from '@temporalio/client';
import { CallbackDelivery, temporalUnreachable } from '../../src/api/callback-delivery';
import { CallbackSpool, DeadLetterStore } from '../../src/api/callback-files';
import { createApiMetrics } from '../../src/api/metrics';
import type { CallbackSignal } from '../../src/workflows/definitions';
import { tempDataDir, type TestDirs } from './support';

/** A gRPC error as @temporalio/client reports it (code, details, metadata). */
function grpcError(code: number, message = 'unavailable'): Error {
  return Object.assign(new Error(message), { code, details: message, metadata: {} });
}

type SignalFn = (workflowId: string, signal: CallbackSignal) => Promise<void>;

function fakeTemporal(signal: SignalFn): { client: Client; calls: { workflowId: string; deliveryId: string }[] } {
  const calls: { workflowId: string; deliveryId: string }[] = [];
  const client = {
    workflow: {
      getHandle: (workflowId: string) => ({
        signal: (_def: unknown, arg: CallbackSignal) => {
          calls.push({ workflowId, deliveryId: arg.deliveryId });
          return signal(workflowId, arg);
        },
      }),
    },
    connection: { withDeadline: <T>(_deadline: number, fn: () => Promise<T>) => fn() },
  };
  return { client: client as unknown as Client, calls };
}

let sequence = 0;
function callback(): CallbackSignal {
  sequence++;
  return {
    deliveryId: `d-${String(sequence).padStart(4, '0')}`,
    receivedAt: new Date().toISOString(),
    callback: {
      event: 1,
      patientExamId: 90_000 + sequence,
      examId: 101,
      examStatus: 'Approved',
      rxStatus: null,
      examUrl: null,
      providerName: null,
      reason: null,
    },
    raw: { event: 1 },
  };
}

const silentLog = { warn: () => undefined, error: () => undefined, info: () => undefined };

describe('webhook hand-off when Temporal is slow or away', () => {
  let dirs: TestDirs;
  let spool: CallbackSpool;
  let deadLetters: DeadLetterStore;

  beforeEach(async () => {
    dirs = tempDataDir();
    spool = new CallbackSpool(`${dirs.dataDir}/spool`);
    deadLetters = new DeadLetterStore(`${dirs.dataDir}/dead-letters`);
    await Promise.all([spool.init(), deadLetters.init()]);
  });
  afterEach(() => dirs.cleanup());

  function delivery(client: Client, budgetMs = 50) {
    return new CallbackDelivery({
      temporal: client,
      spool,
      deadLetters,
      metrics: createApiMetrics({ spoolDepth: () => spool.depth, deadLetters: () => deadLetters.count }),
      budgetMs,
      signalTimeoutMs: 2_000,
      minBackoffMs: 20,
      maxBackoffMs: 100,
      log: silentLog,
    });
  }

  it('tells an unreachable Temporal from a refused call', () => {
    expect(temporalUnreachable(grpcError(14))).toBe(true); // UNAVAILABLE
    expect(temporalUnreachable(grpcError(4))).toBe(true); // DEADLINE_EXCEEDED
    expect(temporalUnreachable(Object.assign(new Error('wrapped'), { cause: grpcError(14) }))).toBe(true);
    expect(temporalUnreachable(grpcError(3))).toBe(false); // INVALID_ARGUMENT
    expect(temporalUnreachable(new Error('codec failed'))).toBe(false);
  });

  it('spools without trying the signal while Temporal is unreachable, probes once a second, and recovers', async () => {
    let up = false;
    const { client, calls } = fakeTemporal(() => (up ? Promise.resolve() : Promise.reject(grpcError(14))));
    const d = delivery(client);

    // The first callback finds out: its signal fails, it is spooled.
    expect(await d.deliver('j1', callback(), '{}')).toBe('spooled');
    expect(calls).toHaveLength(1);
    // The next ones go straight to the spool: no signal attempt while Temporal is known to be away.
    for (let i = 0; i < 5; i++) expect(await d.deliver('j1', callback(), '{}')).toBe('spooled');
    expect(calls).toHaveLength(1);
    expect(spool.depth).toBe(6);

    // A second later one callback probes; Temporal is back, so it is signalled, and so are the next ones.
    up = true;
    await new Promise((r) => setTimeout(r, 1_050));
    expect(await d.deliver('j1', callback(), '{}')).toBe('signalled');
    expect(await d.deliver('j1', callback(), '{}')).toBe('signalled');
    expect(calls).toHaveLength(3);

    // The forwarder sends what was spooled, in arrival order, once each.
    d.start();
    expect(await d.drained(5_000)).toBe(true);
    await d.stop();
    expect(readdirSync(spool.dir)).toEqual([]);
    const forwarded = calls.slice(3).map((c) => c.deliveryId);
    expect(forwarded).toEqual([...forwarded].sort());
    expect(forwarded).toHaveLength(6);
  });

  it('spools at once beside the signal while signals are late, and drops each copy its signal made redundant', async () => {
    const release: (() => void)[] = [];
    const { client, calls } = fakeTemporal(() => new Promise<void>((resolve) => release.push(resolve)));
    const d = delivery(client, 200);

    // Four callbacks wait out the budget (200 ms each) and are spooled with their signals still on the wire.
    const waited = performance.now();
    for (let i = 0; i < 4; i++) expect(await d.deliver('j2', callback(), '{}')).toBe('spooled');
    expect(performance.now() - waited).toBeGreaterThanOrEqual(4 * 190);
    // Temporal is slow: the next ones are spooled without waiting, their signals sent all the same.
    const t = performance.now();
    for (let i = 0; i < 4; i++) expect(await d.deliver('j2', callback(), '{}')).toBe('spooled');
    expect(performance.now() - t).toBeLessThan(4 * 190);
    expect(calls).toHaveLength(8);
    expect(spool.depth).toBe(8);

    // The signals land: every spooled copy is removed, nothing is forwarded twice.
    for (const r of release.splice(0)) r();
    expect(await d.drained(5_000)).toBe(true);
    expect(readdirSync(spool.dir)).toEqual([]);
    expect(calls).toHaveLength(8);
  });

  it('forwards several journeys at once but each journey in its own order', async () => {
    const { client, calls } = fakeTemporal(async () => {
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 20));
    });
    // Spooled by an earlier process: three journeys, interleaved.
    const order: Record<string, string[]> = { a: [], b: [], c: [] };
    for (let i = 0; i < 30; i++) {
      const journeyId = ['a', 'b', 'c'][i % 3]!;
      const signal = callback();
      order[journeyId]!.push(signal.deliveryId);
      await spool.write({ version: 1, journeyId, signal });
    }
    const d = delivery(client);
    d.start();
    expect(await d.drained(10_000)).toBe(true);
    await d.stop();
    for (const journeyId of ['a', 'b', 'c']) {
      const sent = calls.filter((c) => c.workflowId === `journey-${journeyId}`).map((c) => c.deliveryId);
      expect(sent).toEqual(order[journeyId]);
    }
  });
});
