// Low-level helpers on the journey's patient exams, shared by the reducer and its callback rules.
import type { ScenarioType } from '../../contract/journey-request';
import type { Fulfilment, JourneyState, PatientExamState } from '../../contract/journey-types';

export function findExam(state: JourneyState, id: number): PatientExamState | undefined {
  return state.exams.find((e) => e.patientExamId === id);
}

export function updateExam(
  state: JourneyState,
  id: number,
  patch: (e: PatientExamState) => PatientExamState,
): JourneyState {
  return { ...state, exams: state.exams.map((e) => (e.patientExamId === id ? patch(e) : e)) };
}

/** A patient exam the service created, waiting for its consultation. */
export function newExam(
  state: JourneyState,
  pe: { patientExamId: number; examId: number; examTitle: string },
  meetingUuid: string,
  replaced?: PatientExamState,
): PatientExamState {
  const rxType = state.catalog?.find((c) => c.examId === pe.examId)?.rxType ?? 1;
  return {
    patientExamId: pe.patientExamId,
    examId: pe.examId,
    examTitle: pe.examTitle,
    rxType,
    fulfilment: fulfilmentOf(state.scenario, rxType),
    meetingUuid,
    status: 'pending',
    rxStatus: null,
    verdictAt: null,
    verdictSource: null,
    examUrl: null,
    reason: null,
    providerName: null,
    prescriptionConfirmedAt: null,
    prescriptions: [],
    prescriptionOverdue: false,
    trackingOverdue: false,
    gaveUpWaiting: null,
    attachmentsUploaded: [],
    answersSubmitted: 0,
    reinviteOf: replaced?.patientExamId ?? null,
    reinvitedAs: null,
    reinviteAttempt: replaced ? replaced.reinviteAttempt + 1 : 0,
    cancelledAt: null,
  };
}

function fulfilmentOf(scenario: ScenarioType, rxType: 1 | 2): Fulfilment {
  if (rxType === 1 || scenario === 'gfe') return 'none';
  return scenario === 'partner_pharmacy' ? 'partner' : 'custom';
}
