// The rules a journey runs by: today's, or those its history was made with. Each rule came as a patch of the workflow.
// A journey whose start named today's rules (the API names them: JOURNEY_RULES) runs them and records no marker; one
// started without, or whose first task a worker of an earlier release ran, records one marker for all the rules it
// runs; one started before replays, and goes on, with the rules of its history (each patch asked in the order it
// always was).
import { patched, workflowInfo } from '@temporalio/workflow';
import type { JourneyRules } from './journey-state';
import { TODAYS_RULES as TODAYS_JOURNEY_RULES } from './journey-state/reducer';
/** Callbacks lacking ids resolved by rx number and by drug (journey-state's `callbackRules` 2). */
const CALLBACK_RULES_2 = 'callback-rules-2-rx-number-and-drug';
/** Deferred to Medical Director waits for the final verdict, with its own deadline (journey-state's `deferredWaits`). */
const DEFERRED_WAITS = 'deferred-verdict-waits';
/** A callback that proves an invite in doubt was created is adopted (journey-state's `adoptsEvidence`). */
const INVITE_EVIDENCE = 'invite-evidence-adopted';
/** Drugs one per event 2 wait a grace period for more before the exam is final (journey-state's `drugsGrace`). */
const DRUGS_GRACE = 'flat-drugs-grace';
/** Clinic notifications one after the other: each waits for the previous one's delivery or its final failure. */
const NOTIFICATIONS_IN_SEQUENCE = 'notifications-in-sequence';
/** Invites by `sendInvite` (INVITE_SENDING recorded before sending): a timeout without the record is sent again. */
const INVITE_SENDING_RECORDED = 'invite-sending-recorded';

/** The journey's documents deleted after a grace once it ends (attachment-retention.ts). */
const ATTACHMENT_RETENTION = 'attachment-retention';
/**
 * Every patch above at once, search attributes published once per workflow task activation (only those that changed),
 * and the exam list read in a local activity. A journey started from here on records this one marker instead of one per
 * patch (each patch is a marker and an upsert of TemporalChangeVersion: twelve commands on a journey's first workflow
 * task, each upsert a write to the visibility store), one upsert where an activation changed its state several
 * times, and no activity task or workflow task of its own for the exam list (docs/performance.md#2-journey-throughput).
 * Journeys started before it replay, and go on, patch by patch.
 */
const JOURNEY_RULES_2026_11 = 'journey-rules-2026-11';
/**
 * The rules of 2026-11, and a patient exam of an invite in doubt adopted only once proven the journey's own (its
 * patient, its exam, held by no other journey: the PatientExamIds search attribute). One marker again for a journey
 * started from here on; one started before replays with the rules of its history.
 */
const JOURNEY_RULES_2026_12 = 'journey-rules-2026-12';
/**
 * The rules of 2026-12, and a shipment for a patient exam of the invite in doubt that came before any callback able to
 * prove it this journey's own waits for that proof instead of going to a person (journey-state's `shipmentsAwaitProof`).
 * One marker for a journey started from here on; one started before replays with the rules of its history.
 */
const JOURNEY_RULES_2027_01 = 'journey-rules-2027-01';
/**
 * The rules of 2027-01, and an ownership check that adopts only on an answer it can trust: asked once visibility has
 * had time to show a holder that named the patient exam before the callback came, and asked again while the answer is
 * unknown (visibility unreadable, holders on earlier rules not yet named) before the callback goes to a person.
 */
const JOURNEY_RULES_2027_02 = 'journey-rules-2027-02';
/**
 * A journey on rules before JOURNEY_RULES_2026_12 publishes PatientExamIds from its first change (or namePatientExams)
 * after this release on. Asked only by such journeys, once they hold a patient exam.
 */
const PATIENT_EXAM_IDS_NAMED = 'patient-exam-ids-named';
/**
 * Documents added while the journey runs (addAttachment) handed to retention with the start request's. Today's rules
 * (JOURNEY_RULES_2026_12) include it; a journey started before asks it only when it ends having added one.
 */
const ATTACHMENT_RETENTION_ADDED = 'attachment-retention-added';
/** Recorded only by a journey that reached CALLBACK_FLOOD_LIMIT. */
const CALLBACK_FLOOD_GUARD = 'callback-flood-guard';
/** Recorded only by a cancel that came while another action on its patient exams was at the service. */
const CANCEL_AFTER_ACTIONS = 'cancel-after-actions-in-flight';

/** Which patch decided what, for this journey's history. */
export interface HistoryRules extends JourneyRules {
  /**
   * The rules of 2026-11 or later: one marker, search attributes once per activation (only those that changed), the
   * exam list in a local activity, documents handed to retention.
   */
  current: boolean;
  /** Clinic notifications one after the other (journeys started before sent each at once). */
  inSequence: boolean;
  /** Invites by `sendInvite` (journeys started before invite with `createInvite`, a timeout of theirs in doubt). */
  sendingRecorded: boolean;
  /**
   * The ownership check waits for visibility to settle and asks again while it cannot tell (journeys started before
   * hold for a person on the first answer that is not a proof).
   */
  asksUntilKnown: boolean;
}

/**
 * The rules a start request can name (JourneyInput's `rules`): a journey started with them runs today's rules and
 * records no marker for them. The newest rules marker's name, so that a marker recorded for them says the same.
 */
export const TODAYS_RULES = JOURNEY_RULES_2027_02;

/** Today's rules: every patch above in force. */
const TODAY: HistoryRules = {
  ...TODAYS_JOURNEY_RULES,
  current: true,
  inSequence: true,
  sendingRecorded: true,
  asksUntilKnown: true,
};

/**
 * The rules this history runs by. A journey whose start request named today's rules (`started`) runs them: decided
 * the first time its first workflow task runs, no marker recorded, nothing asked of the SDK. Replayed, the markers its
 * history holds decide, asked as always: a worker of an earlier release, which does not read the start request's
 * rules, may have run that first task (during a deploy) and recorded the markers of its own rules. Without a marker and
 * without named rules, the history is one of the oldest, as before.
 */
export function rulesOfThisHistory(started?: string): HistoryRules {
  const named = started === TODAYS_RULES;
  if (named && !workflowInfo().unsafe.isReplaying) return TODAY;
  const marked = markedRules();
  return named && !marked.anyMarker ? TODAY : marked;
}

/** Asks the patches, in the order the workflow always asked them, and names what each decided. */
function markedRules(): HistoryRules & { anyMarker: boolean } {
  const asksUntilKnown = patched(JOURNEY_RULES_2027_02);
  const shipmentsAwaitProof = asksUntilKnown || patched(JOURNEY_RULES_2027_01);
  const provesOwnership = shipmentsAwaitProof || patched(JOURNEY_RULES_2026_12);
  const current = provesOwnership || patched(JOURNEY_RULES_2026_11);
  const callbackRules = current || patched(CALLBACK_RULES_2) ? 2 : 1;
  const deferredWaits = current || patched(DEFERRED_WAITS);
  const adoptsEvidence = current || patched(INVITE_EVIDENCE);
  const drugsGrace = current || patched(DRUGS_GRACE);
  // Journeys started before this sent each notification at once, so a clinic could see the stage go backwards.
  const inSequence = current || patched(NOTIFICATIONS_IN_SEQUENCE);
  const sendingRecorded = current || patched(INVITE_SENDING_RECORDED);
  return {
    anyMarker:
      current || callbackRules === 2 || deferredWaits || adoptsEvidence || drugsGrace || inSequence || sendingRecorded,
    callbackRules,
    deferredWaits,
    adoptsEvidence,
    drugsGrace,
    provesOwnership,
    shipmentsAwaitProof,
    current,
    inSequence,
    sendingRecorded,
    asksUntilKnown,
  };
}

/** Whether a journey of rules before 2026-12 publishes PatientExamIds (asked once it holds a patient exam). */
export function namesPatientExamIds(): boolean {
  return patched(PATIENT_EXAM_IDS_NAMED);
}

/** Whether the journey hands its start request's documents to retention (asked at its end only). */
export function handsOffStartDocuments(rules: HistoryRules): boolean {
  return rules.current || patched(ATTACHMENT_RETENTION);
}

/** Whether the journey hands documents added while it ran to retention (asked at its end, when it added some). */
export function handsOffAddedDocuments(rules: HistoryRules): boolean {
  return rules.provesOwnership || patched(ATTACHMENT_RETENTION_ADDED);
}

/** Whether a flooded journey asks for a person (asked only when one is, so others record no marker). */
export function guardsAgainstFloods(): boolean {
  return patched(CALLBACK_FLOOD_GUARD);
}

/**
 * Whether a cancel waits for the actions on its patient exams already at the service (a resend, answers, an upload)
 * before it cancels them (asked only when one is, so other journeys record no marker).
 */
export function cancelsAfterActionsInFlight(): boolean {
  return patched(CANCEL_AFTER_ACTIONS);
}
