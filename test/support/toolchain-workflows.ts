// Minimal workflows that prove the Temporal toolchain works; the journey's own workflows live in src/workflows.
import { proxyActivities, sleep } from '@temporalio/workflow';

export interface ToolchainActivities {
  greet(name: string): Promise<string>;
}

const { greet } = proxyActivities<ToolchainActivities>({ startToCloseTimeout: '10 seconds' });

export async function greetingWorkflow(name: string): Promise<string> {
  return greet(name);
}

/** Sleeps a week: on the time-skipping server this takes seconds of wall time. */
export async function weekLongWorkflow(): Promise<number> {
  const started = Date.now();
  await sleep('7 days');
  return Date.now() - started;
}
