// An update that meets the journey's end on its way: whatever Temporal answers then, the clinic hears that the journey
// has ended (409), not a server fault; an error while the journey still runs stays an error.
import type { Client, WorkflowExecutionDescription } from '@temporalio/client';
import { JourneyGateway } from '../../src/api/journeys';
import { ApiProblem } from '../../src/api/problem';
import { resendUpdate } from '../../src/contract/definitions';

function gateway(statusAfter: string) {
  const handle = {
    executeUpdate: () => Promise.reject(new Error('an answer Temporal gives while the workflow completes')),
    describe: () => Promise.resolve({ status: { name: statusAfter } }),
  };
  const temporal = {
    workflow: { getHandle: () => handle },
    connection: { withDeadline: <T>(_deadline: number, fn: () => Promise<T>) => fn() },
  } as unknown as Client;
  return new JourneyGateway({ temporal, taskQueue: 'q', timeoutMs: 1_000, pageTokenSecret: 'secret-0123456789' });
}
const running = { workflowId: 'journey-j1', runId: 'r1', status: { name: 'RUNNING' } } as WorkflowExecutionDescription;

describe('an update racing the journey to its end', () => {
  it('answers 409 journey-ended when the journey has ended meanwhile', async () => {
    const err = await gateway('COMPLETED')
      .update(running, resendUpdate, {})
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiProblem);
    expect(err).toMatchObject({ status: 409, slug: 'journey-ended' });
  });

  it('passes the error on when the journey still runs', async () => {
    const err = await gateway('RUNNING')
      .update(running, resendUpdate, {})
      .catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(ApiProblem);
    expect(String(err)).toMatch(/while the workflow completes/);
  });
});
