// What the journey makes of an activity's failure, above all of a timed-out invite (src/workflows/activity-failures).
import { ActivityFailure, ApplicationFailure, RetryState, TimeoutFailure, TimeoutType } from '@temporalio/common';
import { FailureType, INVITE_SENDING } from '../../src/contract/activity-contract';
import { classify } from '../../src/workflows/activity-failures';

const failed = (cause: Error) =>
  new ActivityFailure('activity failed', 'sendInvite', '7', RetryState.MAXIMUM_ATTEMPTS_REACHED, 'worker-1', cause);
const timedOut = (details?: unknown) =>
  failed(new TimeoutFailure('activity StartToClose timeout', details, TimeoutType.START_TO_CLOSE));

describe('classify', () => {
  it('takes the kind and facts the activity gave', () => {
    const facts = { kind: 'server', operation: 'exam_invite', httpStatus: 500 };
    const err = failed(ApplicationFailure.create({ type: FailureType.server, message: 'HTTP 500', details: [facts] }));
    expect(classify(err, 'exam_invite')).toEqual({ facts, failureType: FailureType.server });
  });

  it('an invite that timed out without the record that it was being sent was not sent', () => {
    expect(classify(timedOut(), 'exam_invite', true)).toEqual({
      facts: { kind: 'not_sent', operation: 'exam_invite' },
      failureType: FailureType.not_sent,
    });
  });

  it('an invite that timed out after the record is in doubt, as is any timeout of an activity without one', () => {
    for (const c of [classify(timedOut(INVITE_SENDING), 'exam_invite', true), classify(timedOut(), 'exam_invite')]) {
      expect(c).toEqual({ facts: { kind: 'ambiguous', operation: 'exam_invite' }, failureType: FailureType.ambiguous });
    }
  });

  it('anything else is unknown', () => {
    expect(classify(new Error('boom'), 'exam_list').failureType).toBe('unknown');
  });
});
