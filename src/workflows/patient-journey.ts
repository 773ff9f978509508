// One durable workflow per invite: check the catalog, invite, prepare (attachments, answers), then follow the
// service's callbacks 1 -> 2 -> 3 with timers for the waits that can go wrong. State lives in the pure reducer.
import {
  allHandlersFinished,
  condition,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  upsertSearchAttributes,
  log,
  patched,
  startChild,
  ParentClosePolicy,
  workflowInfo,
} from '@temporalio/workflow';
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { FailureType, type ExamNotification, type JourneyActivities } from './activity-contract';
import { attachmentRetention, attachmentRetentionId } from './attachment-retention';
import { classify, type Classified } from './activity-failures';
import { checkAgainstCatalog } from './catalog-rules';
import { NOT_RETRIED } from './failures';
import {
  abandonUpdate,
  addAttachmentUpdate,
  callbackReceived,
  cancelUpdate,
  resendUpdate,
  retryUpdate,
  SearchAttr,
  snapshotQuery,
  submitAnswersUpdate,
  type AddAttachmentRequest,
  type CancelRequest,
  type CancelResult,
  type OperatorRequest,
  type ResendRequest,
  type SubmitAnswersRequest,
} from './definitions';
import type { JourneyInput } from '../contract/journey-request';
import {
  cancellableExams,
  dueActions,
  examPhase,
  findExam,
  initialState,
  isFinished,
  isUnread,
  reduce,
  schedule,
  searchAttributesOf,
  snapshot,
  stageOf,
  summary,
  timerSummary,
  type Attention,
  type DueAction,
  type ErrorFacts,
  FINAL_VERDICT_DEADLINE_DEFAULT_MS,
  type JourneyEvent,
  type JourneyState,
  type JourneySummary,
  type OperatorAction,
} from './journey-state';

// Retry what was not sent and what the server failed on; everything else is decided by the workflow (failures.ts).
const NON_RETRYABLE = NOT_RETRIED;

const SERVICE_RETRY = {
  initialInterval: '2 seconds',
  backoffCoefficient: 2,
  maximumInterval: '2 minutes',
  maximumAttempts: 8,
  nonRetryableErrorTypes: NON_RETRYABLE,
} as const;

const service = proxyActivities<JourneyActivities>({ startToCloseTimeout: '45 seconds', retry: SERVICE_RETRY });

// Today's rules read the exam list in a local activity: a read the worker answers from its cache (a GET to the service
// when the cache is cold), run in the worker that runs the workflow task, with no activity task and no second workflow
// task on the Temporal server. Retried alike; past a minute its retries wait on a workflow timer.
const local = proxyLocalActivities<JourneyActivities>({ startToCloseTimeout: '45 seconds', retry: SERVICE_RETRY });

// The invite is not idempotent at the service: one attempt per activity, and the workflow retries only what was
// provably not sent. A timeout is ambiguous once the attempt had Temporal record INVITE_SENDING (sendInvite); one
// without it never reached the service (its task was lost on the way to a worker, or the worker stopped first).
const invite = proxyActivities<JourneyActivities>({
  startToCloseTimeout: '60 seconds',
  retry: { maximumAttempts: 1 },
});

const notify = proxyActivities<JourneyActivities>({
  startToCloseTimeout: '20 seconds',
  retry: {
    initialInterval: '5 seconds',
    backoffCoefficient: 2,
    maximumInterval: '10 minutes',
    maximumAttempts: 12,
    nonRetryableErrorTypes: [FailureType.notification_rejected],
  },
});

const INVITE_NOT_SENT_RETRIES = 6;

function errorFacts(c: Classified, at: string): ErrorFacts {
  const f = c.facts;
  const parts = [`${f.operation} failed: ${f.kind}`];
  if (f.httpStatus) parts.push(`HTTP ${f.httpStatus}`);
  if (f.field) parts.push(`field ${f.field}`);
  if (f.setupCode) parts.push(f.setupCode);
  return {
    kind: f.kind,
    operation: f.operation,
    message: parts.join(', '),
    at,
    ...(f.httpStatus !== undefined ? { httpStatus: f.httpStatus } : {}),
    ...(f.field !== undefined ? { field: f.field } : {}),
    ...(f.setupCode !== undefined ? { setupCode: f.setupCode } : {}),
  };
}

const nowIso = () => new Date().toISOString();

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
const DEFAULT_ATTACHMENT_GRACE_MS = 7 * 86_400_000;
/** A journey that has received this many callbacks asks for a person (an exam sends a handful): the default. */
const CALLBACK_FLOOD_LIMIT = 100;
/**
 * Documents added while the journey runs (addAttachment) handed to retention with the start request's. Today's rules
 * (JOURNEY_RULES_2026_12) include it; a journey started before asks it only when it ends having added one.
 */
const ATTACHMENT_RETENTION_ADDED = 'attachment-retention-added';
/** Recorded only by a journey that reached CALLBACK_FLOOD_LIMIT. */
const CALLBACK_FLOOD_GUARD = 'callback-flood-guard';

/** Starts the retention of the journey's documents, left running after the journey (ABANDON). */
async function handOffAttachments(journeyId: string, refs: string[], timings: JourneyInput['timings']) {
  await startChild(attachmentRetention, {
    // Not under the journeys' id prefix: the API never takes it for a journey.
    workflowId: attachmentRetentionId(journeyId),
    parentClosePolicy: ParentClosePolicy.ABANDON,
    args: [{ journeyId, refs, graceMs: timings.attachmentGraceMs ?? DEFAULT_ATTACHMENT_GRACE_MS }],
    staticSummary: `documents of journey ${journeyId}: deleted after the grace`,
  });
}

export async function patientJourney(input: JourneyInput): Promise<JourneySummary> {
  // A journey of today's rules records one marker for all of them; one started before replays, and goes on, with
  // the rules its history was made with (each patch asked in the order it always was).
  const provesOwnership = patched(JOURNEY_RULES_2026_12);
  const current = provesOwnership || patched(JOURNEY_RULES_2026_11);
  let state: JourneyState = initialState(input, nowIso(), {
    callbackRules: current || patched(CALLBACK_RULES_2) ? 2 : 1,
    deferredWaits: current || patched(DEFERRED_WAITS),
    adoptsEvidence: current || patched(INVITE_EVIDENCE),
    drugsGrace: current || patched(DRUGS_GRACE),
    provesOwnership,
  });
  let publishedAttrs = '';
  let publishedDigest = '';
  let sequence = 0;
  const notifications: Promise<unknown>[] = [];
  // Documents added while the journey runs: retention deletes them with the start request's.
  const addedRefs: string[] = [];
  // Journeys started before this sent each notification at once, so a clinic could see the stage go backwards;
  // they replay (and go on) that way.
  const inSequence = current || patched(NOTIFICATIONS_IN_SEQUENCE);
  // Journeys started before this invite with createInvite, and a timeout of theirs stays in doubt.
  const sendingRecorded = current || patched(INVITE_SENDING_RECORDED);
  // Today's rules: what the visibility store holds (from the start request, then from each upsert), key by key.
  const visible = new Map<string, string>();
  if (current) {
    for (const pair of workflowInfo().typedSearchAttributes.getAll())
      visible.set(pair.key.name, JSON.stringify(pair.value));
  }
  let upsertQueued = false;
  const inviteActivity = sendingRecorded ? invite.sendInvite : invite.createInvite;
  let lastNotification: Promise<unknown> = Promise.resolve();

  const dispatch = (ev: JourneyEvent) => {
    state = reduce(state, ev);
    publish();
  };

  /** Keeps search attributes, the UI's details line and the clinic's notifications in step with the state. */
  function publish() {
    const attrs = searchAttributesOf(state);
    const attrsKey = JSON.stringify(attrs);
    if (attrsKey !== publishedAttrs) {
      publishedAttrs = attrsKey;
      if (current) queueUpsert();
      else upsertSearchAttributes(searchAttributePairs());
      setCurrentDetails(
        `${state.scenario} journey, stage ${attrs.JourneyStage}; exams: ${
          state.exams.map((e) => `${e.patientExamId} ${e.status}${e.rxStatus ? ` (${e.rxStatus})` : ''}`).join(', ') ||
          'not invited yet'
        }`,
      );
    }
    if (!input.notificationUrl) return;
    const notification = notificationOf(state);
    const digest = JSON.stringify({ ...notification, sequence: 0, occurredAt: '' });
    if (digest === publishedDigest) return;
    publishedDigest = digest;
    notification.sequence = ++sequence;
    const url = input.notificationUrl;
    const send = () =>
      notify.notifyClinic
        .executeWithOptions({ summary: `clinic notification ${notification.sequence}: ${notification.stage}` }, [
          { url, notification },
        ])
        .catch((err: unknown) => {
          log.warn('clinic notification not delivered', { sequence: notification.sequence });
          state = reduce(state, {
            type: 'error_recorded',
            at: nowIso(),
            error: errorFacts(classify(err, 'notify_clinic'), nowIso()),
          });
        });
    // `send` never rejects: a notification that finally failed lets the next one go.
    lastNotification = inSequence ? lastNotification.then(send) : send();
    notifications.push(lastNotification);
  }

  function searchAttributePairs(): SearchAttributeUpdatePair[] {
    const attrs = searchAttributesOf(state);
    return [
      { key: SearchAttr.ClinicId, value: state.clinicId },
      { key: SearchAttr.Scenario, value: state.scenario },
      { key: SearchAttr.JourneyStage, value: attrs.JourneyStage },
      { key: SearchAttr.ExamStatus, value: attrs.ExamStatus },
      { key: SearchAttr.RxStatus, value: attrs.RxStatus },
      { key: SearchAttr.NeedsAttention, value: attrs.NeedsAttention },
      ...(attrs.PatientExamIds ? [{ key: SearchAttr.PatientExamIds, value: attrs.PatientExamIds }] : []),
    ];
  }

  /**
   * One upsert at the end of this workflow task's code (a microtask: it runs before the task's commands go out),
   * whatever the number of state changes in it, with the attributes whose value differs from the visibility store's.
   * An empty list and an unset attribute are the same to a query.
   */
  function queueUpsert() {
    if (upsertQueued) return;
    upsertQueued = true;
    void Promise.resolve().then(() => {
      upsertQueued = false;
      const changed = searchAttributePairs().filter((pair) => {
        const value = JSON.stringify(pair.value);
        return value !== (visible.get(pair.key.name) ?? (Array.isArray(pair.value) ? '[]' : undefined));
      });
      if (changed.length === 0) return;
      for (const pair of changed) visible.set(pair.key.name, JSON.stringify(pair.value));
      upsertSearchAttributes(changed);
    });
  }

  // ---- messages ---------------------------------------------------------------------------------------------------

  // Past this many callbacks the journey asks for a person, and the forwarder keeps further ones as dead letters.
  const floodEvery = input.callbackFloodLimit ?? CALLBACK_FLOOD_LIMIT;
  let floodLimit = floodEvery;
  setHandler(callbackReceived, (sig) => {
    dispatch({ type: 'callback', at: nowIso(), deliveryId: sig.deliveryId, callback: sig.callback });
    // Asked only here, so a journey records the marker only when it is flooded; earlier histories never got this far.
    if (state.received.length >= floodLimit && !isFinished(state) && patched(CALLBACK_FLOOD_GUARD)) {
      floodLimit = state.received.length + floodEvery;
      dispatch({
        type: 'attention_needed',
        at: nowIso(),
        attention: {
          code: 'callback_flood',
          message:
            `${state.received.length} callbacks came for this journey, far more than an exam sends (its URL may be in ` +
            'the wrong hands); further ones are kept as dead letters (journey_flooded). Retry to take callbacks ' +
            'again, then replay the letters that are genuine; or abandon',
          facts: { callbacks: state.received.length },
        },
      });
    }
  });
  setHandler(snapshotQuery, () => snapshot(state));

  const refuseWhenFinished = () => {
    if (isFinished(state)) throw new Error(`the journey is ${stageOf(state)}`);
  };
  const refuseUnknownExam = (patientExamId: number | undefined) => {
    if (patientExamId !== undefined && !findExam(state, patientExamId)) {
      throw new Error(`patient exam ${patientExamId} is not part of this journey`);
    }
  };
  const refuseUnlessPending = (patientExamId: number, what: string) => {
    refuseWhenFinished();
    refuseUnknownExam(patientExamId);
    const exam = findExam(state, patientExamId)!;
    if (exam.status !== 'pending') throw new Error(`cannot ${what}: patient exam ${patientExamId} is ${exam.status}`);
  };

  const reinvitePending = () => state.exams.some((e) => examPhase(state, e) === 'awaiting_reinvite');

  /** Records an action taken from outside: who (an operator, or the clinic when no actor is named), what, why. */
  const recordAction = (
    action: OperatorAction['action'],
    req: OperatorRequest,
    detail: string,
    defaultActor: string,
  ) => {
    const actor = req.actor?.trim() || defaultActor;
    const note = req.note?.trim();
    dispatch({
      type: 'action_recorded',
      at: nowIso(),
      action: { at: nowIso(), action, actor, ...(note ? { note } : {}), detail },
    });
  };
  const ids = (xs: number[]) => (xs.length > 0 ? xs.join(', ') : 'none');

  setHandler(
    cancelUpdate,
    async (req): Promise<CancelResult> => {
      await condition(() => !state.inviteInFlight);
      if (state.meetings.length === 0) {
        // Nothing was invited (or the invite is in doubt and parked): the journey just ends.
        recordAction('cancel', req, 'ended the journey before any invite was created', 'clinic');
        dispatch({ type: 'journey_cancelled', at: nowIso() });
        return { cancelled: [], alreadyFinal: [] };
      }
      const targets = cancellableExams(state).filter(
        (e) => req.patientExamId === undefined || e.patientExamId === req.patientExamId,
      );
      const result: CancelResult = { cancelled: [], alreadyFinal: [] };
      for (const exam of targets) {
        const r = await service.cancelInvite.executeWithOptions(
          { summary: `cancel the invite of patient exam ${exam.patientExamId} (clinic's request)` },
          [{ clinicId: state.clinicId, patientExamId: exam.patientExamId }],
        );
        if (r.outcome === 'already_final') {
          // The provider acted; its callback is on the way or lost. The deadline path will tell which.
          result.alreadyFinal.push({ patientExamId: exam.patientExamId, status: r.finalStatus ?? 'final' });
        } else {
          dispatch({ type: 'exam_cancelled', at: nowIso(), patientExamId: exam.patientExamId, by: 'clinic' });
          result.cancelled.push(exam.patientExamId);
        }
      }
      // What parked the journey was a deadline cancel that failed for these exams: this cancel settled it.
      const settled = (a: Attention) =>
        a.patientExamId !== undefined && findExam(state, a.patientExamId)?.status === 'cancelled';
      if (result.cancelled.length > 0 && state.attention.length > 0 && state.attention.every(settled)) {
        dispatch({ type: 'attention_resolved', at: nowIso() });
      }
      recordAction(
        'cancel',
        { ...req, note: req.note ?? req.reason },
        `cancelled patient exams: ${ids(result.cancelled)}; already final: ${ids(result.alreadyFinal.map((f) => f.patientExamId))}`,
        'clinic',
      );
      // No invite is out but a re-invite is due (after Missed/NA): ending the journey is what stops it.
      if (req.patientExamId === undefined && reinvitePending()) dispatch({ type: 'journey_cancelled', at: nowIso() });
      return result;
    },
    {
      validator: (req: CancelRequest) => {
        refuseWhenFinished();
        refuseUnknownExam(req.patientExamId);
        if (state.meetings.length === 0 || state.inviteInFlight) return;
        const targets = cancellableExams(state).filter(
          (e) => req.patientExamId === undefined || e.patientExamId === req.patientExamId,
        );
        if (targets.length === 0 && !(req.patientExamId === undefined && reinvitePending())) {
          const statuses = state.exams
            .filter((e) => req.patientExamId === undefined || e.patientExamId === req.patientExamId)
            .map((e) => `${e.patientExamId}: ${e.status}`)
            .join(', ');
          throw new Error(`nothing to cancel: the provider has already acted (${statuses})`);
        }
      },
    },
  );

  setHandler(
    resendUpdate,
    async (req) => {
      const targets =
        req.patientExamId !== undefined ? [req.patientExamId] : [cancellableExams(state)[0]!.patientExamId];
      for (const id of targets) {
        const meetingUuid = findExam(state, id)?.meetingUuid;
        await service.resendInvite.executeWithOptions({ summary: `resend the invite of patient exam ${id}` }, [
          { clinicId: state.clinicId, patientExamId: id, ...(meetingUuid ? { meetingUuid } : {}) },
        ]);
      }
      recordAction('resend', req, `resent the invite of patient exams: ${ids(targets)}`, 'clinic');
      return { resent: targets };
    },
    {
      validator: (req: ResendRequest) => {
        refuseWhenFinished();
        if (req.patientExamId !== undefined) refuseUnlessPending(req.patientExamId, 'resend');
        else if (cancellableExams(state).length === 0) throw new Error('no invite is waiting for the patient');
      },
    },
  );

  setHandler(
    submitAnswersUpdate,
    async (req) => {
      const exam = findExam(state, req.patientExamId)!;
      const r = await service.submitAnswers.executeWithOptions(
        { summary: `submit screening answers for patient exam ${exam.patientExamId}` },
        [
          {
            clinicId: state.clinicId,
            meetingUuid: exam.meetingUuid,
            patientExamId: exam.patientExamId,
            answers: req.answers,
          },
        ],
      );
      dispatch({ type: 'answers_submitted', at: nowIso(), patientExamId: exam.patientExamId, count: r.answered });
      return r;
    },
    { validator: (req: SubmitAnswersRequest) => refuseUnlessPending(req.patientExamId, 'submit answers') },
  );

  setHandler(
    addAttachmentUpdate,
    async (req) => {
      // Kept before the upload: a failed one was deleted by the API, and deleting a missing document is no error.
      addedRefs.push(req.attachment.ref);
      const r = await service.uploadAttachment.executeWithOptions(
        { summary: `upload an attachment to patient exam ${req.patientExamId}` },
        [{ clinicId: state.clinicId, patientExamId: req.patientExamId, attachment: req.attachment }],
      );
      dispatch({
        type: 'attachment_uploaded',
        at: nowIso(),
        patientExamId: req.patientExamId,
        kind: req.attachment.kind,
      });
      return r;
    },
    { validator: (req: AddAttachmentRequest) => refuseUnlessPending(req.patientExamId, 'add an attachment') },
  );

  const requireAttention = (_req: unknown) => {
    if (state.attention.length === 0) throw new Error(`the journey does not need attention (stage ${stageOf(state)})`);
  };
  setHandler(
    retryUpdate,
    (req) => {
      log.info('operator retry', { actor: req.actor ?? 'unknown' });
      recordAction('retry', req, `retried: ${state.attention.map((a) => a.code).join(', ')}`, 'operator');
      dispatch({ type: 'attention_resolved', at: nowIso() });
      return { stage: stageOf(state) };
    },
    { validator: requireAttention },
  );
  setHandler(
    abandonUpdate,
    (req) => {
      log.info('operator abandon', { actor: req.actor ?? 'unknown' });
      recordAction('abandon', req, `abandoned while: ${state.attention.map((a) => a.code).join(', ')}`, 'operator');
      dispatch({ type: 'journey_abandoned', at: nowIso() });
      return { stage: stageOf(state) };
    },
    { validator: requireAttention },
  );

  // ---- steps -----------------------------------------------------------------------------------------------------

  /** Parks the journey until an operator retries (true) or it ends another way (false). */
  async function parkUntilOperator(): Promise<boolean> {
    await condition(() => state.attention.length === 0 || state.outcome !== null);
    return state.outcome === null;
  }

  async function checkCatalog(): Promise<boolean> {
    for (;;) {
      try {
        const catalog = await (current ? local : service).getExamCatalog.executeWithOptions(
          { summary: "read the clinic's exam list" },
          [state.clinicId],
        );
        const issues = checkAgainstCatalog(input, catalog);
        if (issues.length > 0) {
          dispatch({
            type: 'journey_failed',
            at: nowIso(),
            error: {
              kind: 'validation',
              operation: 'catalog_check',
              message: issues.map((i) => `${i.field}: ${i.message}`).join('; '),
              field: issues[0]!.field,
              at: nowIso(),
            },
          });
          return false;
        }
        dispatch({
          type: 'catalog_checked',
          at: nowIso(),
          exams: catalog
            .filter((c) => input.exams.includes(c.examId))
            .map((c) => ({ examId: c.examId, title: c.title, rxType: c.rxType })),
        });
        return true;
      } catch (err) {
        const c = classify(err, 'exam_list');
        dispatch({ type: 'error_recorded', at: nowIso(), error: errorFacts(c, nowIso()) });
        dispatch({
          type: 'attention_needed',
          at: nowIso(),
          attention: {
            code: c.failureType === FailureType.unauthorized ? 'unauthorized' : 'service_unavailable',
            message: `the exam list could not be read (${c.facts.kind}); retry when the service or the clinic's key is fixed`,
            facts: { kind: c.facts.kind },
          },
        });
        if (!(await parkUntilOperator())) return false;
      }
    }
  }

  /** Creates one invite, retrying only what provably never reached the service. */
  async function createInvite(examIds: number[], reinviteOf?: number): Promise<boolean> {
    for (;;) {
      dispatch({ type: 'invite_started', at: nowIso() });
      let notSent = 0;
      for (;;) {
        try {
          const r = await inviteActivity.executeWithOptions(
            {
              summary: `invite the patient to exams ${examIds.join(', ')}${notSent > 0 ? ` (try ${notSent + 1})` : ''}`,
            },
            [{ input, examIds }],
          );
          dispatch({
            type: 'invite_created',
            at: nowIso(),
            meetingUuid: r.meetingUuid,
            meetingUrl: r.meetingUrl,
            patientExams: r.patientExams,
            ...(reinviteOf !== undefined ? { reinviteOf } : {}),
          });
          return true;
        } catch (err) {
          const c = classify(err, 'exam_invite', sendingRecorded);
          if (c.failureType === FailureType.not_sent && ++notSent <= INVITE_NOT_SENT_RETRIES) {
            await sleep(Math.min(2_000 * 2 ** (notSent - 1), 120_000), {
              summary: `the invite was not sent: pause before try ${notSent + 1}`,
            });
            continue;
          }
          const attention = inviteAttention(c, examIds);
          const inDoubt = state.adoptsEvidence && attention.code === 'invite_ambiguous';
          dispatch({ type: 'invite_not_created', at: nowIso(), ...(inDoubt ? { ambiguousExams: examIds } : {}) });
          dispatch({ type: 'error_recorded', at: nowIso(), error: errorFacts(c, nowIso()) });
          if (c.failureType === FailureType.validation || c.failureType === FailureType.bad_response) {
            dispatch({ type: 'journey_failed', at: nowIso(), error: errorFacts(c, nowIso()) });
            return false;
          }
          // A callback that proved the invite created may already have come (it waited for the attempt's end).
          if (inviteProven(examIds)) return true;
          dispatch({ type: 'attention_needed', at: nowIso(), attention });
          break;
        }
      }
      if (!(await parkUntilOperator())) return false;
      // Evidence settled the doubt: the invite exists; sending it again would make a second one.
      if (inviteProven(examIds)) return true;
    }
  }

  /** Whether a callback proved an invite for these exams created (its patient exam adopted). */
  function inviteProven(examIds: number[]): boolean {
    return state.meetings.some((m) => m.evidenceOf?.some((id) => examIds.includes(id)));
  }

  async function prepare(patientExamIds: number[]) {
    dispatch({ type: 'preparation_started', at: nowIso() });
    for (const id of patientExamIds) {
      const exam = findExam(state, id);
      // A patient exam known from a callback (the invite in doubt) has had its consultation: nothing to prepare.
      if (!exam || exam.meetingUuid === '') continue;
      for (const a of (input.attachments ?? []).filter((x) => x.examId === exam.examId)) {
        try {
          await service.uploadAttachment.executeWithOptions({ summary: `upload an attachment to patient exam ${id}` }, [
            { clinicId: state.clinicId, patientExamId: id, attachment: a.attachment },
          ]);
          dispatch({ type: 'attachment_uploaded', at: nowIso(), patientExamId: id, kind: a.attachment.kind });
        } catch (err) {
          dispatch({
            type: 'error_recorded',
            at: nowIso(),
            error: errorFacts(classify(err, 'exam_upload_attachment'), nowIso()),
          });
        }
      }
      const answers = input.answers?.find((x) => x.examId === exam.examId)?.answers;
      if (answers?.length) {
        try {
          const r = await service.submitAnswers.executeWithOptions(
            { summary: `submit screening answers for patient exam ${id}` },
            [{ clinicId: state.clinicId, meetingUuid: exam.meetingUuid, patientExamId: id, answers }],
          );
          dispatch({ type: 'answers_submitted', at: nowIso(), patientExamId: id, count: r.answered });
        } catch (err) {
          dispatch({
            type: 'error_recorded',
            at: nowIso(),
            error: errorFacts(classify(err, 'exam_submit_answers'), nowIso()),
          });
        }
      }
    }
    dispatch({ type: 'preparation_finished', at: nowIso() });
  }

  async function perform(action: DueAction) {
    const at = nowIso();
    switch (action.type) {
      case 'send_reminder':
        try {
          await service.resendInvite.executeWithOptions(
            { summary: `reminder: resend the invite of patient exam ${action.patientExamId}` },
            [{ clinicId: state.clinicId, patientExamId: action.patientExamId, meetingUuid: action.meetingUuid }],
          );
        } catch (err) {
          dispatch({ type: 'error_recorded', at, error: errorFacts(classify(err, 'exam_invite_resend'), at) });
        }
        dispatch({ type: 'reminder_sent', at: nowIso(), meetingUuid: action.meetingUuid });
        return;
      case 'expire_meeting': {
        for (const id of action.patientExamIds) {
          if (findExam(state, id)?.status !== 'pending') continue;
          let r;
          try {
            r = await service.cancelInvite.executeWithOptions(
              { summary: `consultation deadline: cancel the invite of patient exam ${id}` },
              [{ clinicId: state.clinicId, patientExamId: id }],
            );
          } catch (err) {
            const c = classify(err, 'exam_invite_cancel');
            dispatch({ type: 'error_recorded', at: nowIso(), error: errorFacts(c, nowIso()) });
            dispatch({
              type: 'attention_needed',
              at: nowIso(),
              attention: {
                code: 'service_unavailable',
                message: `the consultation deadline passed but the invite could not be cancelled (${c.facts.kind})`,
                patientExamId: id,
                facts: { kind: c.facts.kind },
              },
            });
            return;
          }
          if (r.outcome === 'already_final') {
            const status = r.finalStatus ?? 'Approved';
            dispatch({ type: 'expiry_found_verdict', at: nowIso(), patientExamId: id, status });
            dispatch({
              type: 'attention_needed',
              at: nowIso(),
              attention: {
                code: 'verdict_lost',
                message: `the service reports patient exam ${id} as ${status} but its callback never arrived`,
                patientExamId: id,
                facts: { patientExamId: id, status },
              },
            });
          } else {
            dispatch({ type: 'exam_cancelled', at: nowIso(), patientExamId: id, by: 'expiry' });
          }
        }
        dispatch({ type: 'expiry_handled', at: nowIso(), meetingUuid: action.meetingUuid });
        return;
      }
      case 'reinvite': {
        const created = await createInvite([action.examId], action.patientExamId);
        if (created) {
          const latest = state.meetings[state.meetings.length - 1]!;
          await prepare(latest.patientExamIds);
        }
        return;
      }
      case 'prescription_overdue':
      case 'tracking_overdue':
        dispatch({ type: action.type, at, patientExamId: action.patientExamId });
        return;
      case 'give_up':
        dispatch({ type: 'gave_up_waiting', at, patientExamId: action.patientExamId, what: action.what });
        return;
      case 'drugs_settled':
        dispatch({ type: 'drugs_settled', at, patientExamId: action.patientExamId });
        return;
      case 'final_verdict_overdue': {
        // The clinic hears of it through the notification of the stage (needs_attention, with this attention).
        const exam = findExam(state, action.patientExamId);
        const hours = Math.round(
          (input.timings.finalVerdictDeadlineMs ?? FINAL_VERDICT_DEADLINE_DEFAULT_MS) / 3_600_000,
        );
        dispatch({
          type: 'attention_needed',
          at,
          attention: {
            code: 'final_verdict_overdue',
            message:
              `patient exam ${action.patientExamId} was deferred to the medical director and no final verdict came ` +
              `within ${hours} h; retry to wait another ${hours} h, or abandon (the exam stays on the journey)`,
            patientExamId: action.patientExamId,
            facts: { patientExamId: action.patientExamId, deferredAt: exam?.verdictAt ?? null },
          },
        });
        return;
      }
    }
  }

  /**
   * Settles each patient exam a callback claims for the invite in doubt (journey-state's `provesOwnership`): its
   * patient must be this journey's and no other journey may hold it; anything else is for a person.
   */
  async function proveOwnership() {
    for (;;) {
      await condition(() => state.ownershipChecks.length > 0 || isFinished(state));
      const check = state.ownershipChecks[0];
      if (!check || isFinished(state)) return;
      const at = () => nowIso();
      const claimant = state.pending.find((p) => p.deliveryId === check.deliveryId)?.callback;
      const claimed = claimant && !isUnread(claimant) && claimant.event !== 3 ? claimant.patientEmail : undefined;
      if (!claimed || normalEmail(claimed) !== normalEmail(input.patient.email)) {
        dispatch({
          type: 'ownership_checked',
          at: at(),
          patientExamId: check.patientExamId,
          refused: claimed ? "its patient is not this journey's" : 'it does not name its patient',
        });
        continue;
      }
      let refused: string | undefined;
      try {
        const { workflowIds } = await service.findPatientExamHolders.executeWithOptions(
          { summary: `check that no other journey holds patient exam ${check.patientExamId}` },
          [{ patientExamId: check.patientExamId, workflowId: workflowInfo().workflowId }],
        );
        if (workflowIds.length > 0) {
          // Ids only; the other journey may be another clinic's, so its id is not in this journey's attention.
          log.warn('a callback claims a patient exam another journey holds', {
            patientExamId: check.patientExamId,
            holders: workflowIds,
          });
          refused = `another journey holds it (find it with PatientExamIds = '${check.patientExamId}')`;
        }
      } catch (err) {
        refused = `no one could tell whether another journey holds it (${classify(err, 'find_patient_exam_holders').facts.kind}); retry to ask again`;
      }
      dispatch({
        type: 'ownership_checked',
        at: at(),
        patientExamId: check.patientExamId,
        ...(refused ? { refused } : {}),
      });
    }
  }

  // ---- the journey ------------------------------------------------------------------------------------------------

  publish();
  // Only journeys of today's rules open checks; the loop ends with the journey.
  if (provesOwnership) void proveOwnership();
  if ((await checkCatalog()) && state.outcome === null && (await createInvite(input.exams))) {
    await prepare(state.exams.map((e) => e.patientExamId));
    while (!isFinished(state)) {
      if (state.attention.length > 0) {
        await parkUntilOperator();
        continue;
      }
      const now = Date.now();
      const due = dueActions(state, now);
      if (due.length > 0) {
        await perform(due[0]!);
        continue;
      }
      const next = schedule(state)[0];
      const version = state.version;
      if (next === undefined) await condition(() => state.version !== version);
      else {
        await condition(() => state.version !== version, Math.max(1, next.at - now), {
          summary: timerSummary(next.action),
        });
      }
    }
  }
  await condition(allHandlersFinished);
  await Promise.all(notifications);
  // Journeys started before this keep their documents: they replay without the hand-off.
  const startRefs = (input.attachments ?? []).map((a) => a.attachment.ref);
  const handsOffStart = startRefs.length > 0 && (current || patched(ATTACHMENT_RETENTION));
  // Journeys that ended before added documents were handed off replay without them.
  const handsOffAdded = addedRefs.length > 0 && (provesOwnership || patched(ATTACHMENT_RETENTION_ADDED));
  const refs = [...new Set([...(handsOffStart ? startRefs : []), ...(handsOffAdded ? addedRefs : [])])];
  if (refs.length > 0) await handOffAttachments(state.journeyId, refs, input.timings);
  return summary(state, nowIso());
}

/** E-mail addresses compared as the service compares a patient's: trimmed, case aside. */
function normalEmail(email: string): string {
  return email.trim().toLowerCase();
}

function inviteAttention(c: Classified, examIds: number[]) {
  const facts = { kind: c.facts.kind, exams: examIds.join(','), httpStatus: c.facts.httpStatus ?? null };
  switch (c.failureType) {
    case FailureType.account_setup:
      return {
        code: 'account_setup' as const,
        message: `the clinic's account needs setting up at the service (${c.facts.setupCode ?? 'unknown'}); retry once the portal settings are fixed`,
        facts: { ...facts, setupCode: c.facts.setupCode ?? null },
      };
    case FailureType.unauthorized:
      return {
        code: 'unauthorized' as const,
        message: "the service refused the clinic's api key; retry once the key is fixed",
        facts,
      };
    case FailureType.not_sent:
      return {
        code: 'service_unavailable' as const,
        message: 'the service could not be reached; the invite was never sent. Retry when it is back',
        facts,
      };
    default:
      return {
        code: 'invite_ambiguous' as const,
        message:
          'the invite may or may not have been created (the request was sent but no answer came). Check the service portal: retry only if no invite exists, else abandon',
        facts,
      };
  }
}

function notificationOf(state: JourneyState): ExamNotification {
  return {
    type: 'journey.updated',
    journeyId: state.journeyId,
    clinicId: state.clinicId,
    sequence: 0,
    stage: stageOf(state),
    occurredAt: state.updatedAt,
    exams: state.exams.map((e) => ({
      patientExamId: e.patientExamId,
      examId: e.examId,
      status: e.status,
      rxStatus: e.rxStatus,
      prescriptionOverdue: e.prescriptionOverdue,
      trackingOverdue: e.trackingOverdue,
      gaveUpWaiting: e.gaveUpWaiting,
      prescriptions: e.prescriptions.map((rx) => ({
        prescriptionId: rx.prescriptionId,
        shipped: rx.tracking !== null,
      })),
    })),
    attention: state.attention.map((a) => ({ code: a.code, message: a.message })),
    lastError: state.lastError
      ? { kind: state.lastError.kind, operation: state.lastError.operation, message: state.lastError.message }
      : null,
  };
}
