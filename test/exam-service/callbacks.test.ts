import { CallbackEvent, Event1, Event2, Event3, parseCallback } from '../../src/exam-service/schemas';

// Spec forms: event 1 and event 3 carry ids as strings, event 2 as integers.
const event1 = {
  event: 1,
  reason: 'Cleared for treatment.',
  exam_id: '101',
  exam_url: 'https://records.example.test/pdf/90001?expires=1700000000',
  exam_name: 'Good Faith Exam',
  exam_status: 'Approved',
  rx_status: null,
  clinic_name: 'Sandbox Demo Clinic',
  patient_email: 'pat@example.test',
  patient_phone_number: '+15125550100',
  patient_exam_id: '90001',
  provider_name: 'Dr. Riley Sandbox, MD',
  additional_data: '{"journey":"j-1"}',
  questions_answers: [{ no: 1, question: 'Which medications do you currently take?', answer: 'None' }],
};

const event2 = {
  event: 2,
  exam_id: 201,
  exam_name: 'Weight Loss - Partner Pharmacy Package',
  exam_status: 'Approved',
  exam_url: 'https://records.example.test/pdf/90002',
  rx_status: 'Pharmacy Confirmed',
  clinic_name: 'Sandbox Demo Clinic',
  patient_email: 'pat@example.test',
  patient_phone_number: '+15125550100',
  provider_name: 'Dr. Riley Sandbox, MD',
  reason: 'Approved',
  patient_exam_id: 90002,
  prescribed_os_id: 8101,
  prescription: [
    {
      prescription_id: 7001,
      drug_name: 'Semaglutide',
      dosage_form_type: 'Injectable',
      strength: '2.5 mg/mL',
      size: '2 mL',
      quantity: '1',
      quantity_units: 'vial',
      directions: 'Inject 0.25 mg weekly',
      duration_days: 28,
      refill_amount: 0,
      ndc_number: '00000-0000-00',
      gpi_number: '2717005000',
      active_ingredient: 'Semaglutide',
      inactive_ingredient: 'Sodium chloride',
      dispense_number: '1',
      schedule_code: '',
      pharmacy_name: 'Lone Star Compounding Pharmacy',
      pharmacy_contacts: [{ full_name: 'Pat Pharmacist', email: null, phone_number: '5125550111', role: 'PIC' }],
      prescription_tracking: [
        {
          rx_number: 'RX1',
          tracking_number: null,
          ship_carrier: null,
          delivery_service: null,
          pharmacy_location: null,
        },
      ],
      created_at: '2025-03-01T10:15:00Z',
    },
    { prescription_id: 7002, drug_name: 'Ondansetron', schedule_code: 'C3' },
  ],
  questions_answers: [
    {
      id: 20103,
      position: 3,
      question: 'Which of these conditions apply to you?',
      response_type: 3,
      responses: [{ response: 'Diabetes' }],
      answers: ['Diabetes', 'Other'],
      answer: ['Diabetes', 'Other: asthma'],
    },
  ],
};

const event3 = {
  event: 3,
  patient_exam_id: '90002',
  prescription_id: '7001',
  tracking_number: '1Z999AA10123456784',
  delivery_service: 'Overnight',
  pharmacy_location: 'Austin, TX',
  order_id: 'ORD-5501',
};

describe('parseCallback', () => {
  it('event 1 with string ids (spec form) and with integer ids gives the same numbers', () => {
    for (const payload of [event1, { ...event1, exam_id: 101, patient_exam_id: 90001 }]) {
      const result = parseCallback(payload);
      expect(result).toMatchObject({
        ok: true,
        event: { event: 1, patientExamId: 90001, examId: 101, examStatus: 'Approved' },
      });
    }
  });

  it('event 2 with integer ids (spec form) and with string ids gives the same numbers', () => {
    const asStrings = {
      ...event2,
      exam_id: '201',
      patient_exam_id: '90002',
      prescribed_os_id: '8101',
      prescription: event2.prescription.map((p) => ({ ...p, prescription_id: String(p.prescription_id) })),
    };
    for (const payload of [event2, asStrings]) {
      const result = parseCallback(payload);
      expect(result).toMatchObject({
        ok: true,
        event: { event: 2, patientExamId: 90002, examId: 201, prescriptionIds: [7001, 7002] },
      });
    }
  });

  it('event 3 with string ids (spec form) and with integer ids gives the same numbers', () => {
    for (const payload of [event3, { ...event3, patient_exam_id: 90002, prescription_id: 7001, order_id: 5501 }]) {
      expect(parseCallback(payload)).toMatchObject({
        ok: true,
        event: { event: 3, patientExamId: 90002, prescriptionId: 7001 },
      });
    }
  });

  it('accepts the JSON text of a callback', () => {
    expect(parseCallback(JSON.stringify(event3))).toMatchObject({ ok: true, event: { event: 3 } });
    expect(parseCallback('{not json')).toEqual({ ok: false, issues: ['(body): is not JSON'] });
  });

  it('keeps unknown fields, at the top and inside nested items', () => {
    const result = parseCallback({
      ...event2,
      shipping_eta: '2025-03-04',
      prescription: [{ ...event2.prescription[0], lot: 'L-1' }],
    });
    expect(result.ok).toBe(true);
    if (result.ok && result.event.event === 2) {
      expect(result.event.payload.shipping_eta).toBe('2025-03-04');
      expect(result.event.payload.prescription[0]?.lot).toBe('L-1');
      expect(result.event.payload.questions_answers?.[0]?.answers).toEqual(['Diabetes', 'Other']);
    }
  });

  it('event 1 for Missed: null url and provider, no answers, no additional_data', () => {
    const missed = {
      event: 1,
      exam_id: '101',
      exam_name: 'Good Faith Exam',
      exam_status: 'Missed',
      exam_url: null,
      rx_status: null,
      provider_name: null,
      patient_exam_id: '90001',
      reason: '',
      questions_answers: [],
    };
    expect(parseCallback(missed)).toMatchObject({ ok: true, event: { examStatus: 'Missed' } });
  });

  it.each([
    ['event 1 without patient_exam_id', { ...event1, patient_exam_id: undefined }, 'patient_exam_id'],
    ['event 1 without exam_id', { ...event1, exam_id: undefined }, 'exam_id'],
    ['event 1 without exam_status', { ...event1, exam_status: undefined }, 'exam_status'],
    ['event 1 with an unknown exam_status', { ...event1, exam_status: 'Pending' }, 'exam_status'],
    ['event 1 with a non-digit id', { ...event1, patient_exam_id: 'PE-90001' }, 'patient_exam_id'],
    ['event 1 with a negative id', { ...event1, exam_id: -1 }, 'exam_id'],
    [
      'event 1 with an answer of the wrong type',
      { ...event1, questions_answers: [{ no: 1, question: 'q', answer: 1 }] },
      'questions_answers.0.answer',
    ],
    ['event 2 without prescription', { ...event2, prescription: undefined }, 'prescription'],
    [
      'event 2 with a prescription lacking its id',
      { ...event2, prescription: [{ drug_name: 'x' }] },
      'prescription.0.prescription_id',
    ],
    ['event 3 without tracking_number', { ...event3, tracking_number: undefined }, 'tracking_number'],
    ['event 3 without prescription_id', { ...event3, prescription_id: undefined }, 'prescription_id'],
    ['an unknown event', { ...event3, event: 4 }, 'event'],
    ['an event number as a string', { ...event3, event: '3' }, 'event'],
  ])('rejects %s, naming the field', (_name, payload, field) => {
    const result = parseCallback(JSON.parse(JSON.stringify(payload)));
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.issues[0]).toMatch(new RegExp(`^${field.replace(/\./g, '\\.')}: `));
  });

  it('rejects a body that is not an object', () => {
    expect(parseCallback(null).ok).toBe(false);
    expect(parseCallback([event1]).ok).toBe(false);
  });

  it('the per-event schemas accept the spec forms directly', () => {
    expect(Event1.parse(event1).exam_id).toBe('101');
    expect(Event2.parse(event2).exam_id).toBe(201);
    expect(Event3.parse(event3).prescription_id).toBe('7001');
    expect(CallbackEvent.parse(event2).event).toBe(2);
  });
});
