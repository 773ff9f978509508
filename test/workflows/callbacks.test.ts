// Callbacks as the service really sends them: duplicated, out of order, before the invite call has even returned,
// and for patient exams that are not this journey's.
import { retryUpdate } from '../../src/contract/definitions';
import type { JourneyCallback, JourneySnapshot, UnreadCallback } from '../../src/workflows/journey-state';
import { examService, GFE_EXAM, journeyInput, useHarness, withJourney } from './harness';

const h = useHarness();

const dispositions = (s: JourneySnapshot) => Object.fromEntries(s.events.map((e) => [e.deliveryId, e.disposition]));

describe('callbacks', () => {
  it('applies 3 before 2 before 1, each delivered twice, in causal order and only once', async () => {
    await withJourney(h, { input: journeyInput('partner_pharmacy') }, async (j) => {
      const id = await j.firstPatientExamId();
      await j.waitFor('awaiting consultation', (s) => s.stage === 'awaiting_consultation');

      const track = await j.tracking(id, 7001);
      const trackAgain = await j.tracking(id, 7001);
      let s = await j.waitFor('tracking buffered', (x) => x.events.length === 2);
      expect(dispositions(s)).toEqual({ [track]: 'buffered', [trackAgain]: 'duplicate' });
      expect(s.stage).toBe('awaiting_consultation');
      expect(s.exams[0]!.prescriptions).toEqual([]);

      const rx = await j.prescription(id);
      const rxAgain = await j.prescription(id);
      s = await j.waitFor('prescription buffered', (x) => x.events.length === 4);
      expect(dispositions(s)).toMatchObject({ [rx]: 'buffered', [rxAgain]: 'duplicate' });
      expect(s.exams[0]).toMatchObject({ status: 'pending', rxStatus: null });

      const verdict = await j.consultation(id, 'Approved');
      const verdictAgain = await j.consultation(id, 'Approved');
      s = await j.waitFor('applied', (x) => x.events.length === 6);
      expect(dispositions(s)).toEqual({
        [track]: 'applied',
        [trackAgain]: 'duplicate',
        [rx]: 'applied',
        [rxAgain]: 'duplicate',
        [verdict]: 'applied',
        [verdictAgain]: 'duplicate',
      });
      // The second package has not shipped: the journey waits for its event 3 only.
      expect(s.stage).toBe('awaiting_tracking');
      expect(s.exams[0]).toMatchObject({ status: 'Approved', rxStatus: 'Pharmacy Confirmed' });
      expect(s.exams[0]!.prescriptions.map((p) => p.tracking?.trackingNumber ?? null)).toEqual(['1Z7001', null]);

      await j.tracking(id, 7002);
      const result = await j.handle.result();
      expect(result.stage).toBe('completed');
      expect(result.exams[0]!.prescriptions.map((p) => p.tracking?.trackingNumber)).toEqual(['1Z7001', '1Z7002']);
      expect(result.eventsApplied).toBe(4);
      expect(result.eventsIgnored).toBe(3);
    });
  });

  it('keeps the first verdict when a different one arrives later', async () => {
    await withJourney(h, { input: journeyInput('urgent_care') }, async (j) => {
      const id = await j.firstPatientExamId();
      await j.consultation(id, 'Approved');
      const rejected = await j.consultation(id, 'Rejected');
      const s = await j.waitFor('second verdict recorded', (x) => x.events.length === 2);
      expect(s.events.find((e) => e.deliveryId === rejected)).toMatchObject({
        disposition: 'ignored',
        note: 'verdict already Approved',
      });
      expect(s.exams[0]!.status).toBe('Approved');
      expect(s.stage).toBe('awaiting_prescription');
    });
  });

  it('buffers event 1 that arrives while the invite call is still on the wire, and applies it after', async () => {
    const service = examService(h);
    const release = service.hold('exam_invite');
    await withJourney(h, { service }, async (j) => {
      // The service created the patient exam; its answer has not arrived.
      const [id] = (await j.examsAtService(1)) as [number];
      const early = await j.deliver({
        event: 1,
        patientExamId: id,
        examId: GFE_EXAM.id,
        examStatus: 'Approved',
        rxStatus: null,
        examUrl: null,
        providerName: 'Dr. Quick',
        reason: 'fast patient',
      });
      const s = await j.waitFor('buffered', (x) => x.events.length === 1);
      expect(s.stage).toBe('inviting');
      expect(s.events[0]).toMatchObject({ deliveryId: early, disposition: 'buffered', patientExamId: id });

      release();
      const result = await j.handle.result();
      expect(result.stage).toBe('completed');
      expect(result.exams).toEqual([
        expect.objectContaining({ patientExamId: id, status: 'Approved', providerName: 'Dr. Quick' }),
      ]);
      expect(result.eventsApplied).toBe(1);
      expect(j.service.count('exam_invite_resend')).toBe(0);
    });
  });

  it('records a callback for a patient exam of another journey as foreign and keeps waiting', async () => {
    await withJourney(h, {}, async (j) => {
      const id = await j.firstPatientExamId();
      await j.waitFor('awaiting consultation', (s) => s.stage === 'awaiting_consultation');
      const stray = await j.consultation(id + 1000, 'Approved');
      const s = await j.waitFor('stray recorded', (x) => x.events.length === 1);
      expect(s.events[0]).toMatchObject({ deliveryId: stray, disposition: 'foreign' });
      expect(s.stage).toBe('awaiting_consultation');
      expect(s.exams[0]!.status).toBe('pending');
    });
  });

  it('ignores a tracking event for a custom pharmacy and a prescription event for a GFE', async () => {
    await withJourney(h, { input: journeyInput('custom_pharmacy') }, async (j) => {
      const id = await j.firstPatientExamId();
      await j.consultation(id, 'Approved');
      const shipped = await j.tracking(id, 7001);
      const s = await j.waitFor('recorded', (x) => x.events.length === 2);
      expect(s.events[1]).toMatchObject({
        deliveryId: shipped,
        disposition: 'ignored',
        note: 'no tracking for a custom pharmacy',
      });
      expect(s.stage).toBe('awaiting_prescription');
    });
    await withJourney(h, {}, async (j) => {
      const id = await j.firstPatientExamId();
      const rx = await j.prescription(id);
      const s = await j.waitFor('recorded', (x) => x.events.length === 1);
      expect(s.events[0]).toMatchObject({ deliveryId: rx, disposition: 'ignored', note: 'not a prescription exam' });
      expect(s.stage).toBe('awaiting_consultation');
    });
  });

  it('holds an unreadable callback for a person, parks the journey, and goes on after the retry', async () => {
    await withJourney(h, { input: journeyInput('partner_pharmacy') }, async (j) => {
      const id = await j.firstPatientExamId();
      await j.waitFor('awaiting consultation', (s) => s.stage === 'awaiting_consultation');
      const unread: UnreadCallback = {
        event: 7,
        unread: true,
        patientExamId: id,
        reason: 'event 7 is none of 1, 2, 3',
      };
      const held = await j.deliver(unread as unknown as JourneyCallback);
      let s = await j.waitFor('held', (x) => x.stage === 'needs_attention');
      expect(s.events).toEqual([
        expect.objectContaining({ deliveryId: held, event: 7, disposition: 'held', note: unread.reason }),
      ]);
      expect(s.attention).toEqual([expect.objectContaining({ code: 'callback_held', patientExamId: id })]);

      await j.handle.executeUpdate(retryUpdate, { args: [{ actor: 'ops-1' }] });
      s = await j.waitFor('resumed', (x) => x.stage === 'awaiting_consultation');
      // An event 3 without ids (tracking-array layout) waits for events 1 and 2, then finds its exam.
      const track = await j.deliver({
        event: 3,
        trackingNumber: '1ZNOIDS',
        deliveryService: null,
        pharmacyLocation: null,
        orderId: null,
        layout: 'tracking-array',
      });
      await j.consultation(id, 'Approved');
      await j.prescription(id, [
        { prescriptionId: 8101, drugName: 'Drug A', strength: null, quantity: null, pharmacyName: null },
      ]);
      const result = await j.handle.result();
      expect(result.stage).toBe('completed');
      expect(result.exams[0]!.prescriptions[0]!.tracking?.trackingNumber).toBe('1ZNOIDS');
      s = await j.snapshot();
      expect(s.events.find((e) => e.deliveryId === track)).toMatchObject({
        disposition: 'applied',
        patientExamId: id,
        prescriptionId: 8101,
        layout: 'tracking-array',
      });
    });
  });
});
