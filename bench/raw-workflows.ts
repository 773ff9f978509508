// The raw ceiling of the Temporal server the journeys run on: a workflow with the plain shape of a GFE journey and
// nothing else. Two activities (the exam list, the invite), then a timer (the consultation deadline) and one signal
// (event 1), and it completes: the shape a GFE journey had before its exam list became a local activity. Empty
// activities, no HTTP, no payload encryption, no search attributes, on its own task queue and worker
// (bench/raw-worker.ts).
// Workflow code: deterministic, imports @temporalio/workflow only.
import { condition, defineSignal, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';

export const RAW_TASK_QUEUE = 'bench-raw';

export interface RawActivities {
  /** Stands in for getExamCatalog. */
  rawCatalog(): Promise<number[]>;
  /** Stands in for createInvite: after delayMs the "provider" signals the workflow, like the sandbox's event 1. */
  rawInvite(workflowId: string, delayMs: number): Promise<number>;
}

export const rawCallback = defineSignal<[{ event: number; patientExamId: number }]>('rawCallback');

const act = proxyActivities<RawActivities>({ startToCloseTimeout: '45 seconds', retry: { maximumAttempts: 8 } });

export async function rawJourney(input: { delayMs: number }): Promise<{ patientExamId: number }> {
  let received: number | undefined;
  setHandler(rawCallback, (cb) => {
    received = cb.patientExamId;
  });
  await act.rawCatalog();
  await act.rawInvite(workflowInfo().workflowId, input.delayMs);
  // The journey waits for event 1 with the consultation deadline as a timer.
  await condition(() => received !== undefined, '7 days');
  return { patientExamId: received ?? 0 };
}
