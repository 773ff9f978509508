// The four invite scenarios end to end on the time-skipping server, with the real activities against the sandbox:
// what the clinic gets back, what operators can filter on, and that none of it carries PHI.
import { serviceError } from '../support/scripted-exam-service';
import {
  DAY,
  deletedAttachments,
  examService,
  GFE_EXAM,
  GFE_EXAM_2,
  GFE_WITH_LAB,
  journeyInput,
  OWN_PHARMACY_EXAM,
  PHI_VALUES,
  PRESCRIPTIONS,
  searchAttributesOf,
  URGENT_CARE_EXAM,
  useHarness,
  waitForSearchAttributes,
  withJourney,
} from './harness';
import { attachmentRetentionId } from '../../src/workflows/attachment-retention';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { JOURNEY_RULES } from '../../src/contract/journey-request';
import { TODAYS_RULES } from '../../src/workflows/journey-rules';

const h = useHarness();

const containsPhi = (text: string) => PHI_VALUES.filter((v) => text.includes(v));

type History = temporal.api.history.v1.IHistory;

/** Replays a history against today's workflow code: undefined, or the replay's error. */
async function replays(history: History, workflowId: string): Promise<void> {
  await Worker.runReplayHistory({ workflowBundle: h.bundle }, history, workflowId);
}

/** The history with these fields added to its start's input (the journey's input is the start's one JSON payload). */
function withStartInput(history: History, fields: Record<string, unknown>): History {
  const History = temporal.api.history.v1.History;
  const copy = History.decode(History.encode(history).finish());
  const payload = copy.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
  if (!payload?.data) throw new Error('the history starts without an input');
  const input = JSON.parse(Buffer.from(payload.data).toString('utf8')) as Record<string, unknown>;
  payload.data = Buffer.from(JSON.stringify({ ...input, ...fields }));
  return copy;
}

describe('the rules a start names', () => {
  it("are the workflow's own today's rules (a start naming rules a worker does not know records its own marker)", () => {
    expect(JOURNEY_RULES).toBe(TODAYS_RULES);
  });
});

describe('good faith exam', () => {
  it('completes on event 1 with the verdict, keeping search attributes current, without PHI anywhere', async () => {
    const input = journeyInput('gfe');
    await withJourney(h, { input }, async (j) => {
      expect(j.handle.workflowId).toBe(`journey-${input.journeyId}`);
      const id = await j.firstPatientExamId();
      await j.waitFor('awaiting consultation', (s) => s.stage === 'awaiting_consultation');

      const waiting = await waitForSearchAttributes(j.handle, 'awaiting_consultation');
      expect(waiting).toMatchObject({
        ClinicId: 'clinic-7',
        Scenario: 'gfe',
        ExamStatus: ['pending'],
        NeedsAttention: false,
      });
      // No prescription yet: never set (an empty list and an unset attribute are the same to a query and the API).
      expect(waiting.RxStatus ?? []).toEqual([]);
      expect(containsPhi(waiting.raw)).toEqual([]);

      // What the service was asked for: one invite carrying the patient, the exam and the journey's webhook.
      const [invite] = j.service.callsOf('exam_invite') as Record<string, unknown>[];
      expect(invite).toMatchObject({
        exams: [GFE_EXAM.id],
        email: input.patient.email,
        tele_state: 'TE',
        webhook_url: `http://127.0.0.1:1/webhooks/${input.journeyId}`,
      });
      expect(invite).not.toHaveProperty('pharmacy_id');
      expect(invite).not.toHaveProperty('custom_pharmacy');

      await j.consultation(id, 'Approved');
      const result = await j.handle.result();

      expect(result.stage).toBe('completed');
      expect(result.exams).toEqual([
        expect.objectContaining({
          patientExamId: id,
          examId: GFE_EXAM.id,
          status: 'Approved',
          rxStatus: null,
          verdictSource: 'callback',
          providerName: 'Dr. Provider',
          examUrl: 'https://records.example.test/r.pdf',
        }),
      ]);
      expect(result.meetings).toHaveLength(1);
      expect(result.eventsApplied).toBe(1);
      expect(result.lastError).toBeNull();
      expect(containsPhi(JSON.stringify(result))).toEqual([]);

      const done = await searchAttributesOf(j.handle);
      expect(done).toMatchObject({ JourneyStage: 'completed', ExamStatus: ['Approved'], NeedsAttention: false });
      expect(containsPhi(done.raw)).toEqual([]);
      // No reminder, no cancel: the patient acted in time.
      expect(j.service.count('exam_invite_resend')).toBe(0);
      expect(j.service.count('exam_invite_cancel')).toBe(0);

      // What it cost Temporal: no patch marker (its start named today's rules; a marker is one more event and the
      // SDK's upsert of TemporalChangeVersion, a write to the visibility store), the exam list read by a local
      // activity (a marker, no activity task), one activity (the invite), and at most one upsert of the journey's own
      // attributes per workflow task.
      const history = await j.handle.fetchHistory();
      const events = history.events ?? [];
      const markers = events.flatMap((e) => e.markerRecordedEventAttributes?.markerName ?? []);
      expect(markers).toEqual(['core_local_activity']);
      expect(
        events.some(
          (e) =>
            e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.TemporalChangeVersion,
        ),
      ).toBe(false);
      // Its history replays with today's rules decided again without the marker.
      await expect(replays(history, j.handle.workflowId)).resolves.toBeUndefined();
      expect(events.filter((e) => e.activityTaskScheduledEventAttributes)).toHaveLength(1);
      // The journey's own upserts: the stages it went through, each once (several changes within one workflow task
      // activation published together), and only the attributes that changed.
      const upserts = events.flatMap((e) => {
        const fields = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields;
        if (!fields || 'TemporalChangeVersion' in fields) return [];
        const stage = fields.JourneyStage ? defaultPayloadConverter.fromPayload<string>(fields.JourneyStage) : '-';
        return [`${stage}: ${Object.keys(fields).sort().join(',')}`];
      });
      expect(upserts).toEqual([
        'validating: ClinicId,JourneyStage,NeedsAttention,Scenario', // this harness starts journeys without them
        'inviting: JourneyStage',
        'awaiting_consultation: ExamStatus,JourneyStage,PatientExamIds',
        'completed: ExamStatus,JourneyStage',
      ]);
    });
  });

  it("records today's rules as one marker when its start names none, and replays by it", async () => {
    // A start from a release before starters named the rules (or a client of its own that does not).
    const input = journeyInput('gfe', { rules: undefined });
    expect(input).not.toHaveProperty('rules');
    await withJourney(h, { input }, async (j) => {
      const id = await j.firstPatientExamId();
      await j.consultation(id, 'Approved');
      const result = await j.handle.result();
      expect(result.stage).toBe('completed');
      const history = await j.handle.fetchHistory();
      const markers = (history.events ?? []).flatMap((e) => e.markerRecordedEventAttributes?.markerName ?? []);
      expect(markers).toEqual(['core_patch', 'core_local_activity']);
      await expect(replays(history, j.handle.workflowId)).resolves.toBeUndefined();
      // The same history, as if its start had named the rules and a worker of an earlier release (which does not
      // read them) had run its first task: the marker it recorded decides, and the history replays.
      await expect(
        replays(withStartInput(history, { rules: JOURNEY_RULES }), j.handle.workflowId),
      ).resolves.toBeUndefined();
    });
  });

  it('stacks several rx_type 1 exams in one meeting and completes when every one has a verdict', async () => {
    const input = journeyInput('gfe', { exams: [GFE_EXAM.id, GFE_EXAM_2.id] });
    await withJourney(h, { input }, async (j) => {
      const s = await j.waitFor('two patient exams', (x) => x.exams.length === 2);
      const [a, b] = s.exams.map((e) => e.patientExamId) as [number, number];
      expect(s.meetings).toHaveLength(1);

      await j.consultation(a, 'Approved');
      const half = await j.waitFor('first verdict', (x) => x.exams[0]!.status === 'Approved');
      expect(half.stage).toBe('awaiting_consultation');
      const attrs = await waitForSearchAttributes(j.handle, 'awaiting_consultation');
      expect(attrs.ExamStatus).toEqual(['Approved', 'pending']);

      await j.consultation(b, 'Rejected');
      const result = await j.handle.result();
      expect(result.stage).toBe('completed');
      expect(result.exams.map((e) => [e.examId, e.status])).toEqual([
        [GFE_EXAM.id, 'Approved'],
        [GFE_EXAM_2.id, 'Rejected'],
      ]);
      expect((await searchAttributesOf(j.handle)).ExamStatus).toEqual(['Approved', 'Rejected']);
    });
  });
});

describe.each([
  ['urgent_care', URGENT_CARE_EXAM.id],
  ['custom_pharmacy', OWN_PHARMACY_EXAM.id],
] as const)('%s', (scenario, examId) => {
  it('completes after events 1 and 2 without waiting for a tracking event', async () => {
    const input = journeyInput(scenario);
    await withJourney(h, { input }, async (j) => {
      const id = await j.firstPatientExamId();
      const [invite] = j.service.callsOf('exam_invite') as Record<string, unknown>[];
      expect(invite).toMatchObject({ exams: [examId], custom_pharmacy: 1, ncpdpid: '1234567' });

      await j.consultation(id, 'Approved');
      const approved = await j.waitFor('awaiting prescription', (s) => s.stage === 'awaiting_prescription');
      expect(approved.exams[0]).toMatchObject({
        status: 'Approved',
        fulfilment: 'custom',
        phase: 'awaiting_prescription',
      });
      const waiting = await waitForSearchAttributes(j.handle, 'awaiting_prescription');
      expect(waiting).toMatchObject({ Scenario: scenario, ExamStatus: ['Approved'], NeedsAttention: false });

      await j.prescription(id, [PRESCRIPTIONS[0]!]);
      // Real time only: the journey must finish on event 2 itself, not after a tracking timer gave up.
      const done = await j.waitFor('completed', (s) => s.stage === 'completed');
      expect(done.deadlines).toEqual([]);
      const result = await j.handle.result();
      expect(result.exams[0]).toMatchObject({
        status: 'Approved',
        rxStatus: 'Pharmacy Confirmed',
        gaveUpWaiting: null,
        trackingOverdue: false,
        prescriptions: [expect.objectContaining({ prescriptionId: 7001, drugName: 'Semaglutide', tracking: null })],
      });
      expect(containsPhi(JSON.stringify(result))).toEqual([]);
      const attrs = await searchAttributesOf(j.handle);
      expect(attrs).toMatchObject({ JourneyStage: 'completed', RxStatus: ['Pharmacy Confirmed'] });
    });
  });
});

describe('partner pharmacy', () => {
  it('waits for event 3 of every prescription, then completes with the tracking in the summary', async () => {
    const input = journeyInput('partner_pharmacy');
    await withJourney(h, { input }, async (j) => {
      const id = await j.firstPatientExamId();
      const [invite] = j.service.callsOf('exam_invite') as Record<string, unknown>[];
      expect(invite).toMatchObject({ custom_pharmacy: 2, pharmacy_id: 501, order_set_id: '8101' });

      await j.consultation(id, 'Approved');
      await j.prescription(id);
      const shipping = await j.waitFor('awaiting tracking', (s) => s.stage === 'awaiting_tracking');
      expect(shipping.exams[0]).toMatchObject({ fulfilment: 'partner', rxStatus: 'Pharmacy Confirmed' });
      const attrs = await waitForSearchAttributes(j.handle, 'awaiting_tracking');
      expect(attrs).toMatchObject({ ExamStatus: ['Approved'], RxStatus: ['Pharmacy Confirmed'] });

      await j.tracking(id, 7001, '1ZFIRST');
      const half = await j.waitFor('first shipment', (s) => s.exams[0]!.prescriptions[0]!.tracking !== null);
      expect(half.stage).toBe('awaiting_tracking');

      await j.tracking(id, 7002, '1ZSECOND');
      const result = await j.handle.result();
      expect(result.stage).toBe('completed');
      expect(result.exams[0]!.gaveUpWaiting).toBeNull();
      expect(result.exams[0]!.prescriptions).toEqual([
        expect.objectContaining({
          prescriptionId: 7001,
          tracking: expect.objectContaining({ trackingNumber: '1ZFIRST', deliveryService: 'Overnight' }),
        }),
        expect.objectContaining({
          prescriptionId: 7002,
          tracking: expect.objectContaining({ trackingNumber: '1ZSECOND', orderId: 'order-7002' }),
        }),
      ]);
      expect(result.eventsApplied).toBe(4);
      expect(containsPhi(JSON.stringify(result))).toEqual([]);
      expect(await searchAttributesOf(j.handle)).toMatchObject({ JourneyStage: 'completed', NeedsAttention: false });
    });
  });
});

describe('preparation', () => {
  it('uploads attachments and submits pre-filled answers per patient exam after the invite', async () => {
    const attachment = (kind: string, ref: string) => ({
      ref,
      kind,
      fileName: `${kind.toLowerCase()}.pdf`,
      contentType: 'application/pdf',
      size: 1,
    });
    const face = 'Face photo (front, no makeup)';
    const input = journeyInput('gfe', {
      exams: [GFE_EXAM.id, GFE_WITH_LAB.id],
      attachments: [
        { examId: GFE_WITH_LAB.id, attachment: attachment('Lab', 'att_lab_result_01') },
        { examId: GFE_WITH_LAB.id, attachment: attachment(face, 'att_face_photo_01') },
        { examId: GFE_WITH_LAB.id, attachment: attachment('ID', 'att_id_photo_0001') },
      ],
      answers: [
        { examId: GFE_EXAM.id, answers: [{ no: 1, answer: 'None' }] },
        {
          examId: GFE_WITH_LAB.id,
          answers: [
            { no: 1, answer: 'Metformin' },
            { no: 3, question: 'Conditions?', answer: ['Diabetes', 'High blood pressure'] },
          ],
        },
      ],
    });
    await withJourney(h, { input }, async (j) => {
      const s = await j.waitFor('prepared', (x) => x.stage === 'awaiting_consultation');
      const plain = s.exams.find((e) => e.examId === GFE_EXAM.id)!;
      const lab = s.exams.find((e) => e.examId === GFE_WITH_LAB.id)!;
      expect(plain).toMatchObject({ attachmentsUploaded: [], answersSubmitted: 1 });
      expect(lab).toMatchObject({ attachmentsUploaded: ['Lab', face, 'ID'], answersSubmitted: 2 });

      // Each went to its own patient exam, after the invite created it.
      expect(j.service.calls.map((c) => c.operation)[0]).toBe('exam_list');
      expect(j.service.calls.map((c) => c.operation)[1]).toBe('exam_invite');
      expect(j.service.callsOf('exam_upload_attachment')).toEqual([
        expect.objectContaining({ patient_exam_id: lab.patientExamId, kind: 'Lab', content_base64: 'eA==' }),
        expect.objectContaining({ patient_exam_id: lab.patientExamId, kind: face }),
        expect.objectContaining({ patient_exam_id: lab.patientExamId, kind: 'ID', file_name: 'id.pdf' }),
      ]);
      expect(j.service.callsOf('exam_submit_answers')).toEqual([
        {
          patient_exam_id: plain.patientExamId,
          answers: [{ no: 1, question: 'Which medications do you currently take?', answer: 'None' }],
        },
        {
          patient_exam_id: lab.patientExamId,
          answers: [
            { no: 1, question: 'Which medications do you currently take?', answer: 'Metformin' },
            { no: 3, question: 'Conditions?', answer: ['Diabetes', 'High blood pressure'] },
          ],
        },
      ]);
      // The service holds them.
      expect(j.atService(lab.patientExamId).attachments.map((a) => a.kind)).toEqual(['Lab', face, 'ID']);
      expect([...j.atService(lab.patientExamId).answers.keys()]).toEqual([1, 3]);

      await j.consultation(plain.patientExamId, 'Approved');
      await j.consultation(lab.patientExamId, 'Approved');
      const result = await j.handle.result();
      expect(result.stage).toBe('completed');
      expect(result.exams.map((e) => e.attachmentsUploaded)).toEqual([[], ['Lab', face, 'ID']]);
      expect(containsPhi(JSON.stringify(result))).toEqual([]);

      // Once the journey ended, a workflow of their own deletes its documents after the grace (7 days, skipped here).
      const retention = h.env.client.workflow.getHandle(attachmentRetentionId(input.journeyId));
      expect(await retention.result()).toEqual({ deleted: 3 });
      expect(deletedAttachments).toEqual(
        expect.arrayContaining(['att_lab_result_01', 'att_face_photo_01', 'att_id_photo_0001']),
      );
      const d = await retention.describe();
      expect(d.closeTime!.getTime() - d.startTime.getTime()).toBeGreaterThanOrEqual(7 * DAY);
    });
  });

  it('records a failed upload as the last error and still waits for the consultation', async () => {
    const input = journeyInput('gfe', {
      attachments: [
        {
          examId: GFE_EXAM.id,
          attachment: { ref: 'att_id_photo_0001', kind: 'ID', fileName: 'id.jpg', contentType: 'image/jpeg', size: 1 },
        },
      ],
    });
    const service = examService(h).failNext(
      'exam_upload_attachment',
      serviceError('validation', 'exam_upload_attachment', { field: 'content_type' }),
    );
    await withJourney(h, { input, service }, async (j) => {
      const s = await j.waitFor('prepared', (x) => x.stage === 'awaiting_consultation');
      expect(s.exams[0]!.attachmentsUploaded).toEqual([]);
      expect(s.lastError).toMatchObject({
        kind: 'validation',
        operation: 'exam_upload_attachment',
        field: 'content_type',
      });
      expect(j.service.count('exam_upload_attachment')).toBe(1);
    });
  });
});
