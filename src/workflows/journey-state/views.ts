// What the outside sees: the snapshot (queries), the workflow's result (summary) and its search attributes.
import type { JourneySnapshot, JourneyState, JourneySummary } from '../../contract/journey-types';
import { examPhase, stageOf } from './phases';
import { schedule } from './timers';

export function snapshot(state: JourneyState): JourneySnapshot {
  return {
    journeyId: state.journeyId,
    clinicId: state.clinicId,
    scenario: state.scenario,
    stage: stageOf(state),
    startedAt: state.startedAt,
    updatedAt: state.updatedAt,
    meetings: state.meetings.map(({ meetingUuid, meetingUrl, createdAt, remindersSent }) => ({
      meetingUuid,
      meetingUrl,
      createdAt,
      remindersSent,
    })),
    exams: state.exams.map((e) => ({
      patientExamId: e.patientExamId,
      examId: e.examId,
      examTitle: e.examTitle,
      rxType: e.rxType,
      fulfilment: e.fulfilment,
      phase: examPhase(state, e),
      status: e.status,
      rxStatus: e.rxStatus,
      verdictAt: e.verdictAt,
      verdictSource: e.verdictSource,
      examUrl: e.examUrl,
      reason: e.reason,
      providerName: e.providerName,
      prescriptionOverdue: e.prescriptionOverdue,
      trackingOverdue: e.trackingOverdue,
      gaveUpWaiting: e.gaveUpWaiting,
      prescriptions: e.prescriptions,
      attachmentsUploaded: e.attachmentsUploaded,
      answersSubmitted: e.answersSubmitted,
      reinviteOf: e.reinviteOf,
      reinvitedAs: e.reinvitedAs,
      cancelledAt: e.cancelledAt,
    })),
    deadlines: schedule(state).map((s) => ({
      at: new Date(s.at).toISOString(),
      action: s.action.type,
      ...('patientExamId' in s.action ? { patientExamId: s.action.patientExamId } : {}),
      ...('meetingUuid' in s.action ? { meetingUuid: s.action.meetingUuid } : {}),
    })),
    events: state.received,
    attention: state.attention,
    lastError: state.lastError,
    actions: state.actions,
    resolvedAttention: state.resolvedAttention,
  };
}

export function summary(state: JourneyState, endedAt: string): JourneySummary {
  const { events: _events, deadlines: _deadlines, ...rest } = snapshot(state);
  return {
    ...rest,
    endedAt,
    eventsApplied: state.received.filter((r) => r.disposition === 'applied').length,
    eventsIgnored: state.received.filter((r) => r.disposition !== 'applied').length,
  };
}

/**
 * Search attribute values: no PHI, only ids, stages and statuses. PatientExamIds where the journey names its patient
 * exams: today's rules always, earlier ones once the workflow says so (journey-rules' namesPatientExamIds).
 */
export function searchAttributesOf(state: JourneyState, namesPatientExams = state.provesOwnership) {
  const uniq = (xs: string[]) => [...new Set(xs)].sort();
  return {
    JourneyStage: stageOf(state),
    ExamStatus: uniq(state.exams.map((e) => e.status)),
    RxStatus: uniq(state.exams.flatMap((e) => (e.rxStatus ? [e.rxStatus] : []))),
    NeedsAttention: state.attention.length > 0,
    // Which patient exams the journey holds (ids only), so that another can tell they are not its own.
    ...(namesPatientExams ? { PatientExamIds: state.exams.map((e) => String(e.patientExamId)).sort() } : {}),
  };
}
