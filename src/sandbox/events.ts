/** Callback payloads, field for field as the spec's Event tables (note the id types differ between events). */
import type { Event1, Event2, Event3 } from '../exam-service/schemas';
import { SEED_QUESTIONS } from './seed';
import type { CallbackLayout } from './layouts';
import type { Meeting, PatientExamRecord, StoredPrescription } from './store';

export interface EventContext {
  record: PatientExamRecord;
  meeting: Meeting;
  clinicName: string;
}

function answerText(answer: string | string[]): string {
  return Array.isArray(answer) ? answer.join(', ') : answer;
}

/** Event 1 answers: {no, question, answer} with a string answer. */
function plainAnswers(record: PatientExamRecord): Event1['questions_answers'] {
  return [...record.answers.values()]
    .sort((a, b) => a.no - b.no)
    .map((a) => ({ no: a.no, question: a.question, answer: answerText(a.answer) }));
}

/** Event 2 answers: the richer form (id, position, response_type, responses, answers[]). */
function richAnswers(record: PatientExamRecord): Event2['questions_answers'] {
  const questions = SEED_QUESTIONS[record.exam_id] ?? [];
  return [...record.answers.values()]
    .sort((a, b) => a.no - b.no)
    .map((a) => {
      const q = questions.find((x) => x.no === a.no);
      const list = Array.isArray(a.answer) ? a.answer : [a.answer];
      return {
        id: a.question_id,
        no: a.no,
        position: a.no,
        question: a.question,
        response_type: q?.response_type ?? 1,
        responses: (q?.responses ?? []).map((r) => ({ ...r })),
        answer: q?.response_type === 3 ? list : answerText(a.answer),
        answers: list,
      };
    });
}

export function event1(ctx: EventContext): Event1 {
  const { record, meeting } = ctx;
  return {
    event: 1,
    reason: record.reason ?? '',
    exam_id: String(record.exam_id),
    exam_url: record.exam_url,
    exam_name: record.exam_title,
    exam_status: record.status as Event1['exam_status'],
    // Event 1 leaves before the pharmacy confirms; rx_status becomes 'Pharmacy Confirmed' with event 2.
    rx_status: null,
    clinic_name: ctx.clinicName,
    patient_email: meeting.patient.email,
    patient_phone_number: meeting.patient.phone_number,
    patient_exam_id: String(record.patient_exam_id),
    provider_name: record.provider_name,
    additional_data: meeting.additional_data ?? '',
    questions_answers: plainAnswers(record),
  };
}

export function event2(ctx: EventContext, examUrl: string): Event2 {
  const { record, meeting } = ctx;
  return {
    event: 2,
    exam_id: record.exam_id,
    exam_name: record.exam_title,
    exam_status: 'Approved',
    exam_url: examUrl,
    rx_status: record.rx_status ?? 'Pharmacy Confirmed',
    clinic_name: ctx.clinicName,
    patient_email: meeting.patient.email,
    patient_phone_number: meeting.patient.phone_number,
    provider_name: record.provider_name ?? '',
    reason: record.reason ?? '',
    patient_exam_id: record.patient_exam_id,
    prescribed_os_id: record.prescribed_os_id ?? 0,
    prescription: record.prescriptions.map((p) => p.item) as Event2['prescription'],
    questions_answers: richAnswers(record),
    additional_data: meeting.additional_data ?? '',
  };
}

export function event3(record: PatientExamRecord, prescription: StoredPrescription, location: string): Event3 {
  return {
    event: 3,
    patient_exam_id: String(record.patient_exam_id),
    prescription_id: String(prescription.prescription_id),
    tracking_number: prescription.tracking_number ?? '',
    delivery_service: deliveryService(prescription),
    pharmacy_location: location,
    order_id: prescription.order_id ?? '',
  };
}

/** Injectables travel cold and overnight; everything else ships standard. */
export function deliveryService(prescription: StoredPrescription): string {
  const form = prescription.item.dosage_form_type;
  return typeof form === 'string' && form.toLowerCase().includes('inject') ? 'Overnight' : 'Standard';
}

// ---------------------------------------------------------------------------------------------------------------
// Other layouts the service has been seen to send (layouts.ts, docs/callback-layouts.md).

/** Verdicts as receivers written against the real callbacks spell them. */
const VERDICT_SPELLING: Record<string, string> = {
  Approved: 'approved',
  Rejected: 'rejected',
  'Deferred to Medical Director': 'Deferred',
  NA: 'N/A',
  Missed: 'missed',
};

const has = (layout: CallbackLayout, part: CallbackLayout) => layout === part || layout === 'all-alternatives';

/** One drug of event 2 at the top level: `prescription_id`, `drug_details` and the item's dosing beside it. */
function flatPrescription(payload: Record<string, unknown>, item: Record<string, unknown>): Record<string, unknown> {
  const { prescription: _list, ...rest } = payload;
  const quantity = Number(item.quantity);
  return {
    ...rest,
    prescription_id: Number(item.prescription_id),
    drug_details: {
      drug_name: item.drug_name,
      strength: item.strength,
      size: item.size,
      dosage_form_type: item.dosage_form_type,
      ndc_number: item.ndc_number,
      gpi_number: item.gpi_number,
      active_ingredient: item.active_ingredient,
      inactive_ingredient: typeof item.inactive_ingredient === 'string' ? [item.inactive_ingredient] : [],
    },
    quantity: Number.isFinite(quantity) ? quantity : item.quantity,
    quantity_units: item.quantity_units,
    directions: item.directions,
    duration_days: item.duration_days,
    refill_amount: item.refill_amount,
    schedule_code: item.schedule_code ?? '',
    dispense_number: Number(item.dispense_number) || 0,
  };
}

/** Event 3 as a tracking array: no patient_exam_id, no prescription_id, the shipment in `prescription_tracking`. */
function trackingArray(payload: Record<string, unknown>, shippedAt: string): Record<string, unknown> {
  const carrier =
    typeof payload.tracking_number === 'string' && payload.tracking_number.startsWith('1Z') ? 'UPS' : null;
  return {
    event: payload.event,
    prescription_tracking: [
      {
        rx_number: `RX${typeof payload.prescription_id === 'string' ? payload.prescription_id : ''}`,
        tracking_number: payload.tracking_number,
        delivery_service: payload.delivery_service,
        ship_carrier: carrier,
        pharmacy_location: payload.pharmacy_location,
      },
    ],
    created_at: shippedAt,
  };
}

/** One callback as sent, and the prescription it is about in the sandbox's ids, whatever the layout leaves out. */
export interface LaidOutCallback {
  body: Record<string, unknown>;
  /** Event 3's prescription, or the one drug of a flat event 2; absent for a callback about the whole exam. */
  prescriptionId?: number;
}

/** The callback(s) the service sends for one event in a layout: event 2 goes out once per drug in the flat layout. */
export function inLayout(payload: Record<string, unknown>, layout: CallbackLayout, at: string): LaidOutCallback[] {
  const id = (value: unknown) => (value === undefined ? {} : { prescriptionId: Number(value) });
  let out: LaidOutCallback[] = [{ body: payload, ...(payload.event === 3 ? id(payload.prescription_id) : {}) }];
  if (payload.event === 1 && has(layout, 'verdict-spelling')) {
    out = [{ body: { ...payload, exam_status: VERDICT_SPELLING[String(payload.exam_status)] ?? payload.exam_status } }];
  }
  if (payload.event === 2 && has(layout, 'flat-prescription') && Array.isArray(payload.prescription)) {
    out = (payload.prescription as Record<string, unknown>[]).map((item) => ({
      body: flatPrescription(payload, item),
      ...id(item.prescription_id),
    }));
  }
  if (payload.event === 3 && has(layout, 'tracking-array')) out = [{ ...out[0]!, body: trackingArray(payload, at) }];
  if (has(layout, 'string-event')) out = out.map((c) => ({ ...c, body: { ...c.body, event: String(c.body.event) } }));
  return out;
}
