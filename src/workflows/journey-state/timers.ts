// The journey's timers: what is due when, derived from the state (the workflow waits for the next one).
import type { JourneyTimings } from '../../contract/journey-request';
import type { DueAction, JourneyState, PatientExamState } from '../../contract/journey-types';
import { findExam } from './exams';
import { examPhase, moreDrugsMayCome, reinviteDue } from './phases';

/** The final verdict's deadline when the journey's input has none (an API older than it started the journey). */
export const FINAL_VERDICT_DEADLINE_DEFAULT_MS = 3 * 86_400_000;

/** How long an exam whose drugs come one per event 2 waits for more after the last (when its input has none). */
export const MORE_DRUGS_GRACE_DEFAULT_MS = 15 * 60_000;

interface Scheduled {
  at: number;
  action: DueAction;
}

/** Every timer the journey is running, with the action due when it fires. */
export function schedule(state: JourneyState): Scheduled[] {
  if (state.outcome || state.attention.length > 0) return [];
  const t = state.timings;
  const out: Scheduled[] = [];
  for (const m of state.meetings) {
    const pending = m.patientExamIds.filter((id) => findExam(state, id)?.status === 'pending');
    if (pending.length === 0 || m.expiryHandled) continue;
    const created = Date.parse(m.createdAt);
    const nextReminder = t.remindersMs[m.remindersSent];
    // (A meeting known only from evidence has no uuid to resend with: its expiry still runs.)
    if (nextReminder !== undefined && nextReminder < t.consultationDeadlineMs && m.meetingUuid !== '') {
      out.push({
        at: created + nextReminder,
        action: { type: 'send_reminder', meetingUuid: m.meetingUuid, patientExamId: pending[0]! },
      });
    }
    out.push({
      at: created + t.consultationDeadlineMs,
      action: { type: 'expire_meeting', meetingUuid: m.meetingUuid, patientExamIds: pending },
    });
  }
  for (const e of state.exams) {
    const phase = examPhase(state, e);
    if (phase === 'awaiting_final_verdict') {
      const from = e.finalVerdictWaitFrom ?? e.verdictAt;
      if (from) {
        out.push({
          at: Date.parse(from) + (t.finalVerdictDeadlineMs ?? FINAL_VERDICT_DEADLINE_DEFAULT_MS),
          action: { type: 'final_verdict_overdue', patientExamId: e.patientExamId },
        });
      }
    } else if (phase === 'awaiting_reinvite') {
      out.push({
        at: reinviteDue(state, e)!,
        action: { type: 'reinvite', patientExamId: e.patientExamId, examId: e.examId },
      });
    } else if (phase === 'awaiting_prescription' && e.prescriptionConfirmedAt && moreDrugsMayCome(state, e)) {
      out.push({
        at: Date.parse(e.lastDrugAt!) + (t.moreDrugsGraceMs ?? MORE_DRUGS_GRACE_DEFAULT_MS),
        action: { type: 'drugs_settled', patientExamId: e.patientExamId },
      });
    } else if (phase === 'awaiting_prescription' && e.verdictAt) {
      out.push(...waitFor('prescription', e, Date.parse(e.verdictAt), t));
    } else if (phase === 'awaiting_tracking' && e.prescriptionConfirmedAt) {
      out.push(...waitFor('tracking', e, Date.parse(e.prescriptionConfirmedAt), t));
    }
  }
  return out.sort((a, b) => a.at - b.at);
}

export function dueActions(state: JourneyState, now: number): DueAction[] {
  return schedule(state)
    .filter((s) => s.at <= now)
    .map((s) => s.action);
}

export function nextDeadline(state: JourneyState): number | null {
  return schedule(state)[0]?.at ?? null;
}

/** The line the Temporal UI shows for the journey's timer: what is due when it fires, by ids only (never PHI). */
export function timerSummary(action: DueAction): string {
  switch (action.type) {
    case 'send_reminder':
      return `reminder to the patient (patient exam ${action.patientExamId})`;
    case 'expire_meeting':
      return `consultation deadline (patient exams ${action.patientExamIds.join(', ')})`;
    case 'reinvite':
      return `missed wait over: invite again (patient exam ${action.patientExamId})`;
    case 'prescription_overdue':
      return `prescription overdue (patient exam ${action.patientExamId})`;
    case 'tracking_overdue':
      return `tracking overdue (patient exam ${action.patientExamId})`;
    case 'final_verdict_overdue':
      return `medical director's verdict overdue (patient exam ${action.patientExamId})`;
    case 'drugs_settled':
      return `no more drugs expected (patient exam ${action.patientExamId})`;
    case 'give_up':
      return `give up waiting for the ${action.what} (patient exam ${action.patientExamId})`;
  }
}

/** The overdue mark (once) and the hard limit of a wait for event 2 (prescription) or event 3 (tracking). */
function waitFor(
  what: 'prescription' | 'tracking',
  e: PatientExamState,
  since: number,
  t: JourneyTimings,
): Scheduled[] {
  const out: Scheduled[] = [];
  const overdue = what === 'prescription' ? e.prescriptionOverdue : e.trackingOverdue;
  if (!overdue) {
    const deadline = what === 'prescription' ? t.prescriptionDeadlineMs : t.trackingDeadlineMs;
    out.push({ at: since + deadline, action: { type: `${what}_overdue`, patientExamId: e.patientExamId } });
  }
  const limit = what === 'prescription' ? t.prescriptionHardLimitMs : t.trackingHardLimitMs;
  out.push({ at: since + limit, action: { type: 'give_up', patientExamId: e.patientExamId, what } });
  return out;
}
