// The delivery check's sweep of the journeys' snapshots: a journey the server refuses to query for a while (its
// workflow task timed out and is tried again, as while a worker works off an outage's backlog) is asked again after the
// others, and counted unknown only when it is still refused once the sweep's patience is spent. And a throughput run
// in which nothing completed (cut short by the bench's hard limit) has no rate, not a negative time.
import type { Client } from '@temporalio/client';
import { sweep } from '../../bench/lib/deliveries';
import { summarize } from '../../bench/lib/stats';
import { pooled } from '../../bench/phases/throughput';
import { journeyWorkflowId } from '../../src/contract/definitions';

const REFUSED =
  'Failed to query Workflow: 9 FAILED_PRECONDITION: Unable to query workflow due to Workflow Task in failed state.';

/** A client whose journeys each answer their deliveries, after being refused `refusals` times. */
function fakeClient(journeys: Record<string, { deliveries: string[]; refusals: number }>) {
  const asked: string[] = [];
  const byWorkflow = new Map(Object.entries(journeys).map(([id, j]) => [journeyWorkflowId(id), j]));
  const client = {
    workflow: {
      getHandle: (workflowId: string) => ({
        query: () => {
          asked.push(workflowId);
          const j = byWorkflow.get(workflowId)!;
          if (j.refusals > 0) {
            j.refusals--;
            return Promise.reject(new Error(REFUSED));
          }
          return Promise.resolve({
            events: j.deliveries.map((deliveryId, i) => ({
              deliveryId,
              receivedAt: new Date(1_000 * (i + 1)).toISOString(),
            })),
          });
        },
      }),
    },
  } as unknown as Client;
  return { client, asked };
}

describe("the delivery check's sweep", () => {
  beforeEach(() => jest.useFakeTimers({ doNotFake: ['performance', 'queueMicrotask', 'nextTick', 'setImmediate'] }));
  afterEach(() => jest.useRealTimers());

  it('asks a refused journey again after the others, and finds its deliveries once it answers', async () => {
    const { client, asked } = fakeClient({
      a: { deliveries: ['d1', 'd2'], refusals: 0 },
      // Refused for over a minute of pauses: longer than a handful of quick tries would wait.
      b: { deliveries: ['d3'], refusals: 8 },
    });
    const done = sweep(client, ['a', 'b'], 2, 120_000);
    await jest.advanceTimersByTimeAsync(120_000);
    const s = await done;
    expect(s.failed).toEqual([]);
    expect([...s.applied.keys()].sort()).toEqual(['d1', 'd2', 'd3']);
    expect(asked.filter((w) => w === journeyWorkflowId('b'))).toHaveLength(9);
    expect(asked.filter((w) => w === journeyWorkflowId('a'))).toHaveLength(1);
  });

  it('counts a journey still refused after its patience as unknown, naming the error', async () => {
    const { client } = fakeClient({ a: { deliveries: ['d1'], refusals: 0 }, b: { deliveries: ['d2'], refusals: 1e9 } });
    const done = sweep(client, ['a', 'b'], 2, 10_000);
    await jest.advanceTimersByTimeAsync(20_000);
    const s = await done;
    expect(s.failed).toEqual([{ journeyId: 'b', error: REFUSED }]);
    expect([...s.applied.keys()]).toEqual(['d1']);
  });
});

describe('a throughput run with nothing completed', () => {
  it('has no rate and no time, not a negative one', () => {
    const none = summarize([]);
    const empty = {
      label: 'raw',
      n: 300,
      completed: 0,
      wallSeconds: 0,
      perSecond: 0,
      timeToCompleteMs: none,
      startMs: none,
      startErrors: 0,
    };
    const row = pooled([empty, { ...empty }]);
    expect(row).toMatchObject({ completed: 0, wallSeconds: 0, perSecond: 0, runsPerSecond: [0, 0] });
  });
});
