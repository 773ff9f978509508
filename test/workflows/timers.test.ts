// Every timer of the journey on the time-skipping server: reminders, the consultation deadline (expiry and the lost
// verdict it uncovers), the re-invite after Missed/NA, and the prescription and tracking deadlines.
import { abandonUpdate, retryUpdate } from '../../src/contract/definitions';
import { serviceError } from '../support/scripted-exam-service';
import {
  DAY,
  examService,
  GFE_EXAM,
  HOUR,
  journeyInput,
  PARTNER_EXAM,
  searchAttributesOf,
  useHarness,
  waitForSearchAttributes,
  withJourney,
} from './harness';

const MINUTE = 60_000;

const h = useHarness();

describe('reminders', () => {
  it('resends the invite at 24 h and 72 h while no consultation happened', async () => {
    await withJourney(h, { input: journeyInput('gfe') }, async (j) => {
      const id = await j.firstPatientExamId();
      const s0 = await j.waitFor('awaiting consultation', (s) => s.stage === 'awaiting_consultation');
      const invitedAt = Date.parse(s0.meetings[0]!.createdAt);
      expect(s0.deadlines[0]).toEqual({
        at: new Date(invitedAt + 24 * HOUR).toISOString(),
        action: 'send_reminder',
        patientExamId: id,
        meetingUuid: s0.meetings[0]!.meetingUuid,
      });

      await j.env.sleep(23 * HOUR);
      expect(j.service.count('exam_invite_resend')).toBe(0);

      await j.env.sleep(2 * HOUR);
      await j.waitForCalls('exam_invite_resend', 1);
      const s1 = await j.waitFor('first reminder', (s) => s.meetings[0]!.remindersSent === 1);
      expect(j.service.patientExamIdsOf('exam_invite_resend')).toEqual([id]);
      expect(s1.deadlines[0]).toMatchObject({
        action: 'send_reminder',
        at: new Date(invitedAt + 72 * HOUR).toISOString(),
      });

      await j.env.sleep(46 * HOUR);
      expect(j.service.count('exam_invite_resend')).toBe(1);
      await j.env.sleep(2 * HOUR);
      await j.waitFor('second reminder', (s) => s.meetings[0]!.remindersSent === 2);
      expect(j.service.patientExamIdsOf('exam_invite_resend')).toEqual([id, id]);

      await j.consultation(id, 'Approved');
      const result = await j.handle.result();
      expect(result.stage).toBe('completed');
      expect(j.service.count('exam_invite_resend')).toBe(2);
      expect(j.service.count('exam_invite_cancel')).toBe(0);
    });
  });

  it('sends no reminder once event 1 arrived', async () => {
    await withJourney(h, { input: journeyInput('urgent_care') }, async (j) => {
      const id = await j.firstPatientExamId();
      await j.env.sleep(25 * HOUR);
      await j.waitForCalls('exam_invite_resend', 1);

      await j.consultation(id, 'Approved');
      const s = await j.waitFor('awaiting prescription', (x) => x.stage === 'awaiting_prescription');
      expect(s.deadlines.map((d) => d.action)).not.toContain('send_reminder');
      await j.env.sleep(72 * HOUR);
      await j.waitFor('prescription overdue', (x) => x.exams[0]!.prescriptionOverdue);
      expect(j.service.count('exam_invite_resend')).toBe(1);
      expect(j.service.count('exam_invite_cancel')).toBe(0);
    });
  });
});

describe('consultation deadline', () => {
  it('cancels the invite after 7 days without a consultation: the exam expires, the journey completes', async () => {
    await withJourney(h, { input: journeyInput('gfe') }, async (j) => {
      const id = await j.firstPatientExamId();
      await j.env.sleep(7 * DAY - HOUR);
      expect(j.service.count('exam_invite_cancel')).toBe(0);

      await j.env.sleep(2 * HOUR);
      const result = await j.handle.result();
      expect(j.service.patientExamIdsOf('exam_invite_cancel')).toEqual([id]);
      expect(j.atService(id).status).toBe('cancelled');
      expect(result.stage).toBe('completed');
      expect(result.exams[0]).toMatchObject({ status: 'expired', verdictSource: null });
      expect(result.exams[0]!.cancelledAt).not.toBeNull();
      expect(j.service.count('exam_invite_resend')).toBe(2);
      expect(await searchAttributesOf(j.handle)).toMatchObject({ JourneyStage: 'completed', ExamStatus: ['expired'] });
    });
  });

  it('parks when the cancel at the deadline fails, and cancels again on the operator retry', async () => {
    const service = examService(h).failNext('exam_invite_cancel', serviceError('validation', 'exam_invite_cancel'));
    await withJourney(h, { service }, async (j) => {
      const id = await j.firstPatientExamId();
      await j.env.sleep(7 * DAY + HOUR);
      const parked = await j.waitFor('needs attention', (s) => s.stage === 'needs_attention');
      expect(parked.attention).toEqual([
        expect.objectContaining({
          code: 'service_unavailable',
          patientExamId: id,
          message: expect.stringContaining('could not be cancelled'),
        }),
      ]);
      expect(parked.lastError).toMatchObject({ kind: 'validation', operation: 'exam_invite_cancel' });
      expect(parked.exams[0]!.status).toBe('pending');

      await j.handle.executeUpdate(retryUpdate, { args: [{}] });
      const result = await j.handle.result();
      expect(result.stage).toBe('completed');
      expect(result.exams[0]!.status).toBe('expired');
      expect(j.service.patientExamIdsOf('exam_invite_cancel')).toEqual([id, id]);
    });
  });

  it('parks a lost verdict (cancel says Approved) for an operator, and resumes waiting for event 2 on retry', async () => {
    await withJourney(h, { input: journeyInput('urgent_care') }, async (j) => {
      const id = await j.firstPatientExamId();
      // The provider approved, but event 1 never reached us.
      await j.verdictNotDelivered(id, 'Approved');
      await j.env.sleep(7 * DAY + HOUR);

      const parked = await j.waitFor('needs attention', (s) => s.stage === 'needs_attention');
      expect(j.service.patientExamIdsOf('exam_invite_cancel')).toEqual([id]);
      expect(parked.attention).toEqual([
        expect.objectContaining({
          code: 'verdict_lost',
          patientExamId: id,
          message: expect.stringContaining('Approved') as unknown,
        }),
      ]);
      expect(parked.exams[0]).toMatchObject({ status: 'Approved', verdictSource: 'cancel_response' });
      expect(parked.deadlines).toEqual([]);
      expect(await waitForSearchAttributes(j.handle, 'needs_attention')).toMatchObject({
        NeedsAttention: true,
        ExamStatus: ['Approved'],
      });

      // Parked means parked: nothing happens while nobody looks.
      await j.env.sleep(DAY);
      expect((await j.snapshot()).stage).toBe('needs_attention');
      expect(j.service.count('exam_invite_cancel')).toBe(1);

      await expect(j.handle.executeUpdate(retryUpdate, { args: [{ actor: 'ops-1' }] })).resolves.toEqual({
        stage: 'awaiting_prescription',
      });
      const resumed = await j.waitFor('awaiting prescription', (s) => s.stage === 'awaiting_prescription');
      expect(resumed.attention).toEqual([]);
      expect(resumed.deadlines.map((d) => d.action)).toEqual(['prescription_overdue', 'give_up']);
      expect(await waitForSearchAttributes(j.handle, 'awaiting_prescription')).toMatchObject({ NeedsAttention: false });

      await j.prescription(id);
      const result = await j.handle.result();
      expect(result.stage).toBe('completed');
      expect(result.exams[0]).toMatchObject({
        status: 'Approved',
        rxStatus: 'Pharmacy Confirmed',
        gaveUpWaiting: null,
      });
    });
  });
});

describe('re-invite after Missed or NA', () => {
  it.each(['Missed', 'NA'])('re-invites the exam once after the cool-down when allowed (%s)', async (verdict) => {
    const input = journeyInput('gfe', { timings: { reinviteMaxAttempts: 1, reinviteCoolDownMs: 30 * MINUTE } });
    await withJourney(h, { input }, async (j) => {
      const first = await j.firstPatientExamId();
      await j.consultation(first, verdict);
      await j.waitFor('awaiting re-invite', (s) => s.stage === 'awaiting_reinvite');
      expect(await waitForSearchAttributes(j.handle, 'awaiting_reinvite')).toMatchObject({ ExamStatus: [verdict] });

      await j.env.sleep(29 * MINUTE);
      expect(j.service.count('exam_invite')).toBe(1);
      await j.env.sleep(2 * MINUTE);

      const s = await j.waitFor(
        'the second invite',
        (x) => x.exams.length === 2 && x.stage === 'awaiting_consultation',
      );
      expect(j.service.count('exam_invite')).toBe(2);
      expect(j.service.callsOf('exam_invite')[1]).toMatchObject({ exams: [GFE_EXAM.id] });
      const second = s.exams[1]!.patientExamId;
      expect(second).not.toBe(first);
      expect(s.exams[0]).toMatchObject({ patientExamId: first, status: verdict, reinvitedAs: second });
      expect(s.exams[1]).toMatchObject({ examId: GFE_EXAM.id, status: 'pending', reinviteOf: first });
      expect(s.meetings).toHaveLength(2);

      // The second chance is the last one: another Missed ends the journey.
      await j.consultation(second, 'Missed');
      const result = await j.handle.result();
      expect(result.stage).toBe('completed');
      expect(j.service.count('exam_invite')).toBe(2);
      expect(result.exams.map((e) => e.status)).toEqual([verdict, 'Missed']);
    });
  });

  it('does not re-invite when reinviteMaxAttempts is 0', async () => {
    const input = journeyInput('gfe', { timings: { reinviteMaxAttempts: 0 } });
    await withJourney(h, { input }, async (j) => {
      const id = await j.firstPatientExamId();
      await j.consultation(id, 'Missed');
      await j.waitFor('completed', (s) => s.stage === 'completed');
      const result = await j.handle.result();
      expect(result.exams).toEqual([expect.objectContaining({ status: 'Missed', reinvitedAs: null })]);
      expect(j.service.count('exam_invite')).toBe(1);
    });
  });
});

describe('prescription deadline', () => {
  it('marks event 2 overdue 3 days after approval, keeps waiting, and gives up at the hard limit', async () => {
    await withJourney(h, { input: journeyInput('urgent_care') }, async (j) => {
      const id = await j.firstPatientExamId();
      await j.consultation(id, 'Approved');
      await j.waitFor('awaiting prescription', (s) => s.stage === 'awaiting_prescription');

      await j.env.sleep(3 * DAY - HOUR);
      expect((await j.snapshot()).exams[0]!.prescriptionOverdue).toBe(false);
      await j.env.sleep(2 * HOUR);
      const overdue = await j.waitFor('overdue', (s) => s.exams[0]!.prescriptionOverdue);
      expect(overdue.stage).toBe('awaiting_prescription');
      expect(overdue.exams[0]!.gaveUpWaiting).toBeNull();

      await j.env.sleep(11 * DAY);
      const result = await j.handle.result();
      expect(result.stage).toBe('completed');
      expect(result.exams[0]).toMatchObject({
        status: 'Approved',
        prescriptionOverdue: true,
        gaveUpWaiting: 'prescription',
        rxStatus: null,
      });
      expect(Date.parse(result.endedAt) - Date.parse(result.exams[0]!.verdictAt!)).toBeGreaterThanOrEqual(14 * DAY);
    });
  });

  it('applies an overdue event 2 that arrives before the hard limit', async () => {
    await withJourney(h, { input: journeyInput('custom_pharmacy') }, async (j) => {
      const id = await j.firstPatientExamId();
      await j.consultation(id, 'Approved');
      await j.env.sleep(4 * DAY);
      await j.waitFor('overdue', (s) => s.exams[0]!.prescriptionOverdue);
      await j.prescription(id);
      const result = await j.handle.result();
      expect(result.exams[0]).toMatchObject({
        prescriptionOverdue: true,
        gaveUpWaiting: null,
        rxStatus: 'Pharmacy Confirmed',
      });
    });
  });
});

describe('tracking deadline', () => {
  it('marks event 3 overdue 10 days after event 2, keeps waiting, and gives up at the hard limit', async () => {
    await withJourney(h, { input: journeyInput('partner_pharmacy') }, async (j) => {
      const id = await j.firstPatientExamId();
      expect(j.atService(id).exam_id).toBe(PARTNER_EXAM.id);
      await j.consultation(id, 'Approved');
      await j.prescription(id);
      await j.waitFor('awaiting tracking', (s) => s.stage === 'awaiting_tracking');

      await j.env.sleep(10 * DAY - HOUR);
      expect((await j.snapshot()).exams[0]!.trackingOverdue).toBe(false);
      await j.env.sleep(2 * HOUR);
      const overdue = await j.waitFor('overdue', (s) => s.exams[0]!.trackingOverdue);
      expect(overdue.stage).toBe('awaiting_tracking');

      // One of the two packages ships late; the other never does.
      await j.tracking(id, 7001);
      await j.waitFor('first shipment', (s) => s.exams[0]!.prescriptions[0]!.tracking !== null);
      expect((await j.snapshot()).stage).toBe('awaiting_tracking');

      await j.env.sleep(20 * DAY);
      const result = await j.handle.result();
      expect(result.stage).toBe('completed');
      expect(result.exams[0]).toMatchObject({ trackingOverdue: true, gaveUpWaiting: 'tracking' });
      expect(result.exams[0]!.prescriptions.map((rx) => rx.tracking?.trackingNumber ?? null)).toEqual(['1Z7001', null]);
    });
  });
});

describe('deferred to the medical director', () => {
  it('waits for the final verdict; parks at its deadline; a retry waits again and the verdict completes it', async () => {
    await withJourney(h, { input: journeyInput('gfe') }, async (j) => {
      const id = await j.firstPatientExamId();
      await j.consultation(id, 'Deferred to Medical Director');
      const waiting = await j.waitFor('awaiting the final verdict', (s) => s.stage === 'awaiting_final_verdict');
      expect(waiting.deadlines).toEqual([
        {
          at: new Date(Date.parse(waiting.exams[0]!.verdictAt!) + 3 * DAY).toISOString(),
          action: 'final_verdict_overdue',
          patientExamId: id,
        },
      ]);
      await waitForSearchAttributes(j.handle, 'awaiting_final_verdict');

      await j.env.sleep(3 * DAY + HOUR);
      const parked = await j.waitFor('parked', (s) => s.stage === 'needs_attention');
      expect(parked.attention).toEqual([expect.objectContaining({ code: 'final_verdict_overdue', patientExamId: id })]);
      expect(parked.exams[0]!.status).toBe('Deferred to Medical Director');

      await j.handle.executeUpdate(retryUpdate, {
        args: [{ actor: 'ops-7', note: 'MD review takes longer this week' }],
      });
      const again = await j.waitFor('waiting again', (s) => s.stage === 'awaiting_final_verdict');
      expect(Date.parse(again.deadlines[0]!.at)).toBeGreaterThan(Date.parse(parked.attention[0]!.since) + 2 * DAY);

      await j.consultation(id, 'Approved');
      const result = await j.handle.result();
      expect(result.stage).toBe('completed');
      expect(result.exams[0]!.status).toBe('Approved');
    });
  });

  it('keeps the deferred exam on the journey when an operator abandons it', async () => {
    await withJourney(h, { input: journeyInput('gfe') }, async (j) => {
      const id = await j.firstPatientExamId();
      await j.consultation(id, 'Deferred to Medical Director');
      await j.waitFor('awaiting the final verdict', (s) => s.stage === 'awaiting_final_verdict');
      await j.env.sleep(3 * DAY + HOUR);
      await j.waitFor('parked', (s) => s.stage === 'needs_attention');
      await j.handle.executeUpdate(abandonUpdate, { args: [{ actor: 'ops-7', note: 'clinic will follow up' }] });
      const result = await j.handle.result();
      expect(result.stage).toBe('abandoned');
      expect(result.exams).toEqual([
        expect.objectContaining({ patientExamId: id, status: 'Deferred to Medical Director' }),
      ]);
    });
  });
});
