// Every answer names each fault once and is logged with its outcome: a problem lists a field error once however many
// checks found it, and what the router refuses before any route runs (a path part over its length limit, malformed
// percent-encoding) is logged as completed with its status, like every other answer. A method an address does not
// serve is a 405 naming those it does; a schema-valid request refused for a rule names the rule the document lists.
import { Writable } from 'node:stream';
import { buildApp, type ApiApp } from '../../src/api/app';
import { problemBody } from '../../src/api/problem';
import { auth, fakeExamService, TOKENS, tempDataDir, testConfig, unreachableTemporal } from './support';

describe('problem answers', () => {
  it('list each field error once, in the order first named', () => {
    const dob = { field: 'patient.dob', message: 'not a date' };
    const extra = { field: 'additionalData', message: 'not JSON' };
    expect(problemBody(400, 'validation', 'x', [dob, extra, dob, extra, dob]).errors).toEqual([dob, extra]);
    expect(problemBody(400, 'validation', 'x', [dob, { ...dob, message: 'in the future' }]).errors).toHaveLength(2);
  });

  describe('refused by the router', () => {
    const dirs = tempDataDir();
    const lines: { msg?: string; res?: { statusCode?: number }; reqId?: string }[] = [];
    let app: ApiApp;
    beforeAll(async () => {
      const stream = new Writable({
        write(chunk: Buffer, _enc, done) {
          for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line));
          done();
        },
      });
      app = await buildApp({
        config: testConfig(dirs.dataDir),
        temporal: await unreachableTemporal(),
        examServiceFor: () => fakeExamService(),
        startForwarder: false,
        logger: { level: 'info', stream },
      });
    });
    afterAll(async () => {
      await app.close();
      dirs.cleanup();
    });

    it.each([
      ['a path part over its length limit', `/v1/journeys/${'j'.repeat(2_000)}`, 414],
      ['malformed percent-encoding', '/v1/journeys/%E0%A4%A', 400],
    ])('%s: answered as a problem and logged as completed, once', async (_what, url, status) => {
      lines.length = 0;
      const res = await app.inject({ method: 'GET', url });
      expect(res.statusCode).toBe(status);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      const completed = lines.filter((l) => l.msg === 'request completed');
      expect(completed.map((l) => l.res?.statusCode)).toEqual([status]);
    });

    it.each([
      ['PUT', '/v1/journeys/j123', 'GET, HEAD'],
      ['DELETE', '/v1/journeys', 'GET, HEAD, POST'],
      ['GET', '/v1/journeys/j123/cancel', 'POST'],
      ['PATCH', '/v1/catalog/partner-pharmacies/501/treatment-packages', 'GET, HEAD'],
      ['GET', '/webhooks/exam-service/j123/token', 'POST'],
    ])('%s %s: 405 with Allow: %s, logged as completed', async (method, url, allow) => {
      lines.length = 0;
      const res = await app.inject({ method: method as 'GET', url, headers: auth(TOKENS.a) });
      expect({ status: res.statusCode, allow: res.headers.allow }).toEqual({ status: 405, allow });
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.json()).toMatchObject({ status: 405, type: 'urn:patient-journeys:problem:method-not-allowed' });
      const completed = lines.filter((l) => l.msg === 'request completed');
      expect(completed.map((l) => l.res?.statusCode)).toEqual([405]);
    });

    it('answers 404 for an address no method serves', async () => {
      const res = await app.inject({ method: 'PUT', url: '/v1/nothing-here', headers: auth(TOKENS.a) });
      expect(res.statusCode).toBe(404);
      expect(res.headers.allow).toBeUndefined();
    });

    it('names the rule of a start whose additionalData text is not JSON, and takes an object', async () => {
      const start = (additionalData: unknown, dob = '1990-01-01') =>
        app.inject({
          method: 'POST',
          url: '/v1/journeys',
          headers: { ...auth(TOKENS.a), 'idempotency-key': 'rule-2' },
          payload: {
            patient: {
              firstName: 'T',
              lastName: 'A',
              email: 'p@example.com',
              dob,
              phoneNumber: '4155550100',
              teleState: 'TX',
            },
            exams: [101],
            scenario: { type: 'gfe' },
            additionalData,
          },
        });
      const text = await start('not json');
      expect(text.statusCode).toBe(400);
      expect(text.json().errors).toEqual([
        expect.objectContaining({ field: 'additionalData', rule: 'additional-data-json' }),
      ]);
      const future = await start('{}', '2999-01-01');
      expect(future.json().errors).toEqual([
        expect.objectContaining({ field: 'patient.dob', rule: 'dob-not-in-future' }),
      ]);
      const large = await start({ text: 'x'.repeat(4_000) });
      expect(large.json().errors).toEqual([
        expect.objectContaining({ field: 'additionalData', rule: 'additional-data-size' }),
      ]);
      // A calendar date that does not exist breaks the schema (format date): no rule, a plain schema error.
      const feb31 = await start('{}', '1990-02-31');
      expect(feb31.json().errors).toEqual([{ field: 'patient.dob', message: 'not a calendar date' }]);
      // An object is valid: past validation, the journey's own start (Temporal unreachable here) answers.
      expect((await start({ ref: 'x' })).statusCode).not.toBe(400);
    });
  });
});
