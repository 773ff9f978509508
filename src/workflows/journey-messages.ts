// The messages a journey takes: the webhook's callbacks (a signal), the request to name its patient exams (a signal),
// the snapshot query, and the updates a clinic or an operator sends (cancel, resend, answers, attachments, retry,
// abandon). Each hands its work to the journey.
import { condition, log, setHandler } from '@temporalio/workflow';
import {
  abandonUpdate,
  addAttachmentUpdate,
  callbackReceived,
  cancelUpdate,
  namePatientExams,
  resendUpdate,
  retryUpdate,
  snapshotQuery,
  submitAnswersUpdate,
  type AddAttachmentRequest,
  type CancelRequest,
  type CancelResult,
  type ResendRequest,
  type SubmitAnswersRequest,
} from '../contract/definitions';
import type { Journey } from './journey';
import { nowIso, service } from './journey-activities';
import { cancelsAfterActionsInFlight, guardsAgainstFloods } from './journey-rules';
import { cancellableExams, findExam, isFinished, snapshot, stageOf, type Attention } from './journey-state';

/** A journey that has received this many callbacks asks for a person (an exam sends a handful): the default. */
const CALLBACK_FLOOD_LIMIT = 100;

export function takeMessages(j: Journey): void {
  // Past this many callbacks the journey asks for a person, and the forwarder keeps further ones as dead letters.
  const floodEvery = j.input.callbackFloodLimit ?? CALLBACK_FLOOD_LIMIT;
  let floodLimit = floodEvery;
  setHandler(callbackReceived, (sig) => {
    j.dispatch({ type: 'callback', at: nowIso(), deliveryId: sig.deliveryId, callback: sig.callback });
    // Asked only here, so a journey records the marker only when it is flooded; earlier histories never got this far.
    if (j.state.received.length >= floodLimit && !isFinished(j.state) && guardsAgainstFloods()) {
      floodLimit = j.state.received.length + floodEvery;
      j.dispatch({
        type: 'attention_needed',
        at: nowIso(),
        attention: {
          code: 'callback_flood',
          message:
            `${j.state.received.length} callbacks came for this journey, far more than an exam sends (its URL may be in ` +
            'the wrong hands); further ones are kept as dead letters (journey_flooded). Retry to take callbacks ' +
            'again, then replay the letters that are genuine; or abandon',
          facts: { callbacks: j.state.received.length },
        },
      });
    }
  });
  setHandler(snapshotQuery, () => snapshot(j.state));
  // A journey on earlier rules publishes its PatientExamIds now (publish asks its patch); others have, or have none.
  setHandler(namePatientExams, () => j.publish(false));

  const ids = (xs: number[]) => (xs.length > 0 ? xs.join(', ') : 'none');

  // Actions at the service right now, so that two that conflict do not race there: the scope of each cancel in flight
  // (one patient exam, or every one: undefined) and how many other actions (resend, answers, upload) each patient exam
  // has in flight. A cancel waits for those on its patient exams; an action on a patient exam being cancelled, or a
  // second cancel of it, is refused (the journey's 409), as it would be once the cancel is done.
  const cancelling: (number | undefined)[] = [];
  const inFlight = new Map<number, number>();
  const beingCancelled = (patientExamId: number | undefined) =>
    cancelling.some((scope) => scope === undefined || patientExamId === undefined || scope === patientExamId);
  const refuseWhileCancelling = (patientExamId: number | undefined, what: string) => {
    if (!beingCancelled(patientExamId)) return;
    const which = patientExamId === undefined ? "the journey's invite" : `patient exam ${patientExamId}`;
    throw new Error(`cannot ${what}: a cancel of ${which} is in progress`);
  };
  const actionsInFlight = (scope: number | undefined) =>
    [...inFlight].some(([id, n]) => n > 0 && (scope === undefined || id === scope));
  /** Runs an action on these patient exams, counted as in flight until it ends. */
  const acting = async <T>(patientExamIds: number[], action: () => Promise<T>): Promise<T> => {
    for (const id of patientExamIds) inFlight.set(id, (inFlight.get(id) ?? 0) + 1);
    try {
      return await action();
    } finally {
      for (const id of patientExamIds) inFlight.set(id, inFlight.get(id)! - 1);
    }
  };

  setHandler(
    cancelUpdate,
    async (req): Promise<CancelResult> => {
      cancelling.push(req.patientExamId);
      try {
        return await cancel(req);
      } finally {
        cancelling.splice(cancelling.indexOf(req.patientExamId), 1);
      }
    },
    {
      validator: (req: CancelRequest) => {
        j.refuseWhenFinished();
        j.refuseUnknownExam(req.patientExamId);
        refuseWhileCancelling(req.patientExamId, 'cancel');
        if (j.state.meetings.length === 0 || j.state.inviteInFlight) return;
        const targets = cancellableExams(j.state).filter(
          (e) => req.patientExamId === undefined || e.patientExamId === req.patientExamId,
        );
        if (targets.length === 0 && !(req.patientExamId === undefined && j.reinvitePending())) {
          const statuses = j.state.exams
            .filter((e) => req.patientExamId === undefined || e.patientExamId === req.patientExamId)
            .map((e) => `${e.patientExamId}: ${e.status}`)
            .join(', ');
          throw new Error(`nothing to cancel: the provider has already acted (${statuses})`);
        }
      },
    },
  );

  async function cancel(req: CancelRequest): Promise<CancelResult> {
    await condition(() => !j.state.inviteInFlight);
    // A resend (or answers, an upload) already at the service goes first: cancelled under it, it would be refused.
    if (actionsInFlight(req.patientExamId) && cancelsAfterActionsInFlight()) {
      await condition(() => !actionsInFlight(req.patientExamId));
    }
    if (j.state.meetings.length === 0) {
      // Nothing was invited (or the invite is in doubt and parked): the journey just ends.
      j.recordAction('cancel', req, 'ended the journey before any invite was created', 'clinic');
      j.dispatch({ type: 'journey_cancelled', at: nowIso() });
      return { cancelled: [], alreadyFinal: [] };
    }
    const targets = cancellableExams(j.state).filter(
      (e) => req.patientExamId === undefined || e.patientExamId === req.patientExamId,
    );
    const result: CancelResult = { cancelled: [], alreadyFinal: [] };
    for (const exam of targets) {
      const r = await service.cancelInvite.executeWithOptions(
        { summary: `cancel the invite of patient exam ${exam.patientExamId} (clinic's request)` },
        [{ clinicId: j.state.clinicId, patientExamId: exam.patientExamId }],
      );
      if (r.outcome === 'already_final') {
        // The provider acted; its callback is on the way or lost. The deadline path will tell which.
        result.alreadyFinal.push({ patientExamId: exam.patientExamId, status: r.finalStatus ?? 'final' });
      } else {
        j.dispatch({ type: 'exam_cancelled', at: nowIso(), patientExamId: exam.patientExamId, by: 'clinic' });
        result.cancelled.push(exam.patientExamId);
      }
    }
    // What parked the journey was a deadline cancel that failed for these exams: this cancel settled it.
    const settled = (a: Attention) =>
      a.patientExamId !== undefined && findExam(j.state, a.patientExamId)?.status === 'cancelled';
    if (result.cancelled.length > 0 && j.state.attention.length > 0 && j.state.attention.every(settled)) {
      j.dispatch({ type: 'attention_resolved', at: nowIso() });
    }
    j.recordAction(
      'cancel',
      { ...req, note: req.note ?? req.reason },
      `cancelled patient exams: ${ids(result.cancelled)}; already final: ${ids(result.alreadyFinal.map((f) => f.patientExamId))}`,
      'clinic',
    );
    // No invite is out but a re-invite is due (after Missed/NA): ending the journey is what stops it.
    if (req.patientExamId === undefined && j.reinvitePending()) j.dispatch({ type: 'journey_cancelled', at: nowIso() });
    return result;
  }

  setHandler(
    resendUpdate,
    async (req) => {
      const targets =
        req.patientExamId !== undefined ? [req.patientExamId] : [cancellableExams(j.state)[0]!.patientExamId];
      await acting(targets, async () => {
        for (const id of targets) {
          const meetingUuid = findExam(j.state, id)?.meetingUuid;
          await service.resendInvite.executeWithOptions({ summary: `resend the invite of patient exam ${id}` }, [
            { clinicId: j.state.clinicId, patientExamId: id, ...(meetingUuid ? { meetingUuid } : {}) },
          ]);
        }
      });
      j.recordAction('resend', req, `resent the invite of patient exams: ${ids(targets)}`, 'clinic');
      return { resent: targets };
    },
    {
      validator: (req: ResendRequest) => {
        j.refuseWhenFinished();
        if (req.patientExamId !== undefined) j.refuseUnlessPending(req.patientExamId, 'resend');
        else if (cancellableExams(j.state).length === 0) throw new Error('no invite is waiting for the patient');
        refuseWhileCancelling(req.patientExamId ?? cancellableExams(j.state)[0]!.patientExamId, 'resend');
      },
    },
  );

  setHandler(
    submitAnswersUpdate,
    async (req) => {
      const exam = findExam(j.state, req.patientExamId)!;
      const r = await acting([exam.patientExamId], () =>
        service.submitAnswers.executeWithOptions(
          { summary: `submit screening answers for patient exam ${exam.patientExamId}` },
          [
            {
              clinicId: j.state.clinicId,
              meetingUuid: exam.meetingUuid,
              patientExamId: exam.patientExamId,
              answers: req.answers,
            },
          ],
        ),
      );
      j.dispatch({ type: 'answers_submitted', at: nowIso(), patientExamId: exam.patientExamId, count: r.answered });
      return r;
    },
    {
      validator: (req: SubmitAnswersRequest) => {
        j.refuseUnlessPending(req.patientExamId, 'submit answers');
        refuseWhileCancelling(req.patientExamId, 'submit answers');
      },
    },
  );

  setHandler(
    addAttachmentUpdate,
    async (req) => {
      // Kept before the upload: a failed one was deleted by the API, and deleting a missing document is no error.
      j.addedRefs.push(req.attachment.ref);
      const r = await acting([req.patientExamId], () =>
        service.uploadAttachment.executeWithOptions(
          { summary: `upload an attachment to patient exam ${req.patientExamId}` },
          [{ clinicId: j.state.clinicId, patientExamId: req.patientExamId, attachment: req.attachment }],
        ),
      );
      j.dispatch({
        type: 'attachment_uploaded',
        at: nowIso(),
        patientExamId: req.patientExamId,
        kind: req.attachment.kind,
      });
      return r;
    },
    {
      validator: (req: AddAttachmentRequest) => {
        j.refuseUnlessPending(req.patientExamId, 'add an attachment');
        refuseWhileCancelling(req.patientExamId, 'add an attachment');
      },
    },
  );

  const requireAttention = (_req: unknown) => {
    if (j.state.attention.length === 0)
      throw new Error(`the journey does not need attention (stage ${stageOf(j.state)})`);
  };
  setHandler(
    retryUpdate,
    (req) => {
      log.info('operator retry', { actor: req.actor ?? 'unknown' });
      j.recordAction('retry', req, `retried: ${j.state.attention.map((a) => a.code).join(', ')}`, 'operator');
      j.dispatch({ type: 'attention_resolved', at: nowIso() });
      return { stage: stageOf(j.state) };
    },
    { validator: requireAttention },
  );
  setHandler(
    abandonUpdate,
    (req) => {
      log.info('operator abandon', { actor: req.actor ?? 'unknown' });
      j.recordAction('abandon', req, `abandoned while: ${j.state.attention.map((a) => a.code).join(', ')}`, 'operator');
      j.dispatch({ type: 'journey_abandoned', at: nowIso() });
      return { stage: stageOf(j.state) };
    },
    { validator: requireAttention },
  );
}
