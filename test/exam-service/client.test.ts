import { Agent } from 'undici';
import { ExamServiceClient, type CancelInviteResult } from '../../src/exam-service/client';
import { ACCOUNT_SETUP_MESSAGES, ExamServiceError, isRetryable } from '../../src/exam-service/errors';
import { isPatientBoundQuestions, isSearchLayoutA, type ExamInviteInput } from '../../src/exam-service/schemas';
import {
  SAMPLE,
  StubExamService,
  closedPortUrl,
  startConnectionDropper,
  type RecordedRequest,
} from '../support/stub-exam-service';

const API_KEY = 'ek_test_client_7c1d';

let stub: StubExamService;
let client: ExamServiceClient;

beforeEach(async () => {
  stub = await StubExamService.start();
  client = new ExamServiceClient({
    baseUrl: stub.url,
    apiKey: API_KEY,
    connectTimeoutMs: 1_000,
    requestTimeoutMs: 2_000,
  });
});

afterEach(async () => {
  await stub.close();
  await client.close();
});

async function rejection(promise: Promise<unknown>): Promise<ExamServiceError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(ExamServiceError);
    return err as ExamServiceError;
  }
  throw new Error('expected the call to reject');
}

function onlyRequest(operation: string): RecordedRequest {
  const requests = stub.requestsFor(operation);
  expect(requests).toHaveLength(1);
  const [request] = requests;
  expect(request!.method).toBe('POST');
  expect(request!.headers['content-type']).toBe('application/json');
  return request!;
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
  pharmacy_id: 501,
  exam_pos_id: '3101',
  webhook_url: 'https://engine.example.test/webhooks/exam',
};

describe('operations: POST JSON to /api/<operation> with api_key in the body, parsed answers', () => {
  it('examList', async () => {
    stub.reply('exam_list', { body: { ...SAMPLE.examList, plan: 'gold' } });
    const result = await client.examList();
    expect(result.exams.map((e) => e.id)).toEqual([101, 201, 301]);
    expect(result.plan).toBe('gold');
    expect(onlyRequest('exam_list').body).toEqual({ api_key: API_KEY });
  });

  it('examInvite: sends the contract fields (exam_pos_id as integer, unknown fields dropped)', async () => {
    stub.reply('exam_invite', { body: SAMPLE.invite });
    const input = { ...invite, nickname: 'Pat' };
    const result = await client.examInvite(input);
    expect(result.meeting_uuid).toBe(SAMPLE.invite.meeting_uuid);
    expect(result.patient_exams.map((p) => p.patient_exam_id)).toEqual([90001, 90002]);
    const sent = onlyRequest('exam_invite').body as Record<string, unknown>;
    expect(sent).toEqual({ ...invite, exam_pos_id: 3101, api_key: API_KEY });
    expect(sent).not.toHaveProperty('nickname');
  });

  it('uploadAttachment', async () => {
    stub.reply('exam_upload_attachment', { body: SAMPLE.upload });
    const input = {
      patient_exam_id: 90001,
      kind: 'Lab',
      file_name: 'lab.pdf',
      content_type: 'application/pdf',
      content_base64: 'JVBERi0xLjQK',
    };
    expect((await client.uploadAttachment(input)).attachment_id).toBe('att-1');
    expect(onlyRequest('exam_upload_attachment').body).toEqual({ ...input, api_key: API_KEY });
  });

  it('examQuestions: patient-bound form', async () => {
    stub.reply('exam_questions', { body: SAMPLE.questionsPatient });
    const result = await client.examQuestions({ meeting_uuid: SAMPLE.invite.meeting_uuid, patient_exam_id: 90001 });
    expect(isPatientBoundQuestions(result)).toBe(true);
    expect(result.questions).toHaveLength(2);
    expect(onlyRequest('exam_questions').body).toEqual({
      api_key: API_KEY,
      meeting_uuid: SAMPLE.invite.meeting_uuid,
      patient_exam_id: 90001,
    });
  });

  it('examQuestions: catalog form', async () => {
    stub.reply('exam_questions', { body: SAMPLE.questionsCatalog });
    const result = await client.examQuestions({ exam_id: 101 });
    expect(isPatientBoundQuestions(result)).toBe(false);
    expect(result.questions[0]).toEqual({ no: 1, question: 'Which medications do you currently take?' });
    expect(onlyRequest('exam_questions').body).toEqual({ api_key: API_KEY, exam_id: 101 });
  });

  it('submitAnswers', async () => {
    stub.reply('exam_submit_answers', { body: SAMPLE.submitAnswers });
    const answers = [
      { no: 1, question: 'Which medications do you currently take?', answer: 'None' },
      { no: 3, question: 'Which of these conditions apply to you?', answer: ['Diabetes', 'Other: asthma'] },
    ];
    expect(await client.submitAnswers({ patient_exam_id: 90001, answers })).toMatchObject({
      questionnaire_skipped: true,
    });
    expect(onlyRequest('exam_submit_answers').body).toEqual({ api_key: API_KEY, patient_exam_id: 90001, answers });
  });

  it('resendInvite', async () => {
    stub.reply('exam_invite_resend', { body: SAMPLE.resend });
    expect((await client.resendInvite({ patient_exam_id: 90001 })).deliveries).toBe(2);
    expect(onlyRequest('exam_invite_resend').body).toEqual({ api_key: API_KEY, patient_exam_id: 90001 });
  });

  it('cancelInvite', async () => {
    stub.reply('exam_invite_cancel', { body: SAMPLE.cancel });
    const result: CancelInviteResult = await client.cancelInvite({ patient_exam_id: 90001 });
    expect(result).toEqual({ ...SAMPLE.cancel, alreadyCancelled: false });
    expect(onlyRequest('exam_invite_cancel').body).toEqual({ api_key: API_KEY, patient_exam_id: 90001 });
  });

  it('partnerPharmacyList', async () => {
    stub.reply('partner_pharmacy_list', { body: SAMPLE.partnerPharmacies });
    expect((await client.partnerPharmacyList()).pharmacies.map((p) => p.pharmacy_id)).toEqual([501, 502]);
    expect(onlyRequest('partner_pharmacy_list').body).toEqual({ api_key: API_KEY });
  });

  it('treatmentPackages', async () => {
    stub.reply('partner_pharmacy_treatment_packages', { body: SAMPLE.treatmentPackages });
    const result = await client.treatmentPackages({ pharmacy_id: 501, exam_id: 201 });
    expect(result.treatment_packages.map((p) => p.order_set_id)).toEqual(['8101', '8102']);
    expect(onlyRequest('partner_pharmacy_treatment_packages').body).toEqual({
      api_key: API_KEY,
      pharmacy_id: 501,
      exam_id: 201,
      pharmacy_ids: [501],
      exam_ids: [201],
    });
  });

  it('customPharmacySearch: form A answered with layout A, form B answered with layout B', async () => {
    stub.replySequence('custom_pharmacy_search', { body: SAMPLE.searchA }, { body: SAMPLE.searchB });
    const a = await client.customPharmacySearch({ zip_code: '78701', search: 'main' });
    const b = await client.customPharmacySearch({ city: 'Austin', state: 'TX' });
    expect(isSearchLayoutA(a)).toBe(true);
    expect(isSearchLayoutA(b)).toBe(false);
    expect(stub.requestsFor('custom_pharmacy_search').map((r) => r.body)).toEqual([
      { api_key: API_KEY, zip_code: '78701', search: 'main' },
      { api_key: API_KEY, city: 'Austin', state: 'TX' },
    ]);
  });

  it('reuses keep-alive connections across calls', async () => {
    stub.reply('exam_list', { body: SAMPLE.examList });
    for (let i = 0; i < 10; i += 1) await client.examList();
    expect(stub.requests).toHaveLength(10);
    // undici's pool may open a second socket while the first is finishing its answer; never one per call.
    expect(stub.connections).toBeLessThanOrEqual(2);
  });

  it('the api_key travels only in the body', async () => {
    stub.reply('exam_list', { body: SAMPLE.examList });
    await client.examList();
    const request = onlyRequest('exam_list');
    expect(JSON.stringify(request.headers)).not.toContain(API_KEY);
    expect(request.operation).toBe('exam_list');
  });
});

describe('service refusals', () => {
  it('unauthorized: 401 Unauthorized access.', async () => {
    stub.reply('exam_list', { status: 401, body: { http_code: 401, error_message: 'Unauthorized access.' } });
    const err = await rejection(client.examList());
    expect(err).toMatchObject({ kind: 'unauthorized', operation: 'exam_list', httpStatus: 401 });
    expect(isRetryable(err)).toBe(false);
  });

  it.each(Object.entries(ACCOUNT_SETUP_MESSAGES))(
    'account_setup %s: 401 onboarding message',
    async (setupCode, message) => {
      stub.reply('exam_invite', { status: 401, body: { http_code: 401, error_message: message } });
      const err = await rejection(client.examInvite(invite));
      expect(err).toMatchObject({ kind: 'account_setup', setupCode, httpStatus: 401, serviceMessage: message });
    },
  );

  it('validation: 400 on exam_invite names the field', async () => {
    stub.reply('exam_invite', { status: 400, body: { http_code: 400, error_message: 'The tele_state is invalid.' } });
    const err = await rejection(client.examInvite(invite));
    expect(err).toMatchObject({ kind: 'validation', httpStatus: 400, field: 'tele_state' });
  });

  it('validation before sending: a request that breaks the contract never leaves', async () => {
    const err = await rejection(client.examInvite({ ...invite, dob: '2023-02-29' }));
    expect(err).toMatchObject({ kind: 'validation', field: 'dob', operation: 'exam_invite' });
    expect(err.httpStatus).toBeUndefined();
    const gender = await rejection(client.examInvite({ ...invite, gender: '1' as unknown as 1 }));
    expect(gender.field).toBe('gender');
    expect(stub.requests).toHaveLength(0);
  });

  it('already_final: cancelling an approved, rejected or deferred exam', async () => {
    stub.replySequence(
      'exam_invite_cancel',
      { status: 400, body: { http_code: 400, error_message: 'Exam status is already approved.' } },
      { status: 400, body: { http_code: 400, error_message: 'Exam status is already rejected.' } },
      { status: 400, body: { http_code: 400, error_message: 'Exam status is already Deferred to Medical Director.' } },
    );
    const statuses = [];
    for (let i = 0; i < 3; i += 1) {
      const err = await rejection(client.cancelInvite({ patient_exam_id: 90001 }));
      expect(err.kind).toBe('already_final');
      statuses.push(err.finalStatus);
    }
    expect(statuses).toEqual(['Approved', 'Rejected', 'Deferred to Medical Director']);
  });

  it('cancelling an already cancelled exam resolves alreadyCancelled', async () => {
    stub.reply('exam_invite_cancel', {
      status: 400,
      body: { http_code: 400, error_message: 'Exam status is already cancelled.' },
    });
    expect(await client.cancelInvite({ patient_exam_id: 90001 })).toEqual({
      status: 'cancelled',
      patient_exam_id: 90001,
      alreadyCancelled: true,
      serviceMessage: 'Exam status is already cancelled.',
    });
  });

  it('server: 500 JSON and a 502 HTML page are retryable', async () => {
    stub.replySequence(
      'exam_list',
      { status: 500, body: { http_code: 500, error_message: 'Internal error' } },
      { status: 502, text: '<html><body>Bad Gateway</body></html>' },
    );
    const first = await rejection(client.examList());
    expect(first).toMatchObject({ kind: 'server', httpStatus: 500, serviceMessage: 'Internal error' });
    const second = await rejection(client.examList());
    expect(second).toMatchObject({
      kind: 'server',
      httpStatus: 502,
      serviceMessage: '<html><body>Bad Gateway</body></html>',
    });
    expect(isRetryable(second)).toBe(true);
  });

  it('an error inside an HTTP 200 body is classified by its http_code', async () => {
    stub.reply('exam_invite', { status: 200, body: { http_code: 401, error_message: 'Unauthorized access.' } });
    expect(await rejection(client.examInvite(invite))).toMatchObject({ kind: 'unauthorized', httpStatus: 401 });
    stub.reply('exam_invite', {
      status: 200,
      body: { http_code: 400, error_message: 'Invalid date of birth', field: 'dob' },
    });
    expect(await rejection(client.examInvite(invite))).toMatchObject({ kind: 'validation', field: 'dob' });
    stub.reply('exam_invite_cancel', {
      status: 200,
      body: { http_code: 400, error_message: 'Exam status is already rejected.' },
    });
    expect(await rejection(client.cancelInvite({ patient_exam_id: 90001 }))).toMatchObject({
      kind: 'already_final',
      finalStatus: 'Rejected',
    });
  });

  it('bad_response: a 200 whose body misses a required field names it', async () => {
    const { meeting_url: _url, ...noUrl } = SAMPLE.invite;
    stub.reply('exam_invite', { body: noUrl });
    const err = await rejection(client.examInvite(invite));
    expect(err).toMatchObject({ kind: 'bad_response', httpStatus: 200, field: 'meeting_url' });
    expect(err.message).toContain('meeting_url');
    expect(isRetryable(err)).toBe(false);
  });

  it('bad_response: a 200 whose body is not JSON', async () => {
    stub.reply('exam_list', { status: 200, text: '<html>maintenance</html>' });
    expect(await rejection(client.examList())).toMatchObject({ kind: 'bad_response', httpStatus: 200 });
  });
});

describe('transport failures', () => {
  it('not_sent: nothing listens on the port (ECONNREFUSED)', async () => {
    const closed = new ExamServiceClient({ baseUrl: await closedPortUrl(), apiKey: API_KEY });
    try {
      const err = await rejection(closed.examList());
      expect(err).toMatchObject({ kind: 'not_sent', causeCode: 'ECONNREFUSED' });
      expect(isRetryable(err)).toBe(true);
    } finally {
      await closed.close();
    }
  });

  it('not_sent: the host name does not resolve', async () => {
    const nowhere = new ExamServiceClient({
      baseUrl: 'http://exam-service.invalid',
      apiKey: API_KEY,
      connectTimeoutMs: 2_000,
    });
    try {
      const err = await rejection(nowhere.examList());
      expect(err.kind).toBe('not_sent');
      expect(['ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT']).toContain(err.causeCode);
    } finally {
      await nowhere.close();
    }
  });

  it('not_sent: DNS temporary failure (EAI_AGAIN)', async () => {
    const lookup = (_host: string, _options: unknown, callback: (err: Error) => void) =>
      callback(Object.assign(new Error('getaddrinfo EAI_AGAIN exam-service.test'), { code: 'EAI_AGAIN' }));
    const agent = new Agent({ connect: { lookup: lookup as never } });
    const flaky = new ExamServiceClient({ baseUrl: 'http://exam-service.test', apiKey: API_KEY, dispatcher: agent });
    try {
      expect(await rejection(flaky.examList())).toMatchObject({ kind: 'not_sent', causeCode: 'EAI_AGAIN' });
    } finally {
      await agent.close();
    }
  });

  it('not_sent: the connection is not established within the connect timeout', async () => {
    // A name lookup that never answers keeps the socket connecting until undici's connect timeout fires.
    const agent = new Agent({ connect: { timeout: 150, lookup: () => undefined } });
    const slow = new ExamServiceClient({ baseUrl: 'http://exam-service.test', apiKey: API_KEY, dispatcher: agent });
    try {
      const started = Date.now();
      const err = await rejection(slow.examList());
      expect(err).toMatchObject({ kind: 'not_sent', causeCode: 'UND_ERR_CONNECT_TIMEOUT' });
      expect(Date.now() - started).toBeLessThan(1_500);
    } finally {
      await agent.destroy();
    }
  });

  it('not_sent: the socket is closed before the request is written (TLS handshake cut)', async () => {
    const dropper = await startConnectionDropper();
    const cut = new ExamServiceClient({ baseUrl: `https://127.0.0.1:${dropper.port}`, apiKey: API_KEY });
    try {
      const err = await rejection(cut.examInvite(invite));
      expect(err.kind).toBe('not_sent');
      expect(err.causeCode).toBe('ECONNRESET');
    } finally {
      await cut.close();
      await dropper.close();
    }
  });

  it('ambiguous: the service reads the request, then resets the connection', async () => {
    stub.reply('exam_invite', { fault: 'reset' });
    const err = await rejection(client.examInvite(invite));
    expect(err).toMatchObject({ kind: 'ambiguous', causeCode: 'ECONNRESET' });
    expect(isRetryable(err)).toBe(false);
    expect(stub.requestsFor('exam_invite')).toHaveLength(1);
  });

  it('ambiguous: the service reads the request, then closes the connection', async () => {
    stub.reply('exam_invite', { fault: 'close' });
    const err = await rejection(client.examInvite(invite));
    expect(err).toMatchObject({ kind: 'ambiguous', causeCode: 'UND_ERR_SOCKET' });
    expect(stub.requestsFor('exam_invite')).toHaveLength(1);
  });

  describe('with a 300 ms request timeout', () => {
    let quick: ExamServiceClient;
    beforeEach(() => {
      quick = new ExamServiceClient({ baseUrl: stub.url, apiKey: API_KEY, requestTimeoutMs: 300 });
    });
    afterEach(async () => {
      await quick.close();
    });

    it('ambiguous: the service reads the request and never answers', async () => {
      stub.reply('exam_invite', { fault: 'hang' });
      const started = Date.now();
      const err = await rejection(quick.examInvite(invite));
      expect(err).toMatchObject({ kind: 'ambiguous', causeCode: 'UND_ERR_HEADERS_TIMEOUT' });
      expect(Date.now() - started).toBeLessThan(1_500);
      expect(stub.requestsFor('exam_invite')).toHaveLength(1);
    });

    it('ambiguous: the answer starts, then its body stalls', async () => {
      stub.reply('exam_list', { fault: 'stall-body' });
      expect(await rejection(quick.examList())).toMatchObject({ kind: 'ambiguous', causeCode: 'UND_ERR_BODY_TIMEOUT' });
    });

    // undici checks headers and body timeouts on a timer wheel of about one second, hence the wide margin.
    it('an answer slower than the timeout is ambiguous, a faster one succeeds', async () => {
      stub.replySequence(
        'exam_list',
        { body: SAMPLE.examList, delayMs: 2_500 },
        { body: SAMPLE.examList, delayMs: 50 },
      );
      expect((await rejection(quick.examList())).kind).toBe('ambiguous');
      expect((await quick.examList()).exams).toHaveLength(3);
    });
  });
});

describe('construction', () => {
  it('refuses an empty api key and a non-http base URL', () => {
    expect(() => new ExamServiceClient({ baseUrl: 'http://localhost', apiKey: '' })).toThrow(TypeError);
    expect(() => new ExamServiceClient({ baseUrl: 'ftp://localhost', apiKey: 'k' })).toThrow(TypeError);
    expect(() => new ExamServiceClient({ baseUrl: 'not a url', apiKey: 'k' })).toThrow();
  });
});
