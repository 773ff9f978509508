// Where a batch reset puts a journey: before the first task of a bad build, after the last event of a type, or the
// last task; never before the invite's activity ended (a second invite). Read from the history alone.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import type { temporal } from '@temporalio/proto';
import Long from 'long';
import { eventTypeName, resetPoint, ResetRefused } from '../../src/api/reset-point';

type Event = temporal.api.history.v1.IHistoryEvent;

const started = (id: number): Event => ({
  eventId: Long.fromNumber(id),
  eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED' as never,
});
const task = (id: number, buildId: string): Event => ({
  eventId: Long.fromNumber(id),
  eventType: 'EVENT_TYPE_WORKFLOW_TASK_COMPLETED' as never,
  workflowTaskCompletedEventAttributes: { deploymentVersion: { buildId, deploymentName: 'patient-journey-engine' } },
});
const scheduled = (id: number, activity: string): Event => ({
  eventId: Long.fromNumber(id),
  eventType: 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED' as never,
  activityTaskScheduledEventAttributes: { activityType: { name: activity } },
});
const completed = (id: number, scheduledEventId: number): Event => ({
  eventId: Long.fromNumber(id),
  eventType: 'EVENT_TYPE_ACTIVITY_TASK_COMPLETED' as never,
  activityTaskCompletedEventAttributes: { scheduledEventId: Long.fromNumber(scheduledEventId) },
});

// v1 invites; v2 takes over after the invite and decides the next tasks.
const history: Event[] = [
  started(1),
  task(4, 'v1'),
  scheduled(5, 'sendInvite'),
  completed(7, 5),
  task(10, 'v1'),
  scheduled(11, 'resendInvite'),
  completed(13, 11),
  task(16, 'v2'),
  scheduled(17, 'notifyClinic'),
  completed(19, 17),
  task(22, 'v2'),
];

describe('a reset point', () => {
  it('is the first task a bad build completed', () => {
    expect(resetPoint(history, { badBuild: 'v2' })).toBe(16);
    expect(() => resetPoint(history, { badBuild: 'v9' })).toThrow(
      new ResetRefused("no workflow task of build v9 in the journey's history"),
    );
  });

  it('is the first task after the last event of a type, or the last task', () => {
    expect(resetPoint(history, { afterEvent: 'ActivityTaskCompleted' })).toBe(22);
    expect(resetPoint(history, { afterEvent: 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED' })).toBe(22);
    expect(resetPoint(history.slice(0, 8), { lastTask: true })).toBe(16);
    expect(() => resetPoint(history, { afterEvent: 'TimerFired' })).toThrow(
      "no TimerFired event in the journey's history",
    );
    expect(() => resetPoint(history, { afterEvent: 'activity completed' })).toThrow('is not an event type');
  });

  it("is never before the invite's activity ended: that would send a second invite", () => {
    // v1's first task scheduled the invite.
    expect(() => resetPoint(history, { badBuild: 'v1' })).toThrow(
      "event 4 is before the invite's activity ended (event 5): a reset there would send a second invite",
    );
    expect(() => resetPoint(history, { afterEvent: 'WorkflowExecutionStarted' })).toThrow('second invite');
  });

  it('reads a captured history (the build of each task, the invite)', () => {
    const file = path.resolve(__dirname, '../fixtures/wait-states/awaiting_tracking.json');
    const events = historyFromJSON(JSON.parse(readFileSync(file, 'utf8'))).events ?? [];
    const last = resetPoint(events, { lastTask: true });
    expect(last).toBeGreaterThan(10);
    const build = events.find((e) => e.workflowTaskCompletedEventAttributes)?.workflowTaskCompletedEventAttributes
      ?.deploymentVersion?.buildId;
    // Every task was this build's, the first of them before the invite.
    expect(() => resetPoint(events, { badBuild: build! })).toThrow('second invite');
  });

  it('names event types as the history does', () => {
    expect(eventTypeName('ActivityTaskCompleted')).toBe('EVENT_TYPE_ACTIVITY_TASK_COMPLETED');
    expect(eventTypeName('WorkflowExecutionSignaled')).toBe('EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED');
  });
});
