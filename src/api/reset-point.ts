// Where to reset a journey that a bad build decided wrongly: the workflow task to run again, read from the raw history
// (event types, build ids, activity types; never a payload), and never a point that would send the invite twice.
import { temporal } from '@temporalio/proto';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

export type ResetTarget =
  /** The first workflow task this build completed: everything it decided is decided again. */
  | { badBuild: string }
  /** The first workflow task completed after the last event of this type, e.g. ActivityTaskCompleted. */
  | { afterEvent: string }
  /** The journey's last completed workflow task (the CLI's LastWorkflowTask). */
  | { lastTask: true };

/** A reset the history does not allow: the journey's answer, as an operator action's refusal. */
export class ResetRefused extends Error {
  override name = 'ResetRefused';
}

/** The event id of the workflow task to reset to (a WorkflowTaskCompleted event). */
export function resetPoint(events: readonly HistoryEvent[], target: ResetTarget): number {
  const completed = events.filter((e) => e.workflowTaskCompletedEventAttributes);
  let point: HistoryEvent | undefined;
  if ('badBuild' in target) {
    point = completed.find((e) => buildOf(e) === target.badBuild);
    if (!point) throw new ResetRefused(`no workflow task of build ${target.badBuild} in the journey's history`);
  } else if ('afterEvent' in target) {
    const type = eventTypeName(target.afterEvent);
    const last = [...events].reverse().find((e) => typeName(e) === type);
    if (!last) throw new ResetRefused(`no ${target.afterEvent} event in the journey's history`);
    point = completed.find((e) => id(e) > id(last));
    if (!point) throw new ResetRefused(`no workflow task completed after the last ${target.afterEvent} event`);
  } else {
    point = completed.at(-1);
    if (!point) throw new ResetRefused("no completed workflow task in the journey's history");
  }
  const at = id(point);
  const invite = inviteAfter(events, at);
  if (invite !== undefined) {
    throw new ResetRefused(
      `event ${at} is before the invite's activity ended (event ${invite}): a reset there would send a second invite`,
    );
  }
  return at;
}

/** The event id where a reset of this operation made this run (its reason names the operation), if one did. */
export function resetBy(events: readonly HistoryEvent[], operationId: string): number | undefined {
  const mark = `[operation ${operationId}]`;
  const found = events.find((e) => {
    const a = e.workflowTaskFailedEventAttributes;
    return a?.cause === RESET_CAUSE && (a.failure?.message ?? '').includes(mark);
  });
  return found ? id(found) : undefined;
}

const RESET_CAUSE = temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW;

/** The build id a workflow task was completed by (its deployment version, or the older version stamp). */
export function buildOf(e: HistoryEvent): string | undefined {
  const a = e.workflowTaskCompletedEventAttributes;
  return a?.deploymentVersion?.buildId || a?.workerVersion?.buildId || undefined;
}

/** The id of an event of the invite's activity (sendInvite) after `at`, if any. */
function inviteAfter(events: readonly HistoryEvent[], at: number): number | undefined {
  const scheduled = new Set(
    events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'sendInvite').map((e) => id(e)),
  );
  const of = (e: HistoryEvent) => {
    const attrs =
      e.activityTaskCompletedEventAttributes ??
      e.activityTaskFailedEventAttributes ??
      e.activityTaskTimedOutEventAttributes ??
      e.activityTaskCanceledEventAttributes ??
      e.activityTaskStartedEventAttributes;
    return attrs?.scheduledEventId != null ? Number(attrs.scheduledEventId) : undefined;
  };
  const found = events.find((e) => id(e) > at && (scheduled.has(id(e)) || scheduled.has(of(e) ?? -1)));
  return found ? id(found) : undefined;
}

const id = (e: HistoryEvent) => Number(e.eventId ?? 0);

/** `ActivityTaskCompleted` or `EVENT_TYPE_ACTIVITY_TASK_COMPLETED` as the enum's name. */
export function eventTypeName(name: string): string {
  if (/^EVENT_TYPE_[A-Z_]+$/.test(name)) return name;
  if (!/^[A-Z][A-Za-z]+$/.test(name))
    throw new ResetRefused(`${name} is not an event type (e.g. ActivityTaskCompleted)`);
  return `EVENT_TYPE_${name.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase()}`;
}

function typeName(e: HistoryEvent): string | undefined {
  const t = e.eventType as unknown;
  if (typeof t === 'string') return t;
  // The gRPC form carries numbers; the enum maps them back to their names.
  return typeof t === 'number' ? (temporal.api.enums.v1.EventType as unknown as Record<number, string>)[t] : undefined;
}
