// The clinic's cancel in every state of the journey: what the service is asked, what the update answers and how the
// journey ends (or goes on).
import { WorkflowUpdateStage } from '@temporalio/client';
import { cancelUpdate, resendUpdate, submitAnswersUpdate } from '../../src/contract/definitions';
import { serviceError } from '../support/scripted-exam-service';
import {
  DAY,
  examService,
  GFE_EXAM,
  GFE_EXAM_2,
  HOUR,
  journeyInput,
  refusal,
  searchAttributesOf,
  useHarness,
  waitForSearchAttributes,
  withJourney,
} from './harness';

const h = useHarness();

describe('cancel', () => {
  it('right after the start (catalog check running): ends the journey, no invite is ever sent', async () => {
    const service = examService(h);
    const release = service.hold('exam_list');
    await withJourney(h, { service }, async (j) => {
      await j.waitForCalls('exam_list', 1);
      await expect(j.handle.executeUpdate(cancelUpdate, { args: [{}] })).resolves.toEqual({
        cancelled: [],
        alreadyFinal: [],
      });
      release();
      const result = await j.handle.result();
      expect(result.stage).toBe('cancelled');
      expect(j.service.count('exam_invite')).toBe(0);
      expect(j.service.count('exam_invite_cancel')).toBe(0);
    });
  });

  it('while the invite is on the wire: waits for it, then cancels the patient exam it created', async () => {
    const service = examService(h);
    const release = service.hold('exam_invite');
    await withJourney(h, { service }, async (j) => {
      const [id] = (await j.examsAtService(1)) as [number];
      const cancelling = j.handle.executeUpdate(cancelUpdate, { args: [{ reason: 'patient called' }] });
      await j.waitFor('inviting', (s) => s.stage === 'inviting');
      expect(j.service.count('exam_invite_cancel')).toBe(0);

      release();
      await expect(cancelling).resolves.toEqual({ cancelled: [id], alreadyFinal: [] });
      const result = await j.handle.result();
      expect(result.stage).toBe('cancelled');
      expect(result.exams).toEqual([expect.objectContaining({ patientExamId: id, status: 'cancelled' })]);
      // The clinic's cancel is recorded with its reason (the clinic API names no actor).
      expect(result.actions).toEqual([
        expect.objectContaining({
          action: 'cancel',
          actor: 'clinic',
          note: 'patient called',
          detail: `cancelled patient exams: ${id}; already final: none`,
        }),
      ]);
      expect(j.service.patientExamIdsOf('exam_invite_cancel')).toEqual([id]);
      expect(j.atService(id).status).toBe('cancelled');
      expect(j.service.count('exam_invite')).toBe(1);
    });
  });

  it('while awaiting the consultation: cancels at the service and ends the journey as cancelled', async () => {
    await withJourney(h, {}, async (j) => {
      const id = await j.firstPatientExamId();
      await j.waitFor('awaiting consultation', (s) => s.stage === 'awaiting_consultation');
      await expect(j.handle.executeUpdate(cancelUpdate, { args: [{}] })).resolves.toEqual({
        cancelled: [id],
        alreadyFinal: [],
      });
      const result = await j.handle.result();
      expect(result.stage).toBe('cancelled');
      expect(result.exams[0]).toMatchObject({ status: 'cancelled' });
      expect(result.exams[0]!.cancelledAt).not.toBeNull();
      expect(j.service.patientExamIdsOf('exam_invite_cancel')).toEqual([id]);
      expect(await searchAttributesOf(j.handle)).toMatchObject({
        JourneyStage: 'cancelled',
        ExamStatus: ['cancelled'],
      });
    });
  });

  it('of an exam already cancelled in the service portal: counts it as cancelled', async () => {
    await withJourney(h, {}, async (j) => {
      const id = await j.firstPatientExamId();
      await j.cancelElsewhere(id);
      await expect(j.handle.executeUpdate(cancelUpdate, { args: [{}] })).resolves.toEqual({
        cancelled: [id],
        alreadyFinal: [],
      });
      expect((await j.handle.result()).stage).toBe('cancelled');
    });
  });

  it('after a verdict: is refused with the reason, and the journey goes on', async () => {
    await withJourney(h, { input: journeyInput('urgent_care') }, async (j) => {
      const id = await j.firstPatientExamId();
      await j.consultation(id, 'Approved');
      await j.waitFor('awaiting prescription', (s) => s.stage === 'awaiting_prescription');

      expect(await refusal(j.handle.executeUpdate(cancelUpdate, { args: [{}] }))).toBe(
        `nothing to cancel: the provider has already acted (${id}: Approved)`,
      );
      expect(await refusal(j.handle.executeUpdate(cancelUpdate, { args: [{ patientExamId: 424242 }] }))).toBe(
        'patient exam 424242 is not part of this journey',
      );
      expect(j.service.count('exam_invite_cancel')).toBe(0);
      expect((await j.snapshot()).stage).toBe('awaiting_prescription');

      await j.prescription(id);
      expect((await j.handle.result()).stage).toBe('completed');
    });
  });

  it('when the provider acted a moment ago: reports the verdict, keeps the exam, and waits for its callback', async () => {
    await withJourney(h, {}, async (j) => {
      const id = await j.firstPatientExamId();
      await j.verdictNotDelivered(id, 'Rejected');
      await expect(j.handle.executeUpdate(cancelUpdate, { args: [{}] })).resolves.toEqual({
        cancelled: [],
        alreadyFinal: [{ patientExamId: id, status: 'Rejected' }],
      });
      const s = await j.snapshot();
      expect(s.stage).toBe('awaiting_consultation');
      expect(s.exams[0]!.status).toBe('pending');

      await j.consultation(id, 'Rejected');
      const result = await j.handle.result();
      expect(result.stage).toBe('completed');
      expect(result.exams[0]!.status).toBe('Rejected');
    });
  });

  it('while a re-invite is pending after Missed: ends the journey, the patient is not invited again', async () => {
    const input = journeyInput('gfe', { timings: { reinviteMaxAttempts: 1, reinviteCoolDownMs: 30 * 60_000 } });
    await withJourney(h, { input }, async (j) => {
      const id = await j.firstPatientExamId();
      await j.consultation(id, 'Missed');
      await j.waitFor('awaiting re-invite', (s) => s.stage === 'awaiting_reinvite');

      await expect(j.handle.executeUpdate(cancelUpdate, { args: [{}] })).resolves.toEqual({
        cancelled: [],
        alreadyFinal: [],
      });
      const result = await j.handle.result();
      expect(result.stage).toBe('cancelled');
      expect(result.exams).toEqual([
        expect.objectContaining({ patientExamId: id, status: 'Missed', reinvitedAs: null }),
      ]);
      expect(j.service.count('exam_invite')).toBe(1);
      expect(j.service.count('exam_invite_cancel')).toBe(0);
    });
  });

  it('of one exam of a stacked journey: cancels that one, the other continues', async () => {
    const input = journeyInput('gfe', { exams: [GFE_EXAM.id, GFE_EXAM_2.id] });
    await withJourney(h, { input }, async (j) => {
      const s = await j.waitFor('both exams', (x) => x.exams.length === 2 && x.stage === 'awaiting_consultation');
      const [keep, drop] = s.exams.map((e) => e.patientExamId) as [number, number];

      await expect(j.handle.executeUpdate(cancelUpdate, { args: [{ patientExamId: drop }] })).resolves.toEqual({
        cancelled: [drop],
        alreadyFinal: [],
      });
      const partly = await j.snapshot();
      expect(partly.stage).toBe('awaiting_consultation');
      expect(partly.exams.map((e) => e.status)).toEqual(['pending', 'cancelled']);
      expect(j.service.patientExamIdsOf('exam_invite_cancel')).toEqual([drop]);
      expect(await waitForSearchAttributes(j.handle, 'awaiting_consultation')).toMatchObject({
        ExamStatus: ['cancelled', 'pending'],
      });

      await j.consultation(keep, 'Approved');
      const result = await j.handle.result();
      expect(result.stage).toBe('completed');
      expect(result.exams.map((e) => [e.patientExamId, e.status])).toEqual([
        [keep, 'Approved'],
        [drop, 'cancelled'],
      ]);
      expect(j.atService(keep).status).toBe('pending');
      expect(j.atService(drop).status).toBe('cancelled');
    });
  });

  it('while the journey needs attention over an uncertain invite: ends it as cancelled without calling the service', async () => {
    const service = examService(h).failNext('exam_invite', serviceError('ambiguous', 'exam_invite'));
    await withJourney(h, { service }, async (j) => {
      await j.waitFor('needs attention', (s) => s.stage === 'needs_attention');
      await expect(j.handle.executeUpdate(cancelUpdate, { args: [{}] })).resolves.toEqual({
        cancelled: [],
        alreadyFinal: [],
      });
      const result = await j.handle.result();
      expect(result.stage).toBe('cancelled');
      expect(result.attention).toEqual([]);
      expect(j.service.count('exam_invite')).toBe(1);
      expect(j.service.count('exam_invite_cancel')).toBe(0);
      expect(await searchAttributesOf(j.handle)).toMatchObject({ JourneyStage: 'cancelled', NeedsAttention: false });
    });
  });

  it('while the deadline cancel failed and needs attention: cancels the exam and ends the journey as cancelled', async () => {
    const service = examService(h).failNext('exam_invite_cancel', serviceError('validation', 'exam_invite_cancel'));
    await withJourney(h, { service }, async (j) => {
      const id = await j.firstPatientExamId();
      await j.env.sleep(7 * DAY + HOUR);
      const parked = await j.waitFor('needs attention', (s) => s.stage === 'needs_attention');
      expect(parked.attention).toEqual([expect.objectContaining({ code: 'service_unavailable', patientExamId: id })]);
      expect(parked.exams[0]!.status).toBe('pending');

      await expect(j.handle.executeUpdate(cancelUpdate, { args: [{}] })).resolves.toEqual({
        cancelled: [id],
        alreadyFinal: [],
      });
      const result = await j.handle.result();
      expect(result.stage).toBe('cancelled');
      expect(result.attention).toEqual([]);
      expect(result.exams[0]!.status).toBe('cancelled');
      expect(j.service.patientExamIdsOf('exam_invite_cancel')).toEqual([id, id]);
      expect(await searchAttributesOf(j.handle)).toMatchObject({ JourneyStage: 'cancelled', NeedsAttention: false });
    });
  });

  it('while a lost verdict needs attention: is refused, the journey stays parked for the operator', async () => {
    await withJourney(h, { input: journeyInput('urgent_care') }, async (j) => {
      const id = await j.firstPatientExamId();
      await j.verdictNotDelivered(id, 'Approved');
      await j.env.sleep(8 * DAY);
      await j.waitFor('needs attention', (s) => s.stage === 'needs_attention');
      expect(await refusal(j.handle.executeUpdate(cancelUpdate, { args: [{}] }))).toBe(
        `nothing to cancel: the provider has already acted (${id}: Approved)`,
      );
      expect((await j.snapshot()).attention.map((a) => a.code)).toEqual(['verdict_lost']);
    });
  });

  describe('beside another action on the same patient exam', () => {
    it('a resend while the cancel is at the service: refused by the journey, never sent (no refusal from the service)', async () => {
      const service = examService(h);
      await withJourney(h, { service }, async (j) => {
        const id = await j.firstPatientExamId();
        await j.waitFor('awaiting consultation', (s) => s.stage === 'awaiting_consultation');
        // The service has cancelled the invite; its answer is still on the wire (let go whatever the test finds: a
        // held activity would keep the worker from stopping).
        const release = service.hold('exam_invite_cancel');
        try {
          const cancelling = j.handle.executeUpdate(cancelUpdate, { args: [{ reason: 'patient called' }] });
          await j.waitForCalls('exam_invite_cancel', 1);

          expect(await refusal(j.handle.executeUpdate(resendUpdate, { args: [{}] }))).toBe(
            `cannot resend: a cancel of patient exam ${id} is in progress`,
          );
          expect(await refusal(j.handle.executeUpdate(resendUpdate, { args: [{ patientExamId: id }] }))).toBe(
            `cannot resend: a cancel of patient exam ${id} is in progress`,
          );
          const answers = [{ no: 1, answer: 'none' }];
          expect(
            await refusal(j.handle.executeUpdate(submitAnswersUpdate, { args: [{ patientExamId: id, answers }] })),
          ).toBe(`cannot submit answers: a cancel of patient exam ${id} is in progress`);
          expect(await refusal(j.handle.executeUpdate(cancelUpdate, { args: [{}] }))).toBe(
            "cannot cancel: a cancel of the journey's invite is in progress",
          );
          expect(j.service.count('exam_invite_resend')).toBe(0);
          expect(j.service.count('exam_submit_answers')).toBe(0);

          release();
          await expect(cancelling).resolves.toEqual({ cancelled: [id], alreadyFinal: [] });
        } finally {
          release();
        }
        expect((await j.handle.result()).stage).toBe('cancelled');
        expect(j.service.patientExamIdsOf('exam_invite_cancel')).toEqual([id]);
      });
    });

    it('a cancel while a resend is at the service: waits for it, then cancels; both answer truthfully', async () => {
      const service = examService(h);
      await withJourney(h, { service }, async (j) => {
        const id = await j.firstPatientExamId();
        await j.waitFor('awaiting consultation', (s) => s.stage === 'awaiting_consultation');
        const release = service.hold('exam_invite_resend');
        try {
          const resending = j.handle.executeUpdate(resendUpdate, { args: [{}] });
          await j.waitForCalls('exam_invite_resend', 1);

          const cancelling = await j.handle.startUpdate(cancelUpdate, {
            args: [{}],
            waitForStage: WorkflowUpdateStage.ACCEPTED,
          });
          // Accepted, and waiting: nothing goes to the service while the resend is there.
          await new Promise((r) => setTimeout(r, 500));
          expect(j.service.count('exam_invite_cancel')).toBe(0);

          release();
          await expect(resending).resolves.toEqual({ resent: [id] });
          await expect(cancelling.result()).resolves.toEqual({ cancelled: [id], alreadyFinal: [] });
        } finally {
          release();
        }
        expect(j.service.calls.map((c) => c.operation).filter((o) => o.startsWith('exam_invite_'))).toEqual([
          'exam_invite_resend',
          'exam_invite_cancel',
        ]);
        expect((await j.handle.result()).stage).toBe('cancelled');
      });
    });
  });
});
