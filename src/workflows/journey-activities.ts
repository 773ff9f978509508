// What the journey asks of activities, with the options each kind of call runs with, and the small helpers every step
// shares (the failure facts a step records, the workflow's clock as text).
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import { FailureType, type JourneyActivities } from '../contract/activity-contract';
import type { Classified } from './activity-failures';
import { NOT_RETRIED } from '../contract/failures';
import type { ErrorFacts } from './journey-state';

// Retry what was not sent and what the server failed on; everything else is decided by the workflow (failures.ts).
const NON_RETRYABLE = NOT_RETRIED;

const SERVICE_RETRY = {
  initialInterval: '2 seconds',
  backoffCoefficient: 2,
  maximumInterval: '2 minutes',
  maximumAttempts: 8,
  nonRetryableErrorTypes: NON_RETRYABLE,
} as const;

export const service = proxyActivities<JourneyActivities>({ startToCloseTimeout: '45 seconds', retry: SERVICE_RETRY });

// Today's rules read the exam list in a local activity: a read the worker answers from its cache (a GET to the service
// when the cache is cold), run in the worker that runs the workflow task, with no activity task and no second workflow
// task on the Temporal server. Retried alike; past a minute its retries wait on a workflow timer.
export const local = proxyLocalActivities<JourneyActivities>({
  startToCloseTimeout: '45 seconds',
  retry: SERVICE_RETRY,
});

// The invite is not idempotent at the service: one attempt per activity, and the workflow retries only what was
// provably not sent. A timeout is ambiguous once the attempt had Temporal record INVITE_SENDING (sendInvite); one
// without it never reached the service (its task was lost on the way to a worker, or the worker stopped first).
export const invite = proxyActivities<JourneyActivities>({
  startToCloseTimeout: '60 seconds',
  retry: { maximumAttempts: 1 },
});

export const notify = proxyActivities<JourneyActivities>({
  startToCloseTimeout: '20 seconds',
  retry: {
    initialInterval: '5 seconds',
    backoffCoefficient: 2,
    maximumInterval: '10 minutes',
    maximumAttempts: 12,
    nonRetryableErrorTypes: [FailureType.notification_rejected],
  },
});

/** Tries of an invite that provably went nowhere before the journey asks for a person. */
export const INVITE_NOT_SENT_RETRIES = 6;

/** What a step records of an activity's failure: no PHI, only the kind, the operation and the service's facts. */
export function errorFacts(c: Classified, at: string): ErrorFacts {
  const f = c.facts;
  const parts = [`${f.operation} failed: ${f.kind}`];
  if (f.httpStatus) parts.push(`HTTP ${f.httpStatus}`);
  if (f.field) parts.push(`field ${f.field}`);
  if (f.setupCode) parts.push(f.setupCode);
  return {
    kind: f.kind,
    operation: f.operation,
    message: parts.join(', '),
    at,
    ...(f.httpStatus !== undefined ? { httpStatus: f.httpStatus } : {}),
    ...(f.field !== undefined ? { field: f.field } : {}),
    ...(f.setupCode !== undefined ? { setupCode: f.setupCode } : {}),
  };
}

export const nowIso = () => new Date().toISOString();
