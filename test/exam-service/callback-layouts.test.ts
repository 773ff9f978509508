// Contract tests of the callback layouts public receivers were written for (docs/callback-layouts.md). The fixtures
// are ours (our words, our values), shaped as those receivers read the service's callbacks: each one parses, and a
// journey fed with them ends where the interface's layout would have taken it.
import { readCallback } from '../../src/inbox/reading';
import { normalizeVerdict } from '../../src/exam-service/callback-layouts';
import { EXAM_STATUSES } from '../../src/exam-service/schemas';
import { DEFAULT_TIMINGS, type JourneyInput, type Scenario } from '../../src/contract/journey-request';
import {
  dueActions,
  initialState,
  isUnread,
  nextDeadline,
  reduce,
  snapshot,
  stageOf,
  type JourneyCallback,
  type JourneyState,
  type UnreadCallback,
} from '../../src/workflows/journey-state';

const T0 = Date.parse('2026-03-02T09:00:00.000Z');
const at = (ms = 0) => new Date(T0 + ms).toISOString();
const EXAM_ID = 4411;

// ---- fixtures: one per layout -----------------------------------------------------------------------------------

const consultation = (pe: number | string, verdict: string) => ({
  event: 1,
  reason: 'Reviewed history with the patient.',
  exam_id: String(EXAM_ID),
  exam_url: 'https://records.example.test/r/abc.pdf?expires=2026-03-03',
  exam_name: 'Sample Weight Program',
  exam_status: verdict,
  rx_status: null,
  clinic_name: 'Harbor Street Clinic',
  patient_email: 'jordan.sample@example.test',
  patient_phone_number: '5550001111',
  patient_exam_id: String(pe),
  provider_name: 'Casey Example, NP',
  additional_data: '{"ref":"x-1"}',
  questions_answers: [{ no: 1, question: 'Any allergies?', answer: 'None' }],
});

/** Event 2, flat: one drug at the top level, its names under drug_details, quantity a number. */
const flatPrescription = (pe: number, prescriptionId: number, drug: string) => ({
  event: 2,
  reason: 'Plan agreed.',
  exam_id: String(EXAM_ID),
  exam_url: 'https://records.example.test/r/def.pdf',
  exam_name: 'Sample Weight Program',
  exam_status: 'Approved',
  rx_status: 'Pharmacy Confirmed',
  clinic_name: 'Harbor Street Clinic',
  patient_email: 'jordan.sample@example.test',
  patient_phone_number: '5550001111',
  provider_name: 'Casey Example, NP',
  patient_exam_id: String(pe),
  prescription_id: prescriptionId,
  drug_details: {
    drug_name: drug,
    strength: '10 mg',
    size: '1 vial',
    dosage_form_type: 'Injectable',
    ndc_number: '00000-0000-00',
    gpi_number: '0000000000',
    active_ingredient: drug,
    inactive_ingredient: ['water'],
  },
  quantity: 4,
  quantity_units: 'mL',
  directions: 'Once a week.',
  duration_days: 28,
  refill_amount: 0,
  schedule_code: '',
  dispense_number: 1,
  questions_answers: [],
});

/** Event 3, tracking array: no patient_exam_id, no prescription_id. */
const trackingArray = (...numbers: string[]) => ({
  event: 3,
  prescription_tracking: numbers.map((n) => ({
    rx_number: `RX-${n}`,
    tracking_number: n,
    delivery_service: 'Standard',
    ship_carrier: 'UPS',
    pharmacy_location: 'Springfield, IL',
  })),
  created_at: '2026-03-04T12:00:00Z',
});

/** The interface's event 2, for the mixed journeys; with the pharmacy's rx number of each drug when given. */
const interfaceEvent2 = (pe: number, ids: number[], rxNumbers: string[] = []) => ({
  event: 2,
  exam_id: EXAM_ID,
  patient_exam_id: pe,
  rx_status: 'Pharmacy Confirmed',
  prescribed_os_id: 77,
  prescription: ids.map((id, i) => ({
    prescription_id: id,
    drug_name: `Drug ${id}`,
    ...(rxNumbers[i] ? { prescription_tracking: [{ rx_number: rxNumbers[i], tracking_number: null }] } : {}),
  })),
});

/** Event 3 as a tracking array of one shipment with the given rx number. */
const shipmentWithRx = (trackingNumber: string, rxNumber: string) => ({
  event: 3,
  prescription_tracking: [{ rx_number: rxNumber, tracking_number: trackingNumber, ship_carrier: 'UPS' }],
  created_at: '2026-03-04T12:00:00Z',
});

/** The interface's event 3. */
const interfaceEvent3 = (pe: number, prescriptionId: number, trackingNumber: string) => ({
  event: 3,
  patient_exam_id: String(pe),
  prescription_id: String(prescriptionId),
  tracking_number: trackingNumber,
  delivery_service: 'Standard',
});

// ---- reading ----------------------------------------------------------------------------------------------------

function read(body: unknown): JourneyCallback | UnreadCallback {
  const r = readCallback(JSON.stringify(body));
  if (!r.ok) throw new Error(`not read: ${r.issues.join('; ')}`);
  return r.callback;
}

describe('verdict spellings', () => {
  it.each([
    ['Approved', 'Approved'],
    ['approved', 'Approved'],
    ['APPROVED ', 'Approved'],
    ['Rejected', 'Rejected'],
    ['rejected', 'Rejected'],
    ['Deferred to Medical Director', 'Deferred to Medical Director'],
    ['deferred to medical director', 'Deferred to Medical Director'],
    ['Deferred', 'Deferred to Medical Director'],
    ['NA', 'NA'],
    ['N/A', 'NA'],
    ['n/a', 'NA'],
    ['na', 'NA'],
    ['Not Applicable', 'NA'],
    ['not available', 'NA'],
    ['Missed', 'Missed'],
    ['missed', 'Missed'],
  ])('%j is %s', (spelling, verdict) => {
    expect(normalizeVerdict(spelling)).toBe(verdict);
    expect(read(consultation(9001, spelling))).toMatchObject({ event: 1, patientExamId: 9001, examStatus: verdict });
  });

  it('keeps the interface spelling as the interface layout, and names a known other spelling', () => {
    for (const v of EXAM_STATUSES) expect(read(consultation(9001, v))).not.toHaveProperty('layout');
    expect(read(consultation(9001, 'N/A'))).toMatchObject({ layout: 'verdict-spelling' });
  });

  it('holds an unknown verdict for a person instead of guessing', () => {
    expect(normalizeVerdict('Pending review')).toBeNull();
    expect(read(consultation(9001, 'Pending review'))).toMatchObject({
      event: 1,
      unread: true,
      patientExamId: 9001,
      reason: expect.stringMatching(/exam_status/),
    });
  });
});

describe('layouts', () => {
  it('event number as a string', () => {
    expect(read({ ...consultation(9002, 'Approved'), event: '1' })).toMatchObject({
      event: 1,
      examStatus: 'Approved',
      layout: 'string-event',
    });
  });

  it('event 2 with one drug at the top level (flat prescription)', () => {
    expect(read(flatPrescription(9003, 5101, 'Sampleglutide'))).toEqual({
      event: 2,
      patientExamId: 9003,
      examId: EXAM_ID,
      rxStatus: 'Pharmacy Confirmed',
      prescribedOrderSetId: null,
      prescriptions: [
        { prescriptionId: 5101, drugName: 'Sampleglutide', strength: '10 mg', quantity: '4', pharmacyName: null },
      ],
      partial: true,
      // The patient the service names: what proves a patient exam of an invite in doubt is the journey's own.
      patientEmail: 'jordan.sample@example.test',
      layout: 'flat-prescription',
    });
  });

  it('event 3 as a tracking array without patient_exam_id or prescription_id', () => {
    expect(read(trackingArray('1ZSAMPLE0001'))).toEqual({
      event: 3,
      trackingNumber: '1ZSAMPLE0001',
      deliveryService: 'Standard',
      pharmacyLocation: 'Springfield, IL',
      orderId: null,
      rxNumber: 'RX-1ZSAMPLE0001',
      layout: 'tracking-array',
    });
    expect(read(trackingArray('1ZA', '1ZB'))).toMatchObject({
      trackingNumber: '1ZA',
      moreTracking: [{ trackingNumber: '1ZB', rxNumber: 'RX-1ZB' }],
    });
  });

  it('event 3 flat but without patient_exam_id', () => {
    expect(read({ event: 3, prescription_id: '5101', tracking_number: '9400SAMPLE', order_id: 'ORD-1' })).toEqual({
      event: 3,
      prescriptionId: 5101,
      trackingNumber: '9400SAMPLE',
      deliveryService: null,
      pharmacyLocation: null,
      orderId: 'ORD-1',
      layout: 'no-patient-exam-id',
    });
  });

  it('anything else with an event number is read as unread, with the reason and the patient exam when known', () => {
    expect(read({ event: 4, patient_exam_id: 9004 })).toMatchObject({ event: 4, unread: true, patientExamId: 9004 });
    expect(read({ event: 2, patient_exam_id: 9004 })).toMatchObject({ event: 2, unread: true });
    expect(read({ event: 3, prescription_tracking: [] })).toMatchObject({ event: 3, unread: true });
    expect(isUnread(read({ event: '1', patient_exam_id: 'x' }))).toBe(true);
  });

  it('refuses only what is not JSON, or JSON without an event number', () => {
    expect(readCallback('{"event": 1,')).toEqual({ ok: false, issues: ['(body): is not JSON'] });
    expect(readCallback('[1,2]')).toMatchObject({ ok: false });
    expect(readCallback('{"patient_exam_id": 3}')).toEqual({ ok: false, issues: ['event: is not an event number'] });
    expect(readCallback('{"event": "one"}')).toMatchObject({ ok: false });
  });
});

// ---- journeys ---------------------------------------------------------------------------------------------------

const RX = { examId: EXAM_ID, title: 'Sample Weight Program', rxType: 2 as const };
const GFE = { examId: 4401, title: 'Sample Clearance', rxType: 1 as const };

function invited(scenario: Scenario, exam: typeof RX | typeof GFE, pe: number): JourneyState {
  const input: JourneyInput = {
    clinicId: 'clinic-s',
    journeyId: 'js',
    patient: {
      firstName: 'Test',
      lastName: 'Approve',
      email: 'p@example.test',
      dob: '1990-01-01',
      phoneNumber: '5550001111',
      teleState: 'TE',
    },
    exams: [exam.examId],
    scenario,
    timings: DEFAULT_TIMINGS,
  };
  return [
    { type: 'catalog_checked' as const, at: at(), exams: [exam] },
    { type: 'invite_started' as const, at: at() },
    {
      type: 'invite_created' as const,
      at: at(),
      meetingUuid: 'm-s',
      meetingUrl: 'https://meet.example.test/m-s',
      patientExams: [{ patientExamId: pe, examId: exam.examId, examTitle: exam.title }],
    },
  ].reduce(reduce, initialState(input, at()));
}

let delivery = 0;
function deliverOnly(state: JourneyState, ...bodies: unknown[]): JourneyState {
  return bodies.reduce<JourneyState>(
    (s, body) =>
      reduce(s, { type: 'callback', at: at(++delivery * 1000), deliveryId: `d${delivery}`, callback: read(body) }),
    state,
  );
}

/** The workflow's timer after drugs one per event 2: the grace for more runs out. */
function settleDrugs(state: JourneyState): JourneyState {
  let s = state;
  for (const a of dueActions(s, Number.MAX_SAFE_INTEGER)) {
    if (a.type === 'drugs_settled') {
      s = reduce(s, { type: 'drugs_settled', at: at(++delivery * 1000), patientExamId: a.patientExamId });
    }
  }
  return s;
}

/** The callbacks in order, then the time passes that nothing more comes. */
function deliver(state: JourneyState, ...bodies: unknown[]): JourneyState {
  return settleDrugs(deliverOnly(state, ...bodies));
}

const partner: Scenario = { type: 'partner_pharmacy', pharmacyId: 501, orderSetId: '8101' };
const custom: Scenario = {
  type: 'custom_pharmacy',
  pharmacy: { ncpdpid: '1234567', name: 'Sample Drug', state: 'TX', zipCode: '73301' },
  patientChoice: 1,
};

describe('journeys fed with the other layouts', () => {
  it('partner pharmacy: verdict spelling, flat event 2 per drug, tracking arrays without ids', () => {
    let s = invited(partner, RX, 9100);
    s = deliver(s, consultation(9100, 'approved'), flatPrescription(9100, 5201, 'Drug A'));
    s = deliver(s, flatPrescription(9100, 5202, 'Drug B'));
    expect(stageOf(s)).toBe('awaiting_tracking');
    s = deliver(s, trackingArray('1ZFIRST'));
    expect(stageOf(s)).toBe('awaiting_tracking');
    s = deliver(s, trackingArray('1ZSECOND'));
    expect(stageOf(s)).toBe('completed');
    const snap = snapshot(s);
    expect(snap.exams[0]!.prescriptions.map((rx) => [rx.prescriptionId, rx.tracking?.trackingNumber])).toEqual([
      [5201, '1ZFIRST'],
      [5202, '1ZSECOND'],
    ]);
    expect(snap.events.map((e) => [e.event, e.patientExamId, e.prescriptionId, e.disposition, e.layout])).toEqual([
      [1, 9100, undefined, 'applied', 'verdict-spelling'],
      [2, 9100, 5201, 'applied', 'flat-prescription'],
      [2, 9100, 5202, 'applied', 'flat-prescription'],
      [3, 9100, 5201, 'applied', 'tracking-array'],
      [3, 9100, 5202, 'applied', 'tracking-array'],
    ]);
  });

  it('partner pharmacy, out of order: a tracking array before events 1 and 2 waits for them', () => {
    let s = invited(partner, RX, 9101);
    s = deliver(s, trackingArray('1ZONE', '1ZTWO'), trackingArray('1ZONE', '1ZTWO'));
    expect(snapshot(s).events.map((e) => e.disposition)).toEqual(['buffered', 'duplicate']);
    s = deliver(s, interfaceEvent2(9101, [5301, 5302]), consultation(9101, 'Approved'));
    expect(stageOf(s)).toBe('completed');
    expect(snapshot(s).exams[0]!.prescriptions.map((rx) => rx.tracking?.trackingNumber)).toEqual(['1ZONE', '1ZTWO']);
  });

  it('partner pharmacy: a tracking array is paired with its prescription by the rx number event 2 gave it', () => {
    let s = invited(partner, RX, 9110);
    s = deliver(s, consultation(9110, 'Approved'), interfaceEvent2(9110, [5601, 5602], ['RX-PH-77', 'RX-PH-78']));
    // The second drug ships first.
    s = deliver(s, shipmentWithRx('1ZSECOND', 'RX-PH-78'), shipmentWithRx('1ZSECOND', 'RX-PH-78'));
    expect(stageOf(s)).toBe('awaiting_tracking');
    s = deliver(s, shipmentWithRx('1ZFIRST', 'RX-PH-77'));
    expect(stageOf(s)).toBe('completed');
    const snap = snapshot(s);
    expect(snap.exams[0]!.prescriptions.map((rx) => [rx.prescriptionId, rx.tracking?.trackingNumber])).toEqual([
      [5601, '1ZFIRST'],
      [5602, '1ZSECOND'],
    ]);
    // Copies are recorded against the prescription that has the shipment, with the tracking number they carried.
    expect(snap.events.slice(2).map((e) => [e.prescriptionId, e.trackingNumber, e.disposition])).toEqual([
      [5602, '1ZSECOND', 'applied'],
      [5602, '1ZSECOND', 'duplicate'],
      [5601, '1ZFIRST', 'applied'],
    ]);
  });

  it('partner pharmacy, flat event 2: an event 3 before its drug waits for that drug instead of being ignored', () => {
    let s = invited(partner, RX, 9111);
    s = deliver(s, consultation(9111, 'Approved'), flatPrescription(9111, 5701, 'Drug A'));
    s = deliver(s, interfaceEvent3(9111, 5702, '1ZB'), interfaceEvent3(9111, 5701, '1ZA'));
    // Drug A shipped, and a shipment waits for drug B's event 2: not complete.
    expect(snapshot(s).events.map((e) => e.disposition)).toEqual(['applied', 'applied', 'buffered', 'applied']);
    expect(stageOf(s)).toBe('awaiting_prescription');
    s = deliver(s, flatPrescription(9111, 5702, 'Drug B'));
    expect(stageOf(s)).toBe('completed');
    expect(snapshot(s).exams[0]!.prescriptions.map((rx) => [rx.prescriptionId, rx.tracking?.trackingNumber])).toEqual([
      [5701, '1ZA'],
      [5702, '1ZB'],
    ]);
  });

  it('partner pharmacy, flat event 2 and tracking arrays newest first: each shipment ends on the drug it names', () => {
    let s = invited(partner, RX, 9112);
    // The out-of-order fault: event 3 of the second drug, of the first, the drugs' event 2s, event 1.
    s = deliver(
      s,
      shipmentWithRx('1ZB', 'RX5802'),
      shipmentWithRx('1ZA', 'RX5801'),
      flatPrescription(9112, 5801, 'Drug A'),
      flatPrescription(9112, 5802, 'Drug B'),
      consultation(9112, 'approved'),
    );
    expect(stageOf(s)).toBe('completed');
    const snap = snapshot(s);
    expect(snap.attention).toEqual([]);
    expect(snap.exams[0]!.prescriptions.map((rx) => [rx.prescriptionId, rx.tracking?.trackingNumber])).toEqual([
      [5801, '1ZA'],
      [5802, '1ZB'],
    ]);
    expect(snap.events.filter((e) => e.event === 3).map((e) => [e.trackingNumber, e.prescriptionId])).toEqual([
      ['1ZB', 5802],
      ['1ZA', 5801],
    ]);
  });

  it('journeys started before these rules keep pairing by order (their histories replay as they ran)', () => {
    let s: JourneyState = { ...invited(partner, RX, 9113), callbackRules: 1 };
    s = deliver(s, consultation(9113, 'Approved'), interfaceEvent2(9113, [5901, 5902], ['RX-1', 'RX-2']));
    s = deliver(s, shipmentWithRx('1ZSECOND', 'RX-2'), shipmentWithRx('1ZFIRST', 'RX-1'));
    expect(snapshot(s).exams[0]!.prescriptions.map((rx) => rx.tracking?.trackingNumber)).toEqual([
      '1ZSECOND',
      '1ZFIRST',
    ]);
  });

  it('a tracking array whose rx number names a prescription that has shipped otherwise is held, not guessed', () => {
    let s = invited(partner, RX, 9114);
    s = deliver(s, consultation(9114, 'Approved'), interfaceEvent2(9114, [6001, 6002], ['RX-A', 'RX-B']));
    s = deliver(s, shipmentWithRx('1ZONE', 'RX-A'), shipmentWithRx('1ZOTHER', 'RX-A'));
    expect(snapshot(s).events.at(-1)).toMatchObject({ disposition: 'held', note: expect.stringMatching(/rx number/) });
    expect(snapshot(s).exams[0]!.prescriptions.map((rx) => rx.tracking?.trackingNumber ?? null)).toEqual([
      '1ZONE',
      null,
    ]);
  });

  it('custom pharmacy: flat event 2 completes the journey once the grace for more drugs has run out', () => {
    let s = invited(custom, RX, 9102);
    s = deliverOnly(s, { ...consultation(9102, 'Approved'), event: '1' }, flatPrescription(9102, 5401, 'Drug C'));
    // Another drug may still come (one per event 2): the exam waits 15 minutes after the last.
    expect(stageOf(s)).toBe('awaiting_prescription');
    expect(nextDeadline(s)).toBe(Date.parse(s.updatedAt) + 15 * 60_000);
    const late = deliverOnly(s, flatPrescription(9102, 5402, 'Drug D'));
    expect(snapshot(late).exams[0]!.prescriptions.map((rx) => rx.prescriptionId)).toEqual([5401, 5402]);
    s = settleDrugs(s);
    expect(stageOf(s)).toBe('completed');
    expect(snapshot(s).exams[0]).toMatchObject({
      rxStatus: 'Pharmacy Confirmed',
      prescriptions: [{ prescriptionId: 5401 }],
    });
  });

  it.each([
    ['Deferred', 'Deferred to Medical Director', 'awaiting_final_verdict'],
    ['N/A', 'NA', 'completed'],
    ['rejected', 'Rejected', 'completed'],
  ])('GFE: verdict %j is read as %s (stage %s)', (spelling, verdict, stage) => {
    const s = deliver(invited({ type: 'gfe' }, GFE, 9103), consultation(9103, spelling));
    expect(snapshot(s).exams[0]!.status).toBe(verdict);
    // A deferral waits for the medical director's final verdict.
    expect(stageOf(s)).toBe(stage);
  });

  it('an unreadable callback is held for a person: recorded with the reason, the journey needs attention', () => {
    const s = deliver(invited({ type: 'gfe' }, GFE, 9104), consultation(9104, 'Under review'), { event: 9 });
    const snap = snapshot(s);
    expect(snap.stage).toBe('needs_attention');
    expect(snap.events).toEqual([
      expect.objectContaining({
        event: 1,
        patientExamId: 9104,
        disposition: 'held',
        note: expect.stringMatching(/exam_status/),
      }),
      expect.objectContaining({
        event: 9,
        patientExamId: null,
        disposition: 'held',
        note: expect.stringMatching(/event 9/),
      }),
    ]);
    expect(snap.attention.map((a) => [a.code, a.facts.event])).toEqual([
      ['callback_held', 1],
      ['callback_held', 9],
    ]);
    // The operator acts, then retries: the journey waits for its verdict again.
    expect(stageOf(reduce(s, { type: 'attention_resolved', at: at(60_000) }))).toBe('awaiting_consultation');
  });

  it('a tracking array for a journey without a partner exam is held, never dropped', () => {
    let s = deliver(invited(custom, RX, 9105), consultation(9105, 'Approved'), interfaceEvent2(9105, [5501]));
    expect(stageOf(s)).toBe('completed');
    s = deliver(invited(custom, RX, 9106), consultation(9106, 'Approved'), trackingArray('1ZNOPE'));
    expect(snapshot(s).events[1]).toMatchObject({
      event: 3,
      disposition: 'held',
      note: expect.stringMatching(/no partner/),
    });
    expect(snapshot(s).attention).toEqual([expect.objectContaining({ code: 'callback_held' })]);
  });
});
