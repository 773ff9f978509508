// The clinic's updates on a running journey (resend, submit answers, add an attachment): they reach the service when
// the patient exam is still waiting for its consultation, and are refused with the reason when they cannot help.
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { addAttachmentUpdate, resendUpdate, submitAnswersUpdate } from '../../src/workflows/definitions';
import { GFE_EXAM, GFE_EXAM_2 } from '../support/fake-exam-service';
import { attachmentRetentionId } from '../../src/workflows/attachment-retention';
import { deletedAttachments, journeyInput, refusal, startHarness, withJourney, type Harness } from './harness';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.env.teardown();
});

const lab = {
  ref: 'att_lab_result_02',
  kind: 'Lab',
  fileName: 'lab.pdf',
  contentType: 'application/pdf',
  size: 1,
};

/** The innermost message of a failed update (an activity failure wraps the service's classified error). */
async function failureOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (!(err instanceof WorkflowUpdateFailedError)) throw err;
    let cause: Error | undefined = err;
    while (cause && (cause as { cause?: Error }).cause) cause = (cause as { cause?: Error }).cause;
    return cause!.message;
  }
  throw new Error('the update succeeded');
}

describe('while the patient has not been seen', () => {
  it('resends the invite: the first waiting exam by default, or the one named', async () => {
    const input = journeyInput('gfe', { exams: [GFE_EXAM.id, GFE_EXAM_2.id] });
    await withJourney(h, { input }, async (j) => {
      const s = await j.waitFor('invited', (x) => x.stage === 'awaiting_consultation');
      const [a, b] = s.exams.map((e) => e.patientExamId) as [number, number];
      await expect(j.handle.executeUpdate(resendUpdate, { args: [{}] })).resolves.toEqual({ resent: [a] });
      await expect(
        j.handle.executeUpdate(resendUpdate, { args: [{ patientExamId: b, actor: 'ops-5', note: 'patient asked' }] }),
      ).resolves.toEqual({ resent: [b] });
      expect(j.fake.patientExamIdsOf('exam_invite_resend')).toEqual([a, b]);
      expect((await j.snapshot()).actions).toEqual([
        {
          at: expect.any(String),
          action: 'resend',
          actor: 'clinic',
          detail: `resent the invite of patient exams: ${a}`,
        },
        {
          at: expect.any(String),
          action: 'resend',
          actor: 'ops-5',
          note: 'patient asked',
          detail: `resent the invite of patient exams: ${b}`,
        },
      ]);
    });
  });

  it('submits answers, filling question texts from the service, and counts them in the snapshot', async () => {
    await withJourney(h, {}, async (j) => {
      const id = await j.firstPatientExamId();
      await j.waitFor('invited', (x) => x.stage === 'awaiting_consultation');
      const answers = [
        { no: 1, answer: 'None known' },
        { no: 2, answer: ['Metformin'] },
      ];
      await expect(
        j.handle.executeUpdate(submitAnswersUpdate, { args: [{ patientExamId: id, answers }] }),
      ).resolves.toEqual({ answered: 2 });
      expect(j.fake.callsOf('exam_submit_answers')).toEqual([
        {
          patient_exam_id: id,
          answers: [
            { no: 1, question: 'Do you have any allergies?', answer: 'None known' },
            { no: 2, question: 'Which medications do you take?', answer: ['Metformin'] },
          ],
        },
      ]);
      expect(j.fake.callsOf('exam_questions')).toEqual([{ meeting_uuid: 'meeting-1', patient_exam_id: id }]);
      expect((await j.snapshot()).exams[0]!.answersSubmitted).toBe(2);
    });
  });

  it('refuses an answer to a question the exam does not have, sending nothing, and goes on', async () => {
    await withJourney(h, {}, async (j) => {
      const id = await j.firstPatientExamId();
      await j.waitFor('invited', (x) => x.stage === 'awaiting_consultation');
      const update = j.handle.executeUpdate(submitAnswersUpdate, {
        args: [{ patientExamId: id, answers: [{ no: 99, answer: 'x' }] }],
      });
      expect(await failureOf(update)).toBe("question no 99 is not one of the exam's questions");
      expect(j.fake.count('exam_submit_answers')).toBe(0);
      const s = await j.snapshot();
      expect(s.stage).toBe('awaiting_consultation');
      expect(s.exams[0]!.answersSubmitted).toBe(0);
    });
  });

  it('uploads an attachment to the named patient exam and lists it in the snapshot', async () => {
    await withJourney(h, {}, async (j) => {
      const id = await j.firstPatientExamId();
      await j.waitFor('invited', (x) => x.stage === 'awaiting_consultation');
      await expect(
        j.handle.executeUpdate(addAttachmentUpdate, { args: [{ patientExamId: id, attachment: lab }] }),
      ).resolves.toEqual({ attachmentId: 'attachment-1' });
      expect(j.fake.callsOf('exam_upload_attachment')).toEqual([
        {
          patient_exam_id: id,
          kind: 'Lab',
          file_name: 'lab.pdf',
          content_type: 'application/pdf',
          content_base64: Buffer.from('x').toString('base64'),
        },
      ]);
      expect((await j.snapshot()).exams[0]!.attachmentsUploaded).toEqual(['Lab']);

      // Once the journey ends, retention deletes the document added while it ran, as it does the start request's.
      await j.consultation(id, 'Approved');
      expect((await j.handle.result()).stage).toBe('completed');
      const retention = h.env.client.workflow.getHandle(attachmentRetentionId(j.input.journeyId));
      expect(await retention.result()).toEqual({ deleted: 1 });
      expect(deletedAttachments).toContain(lab.ref);
    });
  });

  it('refuses updates for a patient exam that is not part of the journey', async () => {
    await withJourney(h, {}, async (j) => {
      await j.firstPatientExamId();
      await j.waitFor('invited', (x) => x.stage === 'awaiting_consultation');
      const stranger = 424242;
      expect(
        await refusal(
          j.handle.executeUpdate(submitAnswersUpdate, { args: [{ patientExamId: stranger, answers: [] }] }),
        ),
      ).toBe(`patient exam ${stranger} is not part of this journey`);
      expect(
        await refusal(
          j.handle.executeUpdate(addAttachmentUpdate, { args: [{ patientExamId: stranger, attachment: lab }] }),
        ),
      ).toBe(`patient exam ${stranger} is not part of this journey`);
      expect(await refusal(j.handle.executeUpdate(resendUpdate, { args: [{ patientExamId: stranger }] }))).toBe(
        `patient exam ${stranger} is not part of this journey`,
      );
      expect(j.fake.calls.map((c) => c.operation)).toEqual(['exam_list', 'exam_invite']);
    });
  });
});

describe('after the verdict', () => {
  it('refuses resend, answers and attachments with the exam status, and the journey goes on', async () => {
    await withJourney(h, { input: journeyInput('urgent_care') }, async (j) => {
      const id = await j.firstPatientExamId();
      await j.consultation(id, 'Approved');
      await j.waitFor('awaiting prescription', (x) => x.stage === 'awaiting_prescription');

      expect(await refusal(j.handle.executeUpdate(resendUpdate, { args: [{}] }))).toBe(
        'no invite is waiting for the patient',
      );
      expect(await refusal(j.handle.executeUpdate(resendUpdate, { args: [{ patientExamId: id }] }))).toBe(
        `cannot resend: patient exam ${id} is Approved`,
      );
      expect(
        await refusal(
          j.handle.executeUpdate(submitAnswersUpdate, {
            args: [{ patientExamId: id, answers: [{ no: 1, answer: 'y' }] }],
          }),
        ),
      ).toBe(`cannot submit answers: patient exam ${id} is Approved`);
      expect(
        await refusal(j.handle.executeUpdate(addAttachmentUpdate, { args: [{ patientExamId: id, attachment: lab }] })),
      ).toBe(`cannot add an attachment: patient exam ${id} is Approved`);
      expect(j.fake.calls.map((c) => c.operation)).toEqual(['exam_list', 'exam_invite']);

      await j.prescription(id);
      expect((await j.handle.result()).stage).toBe('completed');
    });
  });
});
