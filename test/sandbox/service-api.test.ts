/**
 * Every operation of the spec over HTTP (undici, no inject): authentication, validation, the Errors table and the
 * response shapes, checked against the contract's schemas.
 */
import { request } from 'undici';
import {
  CustomPharmacySearchResponseA,
  CustomPharmacySearchResponseB,
  ErrorBody,
  EXAM_SERVICE_OPERATIONS,
  ExamInviteResponse,
  ExamListResponse,
  ExamQuestionsCatalogResponse,
  ExamQuestionsPatientResponse,
  InviteCancelResponse,
  InviteResendResponse,
  PartnerPharmacyListResponse,
  searchResultPharmacies,
  SubmitAnswersResponse,
  TreatmentPackagesResponse,
  UploadAttachmentResponse,
} from '../../src/exam-service/schemas';
import { buildSandbox, type Sandbox } from '../../src/sandbox';
import {
  DEMO_API_KEY,
  EXAM_IDS,
  NO_PROVIDERS_API_KEY,
  NO_RX_CONTRACT_API_KEY,
  SEED_QUESTIONS,
  STATE_WITHOUT_PROVIDER,
  UNSIGNED_AGREEMENTS_API_KEY,
} from '../../src/sandbox/seed';
import { callService, getJson, inviteBody, postJson, testModeInvite } from './support';

let sandbox: Sandbox;
let baseUrl: string;

beforeAll(async () => {
  sandbox = await buildSandbox({ clockMode: 'manual', startAt: new Date('2025-03-01T12:00:00.000Z') });
  baseUrl = sandbox.baseUrl;
});
afterAll(() => sandbox.close());
beforeEach(async () => {
  expect((await postJson(`${baseUrl}/_sandbox/reset`)).status).toBe(200);
});

async function invite(overrides: Record<string, unknown> = {}) {
  const res = await callService(baseUrl, 'exam_invite', inviteBody(overrides));
  expect(res.status).toBe(200);
  return ExamInviteResponse.parse(res.body);
}

function expect400(res: { status: number; body: any }, field: string) {
  expect(res.status).toBe(400);
  expect(ErrorBody.parse(res.body)).toMatchObject({ http_code: 400, field });
  expect(res.body.error_message).toContain(field);
}

describe('authentication (every operation)', () => {
  it.each(EXAM_SERVICE_OPERATIONS)('%s: missing api_key answers 401 Unauthorized access.', async (operation) => {
    const res = await callService(baseUrl, operation, {}, { withKey: false });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ http_code: 401, error_message: 'Unauthorized access.' });
  });

  it.each(EXAM_SERVICE_OPERATIONS)('%s: unknown api_key answers 401 Unauthorized access.', async (operation) => {
    const res = await callService(baseUrl, operation, { api_key: 'not-a-key', patient_exam_id: 1 });
    expect(res.status).toBe(401);
    expect(res.body.error_message).toBe('Unauthorized access.');
  });

  it('the key is only read from the body (a header does not authenticate)', async () => {
    const res = await request(`${baseUrl}/api/exam_list`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-api-key': DEMO_API_KEY,
        authorization: `Bearer ${DEMO_API_KEY}`,
      },
      body: '{}',
    });
    expect(res.statusCode).toBe(401);
    await res.body.dump();
  });

  it('a body that is not JSON is a 400 in the error shape; unknown paths are 404', async () => {
    const res = await request(`${baseUrl}/api/exam_list`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"api_key":',
    });
    expect(res.statusCode).toBe(400);
    expect(ErrorBody.parse(await res.body.json()).http_code).toBe(400);
    expect((await postJson(`${baseUrl}/api/no_such_operation`, { api_key: DEMO_API_KEY })).status).toBe(404);
  });
});

describe('POST /api/exam_list', () => {
  it('lists the catalog: rx_type 1 and 2, both attachment values, price null and set, clinic_id', async () => {
    const res = await callService(baseUrl, 'exam_list');
    expect(res.status).toBe(200);
    const list = ExamListResponse.parse(res.body);
    expect(list.clinic_id).toBe(7001);
    const exams = list.exams;
    expect(new Set(exams.map((e) => e.rx_type))).toEqual(new Set([1, 2]));
    expect(new Set(exams.map((e) => e.attachments_required))).toEqual(new Set([1, 2]));
    expect(exams.some((e) => e.price === null)).toBe(true);
    expect(exams.some((e) => typeof e.price === 'string')).toBe(true);
    expect(exams.some((e) => e.attachments.length > 0)).toBe(true);
    const rxTitles = exams.filter((e) => e.rx_type === 2).map((e) => e.title);
    expect(rxTitles.some((t) => /Partner Pharmacy/.test(t))).toBe(true);
    expect(rxTitles.some((t) => /Urgent Care/.test(t))).toBe(true);
    expect(rxTitles.some((t) => /Choose Your Own Pharmacy/.test(t))).toBe(true);
  });
});

describe('POST /api/exam_invite', () => {
  it('creates one meeting and one patient exam per exam (GFEs stacked with one prescription exam)', async () => {
    const res = await invite({
      exams: [EXAM_IDS.gfe, EXAM_IDS.gfeBotox, EXAM_IDS.weightLossPartner],
      pharmacy_id: 501,
    });
    expect(res.http_code).toBe(200);
    expect(res.meeting_url).toContain(res.meeting_uuid);
    expect(res.patient_exams.map((p) => p.exam_id)).toEqual([101, 102, 201]);
    expect(new Set(res.patient_exams.map((p) => p.patient_exam_id)).size).toBe(3);
    expect(res.patient_exams[2]!.exam_title).toMatch(/Partner Pharmacy/);
    const state = await getJson(`${baseUrl}/_sandbox/patient-exams?meeting_uuid=${res.meeting_uuid}`);
    expect(state.body.patient_exams.map((p: any) => p.status)).toEqual(['pending', 'pending', 'pending']);
    const page = await getJson(res.meeting_url);
    expect(page.status).toBe(200);
  });

  it('accepts both phone formats', async () => {
    await invite({ phone_number: '4155550100' });
    await invite({ phone_number: '+14155550100' });
  });

  it.each(['exams', 'first_name', 'last_name', 'email', 'dob', 'phone_number', 'tele_state'])(
    '400 names the missing required field %s',
    async (field) => {
      const body = inviteBody();
      delete body[field];
      expect400(await callService(baseUrl, 'exam_invite', body), field);
    },
  );

  it.each([
    ['dob', '12/04/1988'],
    ['dob', '1988-4-12'],
    ['dob', '1988-02-30'],
    ['phone_number', '415-555-0100'],
    ['phone_number', '+4415555501001'],
    ['phone_number', '155501000'],
    ['tele_state', 'ZZ'],
    ['tele_state', 'ca'],
    ['gender', '2'],
    ['webhook_url', 'not a url'],
  ])('400 names the malformed field %s (%s)', async (field, value) => {
    expect400(await callService(baseUrl, 'exam_invite', inviteBody({ [field]: value })), field);
  });

  it('400 when more than one prescription exam or an unknown exam is in one invite', async () => {
    const two = await callService(baseUrl, 'exam_invite', inviteBody({ exams: [201, 301] }));
    expect400(two, 'exams');
    expect(two.body.error_message).toMatch(/one prescription exam/);
    expect400(await callService(baseUrl, 'exam_invite', inviteBody({ exams: [101, 999] })), 'exams');
  });

  it('test mode needs both state and tele_state TE', async () => {
    expect400(await callService(baseUrl, 'exam_invite', inviteBody({ tele_state: 'TE', state: 'CA' })), 'state');
    expect400(await callService(baseUrl, 'exam_invite', inviteBody({ tele_state: 'CA', state: 'TE' })), 'state');
    expect((await callService(baseUrl, 'exam_invite', testModeInvite('Approve'))).status).toBe(200);
  });

  it(`401 "Need to add Patient Care Provider" for a state without provider (${STATE_WITHOUT_PROVIDER})`, async () => {
    const res = await callService(baseUrl, 'exam_invite', inviteBody({ tele_state: STATE_WITHOUT_PROVIDER }));
    expect(res.status).toBe(401);
    expect(res.body).toEqual({
      http_code: 401,
      error_message: 'Need to add Patient Care Provider via the service Portal!',
    });
    const none = await callService(baseUrl, 'exam_invite', inviteBody({ api_key: NO_PROVIDERS_API_KEY }));
    expect(none.body.error_message).toBe('Need to add Patient Care Provider via the service Portal!');
    // Test mode is served by the test provider.
    const test = await callService(
      baseUrl,
      'exam_invite',
      testModeInvite('Approve', { api_key: NO_PROVIDERS_API_KEY }),
    );
    expect(test.status).toBe(200);
  });

  it('401 "You need to signed docusign and signed rx" for every invite while agreements are unsigned', async () => {
    for (const body of [
      inviteBody({ api_key: UNSIGNED_AGREEMENTS_API_KEY }),
      inviteBody({ api_key: UNSIGNED_AGREEMENTS_API_KEY, exams: [301], custom_pharmacy: 1, ncpdpid: '4512345' }),
      testModeInvite('Approve', { api_key: UNSIGNED_AGREEMENTS_API_KEY }),
    ]) {
      const res = await callService(baseUrl, 'exam_invite', body);
      expect(res.status).toBe(401);
      expect(res.body.error_message).toBe('You need to signed docusign and signed rx');
    }
    // Other operations still work for that clinic.
    expect((await callService(baseUrl, 'exam_list', { api_key: UNSIGNED_AGREEMENTS_API_KEY })).status).toBe(200);
  });

  it('401 "Need to sign Prescriptive Services Contract" for a prescription exam only; a GFE works', async () => {
    const rx = await callService(
      baseUrl,
      'exam_invite',
      inviteBody({ api_key: NO_RX_CONTRACT_API_KEY, exams: [101, 201], pharmacy_id: 501 }),
    );
    expect(rx.status).toBe(401);
    expect(rx.body.error_message).toBe('Need to sign Prescriptive Services Contract via the service Portal!');
    const gfe = await callService(
      baseUrl,
      'exam_invite',
      inviteBody({ api_key: NO_RX_CONTRACT_API_KEY, exams: [101, 102] }),
    );
    expect(gfe.status).toBe(200);
  });

  it('partner pharmacy: pharmacy_id with order_set_id, or the legacy exam_pos_id, or the provider chooses', async () => {
    const withOrderSet = await invite({
      exams: [201],
      pharmacy_id: 501,
      order_set_id: '8102',
      provider_pos_selection: 1,
    });
    const legacy = await invite({ exams: [201], pharmacy_id: 502, exam_pos_id: 3111 });
    const providerChooses = await invite({ exams: [202], custom_pharmacy: 2, provider_pos_selection: 3 });
    const views = await Promise.all(
      [withOrderSet, legacy, providerChooses].map(
        async (r) => (await getJson(`${baseUrl}/_sandbox/patient-exams/${r.patient_exams[0]!.patient_exam_id}`)).body,
      ),
    );
    expect(views.map((v) => [v.fulfilment, v.partner_pharmacy_id, v.order_set_id])).toEqual([
      ['partner', 501, '8102'],
      ['partner', 502, '8111'],
      ['partner', 501, null],
    ]);
    expect(views[0].provider_pos_selection).toBe(1);
  });

  it('partner pharmacy: unknown pharmacy_id, order_set_id or exam_pos_id is a 400 naming it', async () => {
    expect400(await callService(baseUrl, 'exam_invite', inviteBody({ exams: [201], pharmacy_id: 999 })), 'pharmacy_id');
    expect400(
      await callService(baseUrl, 'exam_invite', inviteBody({ exams: [201], pharmacy_id: 501, order_set_id: '8201' })),
      'order_set_id',
    );
    expect400(
      await callService(baseUrl, 'exam_invite', inviteBody({ exams: [201], pharmacy_id: 501, exam_pos_id: 1 })),
      'exam_pos_id',
    );
  });

  it('custom pharmacy: custom_pharmacy 1 needs ncpdpid; urgent care and own pharmacy are told apart by title', async () => {
    expect400(await callService(baseUrl, 'exam_invite', inviteBody({ exams: [301], custom_pharmacy: 1 })), 'ncpdpid');
    expect400(
      await callService(
        baseUrl,
        'exam_invite',
        inviteBody({ exams: [301], custom_pharmacy: 1, ncpdpid: '4512345', pharmacy_id: 501 }),
      ),
      'pharmacy_id',
    );
    const fields = {
      custom_pharmacy: 1,
      ncpdpid: '0512001',
      pharmacy_name: 'Golden Gate Apothecary',
      pharmacy_address_line_1: '500 Market St',
      pharmacy_city: 'San Francisco',
      pharmacy_state: 'CA',
      pharmacy_zip_code: '94105',
      pharmacy_phone: '4155550130',
      custom_pharmacy_patient_choice: 1,
      skip_pharmacy_confirmation: 2,
    };
    const urgent = await invite({ exams: [301], ...fields });
    const own = await invite({ exams: [302], ...fields });
    const views = await Promise.all(
      [urgent, own].map(
        async (r) => (await getJson(`${baseUrl}/_sandbox/patient-exams/${r.patient_exams[0]!.patient_exam_id}`)).body,
      ),
    );
    expect(views.map((v) => v.fulfilment)).toEqual(['urgent_care', 'own_pharmacy']);
    expect(views[0].custom_pharmacy).toMatchObject({ ncpdpid: '0512001', city: 'San Francisco' });
  });

  it('400 when skip_pharmacy_confirmation 2 lacks a pharmacy field, or clinic billing lacks its id', async () => {
    expect400(
      await callService(
        baseUrl,
        'exam_invite',
        inviteBody({ exams: [301], custom_pharmacy: 1, ncpdpid: '4512345', skip_pharmacy_confirmation: 2 }),
      ),
      'pharmacy_name',
    );
    expect400(
      await callService(
        baseUrl,
        'exam_invite',
        inviteBody({ exams: [301], custom_pharmacy: 1, ncpdpid: '4512345', custom_pharmacy_patient_billing: 1 }),
      ),
      'custom_pharmacy_clinic_billing',
    );
  });
});

describe('POST /api/exam_questions', () => {
  it('catalog form: {exam_id, questions:[{no, question}]} for every exam', async () => {
    for (const examId of Object.values(EXAM_IDS)) {
      const res = await callService(baseUrl, 'exam_questions', { exam_id: examId });
      expect(res.status).toBe(200);
      const body = ExamQuestionsCatalogResponse.parse(res.body);
      expect(body.exam_id).toBe(examId);
      expect(body.questions.map((q) => q.no)).toEqual([1, 2, 3, 4]);
      expect(Object.keys(body.questions[0]!).sort()).toEqual(['no', 'question']);
    }
    expect400(await callService(baseUrl, 'exam_questions', { exam_id: 999 }), 'exam_id');
  });

  it('patient-bound form: questions with ids, all three response types and input_field 2; answers empty', async () => {
    const inv = await invite({ exams: [102] });
    const pe = inv.patient_exams[0]!;
    const res = await callService(baseUrl, 'exam_questions', {
      meeting_uuid: inv.meeting_uuid,
      patient_exam_id: pe.patient_exam_id,
    });
    expect(res.status).toBe(200);
    const body = ExamQuestionsPatientResponse.parse(res.body);
    expect(body).toMatchObject({
      exam_id: 102,
      meeting_uuid: inv.meeting_uuid,
      patient_exam_id: pe.patient_exam_id,
      answers: [],
    });
    expect(new Set(body.questions.map((q) => q.response_type))).toEqual(new Set([1, 2, 3]));
    expect(body.questions.every((q) => typeof q.id === 'number')).toBe(true);
    expect(body.questions.flatMap((q) => q.responses).some((r) => r.input_field === 2)).toBe(true);
    expect(body.questions.find((q) => q.response_type === 1)!.responses).toEqual([]);
  });

  it('patient-bound form: wrong meeting_uuid or unknown patient exam is a 400 naming it', async () => {
    const inv = await invite();
    const id = inv.patient_exams[0]!.patient_exam_id;
    expect400(
      await callService(baseUrl, 'exam_questions', { meeting_uuid: 'other', patient_exam_id: id }),
      'meeting_uuid',
    );
    expect400(
      await callService(baseUrl, 'exam_questions', { meeting_uuid: inv.meeting_uuid, patient_exam_id: 1 }),
      'patient_exam_id',
    );
    expect400(await callService(baseUrl, 'exam_questions', { meeting_uuid: inv.meeting_uuid }), 'patient_exam_id');
  });
});

describe('POST /api/exam_submit_answers', () => {
  const questions = SEED_QUESTIONS[101]!;
  const q = (no: number) => questions.find((x) => x.no === no)!;

  async function submit(patientExamId: number, answers: unknown[]) {
    return callService(baseUrl, 'exam_submit_answers', { patient_exam_id: patientExamId, answers });
  }

  it('partial answers are stored; answering every question skips the questionnaire; exam_questions shows them', async () => {
    const inv = await invite();
    const id = inv.patient_exams[0]!.patient_exam_id;
    const first = await submit(id, [{ no: 1, question: q(1).question, answer: 'Lisinopril 10 mg' }]);
    expect(first.status).toBe(200);
    expect(SubmitAnswersResponse.parse(first.body)).toEqual({
      http_code: 200,
      patient_exam_id: id,
      answered: 1,
      questionnaire_skipped: false,
    });
    const rest = await submit(id, [
      { no: 2, question: q(2).question, answer: 'Yes: penicillin' },
      { no: 3, question: q(3).question, answer: ['High blood pressure', 'Other: asthma'] },
      { no: 4, question: q(4).question, answer: 'Wellness' },
    ]);
    expect(rest.body).toMatchObject({ answered: 4, questionnaire_skipped: true });

    const bound = await callService(baseUrl, 'exam_questions', { meeting_uuid: inv.meeting_uuid, patient_exam_id: id });
    const body = ExamQuestionsPatientResponse.parse(bound.body);
    expect(body.answers.map((a) => [a.question_id, a.answer])).toEqual([
      [q(1).id, 'Lisinopril 10 mg'],
      [q(2).id, 'Yes: penicillin'],
      [q(3).id, ['High blood pressure', 'Other: asthma']],
      [q(4).id, 'Wellness'],
    ]);
  });

  it('checkbox answers may be a comma-separated string of responses', async () => {
    const inv = await invite();
    const res = await submit(inv.patient_exams[0]!.patient_exam_id, [
      { no: 3, question: q(3).question, answer: 'Diabetes, Pregnancy' },
    ]);
    expect(res.status).toBe(200);
  });

  it.each([
    ['an unknown question no', { no: 9, answer: 'x' }, 'answers.0.no', /question no 9/],
    ['a radio answer outside the responses', { no: 2, answer: 'Maybe' }, 'answers.0.answer', /not a response/],
    ['an input_field 2 response without text', { no: 2, answer: 'Yes' }, 'answers.0.answer', /needs extra text/],
    [
      'a checkbox entry outside the responses',
      { no: 3, answer: ['Diabetes', 'Gout'] },
      'answers.0.answer',
      /not a response/,
    ],
    [
      'a checkbox input_field 2 entry without text',
      { no: 3, answer: ['Other'] },
      'answers.0.answer',
      /needs extra text/,
    ],
    ['an empty text answer', { no: 1, answer: '  ' }, 'answers.0.answer', /text answer/],
    ['a missing answers array', undefined, 'answers', /required/],
  ])('400 for %s', async (_label, answer, field, message) => {
    const inv = await invite();
    const id = inv.patient_exams[0]!.patient_exam_id;
    const body =
      answer === undefined
        ? { patient_exam_id: id }
        : { patient_exam_id: id, answers: [{ question: 'q', ...(answer as object) }] };
    const res = await callService(baseUrl, 'exam_submit_answers', body);
    expect400(res, field);
    expect(res.body.error_message).toMatch(message);
  });

  it('a rejected submission stores nothing', async () => {
    const inv = await invite();
    const id = inv.patient_exams[0]!.patient_exam_id;
    await submit(id, [
      { no: 1, question: 'q', answer: 'none' },
      { no: 7, question: 'q', answer: 'x' },
    ]);
    const view = await getJson(`${baseUrl}/_sandbox/patient-exams/${id}`);
    expect(view.body.answers).toEqual([]);
  });
});

describe('POST /api/exam_upload_attachment', () => {
  const file = (bytes: number) => Buffer.alloc(bytes, 7).toString('base64');

  it('accepts ID and the exam’s named attachments', async () => {
    const inv = await invite({ exams: [102] });
    const id = inv.patient_exams[0]!.patient_exam_id;
    for (const kind of ['ID', 'Lab', 'Face photo (front, no makeup)']) {
      const res = await callService(baseUrl, 'exam_upload_attachment', {
        patient_exam_id: id,
        kind,
        file_name: 'scan.jpg',
        content_type: 'image/jpeg',
        content_base64: file(64),
      });
      expect(res.status).toBe(200);
      expect(UploadAttachmentResponse.parse(res.body)).toMatchObject({ http_code: 200, patient_exam_id: id, kind });
    }
    const view = await getJson(`${baseUrl}/_sandbox/patient-exams/${id}`);
    expect(view.body.attachments.map((a: any) => [a.kind, a.size_bytes])).toEqual([
      ['ID', 64],
      ['Lab', 64],
      ['Face photo (front, no makeup)', 64],
    ]);
  });

  it('400 for a kind the exam does not take, for bad base64, and above 5 MiB decoded', async () => {
    const inv = await invite({ exams: [101] });
    const base = {
      patient_exam_id: inv.patient_exams[0]!.patient_exam_id,
      file_name: 'a.pdf',
      content_type: 'application/pdf',
    };
    expect400(
      await callService(baseUrl, 'exam_upload_attachment', { ...base, kind: 'Lab', content_base64: file(10) }),
      'kind',
    );
    expect400(
      await callService(baseUrl, 'exam_upload_attachment', { ...base, kind: 'ID', content_base64: 'not base64!' }),
      'content_base64',
    );
    const limit = 5 * 1024 * 1024;
    expect(
      (await callService(baseUrl, 'exam_upload_attachment', { ...base, kind: 'ID', content_base64: file(limit) }))
        .status,
    ).toBe(200);
    const tooBig = await callService(baseUrl, 'exam_upload_attachment', {
      ...base,
      kind: 'ID',
      content_base64: file(limit + 1),
    });
    expect400(tooBig, 'content_base64');
    expect(tooBig.body.error_message).toMatch(/limit is 5242880 bytes \(5 MiB\)/);
  });
});

describe('POST /api/exam_invite_resend', () => {
  it('counts deliveries of a pending invite; a final or cancelled exam is a 400 with its status', async () => {
    const inv = await invite({ exams: [101, 103] });
    const [a, b] = inv.patient_exams.map((p) => p.patient_exam_id) as [number, number];
    const first = await callService(baseUrl, 'exam_invite_resend', { patient_exam_id: a });
    expect(InviteResendResponse.parse(first.body)).toEqual({ http_code: 200, patient_exam_id: a, deliveries: 2 });
    expect((await callService(baseUrl, 'exam_invite_resend', { patient_exam_id: a })).body.deliveries).toBe(3);

    await postJson(`${baseUrl}/_sandbox/patient-exams/${a}/verdict`, { status: 'Approved' });
    const final = await callService(baseUrl, 'exam_invite_resend', { patient_exam_id: a });
    expect(final).toEqual({ status: 400, body: { http_code: 400, error_message: 'Exam status is already approved.' } });

    await callService(baseUrl, 'exam_invite_cancel', { patient_exam_id: b });
    const cancelled = await callService(baseUrl, 'exam_invite_resend', { patient_exam_id: b });
    expect(cancelled.body.error_message).toBe('Exam status is already cancelled.');
    expect400(await callService(baseUrl, 'exam_invite_resend', { patient_exam_id: 5 }), 'patient_exam_id');
  });
});

describe('POST /api/exam_invite_cancel', () => {
  it('cancels a pending exam with status cancelled and cancelled_at', async () => {
    const inv = await invite({ exams: [101, 103] });
    const id = inv.patient_exams[0]!.patient_exam_id;
    const res = await callService(baseUrl, 'exam_invite_cancel', { patient_exam_id: id });
    expect(res.status).toBe(200);
    const body = InviteCancelResponse.parse(res.body);
    expect(body).toEqual({
      http_code: 200,
      patient_exam_id: id,
      status: 'cancelled',
      cancelled_at: '2025-03-01T12:00:00.000Z',
    });
    // Only that patient exam: the other exam of the meeting stays pending.
    const other = await getJson(`${baseUrl}/_sandbox/patient-exams/${inv.patient_exams[1]!.patient_exam_id}`);
    expect(other.body.status).toBe('pending');
  });

  it('a repeated cancel answers 400 with the cancelled status message', async () => {
    const id = (await invite()).patient_exams[0]!.patient_exam_id;
    await callService(baseUrl, 'exam_invite_cancel', { patient_exam_id: id });
    const again = await callService(baseUrl, 'exam_invite_cancel', { patient_exam_id: id });
    expect(again).toEqual({
      status: 400,
      body: { http_code: 400, error_message: 'Exam status is already cancelled.' },
    });
  });

  it.each([
    ['Approved', 'Exam status is already approved.'],
    ['Rejected', 'Exam status is already rejected.'],
    ['Deferred to Medical Director', 'Exam status is already Deferred to Medical Director.'],
  ])('after %s the cancel is a 400 "%s" and the status is unchanged', async (verdict, message) => {
    const id = (await invite()).patient_exams[0]!.patient_exam_id;
    expect((await postJson(`${baseUrl}/_sandbox/patient-exams/${id}/verdict`, { status: verdict })).status).toBe(200);
    const res = await callService(baseUrl, 'exam_invite_cancel', { patient_exam_id: id });
    expect(res).toEqual({ status: 400, body: { http_code: 400, error_message: message } });
    expect((await getJson(`${baseUrl}/_sandbox/patient-exams/${id}`)).body.status).toBe(verdict);
  });

  it('exam_id instead of patient_exam_id, or another clinic’s exam, is a 400 naming patient_exam_id', async () => {
    const id = (await invite()).patient_exams[0]!.patient_exam_id;
    expect400(await callService(baseUrl, 'exam_invite_cancel', { exam_id: 101 }), 'patient_exam_id');
    expect400(
      await callService(baseUrl, 'exam_invite_cancel', { api_key: NO_RX_CONTRACT_API_KEY, patient_exam_id: id }),
      'patient_exam_id',
    );
  });
});

describe('partner pharmacies', () => {
  it('POST /api/partner_pharmacy_list lists pharmacies with id, name and type', async () => {
    const res = await callService(baseUrl, 'partner_pharmacy_list');
    const body = PartnerPharmacyListResponse.parse(res.body);
    expect(body.pharmacies.map((p) => p.pharmacy_id)).toEqual([501, 502]);
    expect(body.pharmacies.every((p) => (p.type ?? '').length > 0)).toBe(true);
  });

  it('POST /api/partner_pharmacy_treatment_packages: order_set_id string, exam_pos_id integer, price in cents', async () => {
    const res = await callService(baseUrl, 'partner_pharmacy_treatment_packages', { pharmacy_id: 501, exam_id: 201 });
    const body = TreatmentPackagesResponse.parse(res.body);
    expect(body.treatment_packages.length).toBe(2);
    for (const p of body.treatment_packages) {
      expect(typeof p.order_set_id).toBe('string');
      expect(Number.isInteger(p.exam_pos_id)).toBe(true);
      expect(Number.isInteger(p.price)).toBe(true);
      expect(Number.isInteger(p.duration_days)).toBe(true);
    }
    expect(body.treatment_packages[0]).toEqual({
      order_set_id: '8101',
      exam_pos_id: 3101,
      drug_name: 'Semaglutide',
      strength: '2.5 mg/mL',
      size: '2 mL vial',
      duration_days: 28,
      price: 29_900,
    });
    const gfe = await callService(baseUrl, 'partner_pharmacy_treatment_packages', { pharmacy_id: 501, exam_id: 101 });
    expect(gfe.body).toEqual({ treatment_packages: [] });
    expect400(
      await callService(baseUrl, 'partner_pharmacy_treatment_packages', { pharmacy_id: 9, exam_id: 201 }),
      'pharmacy_id',
    );
    expect400(await callService(baseUrl, 'partner_pharmacy_treatment_packages', { pharmacy_id: 501 }), 'exam_id');
  });
});

describe('POST /api/custom_pharmacy_search', () => {
  it('form A (search / zip_code / ncpdpid) answers {pharmacies: [layout A]}', async () => {
    const byName = await callService(baseUrl, 'custom_pharmacy_search', { search: 'drug mart' });
    const a = CustomPharmacySearchResponseA.parse(byName.body);
    expect(a.pharmacies.length).toBe(4);
    expect(Object.keys(a.pharmacies[0]!).sort()).toEqual(
      ['address_line_1', 'city', 'name', 'ncpdpid', 'phone', 'state', 'zip_code'].sort(),
    );
    expect(byName.body.data).toBeUndefined();
    const byZip = await callService(baseUrl, 'custom_pharmacy_search', { zip_code: '78701' });
    expect(byZip.body.pharmacies.map((p: any) => p.ncpdpid)).toEqual(['4512345']);
    const byId = await callService(baseUrl, 'custom_pharmacy_search', { ncpdpid: '3312005' });
    expect(byId.body.pharmacies.map((p: any) => p.name)).toEqual(['Harbor Mail Order Pharmacy']);
    const both = await callService(baseUrl, 'custom_pharmacy_search', { search: 'drug mart', zip_code: '78704' });
    expect(both.body.pharmacies.map((p: any) => p.ncpdpid)).toEqual(['4512346']);
  });

  it('form B (city / state / zip_code / pharmacy_name) answers {http_code: 200, data: [layout B]}', async () => {
    const res = await callService(baseUrl, 'custom_pharmacy_search', { city: 'austin', state: 'TX' });
    const b = CustomPharmacySearchResponseB.parse(res.body);
    expect(res.body.http_code).toBe(200);
    expect(b.data.map((p) => p.NCPDPID)).toEqual(['4512345', '4512346', '4512347']);
    expect(Object.keys(b.data[0]!).sort()).toEqual([
      'Address',
      'Address2',
      'City',
      'NCPDPID',
      'Name',
      'Phone',
      'State',
      'Type',
      'Zip',
    ]);
    expect(b.data[1]!.Address2).toBe('Suite 4');
    expect(b.data[0]!.Address2).toBe('');
    const byName = await callService(baseUrl, 'custom_pharmacy_search', { pharmacy_name: 'Compounding' });
    expect(byName.body.data.map((p: any) => p.Type)).toEqual(['Compound']);
  });

  it('no criterion, a mixed form or a bad zip is a 400 naming the field', async () => {
    expect400(await callService(baseUrl, 'custom_pharmacy_search', {}), 'search');
    expect400(await callService(baseUrl, 'custom_pharmacy_search', { search: 'x', city: 'Austin' }), 'search');
    expect400(await callService(baseUrl, 'custom_pharmacy_search', { zip_code: '7870' }), 'zip_code');
    expect400(await callService(baseUrl, 'custom_pharmacy_search', { state: 'tx' }), 'state');
  });

  it('a search result feeds a custom pharmacy invite', async () => {
    const res = await callService(baseUrl, 'custom_pharmacy_search', { city: 'Miami' });
    const [pharmacy] = searchResultPharmacies(CustomPharmacySearchResponseB.parse(res.body));
    const inv = await invite({ exams: [302], custom_pharmacy: 1, ...pharmacy, skip_pharmacy_confirmation: 2 });
    const view = await getJson(`${baseUrl}/_sandbox/patient-exams/${inv.patient_exams[0]!.patient_exam_id}`);
    expect(view.body.custom_pharmacy).toMatchObject({ ncpdpid: '1012006', name: 'Sunshine Pharmacy' });
  });
});
