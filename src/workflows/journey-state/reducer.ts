// The reducer: (state, event) -> state, one case per event; callbacks go to their own rules (callbacks.ts).
import type { JourneyInput } from '../../contract/journey-request';
import type { Attention, JourneyEvent, JourneyRules, JourneyState } from '../../contract/journey-types';
import { findExam, newExam, updateExam } from './exams';
import { drainPending, receiveCallback, settleOwnership } from './callbacks';

/** Today's rules; a journey started before one of them replays with the rules its history was made with. */
export const TODAYS_RULES: JourneyRules = {
  callbackRules: 2,
  deferredWaits: true,
  adoptsEvidence: true,
  drugsGrace: true,
  provesOwnership: true,
  shipmentsAwaitProof: true,
};

export function initialState(input: JourneyInput, at: string, rules: Partial<JourneyRules> = {}): JourneyState {
  return {
    journeyId: input.journeyId,
    clinicId: input.clinicId,
    scenario: input.scenario.type,
    examIds: [...input.exams],
    timings: input.timings,
    startedAt: at,
    updatedAt: at,
    catalog: null,
    inviteInFlight: false,
    inviteAttempts: 0,
    meetings: [],
    exams: [],
    preparing: false,
    received: [],
    pending: [],
    seen: [],
    attention: [],
    outcome: null,
    lastError: null,
    actions: [],
    ...TODAYS_RULES,
    ...rules,
    ownershipChecks: [],
    ambiguousInvite: null,
    resolvedAttention: [],
    version: 0,
  };
}

export function reduce(state: JourneyState, ev: JourneyEvent): JourneyState {
  const next = step(state, ev);
  return next === state ? state : { ...next, updatedAt: ev.at, version: state.version + 1 };
}

function step(state: JourneyState, ev: JourneyEvent): JourneyState {
  switch (ev.type) {
    case 'catalog_checked':
      return { ...state, catalog: ev.exams };
    case 'invite_started':
      return {
        ...state,
        inviteInFlight: true,
        inviteAttempts: state.inviteAttempts + 1,
        ...(state.ambiguousInvite ? { ambiguousInvite: null } : {}),
      };
    case 'invite_not_created':
      return drainPending({
        ...state,
        inviteInFlight: false,
        ...(state.adoptsEvidence && ev.ambiguousExams ? { ambiguousInvite: ev.ambiguousExams } : {}),
      });
    case 'invite_created': {
      const replaced = ev.reinviteOf !== undefined ? findExam(state, ev.reinviteOf) : undefined;
      const exams = ev.patientExams.map((pe) => newExam(state, pe, ev.meetingUuid, replaced));
      let s: JourneyState = {
        ...state,
        inviteInFlight: false,
        meetings: [
          ...state.meetings,
          {
            meetingUuid: ev.meetingUuid,
            meetingUrl: ev.meetingUrl,
            createdAt: ev.at,
            patientExamIds: exams.map((e) => e.patientExamId),
            remindersSent: 0,
            expiryHandled: false,
          },
        ],
        exams: [...state.exams, ...exams],
      };
      if (replaced) {
        s = updateExam(s, replaced.patientExamId, (e) => ({ ...e, reinvitedAs: exams[0]?.patientExamId ?? null }));
      }
      return drainPending(s);
    }
    case 'preparation_started':
      return { ...state, preparing: true };
    case 'preparation_finished':
      return { ...state, preparing: false };
    case 'attachment_uploaded':
      return updateExam(state, ev.patientExamId, (e) => ({
        ...e,
        attachmentsUploaded: [...e.attachmentsUploaded, ev.kind],
      }));
    case 'answers_submitted':
      return updateExam(state, ev.patientExamId, (e) => ({ ...e, answersSubmitted: e.answersSubmitted + ev.count }));
    case 'callback':
      return settleFinalVerdictWaits(
        receiveCallback(state, { deliveryId: ev.deliveryId, at: ev.at, callback: ev.callback }),
      );
    case 'reminder_sent':
      return {
        ...state,
        meetings: state.meetings.map((m) =>
          m.meetingUuid === ev.meetingUuid ? { ...m, remindersSent: m.remindersSent + 1 } : m,
        ),
      };
    case 'exam_cancelled':
      return updateExam(state, ev.patientExamId, (e) =>
        e.status === 'pending' ? { ...e, status: ev.by === 'clinic' ? 'cancelled' : 'expired', cancelledAt: ev.at } : e,
      );
    case 'expiry_found_verdict':
      // The cancel at the deadline says the provider acted: the verdict's callback was lost on the way.
      return updateExam(state, ev.patientExamId, (e) =>
        e.status === 'pending' ? { ...e, status: ev.status, verdictAt: ev.at, verdictSource: 'cancel_response' } : e,
      );
    case 'expiry_handled':
      return {
        ...state,
        meetings: state.meetings.map((m) => (m.meetingUuid === ev.meetingUuid ? { ...m, expiryHandled: true } : m)),
      };
    case 'prescription_overdue':
      return updateExam(state, ev.patientExamId, (e) => ({ ...e, prescriptionOverdue: true }));
    case 'tracking_overdue':
      return updateExam(state, ev.patientExamId, (e) => ({ ...e, trackingOverdue: true }));
    case 'gave_up_waiting':
      return updateExam(state, ev.patientExamId, (e) => ({ ...e, gaveUpWaiting: ev.what }));
    case 'attention_needed':
      return { ...state, attention: [...state.attention, { ...ev.attention, since: ev.at }] };
    case 'attention_resolved': {
      if (!state.attention.length) return state;
      // A retry of an overdue final verdict waits again, a whole deadline from now.
      const waitAgain = new Set(
        state.attention.filter((a) => a.code === 'final_verdict_overdue').map((a) => a.patientExamId),
      );
      const exams = waitAgain.size
        ? state.exams.map((e) => (waitAgain.has(e.patientExamId) ? { ...e, finalVerdictWaitFrom: ev.at } : e))
        : state.exams;
      return { ...state, exams, attention: [] };
    }
    case 'error_recorded':
      return { ...state, lastError: ev.error };
    case 'journey_failed':
      return { ...state, outcome: 'failed', lastError: ev.error, attention: [], inviteInFlight: false };
    case 'journey_cancelled':
      return { ...state, outcome: 'cancelled', attention: [] };
    case 'journey_abandoned':
      return { ...state, outcome: 'abandoned', attention: [] };
    case 'action_recorded':
      return { ...state, actions: [...state.actions, ev.action] };
    case 'drugs_settled':
      return updateExam(state, ev.patientExamId, (e) => ({ ...e, drugsSettled: true }));
    case 'ownership_checked':
      return settleOwnership(state, ev);
  }
}

/** A final verdict that came for a deferred exam settles the attention its overdue wait raised. */
function settleFinalVerdictWaits(state: JourneyState): JourneyState {
  const settled = (a: Attention) =>
    a.code === 'final_verdict_overdue' &&
    findExam(state, a.patientExamId ?? -1)?.status !== 'Deferred to Medical Director';
  return state.attention.some(settled) ? { ...state, attention: state.attention.filter((a) => !settled(a)) } : state;
}
