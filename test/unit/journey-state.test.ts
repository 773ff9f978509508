import {
  dueActions,
  initialState,
  nextDeadline,
  reduce,
  searchAttributesOf,
  snapshot,
  stageOf,
  type JourneyCallback,
  type JourneyEvent,
  type JourneyState,
} from '../../src/workflows/journey-state';
import { checkAgainstCatalog, type CatalogEntry } from '../../src/contract/catalog-rules';
import { DEFAULT_TIMINGS, type JourneyInput, type Scenario } from '../../src/contract/journey-request';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const T0 = Date.parse('2026-01-05T10:00:00.000Z');
const at = (ms = 0) => new Date(T0 + ms).toISOString();

const GFE = { examId: 11, title: 'Good Faith Exam', rxType: 1 as const };
const RX = { examId: 21, title: 'Weight Loss Partner Package', rxType: 2 as const };

function input(scenario: Scenario, exams = [GFE.examId], timings = DEFAULT_TIMINGS): JourneyInput {
  return {
    clinicId: 'clinic-a',
    journeyId: 'j1',
    patient: {
      firstName: 'Test',
      lastName: 'Approve',
      email: 'p@example.com',
      dob: '1990-01-01',
      phoneNumber: '5555550100',
      teleState: 'TE',
    },
    exams,
    scenario,
    timings,
  };
}

function run(state: JourneyState, events: JourneyEvent[]): JourneyState {
  return events.reduce(reduce, state);
}

function invited(
  scenario: Scenario,
  exams: { examId: number; title: string; rxType: 1 | 2 }[],
  timings = DEFAULT_TIMINGS,
) {
  const s0 = initialState(
    input(
      scenario,
      exams.map((e) => e.examId),
      timings,
    ),
    at(),
  );
  return run(s0, [
    { type: 'catalog_checked', at: at(), exams },
    { type: 'invite_started', at: at() },
    {
      type: 'invite_created',
      at: at(),
      meetingUuid: 'm-1',
      meetingUrl: 'https://meet.example/m-1',
      patientExams: exams.map((e, i) => ({ patientExamId: 100 + i, examId: e.examId, examTitle: e.title })),
    },
  ]);
}

const ev1 = (patientExamId: number, examStatus = 'Approved', rxStatus: string | null = null): JourneyCallback => ({
  event: 1,
  patientExamId,
  examId: 0,
  examStatus,
  rxStatus,
  examUrl: examStatus === 'NA' || examStatus === 'Missed' ? null : 'https://x/record.pdf',
  providerName: 'Dr. P',
  reason: 'ok',
});
const ev2 = (patientExamId: number, ids = [501, 502]): JourneyCallback => ({
  event: 2,
  patientExamId,
  examId: RX.examId,
  rxStatus: 'Pharmacy Confirmed',
  prescribedOrderSetId: 7,
  prescriptions: ids.map((prescriptionId) => ({
    prescriptionId,
    drugName: `drug ${prescriptionId}`,
    strength: '1mg',
    quantity: '30',
    pharmacyName: 'Partner Rx',
  })),
});
const ev3 = (patientExamId: number, prescriptionId: number): JourneyCallback => ({
  event: 3,
  patientExamId,
  prescriptionId,
  trackingNumber: `TRK${prescriptionId}`,
  deliveryService: 'Overnight',
  pharmacyLocation: 'Austin',
  orderId: 'o-1',
});
let delivery = 0;
const cb = (callback: JourneyCallback, ms = HOUR): JourneyEvent => ({
  type: 'callback',
  at: at(ms),
  deliveryId: `d${++delivery}`,
  callback,
});

describe('journey reducer: scenarios', () => {
  it('GFE completes on event 1', () => {
    const s = invited({ type: 'gfe' }, [GFE]);
    expect(stageOf(s)).toBe('awaiting_consultation');
    const done = reduce(s, cb(ev1(100)));
    expect(stageOf(done)).toBe('completed');
    expect(done.exams[0]).toMatchObject({ status: 'Approved', verdictSource: 'callback', providerName: 'Dr. P' });
  });

  it('urgent care and choose-your-own pharmacy complete on events 1 and 2, never waiting for 3', () => {
    for (const type of ['urgent_care', 'custom_pharmacy'] as const) {
      const s = invited({ type, pharmacy: { ncpdpid: '123' } }, [RX]);
      const afterVerdict = reduce(s, cb(ev1(100)));
      expect(stageOf(afterVerdict)).toBe('awaiting_prescription');
      const done = reduce(afterVerdict, cb(ev2(100)));
      expect(stageOf(done)).toBe('completed');
      expect(done.exams[0]!.fulfilment).toBe('custom');
      const withTracking = reduce(done, cb(ev3(100, 501)));
      expect(withTracking.received.at(-1)).toMatchObject({
        disposition: 'ignored',
        note: 'no tracking for a custom pharmacy',
      });
    }
  });

  it('partner pharmacy waits for event 3 of every prescription', () => {
    let s = invited({ type: 'partner_pharmacy', pharmacyId: 1 }, [RX]);
    s = run(s, [cb(ev1(100)), cb(ev2(100))]);
    expect(stageOf(s)).toBe('awaiting_tracking');
    s = reduce(s, cb(ev3(100, 501)));
    expect(stageOf(s)).toBe('awaiting_tracking');
    s = reduce(s, cb(ev3(100, 502)));
    expect(stageOf(s)).toBe('completed');
    expect(s.exams[0]!.prescriptions.map((p) => p.tracking?.trackingNumber)).toEqual(['TRK501', 'TRK502']);
  });

  it('a copy of a shipment in another layout (ids left out) is a duplicate, not a callback held for a person', () => {
    let s = invited({ type: 'partner_pharmacy', pharmacyId: 1 }, [RX]);
    s = run(s, [cb(ev1(100)), cb(ev2(100, [501])), cb(ev3(100, 501))]);
    expect(stageOf(s)).toBe('completed');
    const {
      patientExamId: _exam,
      prescriptionId: _rx,
      ...bare
    } = ev3(100, 501) as Extract<JourneyCallback, { event: 3 }>;
    s = reduce(s, cb({ ...bare, event: 3 }));
    expect(s.received.at(-1)).toMatchObject({ disposition: 'duplicate' });
    expect(s.attention).toEqual([]);
    expect(stageOf(s)).toBe('completed');
    // Another tracking number without ids, once everything has shipped, is still held: it is news.
    s = reduce(s, cb({ ...bare, event: 3, trackingNumber: 'TRK-OTHER' }));
    expect(s.received.at(-1)).toMatchObject({ disposition: 'held' });
  });

  it('rejected, NA and Missed prescription exams end on event 1', () => {
    for (const verdict of ['Rejected', 'NA', 'Missed']) {
      const s = reduce(invited({ type: 'partner_pharmacy', pharmacyId: 1 }, [RX]), cb(ev1(100, verdict)));
      expect(stageOf(s)).toBe('completed');
      expect(s.exams[0]!.status).toBe(verdict);
    }
  });

  it('tracks stacked exams each on its own', () => {
    let s = invited({ type: 'partner_pharmacy', pharmacyId: 1 }, [GFE, { ...GFE, examId: 12 }, RX]);
    expect(s.exams).toHaveLength(3);
    s = run(s, [cb(ev1(100)), cb(ev1(101, 'Rejected'))]);
    expect(stageOf(s)).toBe('awaiting_consultation');
    s = run(s, [cb(ev1(102)), cb(ev2(102, [9])), cb(ev3(102, 9))]);
    expect(stageOf(s)).toBe('completed');
    expect(searchAttributesOf(s)).toEqual({
      JourneyStage: 'completed',
      ExamStatus: ['Approved', 'Rejected'],
      RxStatus: ['Pharmacy Confirmed'],
      NeedsAttention: false,
      PatientExamIds: ['100', '101', '102'],
    });
  });
});

describe('journey reducer: delivery quirks', () => {
  it('ignores duplicates of each event', () => {
    let s = invited({ type: 'partner_pharmacy', pharmacyId: 1 }, [RX]);
    s = run(s, [cb(ev1(100)), cb(ev1(100)), cb(ev2(100)), cb(ev2(100)), cb(ev3(100, 501)), cb(ev3(100, 501))]);
    expect(s.received.map((r) => r.disposition)).toEqual([
      'applied',
      'duplicate',
      'applied',
      'duplicate',
      'applied',
      'duplicate',
    ]);
  });

  it('takes the same delivery twice as one (a webhook signal that landed and was also spooled)', () => {
    const s = invited({ type: 'gfe' }, [GFE]);
    const once = reduce(s, cb(ev1(100)));
    const again = reduce(once, {
      type: 'callback',
      at: at(HOUR),
      deliveryId: once.received[0]!.deliveryId,
      callback: ev1(100),
    });
    expect(again).toBe(once);
    expect(again.received).toEqual([expect.objectContaining({ disposition: 'applied' })]);
  });

  it('applies out-of-order events in causal order: 3 before 2 before 1', () => {
    let s = invited({ type: 'partner_pharmacy', pharmacyId: 1 }, [RX]);
    s = run(s, [cb(ev3(100, 501)), cb(ev3(100, 502)), cb(ev2(100))]);
    expect(s.received.map((r) => r.disposition)).toEqual(['buffered', 'buffered', 'buffered']);
    expect(stageOf(s)).toBe('awaiting_consultation');
    s = reduce(s, cb(ev1(100)));
    expect(s.received.every((r) => r.disposition === 'applied')).toBe(true);
    expect(stageOf(s)).toBe('completed');
  });

  it('keeps events that arrive before the invite returned and applies them once it does', () => {
    let s = initialState(input({ type: 'gfe' }), at());
    s = run(s, [
      { type: 'catalog_checked', at: at(), exams: [GFE] },
      { type: 'invite_started', at: at() },
    ]);
    s = reduce(s, cb(ev1(100), 0));
    expect(s.received[0]!.disposition).toBe('buffered');
    s = reduce(s, {
      type: 'invite_created',
      at: at(1000),
      meetingUuid: 'm',
      meetingUrl: 'u',
      patientExams: [{ patientExamId: 100, examId: GFE.examId, examTitle: GFE.title }],
    });
    expect(s.received[0]!.disposition).toBe('applied');
    expect(stageOf(s)).toBe('completed');
  });

  it("records events for patient exams that are not this journey's, and changes nothing", () => {
    const s = invited({ type: 'gfe' }, [GFE]);
    const after = reduce(s, cb(ev1(999)));
    expect(after.received.at(-1)).toMatchObject({ patientExamId: 999, disposition: 'foreign' });
    expect(after.exams).toEqual(s.exams);
  });

  it('waits for the final verdict of a deferred exam, which then completes it', () => {
    let s = invited({ type: 'gfe' }, [GFE]);
    s = reduce(s, cb(ev1(100, 'Deferred to Medical Director')));
    expect(stageOf(s)).toBe('awaiting_final_verdict');
    s = reduce(s, cb(ev1(100, 'Approved'), 2 * HOUR));
    expect(s.exams[0]!.status).toBe('Approved');
    expect(stageOf(s)).toBe('completed');
    s = reduce(s, cb(ev1(100, 'Rejected')));
    expect(s.exams[0]!.status).toBe('Approved');
    expect(s.received.at(-1)!.note).toBe('verdict already Approved');
  });
});

describe('journey reducer: deferred to the medical director', () => {
  const deferred = () => reduce(invited({ type: 'gfe' }, [GFE]), cb(ev1(100, 'Deferred to Medical Director')));
  const overdue = (s: ReturnType<typeof deferred>, ms: number): ReturnType<typeof deferred> =>
    reduce(s, {
      type: 'attention_needed',
      at: at(ms),
      attention: { code: 'final_verdict_overdue', message: 'm', patientExamId: 100, facts: {} },
    });

  it('has its own deadline from the deferral; a retry waits a whole deadline again', () => {
    let s = deferred();
    expect(nextDeadline(s)).toBe(T0 + HOUR + 3 * DAY);
    expect(dueActions(s, T0 + HOUR + 3 * DAY)).toEqual([{ type: 'final_verdict_overdue', patientExamId: 100 }]);
    s = overdue(s, HOUR + 3 * DAY);
    expect(stageOf(s)).toBe('needs_attention');
    expect(nextDeadline(s)).toBeNull();
    s = reduce(s, { type: 'attention_resolved', at: at(5 * DAY) });
    expect(stageOf(s)).toBe('awaiting_final_verdict');
    expect(nextDeadline(s)).toBe(T0 + 8 * DAY);
  });

  it('is settled by a final verdict that comes while it is parked; the deadline is configurable', () => {
    let s = overdue(deferred(), HOUR + 3 * DAY);
    s = reduce(s, cb(ev1(100, 'Rejected'), 4 * DAY));
    expect(s.attention).toEqual([]);
    expect(stageOf(s)).toBe('completed');
    const quick = reduce(
      invited({ type: 'gfe' }, [GFE], { ...DEFAULT_TIMINGS, finalVerdictDeadlineMs: 6 * HOUR }),
      cb(ev1(100, 'Deferred to Medical Director')),
    );
    expect(nextDeadline(quick)).toBe(T0 + 7 * HOUR);
  });

  it('is final for journeys started before the wait existed (their histories replay so)', () => {
    const old = initialState(input({ type: 'gfe' }, [GFE.examId], DEFAULT_TIMINGS), at(), { deferredWaits: false });
    const s = run(old, [
      { type: 'catalog_checked', at: at(), exams: [GFE] },
      { type: 'invite_started', at: at() },
      {
        type: 'invite_created',
        at: at(),
        meetingUuid: 'm-1',
        meetingUrl: 'https://x',
        patientExams: [{ patientExamId: 100, examId: GFE.examId, examTitle: GFE.title }],
      },
      cb(ev1(100, 'Deferred to Medical Director')),
    ]);
    expect(stageOf(s)).toBe('completed');
  });
});

const withExam = (c: JourneyCallback, examId: number) => ({ ...c, examId }) as JourneyCallback;

describe('journey reducer: evidence of an invite in doubt (journeys started before the proof of ownership)', () => {
  const before = { provesOwnership: false };
  const inFlight = (adopts: boolean) =>
    run(
      initialState(input({ type: 'gfe' }, [GFE.examId], DEFAULT_TIMINGS), at(), { ...before, adoptsEvidence: adopts }),
      [
        { type: 'catalog_checked', at: at(), exams: [GFE] },
        { type: 'invite_started', at: at() },
        cb(withExam(ev1(555), GFE.examId), 1_000),
      ],
    );

  it('adopts the patient exam a callback names when the attempt ends in doubt, and applies the callback', () => {
    const s = reduce(inFlight(true), { type: 'invite_not_created', at: at(2_000), ambiguousExams: [GFE.examId] });
    expect(s.exams).toEqual([expect.objectContaining({ patientExamId: 555, examId: GFE.examId, status: 'Approved' })]);
    expect(s.meetings).toEqual([expect.objectContaining({ meetingUuid: '', evidenceOf: [GFE.examId] })]);
    expect(s.received.map((r) => r.disposition)).toEqual(['applied']);
    expect(stageOf(s)).toBe('completed');
  });

  it('leaves it foreign when the attempt surely failed, or for journeys started before the rule', () => {
    const failed = reduce(inFlight(true), { type: 'invite_not_created', at: at(2_000) });
    expect(failed.received.map((r) => r.disposition)).toEqual(['foreign']);
    const before = reduce(inFlight(false), { type: 'invite_not_created', at: at(2_000), ambiguousExams: [GFE.examId] });
    expect(before.exams).toEqual([]);
    expect(before.received.map((r) => r.disposition)).toEqual(['foreign']);
  });

  it('holds for a person a callback that cannot say which exam of a stacked invite it is', () => {
    const s0 = run(initialState(input({ type: 'gfe' }, [GFE.examId, 12], DEFAULT_TIMINGS), at(), before), [
      { type: 'catalog_checked', at: at(), exams: [GFE, { examId: 12, title: 'GFE 2', rxType: 1 }] },
      { type: 'invite_started', at: at() },
      { type: 'invite_not_created', at: at(), ambiguousExams: [GFE.examId, 12] },
    ]);
    const s = reduce(s0, cb(withExam(ev1(556), 99), 1_000));
    expect(s.exams).toEqual([]);
    expect(s.received.at(-1)).toMatchObject({ disposition: 'held' });
    const named = reduce(s0, cb(withExam(ev1(557), 12), 1_000));
    expect(named.exams).toEqual([expect.objectContaining({ patientExamId: 557, examId: 12 })]);
  });
});

describe('journey reducer: a patient exam of an invite in doubt adopted only once proven its own', () => {
  const claim = (patientExamId: number, examId = GFE.examId, ms = 1_000, examStatus = 'Approved') =>
    cb({ ...withExam(ev1(patientExamId, examStatus), examId), patientEmail: 'p@example.com' } as JourneyCallback, ms);
  const inDoubt = () =>
    run(initialState(input({ type: 'gfe' }, [GFE.examId], DEFAULT_TIMINGS), at()), [
      { type: 'catalog_checked', at: at(), exams: [GFE] },
      { type: 'invite_started', at: at() },
      { type: 'invite_not_created', at: at(), ambiguousExams: [GFE.examId] },
      {
        type: 'attention_needed',
        at: at(),
        attention: { code: 'invite_ambiguous', message: 'in doubt', facts: {} },
      },
    ]);

  it('asks for a proof instead of adopting, and adopts and applies once it is proven', () => {
    const asked = reduce(inDoubt(), claim(555));
    expect(asked.exams).toEqual([]);
    expect(asked.ownershipChecks).toEqual([{ patientExamId: 555, examId: GFE.examId, deliveryId: expect.any(String) }]);
    expect(asked.received.at(-1)).toMatchObject({ disposition: 'buffered', note: expect.stringMatching(/checking/) });
    expect(asked.attention.map((a) => a.code)).toEqual(['invite_ambiguous']);
    const proven = reduce(asked, { type: 'ownership_checked', at: at(2_000), patientExamId: 555 });
    expect(proven.ownershipChecks).toEqual([]);
    expect(proven.exams).toEqual([
      expect.objectContaining({ patientExamId: 555, examId: GFE.examId, status: 'Approved' }),
    ]);
    expect(proven.received.map((r) => r.disposition)).toEqual(['applied']);
    expect(proven.attention).toEqual([]);
    expect(proven.resolvedAttention).toEqual([
      expect.objectContaining({ code: 'invite_ambiguous', why: expect.stringMatching(/no other journey holds it/) }),
    ]);
    expect(searchAttributesOf(proven).PatientExamIds).toEqual(['555']);
  });

  it('holds for a person every callback of a claim that is refused, and keeps the doubt open', () => {
    const asked = run(inDoubt(), [
      claim(556, GFE.examId, 1_000, 'Deferred to Medical Director'),
      claim(556, GFE.examId, 1_500),
    ]);
    expect(asked.ownershipChecks).toHaveLength(1);
    expect(asked.received.map((r) => r.note)).toEqual([
      expect.stringMatching(/checking that patient exam 556/),
      expect.stringMatching(/waiting for the check that patient exam 556/),
    ]);
    const refused = reduce(asked, {
      type: 'ownership_checked',
      at: at(2_000),
      patientExamId: 556,
      refused: 'another journey holds it',
    });
    expect(refused.exams).toEqual([]);
    expect(refused.pending).toEqual([]);
    expect(refused.received.map((r) => r.disposition)).toEqual(['held', 'held']);
    expect(refused.attention.map((a) => a.code)).toEqual(['invite_ambiguous', 'callback_held', 'callback_held']);
    expect(refused.attention[1]!.message).toMatch(
      /claims patient exam 556 for the invite in doubt, but another journey holds it/,
    );
    expect(searchAttributesOf(refused).PatientExamIds).toEqual([]);
  });

  it('holds at once a callback for an exam the invite did not ask for, and a shipment for journeys started before', () => {
    const before = run(
      initialState(input({ type: 'gfe' }, [GFE.examId], DEFAULT_TIMINGS), at(), { shipmentsAwaitProof: false }),
      [
        { type: 'catalog_checked', at: at(), exams: [GFE] },
        { type: 'invite_started', at: at() },
        { type: 'invite_not_created', at: at(), ambiguousExams: [GFE.examId] },
      ],
    );
    const shipment = reduce(before, cb(ev3(557, 900), 1_000));
    expect(shipment.ownershipChecks).toEqual([]);
    expect(shipment.received.at(-1)).toMatchObject({
      disposition: 'held',
      note: expect.stringMatching(/a shipment cannot prove/),
    });
    const other = reduce(inDoubt(), claim(558, 99));
    expect(other.ownershipChecks).toEqual([]);
    expect(other.received.at(-1)).toMatchObject({
      disposition: 'held',
      note: expect.stringMatching(/not an exam the invite in doubt asked for/),
    });
  });

  it('keeps a shipment that came first (3, 2, 1) until event 2 or 1 proves its patient exam, then applies all in order', () => {
    const rxInDoubt = run(
      initialState(input({ type: 'partner_pharmacy', pharmacyId: 1 }, [RX.examId], DEFAULT_TIMINGS), at()),
      [
        { type: 'catalog_checked', at: at(), exams: [RX] },
        { type: 'invite_started', at: at() },
        { type: 'invite_not_created', at: at(), ambiguousExams: [RX.examId] },
        { type: 'attention_needed', at: at(), attention: { code: 'invite_ambiguous', message: 'in doubt', facts: {} } },
      ],
    );
    const withPatient = (c: JourneyCallback) => ({ ...c, patientEmail: 'p@example.com' }) as JourneyCallback;
    const early = run(rxInDoubt, [
      cb(ev3(560, 501), 1_000),
      cb(withPatient(ev2(560, [501])), 1_100),
      cb(withPatient(withExam(ev1(560, 'Approved', 'Approved'), RX.examId)), 1_200),
    ]);
    expect(early.received.map((r) => r.disposition)).toEqual(['buffered', 'buffered', 'buffered']);
    expect(early.received[0]!.note).toMatch(/a shipment cannot prove .*; waiting for a callback of patient exam 560/);
    expect(early.ownershipChecks).toEqual([{ patientExamId: 560, examId: RX.examId, deliveryId: expect.any(String) }]);
    expect(early.attention.map((a) => a.code)).toEqual(['invite_ambiguous']);

    const proven = reduce(early, { type: 'ownership_checked', at: at(2_000), patientExamId: 560 });
    expect(proven.received.map((r) => r.disposition)).toEqual(['applied', 'applied', 'applied']);
    expect(proven.attention).toEqual([]);
    expect(proven.exams).toEqual([
      expect.objectContaining({
        patientExamId: 560,
        prescriptions: [expect.objectContaining({ prescriptionId: 501, tracking: expect.anything() })],
      }),
    ]);
    expect(stageOf(proven)).toBe('completed');

    // Refused, the shipment goes to a person with the check's reason, as the others do.
    const refused = reduce(early, {
      type: 'ownership_checked',
      at: at(2_000),
      patientExamId: 560,
      refused: "its patient is not this journey's",
    });
    expect(refused.received.map((r) => r.disposition)).toEqual(['held', 'held', 'held']);
    expect(refused.exams).toEqual([]);
  });

  it('claims a callback that came while the invite was on the wire once the attempt ends in doubt', () => {
    const s = run(initialState(input({ type: 'gfe' }, [GFE.examId], DEFAULT_TIMINGS), at()), [
      { type: 'catalog_checked', at: at(), exams: [GFE] },
      { type: 'invite_started', at: at() },
      claim(559),
      { type: 'invite_not_created', at: at(2_000), ambiguousExams: [GFE.examId] },
    ]);
    expect(s.exams).toEqual([]);
    expect(s.ownershipChecks).toEqual([expect.objectContaining({ patientExamId: 559 })]);
    const proven = reduce(s, { type: 'ownership_checked', at: at(3_000), patientExamId: 559 });
    expect(proven.exams).toEqual([expect.objectContaining({ patientExamId: 559, status: 'Approved' })]);
  });
});

describe('journey reducer: timers', () => {
  it('schedules reminders at 24 h and 72 h, then the 7-day expiry', () => {
    let s = invited({ type: 'gfe' }, [GFE]);
    expect(nextDeadline(s)).toBe(T0 + 24 * HOUR);
    expect(dueActions(s, T0 + 24 * HOUR)).toEqual([{ type: 'send_reminder', meetingUuid: 'm-1', patientExamId: 100 }]);
    s = reduce(s, { type: 'reminder_sent', at: at(24 * HOUR), meetingUuid: 'm-1' });
    expect(nextDeadline(s)).toBe(T0 + 72 * HOUR);
    s = reduce(s, { type: 'reminder_sent', at: at(72 * HOUR), meetingUuid: 'm-1' });
    expect(nextDeadline(s)).toBe(T0 + 7 * DAY);
    expect(dueActions(s, T0 + 7 * DAY)).toEqual([
      { type: 'expire_meeting', meetingUuid: 'm-1', patientExamIds: [100] },
    ]);
    s = run(s, [
      { type: 'exam_cancelled', at: at(7 * DAY), patientExamId: 100, by: 'expiry' },
      { type: 'expiry_handled', at: at(7 * DAY), meetingUuid: 'm-1' },
    ]);
    expect(s.exams[0]!.status).toBe('expired');
    expect(stageOf(s)).toBe('completed');
    expect(nextDeadline(s)).toBeNull();
  });

  it('stops reminding once event 1 came', () => {
    const s = reduce(invited({ type: 'gfe' }, [GFE, { ...GFE, examId: 12 }]), cb(ev1(100)));
    expect(dueActions(s, T0 + 24 * HOUR)).toEqual([{ type: 'send_reminder', meetingUuid: 'm-1', patientExamId: 101 }]);
    const both = reduce(s, cb(ev1(101)));
    expect(dueActions(both, T0 + 30 * DAY)).toEqual([]);
  });

  it('marks a lost verdict found at expiry and waits for an operator', () => {
    let s = invited({ type: 'partner_pharmacy', pharmacyId: 1 }, [RX]);
    s = run(s, [
      { type: 'expiry_found_verdict', at: at(7 * DAY), patientExamId: 100, status: 'Approved' },
      {
        type: 'attention_needed',
        at: at(7 * DAY),
        attention: { code: 'verdict_lost', message: 'lost', patientExamId: 100, facts: {} },
      },
    ]);
    expect(stageOf(s)).toBe('needs_attention');
    expect(searchAttributesOf(s).NeedsAttention).toBe(true);
    expect(nextDeadline(s)).toBeNull();
    s = reduce(s, { type: 'attention_resolved', at: at(7 * DAY + HOUR) });
    expect(stageOf(s)).toBe('awaiting_prescription');
    // the late callback still fills in the details, without changing the verdict time
    s = reduce(s, cb(ev1(100), 7 * DAY + 2 * HOUR));
    expect(s.exams[0]).toMatchObject({
      verdictSource: 'callback',
      verdictAt: at(7 * DAY),
      examUrl: 'https://x/record.pdf',
    });
  });

  it('flags an overdue prescription after 3 days and gives up at the hard limit', () => {
    let s = reduce(invited({ type: 'urgent_care', pharmacy: { ncpdpid: '1' } }, [RX]), cb(ev1(100), 0));
    expect(dueActions(s, T0 + 3 * DAY)).toEqual([{ type: 'prescription_overdue', patientExamId: 100 }]);
    s = reduce(s, { type: 'prescription_overdue', at: at(3 * DAY), patientExamId: 100 });
    expect(stageOf(s)).toBe('awaiting_prescription');
    expect(nextDeadline(s)).toBe(T0 + 14 * DAY);
    s = reduce(s, { type: 'gave_up_waiting', at: at(14 * DAY), patientExamId: 100, what: 'prescription' });
    expect(stageOf(s)).toBe('completed');
    expect(snapshot(s).exams[0]).toMatchObject({ prescriptionOverdue: true, gaveUpWaiting: 'prescription' });
  });

  it('flags overdue tracking 10 days after event 2', () => {
    let s = invited({ type: 'partner_pharmacy', pharmacyId: 1 }, [RX]);
    s = run(s, [cb(ev1(100), 0), cb(ev2(100), DAY)]);
    expect(dueActions(s, T0 + 11 * DAY)).toEqual([{ type: 'tracking_overdue', patientExamId: 100 }]);
    s = reduce(s, { type: 'tracking_overdue', at: at(11 * DAY), patientExamId: 100 });
    expect(nextDeadline(s)).toBe(T0 + 31 * DAY);
  });

  it('re-invites after Missed when enabled, at most N times', () => {
    const timings = { ...DEFAULT_TIMINGS, reinviteMaxAttempts: 1, reinviteCoolDownMs: HOUR };
    let s = invited({ type: 'gfe' }, [GFE], timings);
    s = reduce(s, cb(ev1(100, 'Missed'), 0));
    expect(stageOf(s)).toBe('awaiting_reinvite');
    expect(dueActions(s, T0 + HOUR)).toEqual([{ type: 'reinvite', patientExamId: 100, examId: GFE.examId }]);
    s = run(s, [
      { type: 'invite_started', at: at(HOUR) },
      {
        type: 'invite_created',
        at: at(HOUR),
        meetingUuid: 'm-2',
        meetingUrl: 'u2',
        patientExams: [{ patientExamId: 200, examId: GFE.examId, examTitle: GFE.title }],
        reinviteOf: 100,
      },
    ]);
    expect(s.exams.map((e) => [e.patientExamId, e.reinvitedAs, e.reinviteOf])).toEqual([
      [100, 200, null],
      [200, null, 100],
    ]);
    s = reduce(s, cb(ev1(200, 'Missed'), 2 * HOUR));
    expect(stageOf(s)).toBe('completed');
  });

  it('does not re-invite when it is off (the default)', () => {
    const s = reduce(invited({ type: 'gfe' }, [GFE]), cb(ev1(100, 'NA'), 0));
    expect(stageOf(s)).toBe('completed');
  });
});

describe('journey reducer: ends', () => {
  it('is cancelled when every exam is cancelled, completed when some had a verdict', () => {
    const s = invited({ type: 'gfe' }, [GFE, { ...GFE, examId: 12 }]);
    const all = run(s, [
      { type: 'exam_cancelled', at: at(1), patientExamId: 100, by: 'clinic' },
      { type: 'exam_cancelled', at: at(1), patientExamId: 101, by: 'clinic' },
    ]);
    expect(stageOf(all)).toBe('cancelled');
    const some = run(s, [cb(ev1(100)), { type: 'exam_cancelled', at: at(1), patientExamId: 101, by: 'clinic' }]);
    expect(stageOf(some)).toBe('completed');
  });

  it('ignores a verdict for an exam already cancelled', () => {
    const s = run(invited({ type: 'gfe' }, [GFE]), [
      { type: 'exam_cancelled', at: at(1), patientExamId: 100, by: 'clinic' },
      cb(ev1(100)),
    ]);
    expect(s.exams[0]!.status).toBe('cancelled');
    expect(s.received[0]).toMatchObject({ disposition: 'ignored', note: 'exam already cancelled' });
  });

  it('reports its deadlines in the snapshot', () => {
    const snap = snapshot(invited({ type: 'gfe' }, [GFE]));
    expect(snap.deadlines).toEqual([
      { at: at(24 * HOUR), action: 'send_reminder', patientExamId: 100, meetingUuid: 'm-1' },
      { at: at(7 * DAY), action: 'expire_meeting', meetingUuid: 'm-1' },
    ]);
  });
});

describe('catalog rules', () => {
  const catalog: CatalogEntry[] = [
    { examId: 11, title: 'GFE', rxType: 1, attachmentsRequired: 1, attachments: [] },
    { examId: 12, title: 'GFE with labs', rxType: 1, attachmentsRequired: 2, attachments: ['Lab'] },
    { examId: 21, title: 'Rx A', rxType: 2, attachmentsRequired: 1, attachments: [] },
    { examId: 22, title: 'Rx B', rxType: 2, attachmentsRequired: 1, attachments: [] },
  ];
  const att = (examId: number, kind: string) => ({
    examId,
    attachment: { ref: 'att_0123456789', kind, fileName: 'f.pdf', contentType: 'application/pdf', size: 10 },
  });

  it('accepts stacked GFEs with one prescription exam', () => {
    expect(
      checkAgainstCatalog(
        { exams: [11, 12, 21], scenario: { type: 'partner_pharmacy', pharmacyId: 1 }, attachments: [att(12, 'Lab')] },
        catalog,
      ),
    ).toEqual([]);
  });
  it('refuses two prescription exams', () => {
    expect(
      checkAgainstCatalog({ exams: [21, 22], scenario: { type: 'partner_pharmacy', pharmacyId: 1 } }, catalog),
    ).toEqual([
      { field: 'exams', message: expect.stringContaining('only one prescription exam'), rule: 'one-prescription-exam' },
    ]);
  });
  it('refuses an unknown exam, naming its position', () => {
    expect(checkAgainstCatalog({ exams: [11, 99], scenario: { type: 'gfe' } }, catalog)[0]!.field).toBe('exams.1');
  });
  it('matches the scenario to rx_type both ways', () => {
    expect(checkAgainstCatalog({ exams: [21], scenario: { type: 'gfe' } }, catalog)[0]!.field).toBe('scenario.type');
    expect(
      checkAgainstCatalog({ exams: [11], scenario: { type: 'urgent_care', pharmacy: { ncpdpid: '1' } } }, catalog)[0]!
        .field,
    ).toBe('scenario.type');
  });
  it('requires the named attachments of an exam with attachments_required 2', () => {
    const issues = checkAgainstCatalog(
      { exams: [12], scenario: { type: 'gfe' }, attachments: [att(12, 'ID')] },
      catalog,
    );
    expect(issues).toEqual([
      { field: 'attachments', message: 'exam 12 requires attachments: missing Lab', rule: 'attachments-required' },
    ]);
  });
});
