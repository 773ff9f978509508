// The clinic's updates on a running journey (resend, submit answers, add an attachment): they reach the service when
// the patient exam is still waiting for its consultation, and are refused with the reason when they cannot help.
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { addAttachmentUpdate, resendUpdate, submitAnswersUpdate } from '../../src/contract/definitions';
import { attachmentRetentionId } from '../../src/workflows/attachment-retention';
import { deletedAttachments, GFE_EXAM, GFE_EXAM_2, journeyInput, refusal, useHarness, withJourney } from './harness';

const h = useHarness();

/** A document every exam takes (the standard ID upload). */
const idPhoto = {
  ref: 'att_id_photo_0002',
  kind: 'ID',
  fileName: 'id.jpg',
  contentType: 'image/jpeg',
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
      expect(j.service.patientExamIdsOf('exam_invite_resend')).toEqual([a, b]);
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
        { no: 1, answer: 'Metformin' },
        { no: 2, answer: 'Yes: penicillin' },
      ];
      await expect(
        j.handle.executeUpdate(submitAnswersUpdate, { args: [{ patientExamId: id, answers }] }),
      ).resolves.toEqual({ answered: 2 });
      expect(j.service.callsOf('exam_submit_answers')).toEqual([
        {
          patient_exam_id: id,
          answers: [
            { no: 1, question: 'Which medications do you currently take?', answer: 'Metformin' },
            { no: 2, question: 'Do you have any known drug allergies?', answer: 'Yes: penicillin' },
          ],
        },
      ]);
      const s = await j.snapshot();
      expect(j.service.callsOf('exam_questions')).toEqual([
        { meeting_uuid: s.meetings[0]!.meetingUuid, patient_exam_id: id },
      ]);
      expect(s.exams[0]!.answersSubmitted).toBe(2);
      expect([...j.atService(id).answers.values()].map((a) => a.answer)).toEqual(['Metformin', 'Yes: penicillin']);
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
      expect(j.service.count('exam_submit_answers')).toBe(0);
      const s = await j.snapshot();
      expect(s.stage).toBe('awaiting_consultation');
      expect(s.exams[0]!.answersSubmitted).toBe(0);
    });
  });

  it('uploads an attachment to the named patient exam and lists it in the snapshot', async () => {
    await withJourney(h, {}, async (j) => {
      const id = await j.firstPatientExamId();
      await j.waitFor('invited', (x) => x.stage === 'awaiting_consultation');
      const added = await j.handle.executeUpdate(addAttachmentUpdate, {
        args: [{ patientExamId: id, attachment: idPhoto }],
      });
      const [stored] = j.atService(id).attachments;
      expect(added).toEqual({ attachmentId: stored!.attachment_id });
      expect(stored).toMatchObject({ kind: 'ID', file_name: 'id.jpg', size_bytes: 1 });
      expect(j.service.callsOf('exam_upload_attachment')).toEqual([
        {
          patient_exam_id: id,
          kind: 'ID',
          file_name: 'id.jpg',
          content_type: 'image/jpeg',
          content_base64: Buffer.from('x').toString('base64'),
        },
      ]);
      expect((await j.snapshot()).exams[0]!.attachmentsUploaded).toEqual(['ID']);

      // Once the journey ends, retention deletes the document added while it ran, as it does the start request's.
      await j.consultation(id, 'Approved');
      expect((await j.handle.result()).stage).toBe('completed');
      const retention = h.env.client.workflow.getHandle(attachmentRetentionId(j.input.journeyId));
      expect(await retention.result()).toEqual({ deleted: 1 });
      expect(deletedAttachments).toContain(idPhoto.ref);
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
          j.handle.executeUpdate(addAttachmentUpdate, { args: [{ patientExamId: stranger, attachment: idPhoto }] }),
        ),
      ).toBe(`patient exam ${stranger} is not part of this journey`);
      expect(await refusal(j.handle.executeUpdate(resendUpdate, { args: [{ patientExamId: stranger }] }))).toBe(
        `patient exam ${stranger} is not part of this journey`,
      );
      expect(j.service.calls.map((c) => c.operation)).toEqual(['exam_list', 'exam_invite']);
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
        await refusal(
          j.handle.executeUpdate(addAttachmentUpdate, { args: [{ patientExamId: id, attachment: idPhoto }] }),
        ),
      ).toBe(`cannot add an attachment: patient exam ${id} is Approved`);
      expect(j.service.calls.map((c) => c.operation)).toEqual(['exam_list', 'exam_invite']);

      await j.prescription(id);
      expect((await j.handle.result()).stage).toBe('completed');
    });
  });
});
