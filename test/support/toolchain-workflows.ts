// Minimal workflows that prove the Temporal toolchain works; the journey's own workflows live in src/workflows.
import { proxyActivities, sleep } from '@temporalio/workflow';
import { classify } from '../../src/workflows/activity-failures';

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

export interface StallActivities {
  /** Records INVITE_SENDING first when asked, then never finishes (until cancelled). */
  stall(recordSending: boolean): Promise<void>;
}

const { stall } = proxyActivities<StallActivities>({ startToCloseTimeout: '2 seconds', retry: { maximumAttempts: 1 } });

/** An invite-like attempt that times out: what the journey makes of the timeout (src/workflows/activity-failures). */
export async function timedOutAttemptWorkflow(recordSending: boolean): Promise<string> {
  try {
    await stall(recordSending);
    return 'completed';
  } catch (err) {
    return classify(err, 'exam_invite', true).failureType;
  }
}
