// The payloads of a workflow history, told apart: the journey's own (its input, activities, signals, updates,
// queries, failures), which carry patient data and are sealed for the patient, and the rest, which carry none by
// design: search attributes (visibility reads them in the clear), the SDK's markers (patch ids), the memo, the
// summaries the Web UI shows (user metadata), the start of the documents' retention, a workflow of its own that must
// still run after an erasure, and a workflow task's failure (the SDK encodes it without the workflow's context: a
// task that failed on a loaded machine, say; its message names no patient data, by the engine's rule).
import type { Payload } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';

export interface FoundPayload {
  /** Where in the history, e.g. `events[3].activityTaskScheduledEventAttributes.input.payloads[0]`. */
  at: string;
  payload: Payload;
}

export function historyPayloads(history: temporal.api.history.v1.IHistory): {
  own: FoundPayload[];
  others: FoundPayload[];
} {
  const found: FoundPayload[] = [];
  const walk = (v: unknown, at: string): void => {
    if (Array.isArray(v)) return v.forEach((x, i) => walk(x, `${at}[${i}]`));
    if (!v || typeof v !== 'object' || v instanceof Uint8Array) return;
    const o = v as Record<string, unknown>;
    if (o.metadata && typeof o.metadata === 'object' && 'encoding' in o.metadata) {
      found.push({ at, payload: o });
      return;
    }
    for (const [k, x] of Object.entries(o)) walk(x, `${at}.${k}`);
  };
  walk(history.events, 'events');
  const other = (at: string) =>
    at.includes('.searchAttributes.') ||
    at.includes('.markerRecordedEventAttributes.') ||
    at.includes('.memo.') ||
    at.includes('.userMetadata.') ||
    /\.(startChildWorkflowExecutionInitiatedEventAttributes|workflowTaskFailedEventAttributes)\b/.test(at);
  return { own: found.filter((f) => !other(f.at)), others: found.filter((f) => other(f.at)) };
}

export const encodingOf = (p: Payload) => Buffer.from(p.metadata?.encoding ?? []).toString();
