// When a worker process is ready, seen from the outside: Temporal lists it among the pollers of the journeys' task
// queue (the SDK's identity is `<pid>@<host>`, and the stacks start the worker's own node process, so the pid is the
// one they hold). Independent of what the worker prints at the log level the suite gives it.
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { TASK_QUEUE_DEFAULT } from '../../../src/contract/definitions';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Resolves once the worker with this pid polls the journeys' workflow task queue; rejects at the deadline or exit. */
export async function waitForPoller(o: {
  address: string;
  pid: () => number | undefined;
  running: () => boolean;
  name: string;
  timeoutMs: number;
  namespace?: string;
  taskQueue?: string;
}): Promise<void> {
  const until = Date.now() + o.timeoutMs;
  let connection: Connection | undefined;
  let last = 'no answer yet';
  try {
    for (;;) {
      if (!o.running()) throw new Error(`${o.name} exited at start`);
      const pid = o.pid();
      try {
        connection ??= await Connection.connect({ address: o.address, connectTimeout: 2_000 });
        const c = connection;
        const described = await c.withDeadline(Date.now() + 5_000, () =>
          c.workflowService.describeTaskQueue({
            namespace: o.namespace ?? 'default',
            taskQueue: { name: o.taskQueue ?? TASK_QUEUE_DEFAULT },
            taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
          }),
        );
        if (pid !== undefined && (described.pollers ?? []).some((p) => p.identity?.startsWith(`${pid}@`))) return;
        last = `${described.pollers?.length ?? 0} other pollers`;
      } catch (err) {
        last = err instanceof Error ? err.message : String(err);
        // Temporal restarting: connect again next time.
        await connection?.close().catch(() => undefined);
        connection = undefined;
      }
      if (Date.now() > until) throw new Error(`${o.name} did not poll within ${o.timeoutMs / 1000} s (${last})`);
      await sleep(500);
    }
  } finally {
    await connection?.close().catch(() => undefined);
  }
}
