// Derived views: each exam's phase and the journey's stage, read from the state alone.
import {
  TERMINAL_STAGES,
  type ExamPhase,
  type JourneyStage,
  type JourneyState,
  type PatientExamState,
} from '../../contract/journey-types';

export function examPhase(state: JourneyState, e: PatientExamState): ExamPhase {
  if (e.status === 'pending') return 'awaiting_consultation';
  if (e.status === 'Deferred to Medical Director' && state.deferredWaits) return 'awaiting_final_verdict';
  if ((e.status === 'Missed' || e.status === 'NA') && e.reinvitedAs === null && reinviteDue(state, e) !== null) {
    return 'awaiting_reinvite';
  }
  if (e.status !== 'Approved' || e.rxType !== 2 || e.gaveUpWaiting) return 'final';
  if (e.prescriptionConfirmedAt === null) return 'awaiting_prescription';
  // A shipment waits for its drug's event 2 (drugs one per event 2): that drug is still to come.
  if (e.fulfilment === 'partner' && e.oneDrugPerEvent2 && state.callbackRules === 2 && awaitsDrug(state, e)) {
    return 'awaiting_prescription';
  }
  if (e.fulfilment === 'partner' && e.prescriptions.some((rx) => rx.tracking === null)) return 'awaiting_tracking';
  if (moreDrugsMayCome(state, e)) return 'awaiting_prescription';
  return 'final';
}

const PHASE_ORDER: ExamPhase[] = [
  'awaiting_consultation',
  'awaiting_final_verdict',
  'awaiting_reinvite',
  'awaiting_prescription',
  'awaiting_tracking',
  'final',
];

export function stageOf(state: JourneyState): JourneyStage {
  if (state.outcome) return state.outcome;
  if (state.attention.length > 0) return 'needs_attention';
  if (state.catalog === null) return 'validating';
  if (state.meetings.length === 0) return 'inviting';
  if (state.preparing) return 'preparing';
  const phases = state.exams.map((e) => examPhase(state, e));
  const first = PHASE_ORDER.find((p) => phases.includes(p)) ?? 'final';
  if (first !== 'final') return first;
  return state.exams.every((e) => e.status === 'cancelled') ? 'cancelled' : 'completed';
}

export function isFinished(state: JourneyState): boolean {
  return TERMINAL_STAGES.includes(stageOf(state));
}

/** Patient exams the service may still cancel, as far as we know. */
export function cancellableExams(state: JourneyState): PatientExamState[] {
  return state.exams.filter((e) => e.status === 'pending');
}

/** Drugs one per event 2, and the grace after the last one has not run out: another drug may still come. */
export function moreDrugsMayCome(state: JourneyState, e: PatientExamState): boolean {
  return state.drugsGrace && e.oneDrugPerEvent2 === true && e.lastDrugAt !== undefined && e.drugsSettled !== true;
}

/** Whether an event 3 that may be this exam's is buffered (it waits for the event 2 of its drug). */
function awaitsDrug(state: JourneyState, e: PatientExamState): boolean {
  return state.pending.some(
    (p) =>
      p.callback.event === 3 &&
      (p.callback.patientExamId === undefined || p.callback.patientExamId === e.patientExamId),
  );
}

export function reinviteDue(state: JourneyState, e: PatientExamState): number | null {
  if (e.reinviteAttempt >= state.timings.reinviteMaxAttempts || e.verdictAt === null) return null;
  return Date.parse(e.verdictAt) + state.timings.reinviteCoolDownMs;
}
