import type { z } from 'zod';
import {
  Answer,
  CustomPharmacySearchRequest,
  CustomPharmacySearchResponse,
  ExamInviteRequest,
  ExamInviteResponse,
  ExamListResponse,
  ExamQuestionsCatalogResponse,
  ExamQuestionsPatientResponse,
  ExamQuestionsRequest,
  ExamQuestionsResponse,
  InviteCancelResponse,
  PartnerPharmacyListResponse,
  SubmitAnswersRequest,
  SubmitAnswersResponse,
  InviteResendResponse,
  TreatmentPackagesRequest,
  TreatmentPackagesResponse,
  UploadAttachmentRequest,
  UploadAttachmentResponse,
  US_STATE_CODES,
  SKIP_CONFIRMATION_PHARMACY_FIELDS,
  checkPrescriptionLimit,
  customPharmacyInviteFields,
  firstIssueField,
  formatIssues,
  isPatientBoundQuestions,
  requestFieldNames,
  searchResultPharmacies,
  type Exam,
} from '../../src/exam-service/schemas';
import { SAMPLE } from '../support/stub-exam-service';

/** Paths named by the issues of a failed parse (union failures expanded to the closest option). */
function failingFields(schema: z.ZodType, value: unknown): string[] {
  const result = schema.safeParse(value);
  if (result.success) throw new Error(`expected a failure, parsed: ${JSON.stringify(result.data)}`);
  return formatIssues(result.error).map((line) => line.slice(0, line.indexOf(':')));
}

function expectFailsOn(schema: z.ZodType, value: unknown, field: string): void {
  const result = schema.safeParse(value);
  expect(result.success).toBe(false);
  if (!result.success) expect(firstIssueField(result.error)).toBe(field);
}

function expectPasses(schema: z.ZodType, value: unknown): void {
  const result = schema.safeParse(value);
  if (!result.success) throw new Error(`expected success, got ${formatIssues(result.error).join('; ')}`);
}

const invite = {
  api_key: 'key-1',
  exams: [101],
  first_name: 'Test',
  last_name: 'Approve',
  email: 'pat@example.test',
  dob: '1990-05-17',
  phone_number: '+15125550100',
  tele_state: 'TE',
};
const withInvite = (extra: Record<string, unknown>) => ({ ...invite, ...extra });
const without = (field: keyof typeof invite) => {
  const copy: Record<string, unknown> = { ...invite };
  delete copy[field];
  return copy;
};
const allPharmacyFields = {
  ncpdpid: '4512345',
  pharmacy_name: 'Main Street Pharmacy',
  pharmacy_address_line_1: '12 Main St',
  pharmacy_city: 'Austin',
  pharmacy_state: 'TX',
  pharmacy_zip_code: '78701',
  pharmacy_phone: '5125550100',
};
const utcDate = (offsetDays: number) => new Date(Date.now() + offsetDays * 86_400_000).toISOString().slice(0, 10);

describe('exam_invite request', () => {
  it('accepts the minimal GFE invite and the full custom pharmacy invite', () => {
    expectPasses(ExamInviteRequest, invite);
    expectPasses(
      ExamInviteRequest,
      withInvite({
        exams: [101, 301],
        tele_state: 'TX',
        state: 'TX',
        gender: 2,
        webhook_url: 'https://engine.example.test/webhooks/exam',
        additional_data: '{"journey":"j-1"}',
        redirect_approve: 'https://clinic.example.test/ok',
        custom_pharmacy: 1,
        ...allPharmacyFields,
        provider_pos_selection: 1,
        custom_pharmacy_patient_choice: 1,
        skip_pharmacy_confirmation: 2,
        custom_pharmacy_patient_billing: 1,
        custom_pharmacy_clinic_billing: 'clinic-7001',
        custom_pharmacy_delivery_method: 1,
      }),
    );
  });

  it.each(['api_key', 'exams', 'first_name', 'last_name', 'email', 'dob', 'phone_number', 'tele_state'] as const)(
    'names the missing required field %s',
    (field) => {
      expectFailsOn(ExamInviteRequest, without(field), field);
    },
  );

  it('exams: a non-empty array of integers', () => {
    expectPasses(ExamInviteRequest, withInvite({ exams: [101, 102, 103] }));
    expectFailsOn(ExamInviteRequest, withInvite({ exams: [] }), 'exams');
    expectFailsOn(ExamInviteRequest, withInvite({ exams: ['101'] }), 'exams.0');
    expectFailsOn(ExamInviteRequest, withInvite({ exams: [101, 1.5] }), 'exams.1');
    expectFailsOn(ExamInviteRequest, withInvite({ exams: 101 }), 'exams');
  });

  it('first_name and last_name must not be blank', () => {
    expectFailsOn(ExamInviteRequest, withInvite({ first_name: '  ' }), 'first_name');
    expectFailsOn(ExamInviteRequest, withInvite({ last_name: '' }), 'last_name');
  });

  it('email must be an email address', () => {
    expectPasses(ExamInviteRequest, withInvite({ email: 'first.last+tag@clinic.example.com' }));
    expectFailsOn(ExamInviteRequest, withInvite({ email: 'pat.example.test' }), 'email');
    expectFailsOn(ExamInviteRequest, withInvite({ email: 'pat@' }), 'email');
  });

  it.each(['2024-02-29', '2000-02-29', '1990-12-31', '1950-01-01'])('dob %s is a real past date', (dob) => {
    expectPasses(ExamInviteRequest, withInvite({ dob }));
  });

  it.each([
    ['2023-02-29', 'not a leap year'],
    ['1900-02-29', 'century, not a leap year'],
    ['2023-04-31', 'April has 30 days'],
    ['1990-13-01', 'no month 13'],
    ['1990-00-10', 'no month 0'],
    ['1990-05-00', 'no day 0'],
    ['1990-5-17', 'not zero-padded'],
    ['17/05/1990', 'not YYYY-MM-DD'],
    ['1990-05-17T00:00:00Z', 'a date-time, not a date'],
  ])('dob %s fails (%s)', (dob) => {
    expectFailsOn(ExamInviteRequest, withInvite({ dob }), 'dob');
  });

  it('dob may be today but not in the future', () => {
    expectPasses(ExamInviteRequest, withInvite({ dob: utcDate(0) }));
    expectFailsOn(ExamInviteRequest, withInvite({ dob: utcDate(2) }), 'dob');
    expectFailsOn(ExamInviteRequest, withInvite({ dob: '2999-01-01' }), 'dob');
  });

  it.each(['+15125550100', '5125550100'])('phone_number %s is one of the two formats', (phone_number) => {
    expectPasses(ExamInviteRequest, withInvite({ phone_number }));
  });

  it.each([
    '15125550100',
    '+1512555010',
    '+151255501000',
    '+25125550100',
    '(512) 555-0100',
    '+1 5125550100',
    5125550100,
  ])('phone_number %s fails', (phone_number) => {
    expectFailsOn(ExamInviteRequest, withInvite({ phone_number }), 'phone_number');
  });

  it('tele_state: two-letter uppercase state, DC or TE', () => {
    for (const tele_state of [...US_STATE_CODES, 'DC', 'TE'])
      expectPasses(ExamInviteRequest, withInvite({ tele_state }));
    expect(US_STATE_CODES).toHaveLength(51);
    for (const tele_state of ['tx', 'Tx', 'XX', 'PR', 'Texas', 'T', '']) {
      expectFailsOn(ExamInviteRequest, withInvite({ tele_state }), 'tele_state');
    }
  });

  it('state (home address) takes the same codes, TE in test mode', () => {
    expectPasses(ExamInviteRequest, withInvite({ state: 'TE' }));
    expectPasses(ExamInviteRequest, withInvite({ state: 'NY' }));
    expectFailsOn(ExamInviteRequest, withInvite({ state: 'ny' }), 'state');
  });

  it('gender is the integer 1, 2 or 3, never a string', () => {
    for (const gender of [1, 2, 3]) expectPasses(ExamInviteRequest, withInvite({ gender }));
    for (const gender of ['1', 0, 4, 1.5]) expectFailsOn(ExamInviteRequest, withInvite({ gender }), 'gender');
  });

  it('custom_pharmacy is 1 or 2', () => {
    expectPasses(ExamInviteRequest, withInvite({ custom_pharmacy: 2, pharmacy_id: 501 }));
    expectPasses(ExamInviteRequest, withInvite({ custom_pharmacy: 1, ncpdpid: '4512345' }));
    expectFailsOn(ExamInviteRequest, withInvite({ custom_pharmacy: 3 }), 'custom_pharmacy');
    expectFailsOn(ExamInviteRequest, withInvite({ custom_pharmacy: '1', ncpdpid: '4512345' }), 'custom_pharmacy');
  });

  it('ncpdpid is required when custom_pharmacy is 1', () => {
    expectFailsOn(ExamInviteRequest, withInvite({ custom_pharmacy: 1 }), 'ncpdpid');
    expectFailsOn(ExamInviteRequest, withInvite({ custom_pharmacy: 1, ncpdpid: ' ' }), 'ncpdpid');
    expectPasses(ExamInviteRequest, withInvite({ custom_pharmacy: 2 }));
  });

  it('custom_pharmacy_clinic_billing is required when custom_pharmacy_patient_billing is 1', () => {
    expectFailsOn(
      ExamInviteRequest,
      withInvite({ custom_pharmacy_patient_billing: 1 }),
      'custom_pharmacy_clinic_billing',
    );
    expectPasses(
      ExamInviteRequest,
      withInvite({ custom_pharmacy_patient_billing: 1, custom_pharmacy_clinic_billing: 'clinic-7001' }),
    );
    expectPasses(ExamInviteRequest, withInvite({ custom_pharmacy_patient_billing: 2 }));
    expectFailsOn(
      ExamInviteRequest,
      withInvite({ custom_pharmacy_patient_billing: 3 }),
      'custom_pharmacy_patient_billing',
    );
  });

  it('skip_pharmacy_confirmation 2 needs every pharmacy field, and names each missing one', () => {
    expectPasses(
      ExamInviteRequest,
      withInvite({ skip_pharmacy_confirmation: 2, custom_pharmacy: 1, ...allPharmacyFields }),
    );
    expect(failingFields(ExamInviteRequest, withInvite({ skip_pharmacy_confirmation: 2 }))).toEqual([
      ...SKIP_CONFIRMATION_PHARMACY_FIELDS,
    ]);
    for (const field of SKIP_CONFIRMATION_PHARMACY_FIELDS) {
      const partial: Record<string, unknown> = { ...allPharmacyFields };
      delete partial[field];
      expect(failingFields(ExamInviteRequest, withInvite({ skip_pharmacy_confirmation: 2, ...partial }))).toEqual([
        field,
      ]);
    }
    expectPasses(ExamInviteRequest, withInvite({ skip_pharmacy_confirmation: 1 }));
    expectFailsOn(ExamInviteRequest, withInvite({ skip_pharmacy_confirmation: 3 }), 'skip_pharmacy_confirmation');
  });

  it('provider_pos_selection is 1, 2 or 3', () => {
    for (const v of [1, 2, 3]) expectPasses(ExamInviteRequest, withInvite({ provider_pos_selection: v }));
    for (const v of [0, 4, '2'])
      expectFailsOn(ExamInviteRequest, withInvite({ provider_pos_selection: v }), 'provider_pos_selection');
  });

  it('custom_pharmacy_patient_choice is 1 or 2', () => {
    for (const v of [1, 2]) expectPasses(ExamInviteRequest, withInvite({ custom_pharmacy_patient_choice: v }));
    for (const v of [3, '1']) {
      expectFailsOn(
        ExamInviteRequest,
        withInvite({ custom_pharmacy_patient_choice: v }),
        'custom_pharmacy_patient_choice',
      );
    }
  });

  it('custom_pharmacy_delivery_method is 1 or 2', () => {
    for (const v of [1, 2]) expectPasses(ExamInviteRequest, withInvite({ custom_pharmacy_delivery_method: v }));
    for (const v of [0, 3]) {
      expectFailsOn(
        ExamInviteRequest,
        withInvite({ custom_pharmacy_delivery_method: v }),
        'custom_pharmacy_delivery_method',
      );
    }
  });

  it('order_set_id, or its legacy alias exam_pos_id as integer or digit string (sent as the integer)', () => {
    expectPasses(ExamInviteRequest, withInvite({ exams: [201], pharmacy_id: 501, order_set_id: '8101' }));
    expect(ExamInviteRequest.parse(withInvite({ exam_pos_id: 3101 })).exam_pos_id).toBe(3101);
    expect(ExamInviteRequest.parse(withInvite({ exam_pos_id: '3101' })).exam_pos_id).toBe(3101);
    expectFailsOn(ExamInviteRequest, withInvite({ exam_pos_id: 'P-3101' }), 'exam_pos_id');
    expectFailsOn(ExamInviteRequest, withInvite({ pharmacy_id: '501' }), 'pharmacy_id');
  });

  it('webhook and redirect addresses are http(s) URLs; additional_data is stringified JSON', () => {
    expectFailsOn(ExamInviteRequest, withInvite({ webhook_url: 'not a url' }), 'webhook_url');
    expectFailsOn(ExamInviteRequest, withInvite({ redirect_missed: 'ftp://x.example.test/' }), 'redirect_missed');
    expectFailsOn(ExamInviteRequest, withInvite({ additional_data: '{journey: 1' }), 'additional_data');
    expectFailsOn(ExamInviteRequest, withInvite({ additional_data: { journey: 1 } }), 'additional_data');
  });

  it('drops fields that are not in the contract', () => {
    const parsed = ExamInviteRequest.parse(withInvite({ nickname: 'Pat' }));
    expect(parsed).not.toHaveProperty('nickname');
  });

  it('messages do not echo the rejected value', () => {
    const result = ExamInviteRequest.safeParse(withInvite({ dob: '1990-02-30', phone_number: '555-0100-99' }));
    expect(result.success).toBe(false);
    if (!result.success) {
      const text = formatIssues(result.error).join('\n');
      expect(text).toContain('dob: ');
      expect(text).toContain('phone_number: ');
      expect(text).not.toContain('1990-02-30');
      expect(text).not.toContain('555-0100-99');
    }
  });
});

describe('checkPrescriptionLimit', () => {
  const catalog = SAMPLE.examList.exams as unknown as Exam[];

  it('accepts stacked GFEs and a single prescription exam', () => {
    expect(checkPrescriptionLimit([101], catalog)).toEqual([]);
    expect(checkPrescriptionLimit([101, 201], catalog)).toEqual([]);
  });

  it('refuses two prescription exams in one invite, naming them', () => {
    const violations = checkPrescriptionLimit([101, 201, 301], catalog);
    expect(violations).toHaveLength(1);
    expect(violations[0]).toMatchObject({ code: 'too_many_prescription_exams', field: 'exams', examIds: [201, 301] });
    expect(checkPrescriptionLimit([201, 201], catalog)[0]?.code).toBe('too_many_prescription_exams');
  });

  it('reports exam ids missing from the catalog', () => {
    expect(checkPrescriptionLimit([101, 999], catalog)).toEqual([
      expect.objectContaining({ code: 'unknown_exam', examIds: [999] }),
    ]);
  });
});

describe('resources and responses', () => {
  it('exam list: price is null or a decimal string; unknown fields are kept', () => {
    const parsed = ExamListResponse.parse({
      ...SAMPLE.examList,
      region: 'south',
      exams: [{ ...SAMPLE.examList.exams[0], color: 'blue' }, SAMPLE.examList.exams[1]],
    });
    expect(parsed.region).toBe('south');
    expect(parsed.exams[0]?.color).toBe('blue');
    expect(parsed.exams[0]?.price).toBeNull();
    expect(parsed.exams[1]?.price).toBe('199.00');
    expect(parsed.clinic_id).toBe(7001);
    expectPasses(ExamListResponse, { exams: [] });
    const exam = SAMPLE.examList.exams[1];
    expect(ExamListResponse.parse({ exams: [{ ...exam, price: 199 }] }).exams[0]?.price).toBe('199.00');
    expectFailsOn(ExamListResponse, { exams: [{ ...exam, price: '199,00' }] }, 'exams.0.price');
    expectFailsOn(ExamListResponse, { exams: [{ ...exam, rx_type: 3 }] }, 'exams.0.rx_type');
    const { title: _title, ...untitled } = exam;
    expectFailsOn(ExamListResponse, { exams: [untitled] }, 'exams.0.title');
  });

  it('treatment packages: order_set_id plus legacy exam_pos_id (integer or digit string); price in integer cents', () => {
    const parsed = TreatmentPackagesResponse.parse(SAMPLE.treatmentPackages);
    expect(parsed.treatment_packages.map((p) => p.exam_pos_id)).toEqual([3101, 3102]);
    expect(parsed.treatment_packages[0]?.price).toBe(29900);
    const pkg = SAMPLE.treatmentPackages.treatment_packages[0];
    expectPasses(TreatmentPackagesResponse, { treatment_packages: [{ ...pkg, exam_pos_id: undefined }] });
    expectFailsOn(
      TreatmentPackagesResponse,
      { treatment_packages: [{ ...pkg, exam_pos_id: 'x1' }] },
      'treatment_packages.0.exam_pos_id',
    );
    expectFailsOn(
      TreatmentPackagesResponse,
      { treatment_packages: [{ ...pkg, price: '299.00' }] },
      'treatment_packages.0.price',
    );
    expectPasses(TreatmentPackagesResponse, { treatment_packages: [{ ...pkg, order_set_id: undefined }] });
    expectFailsOn(
      TreatmentPackagesResponse,
      { treatment_packages: [{ ...pkg, order_set_id: undefined, exam_pos_id: undefined }] },
      'treatment_packages.0.order_set_id',
    );
    expectFailsOn(TreatmentPackagesRequest, { api_key: 'k', pharmacy_id: 501 }, 'exam_id');
  });

  it('invite response: missing fields are named, unknown fields kept', () => {
    expect(ExamInviteResponse.parse({ ...SAMPLE.invite, expires_at: 'later' }).expires_at).toBe('later');
    const { meeting_url: _url, ...noUrl } = SAMPLE.invite;
    expectFailsOn(ExamInviteResponse, noUrl, 'meeting_url');
    expectFailsOn(
      ExamInviteResponse,
      { ...SAMPLE.invite, patient_exams: [{ exam_id: 101, exam_title: 'Good Faith Exam' }] },
      'patient_exams.0.patient_exam_id',
    );
    expectFailsOn(ExamInviteResponse, { ...SAMPLE.invite, patient_exams: [] }, 'patient_exams');
  });

  it('exam questions: both request forms and both response layouts', () => {
    expectPasses(ExamQuestionsRequest, { api_key: 'k', meeting_uuid: 'm-1', patient_exam_id: 90001 });
    expectPasses(ExamQuestionsRequest, { api_key: 'k', exam_id: 101 });
    expectFailsOn(ExamQuestionsRequest, { api_key: 'k', meeting_uuid: 'm-1' }, 'patient_exam_id');

    const patient = ExamQuestionsResponse.parse(SAMPLE.questionsPatient);
    expect(isPatientBoundQuestions(patient)).toBe(true);
    const catalog = ExamQuestionsResponse.parse(SAMPLE.questionsCatalog);
    expect(isPatientBoundQuestions(catalog)).toBe(false);
    expect(ExamQuestionsCatalogResponse.parse(SAMPLE.questionsCatalog).questions[1]?.no).toBe(2);

    const first = SAMPLE.questionsPatient.questions[0];
    expectFailsOn(
      ExamQuestionsPatientResponse,
      { ...SAMPLE.questionsPatient, questions: [{ question: first.question, responses: [] }] },
      'questions.0.id',
    );
    expectFailsOn(
      ExamQuestionsPatientResponse,
      { ...SAMPLE.questionsPatient, questions: [{ ...first, response_type: 4 }] },
      'questions.0.response_type',
    );
    expectFailsOn(ExamQuestionsCatalogResponse, { exam_id: 101, questions: [{ question: 'x' }] }, 'questions.0.no');
    const prefilled = ExamQuestionsPatientResponse.parse({
      ...SAMPLE.questionsPatient,
      answers: [{ question_id: 10101, answer: 'None' }],
    });
    expect(prefilled.answers[0]?.question_id).toBe(10101);
  });

  it('answers: a string or an array of strings', () => {
    expectPasses(Answer, { no: 1, question: 'q', answer: 'None' });
    expectPasses(Answer, { no: 3, question: 'q', answer: ['Diabetes', 'Other: asthma'] });
    expectFailsOn(Answer, { no: 1, question: 'q', answer: 5 }, 'answer');
    expectFailsOn(Answer, { no: 1, question: 'q', answer: ['ok', 2] }, 'answer.1');
    expectPasses(SubmitAnswersRequest, {
      api_key: 'k',
      patient_exam_id: 90001,
      answers: [{ no: 1, question: 'q', answer: 'a' }],
    });
    expectFailsOn(SubmitAnswersRequest, { api_key: 'k', patient_exam_id: 90001, answers: [] }, 'answers');
    expectFailsOn(
      SubmitAnswersRequest,
      { api_key: 'k', patient_exam_id: 90001, answers: [{ question: 'q', answer: 'a' }] },
      'answers.0.no',
    );
  });

  it('custom pharmacy search: form A and form B requests, never mixed', () => {
    expectPasses(CustomPharmacySearchRequest, { api_key: 'k', search: 'main street' });
    expectPasses(CustomPharmacySearchRequest, { api_key: 'k', zip_code: '78701' });
    expectPasses(CustomPharmacySearchRequest, { api_key: 'k', ncpdpid: '4512345' });
    expectPasses(CustomPharmacySearchRequest, { api_key: 'k', city: 'Austin', state: 'TX', pharmacy_name: 'Main' });
    expectFailsOn(CustomPharmacySearchRequest, { api_key: 'k', search: 'main', zip_code: '7870' }, 'zip_code');
    expectFailsOn(CustomPharmacySearchRequest, { api_key: 'k', city: 'Austin', state: 'tx' }, 'state');
    expectFailsOn(CustomPharmacySearchRequest, { api_key: 'k' }, 'search');
    const mixed = CustomPharmacySearchRequest.safeParse({ api_key: 'k', search: 'main', city: 'Austin' });
    expect(mixed.success).toBe(false);
  });

  it('custom pharmacy search: layout A and layout B responses give the same invite fields', () => {
    const a = CustomPharmacySearchResponse.parse(SAMPLE.searchA);
    const b = CustomPharmacySearchResponse.parse(SAMPLE.searchB);
    expect(searchResultPharmacies(a)).toEqual([
      {
        ncpdpid: '4512345',
        pharmacy_name: 'Main Street Pharmacy',
        pharmacy_address_line_1: '12 Main St',
        pharmacy_city: 'Austin',
        pharmacy_state: 'TX',
        pharmacy_zip_code: '78701',
        pharmacy_phone: '5125550100',
      },
    ]);
    expect(searchResultPharmacies(b)).toEqual([
      {
        ncpdpid: '4598765',
        pharmacy_name: 'Corner Drug',
        pharmacy_address_line_1: '400 Congress Ave',
        pharmacy_city: 'Austin',
        pharmacy_state: 'TX',
        pharmacy_zip_code: '78701',
        pharmacy_phone: '5125550199',
        pharmacy_type: 'Retail',
      },
    ]);
    const fields = customPharmacyInviteFields(SAMPLE.searchB.data[0]);
    expectPasses(ExamInviteRequest, withInvite({ custom_pharmacy: 1, skip_pharmacy_confirmation: 2, ...fields }));
    const { NCPDPID: _id, ...noId } = SAMPLE.searchB.data[0];
    expectFailsOn(CustomPharmacySearchResponse, { http_code: 200, data: [noId] }, 'data.0.NCPDPID');
    expectFailsOn(
      CustomPharmacySearchResponse,
      { pharmacies: [{ ...SAMPLE.searchA.pharmacies[0], phone: 5125550100 }] },
      'pharmacies.0.phone',
    );
  });

  it('partner pharmacies, upload, submit, resend, cancel', () => {
    expect(PartnerPharmacyListResponse.parse(SAMPLE.partnerPharmacies).pharmacies[0]?.pharmacy_id).toBe(501);
    expectFailsOn(PartnerPharmacyListResponse, { pharmacies: [{ pharmacy_id: 501, type: 'x' }] }, 'pharmacies.0.name');
    expectPasses(UploadAttachmentResponse, SAMPLE.upload);
    expectPasses(SubmitAnswersResponse, SAMPLE.submitAnswers);
    expectFailsOn(
      SubmitAnswersResponse,
      { ...SAMPLE.submitAnswers, questionnaire_skipped: 'yes' },
      'questionnaire_skipped',
    );
    expectPasses(InviteResendResponse, SAMPLE.resend);
    expect(InviteCancelResponse.parse(SAMPLE.cancel).status).toBe('cancelled');
    expectFailsOn(InviteCancelResponse, { ...SAMPLE.cancel, status: 'approved' }, 'status');
    expect(InviteCancelResponse.parse({ ...SAMPLE.cancel, cancelled_at: 'yesterday' }).cancelled_at).toBeUndefined();
  });

  it('upload request: the engine fixed shape', () => {
    const upload = {
      api_key: 'k',
      patient_exam_id: 90001,
      kind: 'Lab',
      file_name: 'lab.pdf',
      content_type: 'application/pdf',
      content_base64: 'JVBERi0xLjQK',
    };
    expectPasses(UploadAttachmentRequest, upload);
    expectFailsOn(UploadAttachmentRequest, { ...upload, content_base64: 'not base64!' }, 'content_base64');
    expectFailsOn(UploadAttachmentRequest, { ...upload, content_type: 'pdf' }, 'content_type');
    expectFailsOn(UploadAttachmentRequest, { ...upload, kind: '' }, 'kind');
  });
});

describe('issue helpers', () => {
  it('formatIssues gives "field.path: message", firstIssueField the first path', () => {
    const result = ExamInviteRequest.safeParse(withInvite({ exams: [101, 'x'], gender: '1' }));
    expect(result.success).toBe(false);
    if (result.success) return;
    const lines = formatIssues(result.error);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^exams\.1: .+/);
    expect(lines[1]).toMatch(/^gender: .+/);
    expect(firstIssueField(result.error)).toBe('exams.1');
  });

  it('requestFieldNames lists an operation request fields (both forms of a union)', () => {
    expect(requestFieldNames('exam_invite')).toEqual(expect.arrayContaining(['dob', 'phone_number', 'tele_state']));
    expect(requestFieldNames('custom_pharmacy_search')).toEqual(
      expect.arrayContaining(['search', 'ncpdpid', 'city', 'pharmacy_name']),
    );
  });
});
