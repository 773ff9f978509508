// The raw ceiling of the Temporal server the journeys run on: a workflow with the plain shape of a GFE journey and
// nothing else. Two activities (the exam list, the invite), then a timer (the consultation deadline) and one signal
// (event 1), and it completes: the shape a GFE journey had before its exam list became a local activity. Empty
// activities, no HTTP, no payload encryption, no search attributes, on its own task queue and worker
// (bench/raw-worker.ts).
//
// With `visible`, the same shape also tells Temporal what a journey tells it for the clinic and the operators, and
// nothing more: started with the journey's search attributes, its stage upserted as a journey's is (inviting,
// awaiting_consultation with the exam status, completed), and the invite's heartbeat (the journey's evidence of
// sending). No patch marker: a journey whose start names today's rules records none. The gap between the two is what
// the visibility writes cost this server; the gap from there to the journeys is the engine's own.
// Workflow code: deterministic, imports @temporalio/workflow and the journeys' search attribute keys only.
import {
  condition,
  defineSignal,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { SearchAttr } from '../src/contract/definitions';

export const RAW_TASK_QUEUE = 'bench-raw';

export interface RawActivities {
  /** Stands in for getExamCatalog. */
  rawCatalog(): Promise<number[]>;
  /** Stands in for createInvite: after delayMs the "provider" signals the workflow, like the sandbox's event 1. */
  rawInvite(workflowId: string, delayMs: number, heartbeat?: boolean): Promise<number>;
}

export const rawCallback = defineSignal<[{ event: number; patientExamId: number }]>('rawCallback');

const act = proxyActivities<RawActivities>({ startToCloseTimeout: '45 seconds', retry: { maximumAttempts: 8 } });

export async function rawJourney(input: { delayMs: number; visible?: boolean }): Promise<{ patientExamId: number }> {
  const visible = input.visible === true;
  let received: number | undefined;
  setHandler(rawCallback, (cb) => {
    received = cb.patientExamId;
  });
  if (visible) upsertSearchAttributes([{ key: SearchAttr.JourneyStage, value: 'inviting' }]);
  await act.rawCatalog();
  await act.rawInvite(workflowInfo().workflowId, input.delayMs, visible);
  if (visible) {
    upsertSearchAttributes([
      { key: SearchAttr.JourneyStage, value: 'awaiting_consultation' },
      { key: SearchAttr.ExamStatus, value: ['Pending'] },
    ]);
  }
  // The journey waits for event 1 with the consultation deadline as a timer.
  await condition(() => received !== undefined, '7 days');
  if (visible) {
    upsertSearchAttributes([
      { key: SearchAttr.JourneyStage, value: 'completed' },
      { key: SearchAttr.ExamStatus, value: ['Approved'] },
    ]);
  }
  return { patientExamId: received ?? 0 };
}
