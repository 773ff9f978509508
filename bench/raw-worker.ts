// The worker of the raw-ceiling workflows (bench/raw-workflows.ts): the journey worker's sizes, its own task queue,
// activities that do nothing but schedule the "provider's" signal, sent from here through a plain client.
//
//   TEMPORAL_ADDRESS=127.0.0.1:22233 node --import tsx bench/raw-worker.ts
import { Client, Connection, defaultPayloadConverter } from '@temporalio/client';
import { Context } from '@temporalio/activity';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { DEFAULT_WORKFLOW_STACK_FRAMES, withWorkflowStackFrames } from '../src/workflow-stack-frames';
import { RAW_TASK_QUEUE, rawCallback, type RawActivities } from './raw-workflows';

async function main() {
  const address = process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const client = new Client({ connection: await Connection.connect({ address }) });
  const native = await NativeConnection.connect({ address });
  const timers = new Set<NodeJS.Timeout>();
  let sequence = 0;
  const activities: RawActivities = {
    rawCatalog: () => Promise.resolve([101, 102, 103]),
    rawInvite: async (workflowId, delayMs, heartbeat) => {
      // A journey's invite has Temporal record that it is sending before it sends (its evidence of sending), and
      // waits for the server to have it (src/temporal.ts heartbeatRecorder).
      if (heartbeat) {
        await native.workflowService.recordActivityTaskHeartbeat({
          taskToken: Context.current().info.taskToken,
          namespace: 'default',
          identity: `${process.pid}@bench-raw-worker`,
          details: { payloads: [defaultPayloadConverter.toPayload('sending')] },
        });
      }
      const patientExamId = 90_000 + ++sequence;
      const timer = setTimeout(() => {
        timers.delete(timer);
        client.workflow
          .getHandle(workflowId)
          .signal(rawCallback, { event: 1, patientExamId })
          .catch((err: unknown) => console.error(`signal to ${workflowId} failed:`, err));
      }, delayMs);
      timers.add(timer);
      return patientExamId;
    },
  };
  // The journeys' stack frames too (WORKFLOW_STACK_TRACE_FRAMES, the engine's default unless set): the ceiling is what
  // the server does with workflows that cost their worker the least, not a journey's saving counted against it.
  const frames = Number(process.env.WORKFLOW_STACK_TRACE_FRAMES || DEFAULT_WORKFLOW_STACK_FRAMES);
  const worker = await withWorkflowStackFrames(frames, () =>
    Worker.create({
      connection: native,
      taskQueue: RAW_TASK_QUEUE,
      workflowsPath: require.resolve('./raw-workflows'),
      activities,
      maxCachedWorkflows: Number(process.env.WORKER_MAX_CACHED_WORKFLOWS ?? 2000),
      maxConcurrentActivityTaskExecutions: Number(process.env.WORKER_MAX_CONCURRENT_ACTIVITIES ?? 100),
      maxConcurrentWorkflowTaskExecutions: Number(process.env.WORKER_MAX_CONCURRENT_WORKFLOW_TASKS ?? 40),
    }),
  );
  console.log(`raw worker polling task queue "${RAW_TASK_QUEUE}" on ${address}`);
  await worker.run();
  for (const t of timers) clearTimeout(t);
  await client.connection.close();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
