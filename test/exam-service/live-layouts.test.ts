// The client against answers in the live service's layouts (docs/live-service.md): every recorded layout is read, the
// extra request fields go out, and an answer that lacks what the engine needs is still a bad_response naming it.
// Then the same operations against the sandbox answering in its live layout.
import { ExamServiceClient } from '../../src/exam-service/client';
import { ExamServiceError } from '../../src/exam-service/errors';
import {
  isPatientBoundQuestions,
  packagePriceCents,
  searchResultPharmacies,
  type ExamInviteInput,
} from '../../src/exam-service/schemas';
import { buildSandbox, DEMO_API_KEY, type Sandbox } from '../../src/sandbox';
import { StubExamService } from '../support/stub-exam-service';
import * as LIVE from './live-layouts.fixtures';

const API_KEY = 'ek_live_layouts_41f2';

async function failure(p: Promise<unknown>): Promise<ExamServiceError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ExamServiceError) return err;
    throw err;
  }
  throw new Error('expected the call to fail');
}

const invite: ExamInviteInput = {
  exams: [101, 201],
  first_name: 'Test',
  last_name: 'Approve',
  email: 'pat@example.test',
  dob: '1990-05-17',
  phone_number: '5125550100',
  tele_state: 'TE',
  state: 'TE',
};

describe('live layouts, as fixtures', () => {
  let stub: StubExamService;
  let client: ExamServiceClient;

  beforeEach(async () => {
    stub = await StubExamService.start();
    client = new ExamServiceClient({ baseUrl: stub.url, apiKey: API_KEY, requestTimeoutMs: 2_000 });
  });
  afterEach(async () => {
    await stub.close();
    await client.close();
  });

  it('resend: a 200 with the http_code alone, or nothing, is the invite resent; the meeting goes with it', async () => {
    for (const body of [LIVE.RESEND_CODE_ONLY, LIVE.RESEND_EMPTY]) {
      stub.reply('exam_invite_resend', { body });
      const r = await client.resendInvite({ patient_exam_id: 77012, meeting_uuid: 'm-77' });
      expect(r.deliveries ?? null).toBeNull();
    }
    expect(stub.requestsFor('exam_invite_resend')[0]!.body).toEqual({
      api_key: API_KEY,
      patient_exam_id: 77012,
      meeting_uuid: 'm-77',
    });
  });

  it('resend: an http_code of 400 in a 200 is still a refusal', async () => {
    stub.reply('exam_invite_resend', { body: { http_code: 400, error_message: 'Exam status is Approved.' } });
    const err = await failure(client.resendInvite({ patient_exam_id: 77012, meeting_uuid: 'm-77' }));
    expect(err.kind).toBe('validation');
  });

  it('cancel: the http_code alone, or another spelling and date format, is the exam cancelled', async () => {
    stub.reply('exam_invite_cancel', { body: LIVE.CANCEL_CODE_ONLY });
    expect(await client.cancelInvite({ patient_exam_id: 77012 })).toMatchObject({ alreadyCancelled: false });
    stub.reply('exam_invite_cancel', { body: LIVE.CANCEL_OTHER_SPELLINGS });
    const r = await client.cancelInvite({ patient_exam_id: 77012 });
    expect(r).toMatchObject({ alreadyCancelled: false, patient_exam_id: 77012 });
    expect(r.alreadyCancelled === false && r.cancelled_at).toBe(new Date('2025-03-04 15:06:07').toISOString());
  });

  it('cancel: a 200 whose status is not cancelled is a bad_response naming status', async () => {
    stub.reply('exam_invite_cancel', { body: { http_code: 200, status: 'pending' } });
    const err = await failure(client.cancelInvite({ patient_exam_id: 77012 }));
    expect(err).toMatchObject({ kind: 'bad_response', field: 'status' });
  });

  it('submit answers and upload: the http_code alone is success', async () => {
    stub.reply('exam_submit_answers', { body: LIVE.NO_ANSWER });
    const answers = [{ no: 1, question: 'q', answer: 'No' }];
    expect(await client.submitAnswers({ patient_exam_id: 77012, answers })).toMatchObject({ http_code: 200 });
    stub.reply('exam_upload_attachment', { body: LIVE.NO_ANSWER });
    const upload = await client.uploadAttachment({
      patient_exam_id: 77012,
      kind: 'ID',
      file_name: 'id.jpg',
      content_type: 'image/jpeg',
      content_base64: 'aGVsbG8=',
    });
    expect(upload.attachment_id ?? null).toBeNull();
  });

  it('invite: the meeting inside data, and string ids, give the same numbers', async () => {
    stub.reply('exam_invite', { body: LIVE.INVITE_IN_DATA });
    const r = await client.examInvite(invite);
    expect(r.meeting_uuid).toBe(LIVE.INVITE_IN_DATA.data.meeting_uuid);
    expect(r.patient_exams).toEqual([
      { patient_exam_id: 77012, exam_id: 101, exam_title: '' },
      { patient_exam_id: 77013, exam_id: 201, exam_title: '' },
    ]);
    stub.reply('exam_invite', { body: LIVE.INVITE_STRING_IDS });
    expect((await client.examInvite(invite)).patient_exams[0]).toMatchObject({ patient_exam_id: 77020, exam_id: 101 });
  });

  it('invite: what the journey needs and does not find is named', async () => {
    const { meeting_uuid: _u, ...noUuid } = LIVE.INVITE_IN_DATA.data;
    stub.reply('exam_invite', { body: { http_code: 200, data: noUuid } });
    expect(await failure(client.examInvite(invite))).toMatchObject({ kind: 'bad_response', field: 'meeting_uuid' });
    stub.reply('exam_invite', {
      body: { ...LIVE.INVITE_STRING_IDS, patient_exams: [{ patient_exam_id: 'x7', exam_id: 101 }] },
    });
    expect(await failure(client.examInvite(invite))).toMatchObject({
      kind: 'bad_response',
      field: 'patient_exams.0.patient_exam_id',
    });
  });

  it('treatment packages: sends both id forms and the state; reads a bare list, legacy ids, data', async () => {
    stub.reply('partner_pharmacy_treatment_packages', { body: LIVE.PACKAGES_BARE_LIST });
    const r = await client.treatmentPackages({ pharmacy_id: 21, exam_id: 201, patient_state: 'NY' });
    expect(r.treatment_packages.map((p) => [p.order_set_id, p.exam_pos_id, packagePriceCents(p)])).toEqual([
      ['310', 4410, 6450],
      ['311', 4411, 6450],
    ]);
    expect(stub.requestsFor('partner_pharmacy_treatment_packages')[0]!.body).toEqual({
      api_key: API_KEY,
      pharmacy_id: 21,
      exam_id: 201,
      pharmacy_ids: [21],
      exam_ids: [201],
      patient_state: 'NY',
    });
    stub.reply('partner_pharmacy_treatment_packages', { body: LIVE.PACKAGES_LEGACY_ONLY });
    const legacy = await client.treatmentPackages({ pharmacy_id: 21, exam_id: 201 });
    expect(legacy.treatment_packages.map((p) => [p.order_set_id, p.exam_pos_id])).toEqual([
      [undefined, 5120],
      [undefined, 5121],
    ]);
    stub.reply('partner_pharmacy_treatment_packages', { body: LIVE.PACKAGES_IN_DATA });
    const inData = await client.treatmentPackages({ pharmacy_id: 21, exam_id: 201 });
    expect(packagePriceCents(inData.treatment_packages[0]!)).toBe(2500);
  });

  it('treatment packages: a package with neither order_set_id nor exam_pos_id is named', async () => {
    stub.reply('partner_pharmacy_treatment_packages', { body: [{ title: 'Mystery package' }] });
    const err = await failure(client.treatmentPackages({ pharmacy_id: 21, exam_id: 201 }));
    expect(err).toMatchObject({ kind: 'bad_response', field: 'treatment_packages.0.order_set_id' });
  });

  it('exam list: string ids, numeric price, absent attachment fields, a bare list', async () => {
    stub.reply('exam_list', { body: LIVE.EXAMS_LOOSE });
    const { exams } = await client.examList();
    expect(exams.map((e) => [e.id, e.rx_type, e.price, e.attachments_required, e.attachments])).toEqual([
      [101, 1, null, 1, []],
      [201, 2, '149.00', 2, ['Lab']],
    ]);
    stub.reply('exam_list', { body: LIVE.EXAMS_BARE_LIST });
    expect((await client.examList()).exams.map((e) => e.id)).toEqual([101]);
    stub.reply('exam_list', { body: { exams: [{ id: 101, title: 'GFE' }] } });
    expect(await failure(client.examList())).toMatchObject({ kind: 'bad_response', field: 'exams.0.rx_type' });
  });

  it('partner pharmacies: inside data or a bare list; a pharmacy without an id is named', async () => {
    stub.reply('partner_pharmacy_list', { body: LIVE.PHARMACIES_IN_DATA });
    expect((await client.partnerPharmacyList()).pharmacies).toEqual([
      { pharmacy_id: 21, name: 'Riverbend Compounding' },
    ]);
    stub.reply('partner_pharmacy_list', { body: LIVE.PHARMACIES_BARE_LIST });
    expect((await client.partnerPharmacyList()).pharmacies[0]?.pharmacy_id).toBe(22);
    stub.reply('partner_pharmacy_list', { body: [{ name: 'No id' }] });
    expect(await failure(client.partnerPharmacyList())).toMatchObject({
      kind: 'bad_response',
      field: 'pharmacies.0.pharmacy_id',
    });
  });

  it('questions: by id without positions, pre-filled as responses, or a bare list', async () => {
    stub.reply('exam_questions', { body: LIVE.QUESTIONS_BY_ID });
    const q = await client.examQuestions({ meeting_uuid: 'm-77', patient_exam_id: 77012 });
    expect(isPatientBoundQuestions(q)).toBe(true);
    expect(q.questions.map((x) => x.question)).toHaveLength(2);
    stub.reply('exam_questions', { body: LIVE.QUESTIONS_BARE_LIST });
    const bare = await client.examQuestions({ meeting_uuid: 'm-77', patient_exam_id: 77012 });
    expect(isPatientBoundQuestions(bare) && bare.answers).toEqual([]);
    stub.reply('exam_questions', { body: { http_code: 200 } });
    expect(await failure(client.examQuestions({ exam_id: 101 }))).toMatchObject({
      kind: 'bad_response',
      field: 'questions',
    });
  });

  it('pharmacy search: a bare layout B list with numbers, layout A with the identifier and name only', async () => {
    stub.reply('custom_pharmacy_search', { body: LIVE.SEARCH_BARE_LIST_B });
    expect(searchResultPharmacies(await client.customPharmacySearch({ zip_code: '74103' }))).toEqual([
      {
        ncpdpid: '5512003',
        pharmacy_name: 'Elm Street Drugs',
        pharmacy_address_line_1: '8 Elm St',
        pharmacy_city: 'Tulsa',
        pharmacy_state: 'OK',
        pharmacy_zip_code: '74103',
      },
    ]);
    stub.reply('custom_pharmacy_search', { body: LIVE.SEARCH_A_MINIMAL });
    expect(searchResultPharmacies(await client.customPharmacySearch({ search: 'prairie' }))).toEqual([
      { ncpdpid: '5512004', pharmacy_name: 'Prairie Pharmacy' },
    ]);
    stub.reply('custom_pharmacy_search', { body: { pharmacies: [{ name: 'No id' }] } });
    expect(await failure(client.customPharmacySearch({ search: 'x' }))).toMatchObject({
      kind: 'bad_response',
      field: 'pharmacies.0.ncpdpid',
    });
  });
});

describe('the sandbox in its live layout', () => {
  let sandbox: Sandbox;
  let client: ExamServiceClient;

  beforeAll(async () => {
    sandbox = await buildSandbox({ clockMode: 'manual', faults: { serviceLayout: 'live' } });
    client = new ExamServiceClient({ baseUrl: sandbox.baseUrl, apiKey: DEMO_API_KEY });
  });
  afterAll(async () => {
    await client.close();
    await sandbox.close();
  });

  it('answers every operation in its live layout, and the client reads each', async () => {
    const raw = await fetch(`${sandbox.baseUrl}/api/partner_pharmacy_treatment_packages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ api_key: DEMO_API_KEY, pharmacy_ids: [501], exam_ids: [201], patient_state: 'TX' }),
    });
    expect(Array.isArray(await raw.json())).toBe(true);

    const exams = await client.examList();
    expect(exams.exams.find((e) => e.id === 201)?.rx_type).toBe(2);
    const pharmacies = await client.partnerPharmacyList();
    expect(pharmacies.pharmacies.map((p) => p.pharmacy_id)).toEqual([501, 502]);
    const packages = await client.treatmentPackages({ pharmacy_id: 501, exam_id: 201 });
    expect(packages.treatment_packages[0]).toMatchObject({ order_set_id: '8101', title: expect.any(String) });
    const search = await client.customPharmacySearch({ ncpdpid: '4512345' });
    expect(searchResultPharmacies(search)[0]?.ncpdpid).toBe('4512345');

    const created = await client.examInvite({
      ...invite,
      first_name: 'Jordan',
      last_name: 'Pending',
      tele_state: 'TX',
      state: 'TX',
    });
    expect(created.patient_exams.map((pe) => pe.exam_id)).toEqual([101, 201]);
    const [gfe] = created.patient_exams;
    const questions = await client.examQuestions({
      meeting_uuid: created.meeting_uuid,
      patient_exam_id: gfe!.patient_exam_id,
    });
    expect(isPatientBoundQuestions(questions) && questions.questions.length).toBeGreaterThan(0);
    await expect(
      client.uploadAttachment({
        patient_exam_id: gfe!.patient_exam_id,
        kind: 'ID',
        file_name: 'id.jpg',
        content_type: 'image/jpeg',
        content_base64: 'aGVsbG8=',
      }),
    ).resolves.toMatchObject({ http_code: 200 });
    await expect(
      client.resendInvite({ patient_exam_id: gfe!.patient_exam_id, meeting_uuid: created.meeting_uuid }),
    ).resolves.toMatchObject({ http_code: 200 });
    await expect(client.cancelInvite({ patient_exam_id: gfe!.patient_exam_id })).resolves.toMatchObject({
      alreadyCancelled: false,
    });
  });

  it('refuses a resend without the meeting, naming meeting_uuid', async () => {
    const created = await client.examInvite({
      ...invite,
      exams: [101],
      first_name: 'Jordan',
      last_name: 'Pending',
      tele_state: 'TX',
      state: 'TX',
    });
    const err = await failure(client.resendInvite({ patient_exam_id: created.patient_exams[0]!.patient_exam_id }));
    expect(err).toMatchObject({ kind: 'validation', field: 'meeting_uuid' });
  });

  it('one invite can answer in the live layout while the rest answer as the document', async () => {
    sandbox.setFaults({});
    try {
      const created = await client.examInvite({
        ...invite,
        exams: [101],
        first_name: 'Jordan',
        last_name: 'Pending',
        tele_state: 'TX',
        state: 'TX',
      });
      const id = created.patient_exams[0]!.patient_exam_id;
      const before = await client.resendInvite({ patient_exam_id: id });
      expect(before.deliveries).toBe(2);
      const set = await fetch(`${sandbox.baseUrl}/_sandbox/patient-exams/${id}/service-layout`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ layout: 'live' }),
      });
      expect(set.status).toBe(200);
      expect(await failure(client.resendInvite({ patient_exam_id: id }))).toMatchObject({ field: 'meeting_uuid' });
      const after = await client.resendInvite({ patient_exam_id: id, meeting_uuid: created.meeting_uuid });
      expect(after).toEqual({ http_code: 200 });
    } finally {
      sandbox.setFaults({ serviceLayout: 'live' });
    }
  });
});
