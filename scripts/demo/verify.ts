// How the demo judges a journey: finished or not, what is wrong with a finished one, and its outcome in a few words.
import type { JourneyView, ReceivedEvent } from './api';
import type { DemoScenario } from './scenarios';

const TERMINAL_STAGES = ['completed', 'cancelled', 'abandoned', 'failed'];

/**
 * The workflow has closed. Its stage turns final a moment before the workflow returns: a journey read in between
 * is finishing, not finished, and is read again at once.
 */
export function isFinished(view: JourneyView): boolean {
  return view.workflowStatus !== 'RUNNING';
}

export function isFinishing(view: JourneyView): boolean {
  return view.workflowStatus === 'RUNNING' && TERMINAL_STAGES.includes(view.journey.stage);
}

const count = (events: ReceivedEvent[], event: number) => events.filter((e) => e.event === event).length;

/** What is wrong with a finished journey; empty when it ended as the scenario expects. */
export function verify(s: DemoScenario, view: JourneyView, events: ReceivedEvent[] | undefined): string[] {
  const problems: string[] = [];
  const j = view.journey;
  if (j.stage !== 'completed') {
    const why = j.attention?.[0] ?? (j.lastError ? { code: j.lastError.kind, message: j.lastError.message } : null);
    problems.push(`stage ${j.stage}, expected completed${why ? ` (${why.code}: ${why.message})` : ''}`);
  }
  if (view.workflowStatus !== 'COMPLETED') problems.push(`workflow ${view.workflowStatus}, expected COMPLETED`);
  const exams = j.exams ?? [];
  if (view.source === 'visibility') problems.push('only the search attributes could be read (no worker answered)');
  const applied = (events ?? []).filter((e) => e.disposition === 'applied');
  if (events === undefined && view.source !== 'visibility') problems.push('the received events could not be read');
  for (const x of s.expect) {
    const found = exams.filter((e) => e.examId === x.examId);
    if (found.length !== 1) {
      if (view.source !== 'visibility') problems.push(`exam ${x.examId}: ${found.length} patient exams, expected 1`);
      continue;
    }
    const e = found[0]!;
    const tag = `exam ${x.examId}`;
    if (e.status !== 'Approved') problems.push(`${tag}: ${e.status}, expected Approved`);
    if (e.prescriptionOverdue || e.trackingOverdue) problems.push(`${tag}: overdue`);
    const own = applied.filter((ev) => ev.patientExamId === e.patientExamId);
    if (events !== undefined && count(own, 1) !== 1) problems.push(`${tag}: event 1 applied ${count(own, 1)} times`);
    const wantEvent2 = x.fulfilment === 'none' ? 0 : 1;
    if (events !== undefined && count(own, 2) !== wantEvent2) {
      problems.push(`${tag}: event 2 applied ${count(own, 2)} times, expected ${wantEvent2}`);
    }
    if (x.fulfilment === 'none') {
      if (e.prescriptions.length > 0) problems.push(`${tag}: a GFE with prescriptions`);
      if (events !== undefined && count(own, 3) > 0) problems.push(`${tag}: event 3 for a GFE`);
      continue;
    }
    if (e.rxStatus !== 'Pharmacy Confirmed') {
      problems.push(`${tag}: rx status ${e.rxStatus}, expected Pharmacy Confirmed`);
    }
    if (e.prescriptions.length === 0) problems.push(`${tag}: no prescriptions`);
    if (x.fulfilment === 'custom') {
      if (events !== undefined && count(own, 3) > 0) problems.push(`${tag}: event 3 for a custom pharmacy`);
      continue;
    }
    const unshipped = e.prescriptions.filter((p) => !p.tracking).map((p) => p.prescriptionId);
    if (unshipped.length > 0) problems.push(`${tag}: prescriptions ${unshipped.join(', ')} not shipped`);
    if (events !== undefined) {
      const shipped = own.filter((ev) => ev.event === 3).map((ev) => ev.prescriptionId);
      const want = e.prescriptions.map((p) => p.prescriptionId);
      const same = shipped.length === want.length && want.every((id) => shipped.includes(id));
      if (!same) {
        problems.push(`${tag}: event 3 for [${shipped.join(', ')}], expected one each for [${want.join(', ')}]`);
      }
    }
  }
  const expected = new Set(s.expect.map((x) => x.examId));
  for (const e of exams) {
    if (!expected.has(e.examId)) problems.push(`unexpected patient exam ${e.patientExamId} (exam ${e.examId})`);
  }
  return problems;
}

/** "1,2,3,3": the applied events in the order received; other dispositions counted after them. */
export function eventsSeen(events: ReceivedEvent[] | undefined): string {
  if (events === undefined) return '-';
  const applied = events.filter((e) => e.disposition === 'applied').map((e) => String(e.event));
  const others = new Map<string, number>();
  for (const e of events) {
    if (e.disposition !== 'applied') others.set(e.disposition, (others.get(e.disposition) ?? 0) + 1);
  }
  const extra = [...others].map(([d, n]) => `${n} ${d}`).join(', ');
  return `${applied.join(',') || '-'}${extra ? ` (+${extra})` : ''}`;
}

/** "completed: 201 Approved, Pharmacy Confirmed, 2/2 shipped". */
export function outcomeOf(view: JourneyView | undefined): string {
  if (!view) return 'not read yet';
  const exams = (view.journey.exams ?? []).map((e) => {
    const parts = [`${e.examId} ${e.status}`];
    if (e.rxStatus) parts.push(e.rxStatus);
    const shipped = e.prescriptions.filter((p) => p.tracking).length;
    if (shipped > 0) parts.push(`${shipped}/${e.prescriptions.length} shipped`);
    return parts.join(', ');
  });
  if (exams.length === 0 && view.journey.examStatus?.length) exams.push(view.journey.examStatus.join('/'));
  return exams.length > 0 ? `${view.journey.stage}: ${exams.join('; ')}` : view.journey.stage;
}
