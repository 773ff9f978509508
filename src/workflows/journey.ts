// One journey, its state and the steps it takes: check the exam list, invite, prepare (attachments, answers), follow
// the callbacks and deadlines, end. Its messages (signals, the snapshot query, updates) are in journey-messages.ts; the
// story that puts it together is patientJourney (patient-journey.ts). State lives in the pure reducer (journey-state/).
import {
  allHandlersFinished,
  condition,
  log,
  setCurrentDetails,
  sleep,
  startChild,
  upsertSearchAttributes,
  ParentClosePolicy,
  workflowInfo,
} from '@temporalio/workflow';
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import type { JourneyInput } from '../contract/journey-request';
import { FailureType, type ExamNotification } from '../contract/activity-contract';
import { classify, type Classified } from './activity-failures';
import { attachmentRetention, attachmentRetentionId } from './attachment-retention';
import { checkAgainstCatalog } from '../contract/catalog-rules';
import { SearchAttr } from '../contract/definitions';
import { errorFacts, invite, INVITE_NOT_SENT_RETRIES, local, notify, nowIso, service } from './journey-activities';
import {
  handsOffAddedDocuments,
  handsOffStartDocuments,
  namesPatientExamIds,
  type HistoryRules,
} from './journey-rules';
import {
  dueActions,
  examPhase,
  findExam,
  initialState,
  isFinished,
  isUnread,
  reduce,
  schedule,
  searchAttributesOf,
  stageOf,
  summary,
  timerSummary,
  type DueAction,
  FINAL_VERDICT_DEADLINE_DEFAULT_MS,
  type JourneyEvent,
  type JourneyState,
  type JourneySummary,
  type OperatorAction,
} from './journey-state';
import type { OperatorRequest } from '../contract/definitions';

const DEFAULT_ATTACHMENT_GRACE_MS = 7 * 86_400_000;
/** How long visibility may take to show a journey's PatientExamIds: a claim is checked no sooner after it came. */
const VISIBILITY_SETTLE_MS = 5_000;
/** How long an ownership check that cannot tell asks again before the claim goes to a person. */
const OWNERSHIP_ASKING_MS = 15 * 60_000;
/** The pause before asking again after the check itself failed (its activity's own retries spent). */
const OWNERSHIP_FAILED_RETRY_MS = 60_000;

export type Journey = ReturnType<typeof openJourney>;

/** The journey's state and steps; nothing runs until the story (patientJourney) calls them. */
export function openJourney(input: JourneyInput, rules: HistoryRules) {
  const { current, inSequence, sendingRecorded } = rules;
  let state: JourneyState = initialState(input, nowIso(), rules);
  // Whether the journey publishes PatientExamIds: today's rules do; earlier ones from their first change after this.
  let namesExams = state.provesOwnership;
  let publishedAttrs = '';
  let publishedDigest = '';
  let sequence = 0;
  const notifications: Promise<unknown>[] = [];
  // Documents added while the journey runs: retention deletes them with the start request's.
  const addedRefs: string[] = [];
  // Today's rules: what the visibility store holds (from the start request, then from each upsert), key by key.
  const visible = new Map<string, string>();
  if (current) {
    for (const pair of workflowInfo().typedSearchAttributes.getAll())
      visible.set(pair.key.name, JSON.stringify(pair.value));
  }
  let upsertQueued = false;
  const inviteActivity = sendingRecorded ? invite.sendInvite : invite.createInvite;
  // One settled promise for the journey: a `.then` on it queues its callback as `Promise.resolve().then` would, without
  // a new promise each time (the SDK's promise hook costs each one a stack trace).
  const settled: Promise<void> = Promise.resolve();
  let lastNotification: Promise<unknown> = settled;

  /**
   * Every change of the journey's state: the event reduced, then published. `notify: false` for a notification's own
   * final failure: the clinic is not told, through the channel that just failed, that it failed (the next notification
   * carries it as lastError).
   */
  const dispatch = (ev: JourneyEvent, o: { notify?: boolean } = {}) => {
    state = reduce(state, ev);
    publish(o.notify ?? true);
  };

  /** Keeps search attributes, the UI's details line and the clinic's notifications in step with the state. */
  function publish(notifyClinic = true) {
    if (!namesExams && state.exams.length > 0) namesExams = namesPatientExamIds();
    const attrs = searchAttributesOf(state, namesExams);
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
    if (!notifyClinic || !input.notificationUrl) return;
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
          dispatch(
            { type: 'error_recorded', at: nowIso(), error: errorFacts(classify(err, 'notify_clinic'), nowIso()) },
            { notify: false },
          );
        });
    // `send` never rejects: a notification that finally failed lets the next one go.
    lastNotification = inSequence ? lastNotification.then(send) : send();
    notifications.push(lastNotification);
  }

  function searchAttributePairs(): SearchAttributeUpdatePair[] {
    const attrs = searchAttributesOf(state, namesExams);
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
    void settled.then(() => {
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
      const pending = state.pending.find((p) => p.deliveryId === check.deliveryId);
      const claimant = pending?.callback;
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
      const refused = rules.asksUntilKnown
        ? await askUntilKnown(check.patientExamId, pending!.at)
        : await askOnce(check.patientExamId);
      if (refused === null) return;
      dispatch({
        type: 'ownership_checked',
        at: at(),
        patientExamId: check.patientExamId,
        ...(refused ? { refused } : {}),
      });
    }
  }

  /** Journeys started before journey-rules-2027-02: one answer, and whatever is not a proof goes to a person. */
  async function askOnce(patientExamId: number): Promise<string | undefined> {
    const answer = await askHolders(patientExamId);
    if ('unknown' in answer)
      return `no one could tell whether another journey holds it (${answer.unknown}); retry to ask again`;
    return answer.refused;
  }

  /**
   * Asks once visibility has had time to show a holder that named the patient exam before the claim came, and again
   * while the answer is unknown, for OWNERSHIP_ASKING_MS; then the claim goes to a person. Null: the journey ended.
   */
  async function askUntilKnown(patientExamId: number, claimedAt: string): Promise<string | undefined | null> {
    const settle = Date.parse(claimedAt) + VISIBILITY_SETTLE_MS - Date.now();
    if (settle > 0) {
      await sleep(settle, { summary: `let visibility show any holder of patient exam ${patientExamId}` });
    }
    const until = Date.now() + OWNERSHIP_ASKING_MS;
    for (;;) {
      if (isFinished(state)) return null;
      const answer = await askHolders(patientExamId);
      if (!('unknown' in answer)) return answer.refused;
      const pause = Math.min(Math.max(answer.retryAfterMs, 1_000), 5 * 60_000);
      if (Date.now() + pause > until) {
        return `no one could tell whether another journey holds it (${answer.unknown}) within ${OWNERSHIP_ASKING_MS / 60_000} min`;
      }
      await sleep(pause, { summary: `ask again whether another journey holds patient exam ${patientExamId}` });
    }
  }

  /** One ask of the ownership check: why it is refused, nothing when no other journey holds it, or why none can tell. */
  async function askHolders(
    patientExamId: number,
  ): Promise<{ refused?: string } | { unknown: string; retryAfterMs: number }> {
    try {
      const holders = await service.findPatientExamHolders.executeWithOptions(
        { summary: `check that no other journey holds patient exam ${patientExamId}` },
        [{ patientExamId, workflowId: workflowInfo().workflowId }],
      );
      if (holders.workflowIds.length > 0) {
        // Ids only; the other journey may be another clinic's, so its id is not in this journey's attention.
        log.warn('a callback claims a patient exam another journey holds', {
          patientExamId,
          holders: holders.workflowIds,
        });
        return { refused: `another journey holds it (find it with PatientExamIds = '${patientExamId}')` };
      }
      // Histories from before the answer could be unknown have none: they replay as they were made.
      if (holders.unknown) return { unknown: holders.unknown.reason, retryAfterMs: holders.unknown.retryAfterMs };
      return {};
    } catch (err) {
      const kind = classify(err, 'find_patient_exam_holders').facts.kind;
      return { unknown: kind, retryAfterMs: OWNERSHIP_FAILED_RETRY_MS };
    }
  }

  /** Checks the exam list and invites the patient; false when the journey ended on the way. */
  async function invitePatient(): Promise<boolean> {
    return (await checkCatalog()) && state.outcome === null && createInvite(input.exams);
  }

  /** Uploads the request's attachments and submits its answers to every patient exam the invite created. */
  async function prepareInvited(): Promise<void> {
    await prepare(state.exams.map((e) => e.patientExamId));
  }

  /** Follows the service's callbacks and the journey's deadlines until it ends, parked while it needs a person. */
  async function follow(): Promise<void> {
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

  /** Waits for the journey's handlers and notifications, hands its documents to retention, and says how it ended. */
  async function end(): Promise<JourneySummary> {
    // Each wait only when there is something to wait for: the SDK's promise hook costs every promise a stack trace.
    if (!allHandlersFinished()) await condition(allHandlersFinished);
    if (notifications.length > 0) await Promise.all(notifications);
    // Journeys started before this keep their documents: they replay without the hand-off.
    const startRefs = (input.attachments ?? []).map((a) => a.attachment.ref);
    const handsOffStart = startRefs.length > 0 && handsOffStartDocuments(rules);
    // Journeys that ended before added documents were handed off replay without them.
    const handsOffAdded = addedRefs.length > 0 && handsOffAddedDocuments(rules);
    const refs = [...new Set([...(handsOffStart ? startRefs : []), ...(handsOffAdded ? addedRefs : [])])];
    if (refs.length > 0) await handOffAttachments(state.journeyId, refs, input.timings);
    return summary(state, nowIso());
  }

  return {
    input,
    rules,
    /** The state now (a new object after every event). */
    get state(): JourneyState {
      return state;
    },
    /** Documents added while the journey runs (addAttachment), handed to retention at its end. */
    addedRefs,
    dispatch,
    publish,
    refuseWhenFinished,
    refuseUnknownExam,
    refuseUnlessPending,
    reinvitePending,
    recordAction,
    proveOwnership,
    invitePatient,
    prepareInvited,
    follow,
    end,
  };
}

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
