// Answers in the layouts public integrations of the live exam service read (docs/live-service.md), one per recorded
// layout, written with our own values. Each names the layout it stands for; the client must read every one of them.

/** Resend: the answer is the http_code alone. */
export const RESEND_CODE_ONLY = { http_code: 200 };

/** Resend: an empty object (a 200 with nothing to say). */
export const RESEND_EMPTY = {};

/** Cancel: read by status alone; the body holds the http_code. */
export const CANCEL_CODE_ONLY = { http_code: 200 };

/** Cancel: a status spelt another way and a date in the service's own (non-ISO) format. */
export const CANCEL_OTHER_SPELLINGS = {
  http_code: '200',
  patient_exam_id: '77012',
  status: 'Canceled',
  cancelled_at: '2025-03-04 15:06:07',
};

/** Submit answers and upload: the document shows no answer; the live service answers with its http_code. */
export const NO_ANSWER = { http_code: 200 };

/** Invite: the meeting inside `data`, ids as digit strings, no exam titles. */
export const INVITE_IN_DATA = {
  http_code: 200,
  data: {
    meeting_url: 'https://exams.example.test/meeting/6c0f3a52',
    meeting_uuid: '6c0f3a52-1d4e-4c8b-9a61-0b2d7e5f9c11',
    patient_exams: [
      { patient_exam_id: '77012', exam_id: '101' },
      { patient_exam_id: '77013', exam_id: 201 },
    ],
  },
};

/** Invite: the document's layout with string ids and a null title. */
export const INVITE_STRING_IDS = {
  http_code: '200',
  meeting_url: 'https://exams.example.test/meeting/0aa1',
  meeting_uuid: '0aa1e6c4-5b2f-47a8-8d3e-2f9a1c7b6d54',
  patient_exams: [{ patient_exam_id: '77020', exam_id: '101', exam_title: null }],
};

/** Treatment packages: a bare list, a title and a dollar total instead of the drug fields, order sets as numbers. */
export const PACKAGES_BARE_LIST = [
  {
    exam_pos_id: 4410,
    order_set_id: 310,
    title: 'Starter dose: 2.5 mg weekly, four weeks',
    pharmacy_id: 21,
    pharmacy_name: 'Riverbend Compounding',
    integration_partner: 3,
    qualiphy_total_price: '64.50',
  },
  {
    exam_pos_id: 4411,
    order_set_id: 311,
    title: 'Second dose: 5 mg weekly, four weeks',
    pharmacy_id: 21,
    pharmacy_name: 'Riverbend Compounding',
    integration_partner: 3,
    qualiphy_total_price: '64.50',
  },
];

/** Treatment packages: entries with the legacy id and a title only (as one exam's list reads). */
export const PACKAGES_LEGACY_ONLY = [
  { exam_pos_id: 5120, title: 'Maintenance: 1 mg weekly' },
  { exam_pos_id: '5121', title: 'Maintenance: 1.7 mg weekly' },
];

/** Treatment packages: the list inside `data`. */
export const PACKAGES_IN_DATA = {
  http_code: 200,
  data: [{ order_set_id: '8801', exam_pos_id: '9901', drug_name: 'Example drug', price: '2500' }],
};

/** Exam list: ids and rx types as digit strings, a numeric price, no attachment fields. */
export const EXAMS_LOOSE = {
  http_code: 200,
  exams: [
    { id: '101', title: 'Good Faith Exam', rx_type: '1', price: null },
    { id: 201, title: 'Weight care package', rx_type: 2, price: 149, attachments_required: '2', attachments: ['Lab'] },
  ],
};

/** Exam list: a bare list. */
export const EXAMS_BARE_LIST = [{ id: 101, title: 'Good Faith Exam', rx_type: 1, price: '0.00' }];

/** Partner pharmacies: inside `data`, ids as digit strings, no type. */
export const PHARMACIES_IN_DATA = {
  http_code: 200,
  data: [{ pharmacy_id: '21', name: 'Riverbend Compounding' }],
};

/** Partner pharmacies: a bare list. */
export const PHARMACIES_BARE_LIST = [{ pharmacy_id: 22, name: 'Hillside Outsourcing', type: '503B' }];

/** Questions (patient-bound): questions by id without a position, pre-filled answers as the chosen response. */
export const QUESTIONS_BY_ID = {
  http_code: 200,
  exam_id: 101,
  meeting_uuid: '6c0f3a52-1d4e-4c8b-9a61-0b2d7e5f9c11',
  patient_exam_id: '77012',
  questions: [
    {
      id: 501,
      question: 'Do you take any medication?',
      responses: [{ response: 'No', input_field: 1, exam_question_response_id: 9001 }],
    },
    { id: '502', question: 'Anything else the provider should know?', responses: [] },
  ],
  answers: [{ question_id: 501, exam_question_response_id: 9001, response: 'No' }],
};

/** Questions: a bare list of questions, nothing pre-filled. */
export const QUESTIONS_BARE_LIST = [{ question_id: 601, question: 'Any allergies?' }];

/** Pharmacy search: a bare list in layout B, the zip code a number, no second address line or type. */
export const SEARCH_BARE_LIST_B = [
  { NCPDPID: 5512003, Name: 'Elm Street Drugs', Address: '8 Elm St', City: 'Tulsa', State: 'OK', Zip: 74103 },
];

/** Pharmacy search: layout A with only the identifier and the name. */
export const SEARCH_A_MINIMAL = { pharmacies: [{ ncpdpid: '5512004', name: 'Prairie Pharmacy' }] };
