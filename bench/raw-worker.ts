// The worker of the raw-ceiling workflows (bench/raw-workflows.ts): the journey worker's sizes, its own task queue,
// activities that do nothing but schedule the "provider's" signal, sent from here through a plain client.
//
//   TEMPORAL_ADDRESS=127.0.0.1:22233 node --import tsx bench/raw-worker.ts
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { RAW_TASK_QUEUE, rawCallback, type RawActivities } from './raw-workflows';

async function main() {
  const address = process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const client = new Client({ connection: await Connection.connect({ address }) });
  const timers = new Set<NodeJS.Timeout>();
  let sequence = 0;
  const activities: RawActivities = {
    rawCatalog: () => Promise.resolve([101, 102, 103]),
    rawInvite: (workflowId, delayMs) => {
      const patientExamId = 90_000 + ++sequence;
      const timer = setTimeout(() => {
        timers.delete(timer);
        client.workflow
          .getHandle(workflowId)
          .signal(rawCallback, { event: 1, patientExamId })
          .catch((err: unknown) => console.error(`signal to ${workflowId} failed:`, err));
      }, delayMs);
      timers.add(timer);
      return Promise.resolve(patientExamId);
    },
  };
  const worker = await Worker.create({
    connection: await NativeConnection.connect({ address }),
    taskQueue: RAW_TASK_QUEUE,
    workflowsPath: require.resolve('./raw-workflows'),
    activities,
    maxCachedWorkflows: Number(process.env.WORKER_MAX_CACHED_WORKFLOWS ?? 2000),
    maxConcurrentActivityTaskExecutions: Number(process.env.WORKER_MAX_CONCURRENT_ACTIVITIES ?? 100),
    maxConcurrentWorkflowTaskExecutions: Number(process.env.WORKER_MAX_CONCURRENT_WORKFLOW_TASKS ?? 40),
  });
  console.log(`raw worker polling task queue "${RAW_TASK_QUEUE}" on ${address}`);
  await worker.run();
  for (const t of timers) clearTimeout(t);
  await client.connection.close();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
