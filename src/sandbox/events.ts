/** Callback payloads, field for field as the spec's Event tables (note the id types differ between events). */
import type { Event1, Event2, Event3 } from '../exam-service/schemas';
import { SEED_QUESTIONS } from './seed';
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
