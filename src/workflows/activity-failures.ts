// What the journey makes of an activity's failure: the engine's own kind (src/activities) and its facts. Pure, for the
// workflow and its tests.
import { ActivityFailure, ApplicationFailure, TimeoutFailure } from '@temporalio/common';
import { FailureType, type FailureFacts } from '../contract/activity-contract';

export interface Classified {
  facts: FailureFacts;
  failureType: string;
}

/**
 * @param sendingRecorded for an activity that has Temporal record INVITE_SENDING before it sends: a timeout without
 *   that record is `not_sent`.
 */
export function classify(err: unknown, operation: string, sendingRecorded = false): Classified {
  // An activity's failure wraps its cause; a local activity's may come as the cause itself.
  const failure = err instanceof ActivityFailure ? err : err instanceof ApplicationFailure ? { cause: err } : undefined;
  if (failure) {
    const cause = failure.cause;
    if (cause instanceof ApplicationFailure) {
      const facts = (cause.details?.[0] as FailureFacts | undefined) ?? { kind: cause.type ?? 'unknown', operation };
      return { facts, failureType: cause.type ?? 'unknown' };
    }
    if (cause instanceof TimeoutFailure) {
      if (sendingRecorded && cause.lastHeartbeatDetails === undefined) {
        return { facts: { kind: 'not_sent', operation }, failureType: FailureType.not_sent };
      }
      return { facts: { kind: 'ambiguous', operation }, failureType: FailureType.ambiguous };
    }
  }
  return { facts: { kind: 'unknown', operation }, failureType: 'unknown' };
}
