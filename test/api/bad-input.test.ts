// Bad input of every kind is a 4xx problem that names what is wrong, never a 500. No Temporal here: these are
// refused before any workflow call (the client points at a closed port).
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { ApiHarness, useApiHarness } from '../support/api-harness';
import { auth, event1, expectProblem, gfeBody, startJourney, TOKENS, webhookPath } from './support';

describe('API: bad input is a 4xx problem naming the fault', () => {
  const stack = useApiHarness({
    temporal: 'unreachable',
    env: { API_BODY_LIMIT_BYTES: '65536', API_TEMPORAL_TIMEOUT_MS: '500' },
    app: { startForwarder: false },
  });

  describe('auth', () => {
    it('refuses a request without a bearer token, and with an unknown one', async () => {
      const none = await stack.app.inject({ method: 'GET', url: '/v1/journeys' });
      expect(expectProblem(none, 401).detail).toMatch(/Bearer/);
      expect(none.headers['www-authenticate']).toMatch(/^Bearer/);
      const wrong = await stack.app.inject({ method: 'GET', url: '/v1/journeys', headers: auth('not-a-token') });
      expect(expectProblem(wrong, 401).detail).toMatch(/not valid/);
    });

    it('keeps the admin routes behind the admin token', async () => {
      expectProblem(await stack.app.inject({ method: 'GET', url: '/admin/dead-letters' }), 401);
      expectProblem(
        await stack.app.inject({ method: 'GET', url: '/admin/dead-letters', headers: auth(TOKENS.a) }),
        401,
      );
      const ok = await stack.app.inject({ method: 'GET', url: '/admin/dead-letters', headers: auth(TOKENS.admin) });
      expect(ok.statusCode).toBe(200);
    });
  });

  describe('starting a journey', () => {
    it('requires the Idempotency-Key header', async () => {
      const res = await stack.app.inject({
        method: 'POST',
        url: '/v1/journeys',
        headers: auth(TOKENS.a),
        payload: gfeBody(),
      });
      expectProblem(res, 400, ['headers.idempotency-key']);
    });

    it('names fields of the wrong type and missing fields', async () => {
      const body = gfeBody({
        exams: ['101'],
        patient: { firstName: 'Test', email: 'not-an-email', dob: '01/02/1990' },
      });
      const res = await startJourney(stack.app, 'k-types', body);
      const problem = expectProblem(res, 400, [
        'exams.0',
        'patient.email',
        'patient.dob',
        'patient.lastName',
        'patient.phoneNumber',
        'patient.teleState',
      ]);
      expect(problem.detail).toMatch(/^the request is invalid: /);
      const dob = problem.errors.find((e: { field: string }) => e.field === 'patient.dob');
      expect(dob.message).toBe('YYYY-MM-DD');
    });

    it('names the scenario fields, the cross-field rules and unknown fields', async () => {
      const unknownScenario = await startJourney(stack.app, 'k-scn', gfeBody({ scenario: { type: 'teleport' } }));
      expectProblem(unknownScenario, 400, ['scenario.type']);

      const partnerWithout = await startJourney(stack.app, 'k-ph', gfeBody({ scenario: { type: 'partner_pharmacy' } }));
      expectProblem(partnerWithout, 400, ['scenario.pharmacyId']);

      const twice = await startJourney(stack.app, 'k-dup', gfeBody({ exams: [101, 101] }));
      expectProblem(twice, 400, ['exams']);

      const extra = await startJourney(stack.app, 'k-extra', gfeBody({ clinicId: 'clinic-b', journeyId: 'mine' }));
      const problem = expectProblem(extra, 400);
      expect(JSON.stringify(problem.errors)).toMatch(/clinicId/);
    });

    it("checks at the start every invite rule of the service's that can be known, naming the field", async () => {
      const patient = gfeBody().patient;
      const cases: [string, Record<string, unknown>, string, RegExp][] = [
        ['k-ad', { additionalData: 'x' }, 'additionalData', /stringified JSON/],
        ['k-pk', { patient: { ...patient, nickname: 'Z' } }, 'patient', /nickname/],
        ['k-ts', { patient: { ...patient, teleState: 'XX' } }, 'patient.teleState', /US state code, DC, or TE/],
        ['k-db', { patient: { ...patient, dob: '1990-02-30' } }, 'patient.dob', /not a calendar date/],
        ['k-df', { patient: { ...patient, dob: '2999-01-01' } }, 'patient.dob', /in the future/],
        [
          'k-te',
          {
            patient: { ...patient, teleState: 'TX' },
            homeAddress: { line1: '1 Main St', city: 'Austin', state: 'TE', zipCode: '78701' },
          },
          'homeAddress.state',
          /only together with patient.teleState TE/,
        ],
        ['k-sk', { scenario: { type: 'gfe', pharmacyId: 4 } }, 'scenario', /pharmacyId/],
        ['k-rd', { redirects: { approved: 'https://clinic.example/ok' } }, 'redirects', /approved/],
        ['k-tm', { timings: { consultationDeadline: 5 } }, 'timings', /consultationDeadline/],
      ];
      for (const [key, override, field, message] of cases) {
        const problem = expectProblem(await startJourney(stack.app, key, gfeBody(override)), 400, [field]);
        const named = problem.errors.find((e: { field: string }) => e.field === field);
        expect(`${named.message} ${JSON.stringify(problem.errors)}`).toMatch(message);
      }
      // What the service takes still starts (here: refused only because Temporal is away, after validation).
      const fine = await startJourney(
        stack.app,
        'k-ok',
        gfeBody({ additionalData: JSON.stringify({ order: 'A-1' }), patient: { ...patient, dob: '2000-02-29' } }),
      );
      expect(fine.statusCode).toBe(503);
    });

    it('answers malformed JSON, an empty body and a wrong content type with a problem', async () => {
      const headers = { ...auth(TOKENS.a), 'idempotency-key': 'k-json', 'content-type': 'application/json' };
      const malformed = await stack.app.inject({
        method: 'POST',
        url: '/v1/journeys',
        headers,
        payload: '{"exams": [101,',
      });
      expectProblem(malformed, 400, ['(body)']);
      const empty = await stack.app.inject({ method: 'POST', url: '/v1/journeys', headers, payload: '' });
      expectProblem(empty, 400);
      const text = await stack.app.inject({
        method: 'POST',
        url: '/v1/journeys',
        headers: { ...headers, 'content-type': 'text/plain' },
        payload: 'hello',
      });
      expectProblem(text, 415);
    });

    it('refuses a body over the size limit with 413', async () => {
      const body = gfeBody({ additionalData: 'x'.repeat(70_000) });
      const res = await startJourney(stack.app, 'k-big', body);
      expectProblem(res, 413, ['(body)']);
    });
  });

  describe('reading and acting', () => {
    it('names bad list filters and page sizes', async () => {
      const res = await stack.app.inject({
        method: 'GET',
        url: '/v1/journeys?stage=flying&pageSize=0&needsAttention=maybe&color=red',
        headers: auth(TOKENS.a),
      });
      expectProblem(res, 400, ['querystring.stage', 'querystring.pageSize', 'querystring.needsAttention']);
    });

    it('names a malformed journey id and bad update bodies', async () => {
      const id = await stack.app.inject({ method: 'GET', url: '/v1/journeys/bad%20id!', headers: auth(TOKENS.a) });
      expectProblem(id, 400, ['params.journeyId']);
      const answers = await stack.app.inject({
        method: 'POST',
        url: '/v1/journeys/j1/answers',
        headers: auth(TOKENS.a),
        payload: { patientExamId: 'one', answers: [] },
      });
      expectProblem(answers, 400, ['patientExamId', 'answers']);
      const cancel = await stack.app.inject({
        method: 'POST',
        url: '/v1/journeys/j1/cancel',
        headers: auth(TOKENS.a),
        payload: { patientExamId: -4 },
      });
      expectProblem(cancel, 400, ['patientExamId']);
    });

    it('names bad attachment uploads, JSON and multipart', async () => {
      const json = await stack.app.inject({
        method: 'POST',
        url: '/v1/attachments',
        headers: auth(TOKENS.a),
        payload: { kind: 'Lab', fileName: '../etc/passwd', contentType: 'nope', contentBase64: '***' },
      });
      expectProblem(json, 400, ['fileName', 'contentType', 'contentBase64']);

      const boundary = 'XBOUNDARY';
      const multipart = await stack.app.inject({
        method: 'POST',
        url: '/v1/attachments',
        headers: { ...auth(TOKENS.a), 'content-type': `multipart/form-data; boundary=${boundary}` },
        payload: `--${boundary}\r\nContent-Disposition: form-data; name="note"\r\n\r\nno kind, no file\r\n--${boundary}--\r\n`,
      });
      expectProblem(multipart, 400, ['kind', 'file']);
    });

    it('refuses a multipart file over the size limit with 413', async () => {
      const boundary = 'XBOUNDARY';
      const res = await stack.app.inject({
        method: 'POST',
        url: '/v1/attachments',
        headers: { ...auth(TOKENS.a), 'content-type': `multipart/form-data; boundary=${boundary}` },
        payload:
          `--${boundary}\r\nContent-Disposition: form-data; name="kind"\r\n\r\nLab\r\n` +
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n` +
          `${'x'.repeat(70_000)}\r\n--${boundary}--\r\n`,
      });
      expectProblem(res, 413);
      const stored = path.join(stack.dirs.dataDir, 'attachments');
      expect(existsSync(stored) ? readdirSync(stored) : []).toEqual([]);
    });

    it('names catalog query faults', async () => {
      const packages = await stack.app.inject({
        method: 'GET',
        url: '/v1/catalog/partner-pharmacies/abc/treatment-packages',
        headers: auth(TOKENS.a),
      });
      expectProblem(packages, 400, ['params.pharmacyId']);
      const noExam = await stack.app.inject({
        method: 'GET',
        url: '/v1/catalog/partner-pharmacies/501/treatment-packages',
        headers: auth(TOKENS.a),
      });
      expectProblem(noExam, 400, ['querystring.examId']);
      const search = await stack.app.inject({
        method: 'GET',
        url: '/v1/catalog/pharmacies/search',
        headers: auth(TOKENS.a),
      });
      expectProblem(search, 400, ['querystring.search']);
      const mixed = await stack.app.inject({
        method: 'GET',
        url: '/v1/catalog/pharmacies/search?search=drug&city=Austin&zipCode=7870',
        headers: auth(TOKENS.a),
      });
      expectProblem(mixed, 400, ['querystring.search', 'querystring.zipCode']);
    });

    it('answers 503 with Retry-After, not 500, when Temporal is down', async () => {
      const res = await stack.app.inject({ method: 'GET', url: '/v1/journeys/j1', headers: auth(TOKENS.a) });
      expect([503, 504]).toContain(res.statusCode);
      expectProblem(res, res.statusCode);
      const ready = await stack.app.inject({ method: 'GET', url: '/readyz' });
      expectProblem(ready, 503);
    });

    it('answers an unknown route with a problem 404', async () => {
      expectProblem(await stack.app.inject({ method: 'GET', url: '/v2/anything' }), 404);
    });
  });

  describe('webhook', () => {
    it('answers a wrong token exactly like an unknown address', async () => {
      const path1 = webhookPath('j1');
      const wrong = await stack.app.inject({ method: 'POST', url: `${path1}x`, payload: event1(1) });
      const otherJourney = await stack.app.inject({
        method: 'POST',
        url: path1.replace('/j1/', '/j2/'),
        payload: event1(1),
      });
      const nowhere = await stack.app.inject({ method: 'POST', url: '/webhooks/nothing-here', payload: event1(1) });
      for (const res of [wrong, otherJourney]) {
        expectProblem(res, 404);
        expect(res.json()).toEqual({ ...nowhere.json(), instance: expect.any(String) });
      }
    });

    it('answers 400 for a body without an event number or not JSON, and keeps it as a dead letter', async () => {
      const res = await stack.app.inject({
        method: 'POST',
        url: webhookPath('j1'),
        payload: { patient_exam_id: 'abc', exam_status: 'Approved' },
      });
      expectProblem(res, 400, ['event']);
      const notJson = await stack.app.inject({
        method: 'POST',
        url: webhookPath('j1'),
        headers: { 'content-type': 'application/json' },
        payload: '{"event": 1,',
      });
      expectProblem(notJson, 400, ['(body)']);

      const list = await stack.app.inject({ method: 'GET', url: '/admin/dead-letters', headers: auth(TOKENS.admin) });
      const letters = list.json().deadLetters.filter((l: { reason: string }) => l.reason === 'unparseable');
      expect(letters).toHaveLength(2);
      expect(letters[0]).not.toHaveProperty('rawBody');
      const one = await stack.app.inject({
        method: 'GET',
        url: `/admin/dead-letters/${letters[1].id}`,
        headers: auth(TOKENS.admin),
      });
      expect(one.json().rawBody).toBe('{"event": 1,');
      expect(readdirSync(path.join(stack.dirs.dataDir, 'dead-letters')).length).toBeGreaterThanOrEqual(2);
    });

    it('acknowledges a JSON body with an event number even when it cannot be read: it goes to the journey, held', async () => {
      for (const payload of [{ event: 1, patient_exam_id: 'abc' }, { event: '7' }, { event: 2, patient_exam_id: 5 }]) {
        const res = await stack.app.inject({ method: 'POST', url: webhookPath('j1'), payload });
        expect(res.statusCode).toBe(200);
        expect(res.json()).toEqual({ received: true, deliveryId: expect.any(String) });
      }
      const list = await stack.app.inject({ method: 'GET', url: '/admin/dead-letters', headers: auth(TOKENS.admin) });
      expect(list.json().deadLetters.filter((l: { reason: string }) => l.reason === 'unparseable')).toHaveLength(2);
    });

    it('replaying an unparseable dead letter is a 422 naming the fields; discarding removes it', async () => {
      const list = await stack.app.inject({ method: 'GET', url: '/admin/dead-letters', headers: auth(TOKENS.admin) });
      const id = list.json().deadLetters[0].id;
      const replay = await stack.app.inject({
        method: 'POST',
        url: `/admin/dead-letters/${id}/replay`,
        headers: auth(TOKENS.admin),
      });
      expectProblem(replay, 422);
      const after = await stack.app.inject({
        method: 'GET',
        url: `/admin/dead-letters/${id}`,
        headers: auth(TOKENS.admin),
      });
      expect(after.json().replays).toBe(1);
      const del = await stack.app.inject({
        method: 'DELETE',
        url: `/admin/dead-letters/${id}`,
        headers: auth(TOKENS.admin),
      });
      expect(del.statusCode).toBe(204);
      expectProblem(
        await stack.app.inject({ method: 'GET', url: `/admin/dead-letters/${id}`, headers: auth(TOKENS.admin) }),
        404,
      );
    });
  });
});

describe('API: rate limit per clinic', () => {
  it('answers 429 after the clinic used its requests for the minute; another clinic is unaffected', async () => {
    const stack = await new ApiHarness({
      temporal: 'unreachable',
      env: { API_RATE_LIMIT_PER_MINUTE: '3' },
      app: { startForwarder: false },
    }).start();
    try {
      const get = (token: string) =>
        stack.app.inject({ method: 'GET', url: '/v1/catalog/partner-pharmacies', headers: auth(token) });
      for (let i = 0; i < 3; i++) expect((await get(TOKENS.a)).statusCode).toBe(200);
      const limited = await get(TOKENS.a);
      expect(expectProblem(limited, 429).detail).toMatch(/3 requests per minute/);
      expect(limited.headers['retry-after']).toBeDefined();
      expect((await get(TOKENS.b)).statusCode).toBe(200);
    } finally {
      await stack.close();
    }
  });
});
