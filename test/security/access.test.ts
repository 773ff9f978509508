// Who may touch what, against a real Temporal dev server and a worker running the real journey workflow:
// - clinic A cannot read, list, cancel, resend, answer or attach to clinic B's journeys: a 404 exactly like a journey
//   that never existed, B's journey unchanged afterwards; nor reference B's stored attachment in a start request;
// - a missing, wrong or malformed Authorization header is a 401 that tells nothing (same answer whatever was sent);
// - a wrong webhook token (random, another journey's, another case, cut or extended) is the same 404 as an unknown
//   address, body and headers, and leaves no trace;
// - the rate limit holds per clinic (all its tokens and routes together), spares the other clinic, and never applies
//   to the webhook.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../src/api/app';
import { deriveJourneyId } from '../../src/api/journey-ids';
import { loadConfig } from '../../src/config';
import { webhookToken } from '../../src/webhook-url';
import { journeyWorkflowId } from '../../src/contract/definitions';
import {
  auth,
  event1,
  eventually,
  expectProblem,
  fakeActivities,
  fakeExamService,
  gfeBody,
  startJourney,
  tempDataDir,
  TOKENS,
  WEBHOOK_SECRET,
  webhookPath,
} from '../api/support';
import { useApiHarness } from '../support/api-harness';

const TASK_QUEUE = 'security-access';
const sha = (t: string) => createHash('sha256').update(t).digest('hex');

/** Headers that differ between any two answers: the time, and the rate limit's countdown. */
const VOLATILE_HEADERS = new Set(['date', 'x-ratelimit-remaining', 'x-ratelimit-reset']);

/** An answer with one journey id replaced, to compare answers about two ids of the same length. */
function normalized(res: LightMyRequestResponse, id: string) {
  const headers = Object.fromEntries(
    Object.entries(res.headers)
      .filter(([k]) => !VOLATILE_HEADERS.has(k))
      .map(([k, v]) => [k, String(v).replaceAll(id, '<id>')]),
  );
  return { status: res.statusCode, headers, body: res.body.replaceAll(id, '<id>') };
}

function multipartAttachment(patientExamId: number) {
  const b = 'SECBOUNDARY';
  return {
    'content-type': `multipart/form-data; boundary=${b}`,
    payload:
      `--${b}\r\nContent-Disposition: form-data; name="kind"\r\n\r\nLab\r\n` +
      `--${b}\r\nContent-Disposition: form-data; name="patientExamId"\r\n\r\n${patientExamId}\r\n` +
      `--${b}\r\nContent-Disposition: form-data; name="file"; filename="lab.pdf"\r\nContent-Type: application/pdf\r\n\r\n%PDF-1.4 x\r\n` +
      `--${b}--\r\n`,
  };
}

describe('access control', () => {
  const fakes = fakeActivities(60_000);
  // Every route is tried with bad tokens from one address: far more refusals than the per-address limit, which has its
  // own suite (test/api/throttle-before-identity.test.ts).
  const stack = useApiHarness({
    taskQueue: TASK_QUEUE,
    worker: fakes.activities,
    app: { startForwarder: false },
    env: { API_SIGN_IN_FAILURES_PER_MINUTE: '100000' },
  });
  let journeyA: { id: string; patientExamId: number };
  let journeyB: { id: string; patientExamId: number };
  let journeyB2: string;
  /** A journey id of the same form that was never started. */
  const missing = deriveJourneyId(WEBHOOK_SECRET, 'clinic-a', 'never-started');

  const get = (url: string, token = TOKENS.a) => stack.app.inject({ method: 'GET', url, headers: auth(token) });
  const post = (url: string, payload: object, token = TOKENS.a) =>
    stack.app.inject({ method: 'POST', url, headers: auth(token), payload });

  async function snapshotOf(id: string, token: string) {
    const view = await eventually(
      () => get(`/v1/journeys/${id}`, token).then((r) => r.json()),
      (v) => v.source === 'query',
    );
    const desc = await stack.client.workflow.getHandle(journeyWorkflowId(id)).describe();
    return { view, historyLength: desc.historyLength, status: desc.status.name };
  }

  const attachmentFiles = () => {
    const dir = path.join(stack.dirs.dataDir, 'attachments');
    return existsSync(dir) ? readdirSync(dir).sort() : [];
  };

  beforeAll(async () => {
    const started = await Promise.all([
      startJourney(stack.app, 'sec-a', gfeBody(), TOKENS.a),
      startJourney(stack.app, 'sec-b', gfeBody(), TOKENS.b),
      startJourney(stack.app, 'sec-b2', gfeBody(), TOKENS.b),
    ]);
    for (const s of started) expect(s.statusCode).toBe(201);
    const [a, b, b2] = started.map((s) => s.json().journeyId as string);
    const invited = (id: string, token: string) =>
      eventually(
        () => get(`/v1/journeys/${id}`, token).then((r) => r.json()),
        (v) => v.journey?.stage === 'awaiting_consultation',
      );
    const [va, vb] = await Promise.all([invited(a!, TOKENS.a), invited(b!, TOKENS.b), invited(b2!, TOKENS.b)]);
    journeyA = { id: a!, patientExamId: va.journey.exams[0].patientExamId };
    journeyB = { id: b!, patientExamId: vb.journey.exams[0].patientExamId };
    journeyB2 = b2!;
    expect(missing).toHaveLength(journeyB.id.length);
  }, 120_000);

  describe("clinic A and clinic B's journeys", () => {
    it("reads, actions and uploads on B's journey are a 404 exactly like a missing journey; B's is unchanged", async () => {
      const before = await snapshotOf(journeyB.id, TOKENS.b);
      const callsBefore = fakes.calls.length;
      const filesBefore = attachmentFiles();
      const attempts: [string, (id: string) => Promise<LightMyRequestResponse>][] = [
        ['read', (id) => get(`/v1/journeys/${id}`)],
        ['cancel all', (id) => post(`/v1/journeys/${id}/cancel`, {})],
        ['cancel one', (id) => post(`/v1/journeys/${id}/cancel`, { patientExamId: journeyB.patientExamId })],
        ['resend', (id) => post(`/v1/journeys/${id}/resend`, {})],
        [
          'answers',
          (id) =>
            post(`/v1/journeys/${id}/answers`, {
              patientExamId: journeyB.patientExamId,
              answers: [{ no: 1, answer: 'none' }],
            }),
        ],
        [
          'attachment (JSON)',
          (id) =>
            post(`/v1/journeys/${id}/attachments`, {
              patientExamId: journeyB.patientExamId,
              kind: 'Lab',
              fileName: 'lab.pdf',
              contentType: 'application/pdf',
              contentBase64: Buffer.from('%PDF-1.4 x').toString('base64'),
            }),
        ],
        [
          'attachment (multipart)',
          (id) => {
            const { payload, ...headers } = multipartAttachment(journeyB.patientExamId);
            return stack.app.inject({
              method: 'POST',
              url: `/v1/journeys/${id}/attachments`,
              headers: { ...auth(TOKENS.a), ...headers },
              payload,
            });
          },
        ],
      ];
      for (const [what, attempt] of attempts) {
        const other = await attempt(journeyB.id);
        const absent = await attempt(missing);
        expectProblem(other, 404);
        expect({ what, ...normalized(other, journeyB.id) }).toEqual({ what, ...normalized(absent, missing) });
      }
      // Nothing reached the journey, the exam service or the attachment store.
      expect(await snapshotOf(journeyB.id, TOKENS.b)).toEqual(before);
      expect(fakes.calls.length).toBe(callsBefore);
      expect(attachmentFiles()).toEqual(filesBefore);
      // B still reads and acts on its own journey.
      expect((await get(`/v1/journeys/${journeyB.id}`, TOKENS.b)).statusCode).toBe(200);
    });

    it("lists never include the other clinic's journeys, with any filter and on every page", async () => {
      const allPages = async (query: string, token: string) => {
        const ids: string[] = [];
        let next: string | null = null;
        do {
          const url: string = `/v1/journeys?pageSize=1${query}${next ? `&nextPageToken=${next}` : ''}`;
          const res = await get(url, token);
          expect(res.statusCode).toBe(200);
          const page = res.json();
          ids.push(...page.journeys.map((j: { journeyId: string }) => j.journeyId));
          next = page.nextPageToken;
        } while (next);
        return ids;
      };
      // Visibility is eventually consistent: wait until each clinic sees its own.
      await eventually(
        () => allPages('', TOKENS.b),
        (ids) => ids.includes(journeyB.id) && ids.includes(journeyB2),
      );
      await eventually(
        () => allPages('', TOKENS.a),
        (ids) => ids.includes(journeyA.id),
      );
      for (const filter of [
        '',
        '&stage=awaiting_consultation',
        '&scenario=gfe',
        '&needsAttention=false',
        '&examStatus=pending',
      ]) {
        const a = await allPages(filter, TOKENS.a);
        const b = await allPages(filter, TOKENS.b);
        expect(a).not.toContain(journeyB.id);
        expect(a).not.toContain(journeyB2);
        expect(b).not.toContain(journeyA.id);
      }
      // B's page token does not continue a list for A (it carries a MAC over B's query).
      const pageB = (await get('/v1/journeys?pageSize=1', TOKENS.b)).json();
      expect(pageB.nextPageToken).toEqual(expect.any(String));
      const replayed = await get(`/v1/journeys?pageSize=1&nextPageToken=${pageB.nextPageToken}`, TOKENS.a);
      expectProblem(replayed, 400, ['querystring.nextPageToken']);
    });

    it("A cannot start a journey with B's stored attachment; B can", async () => {
      const upload = await post(
        '/v1/attachments',
        {
          kind: 'Lab',
          fileName: 'lab.pdf',
          contentType: 'application/pdf',
          contentBase64: Buffer.from('%PDF-1.4 b').toString('base64'),
        },
        TOKENS.b,
      );
      expect(upload.statusCode).toBe(201);
      const { attachment } = upload.json();
      const body = gfeBody({ exams: [102], attachments: [{ examId: 102, attachment }] });
      const byA = await startJourney(stack.app, 'sec-a-with-b-attachment', body, TOKENS.a);
      expectProblem(byA, 400, ['attachments.0.attachment.ref']);
      const idA = deriveJourneyId(WEBHOOK_SECRET, 'clinic-a', 'sec-a-with-b-attachment');
      await expect(stack.client.workflow.getHandle(journeyWorkflowId(idA)).describe()).rejects.toThrow(/not found/i);
      expect((await startJourney(stack.app, 'sec-b-with-attachment', body, TOKENS.b)).statusCode).toBe(201);
    });

    it("A's Idempotency-Key that B used names A's own new journey, never B's", async () => {
      const res = await startJourney(stack.app, 'sec-b', gfeBody(), TOKENS.a);
      expect(res.statusCode).toBe(201);
      expect(res.json().journeyId).not.toBe(journeyB.id);
    });
  });

  describe('authentication', () => {
    const routes: [string, string][] = [
      ['POST', '/v1/journeys'],
      ['GET', '/v1/journeys'],
      ['GET', '/v1/journeys/<b>'],
      ['GET', '/v1/journeys/<missing>'],
      ['POST', '/v1/journeys/<b>/cancel'],
      ['POST', '/v1/journeys/<b>/resend'],
      ['POST', '/v1/journeys/<b>/answers'],
      ['POST', '/v1/journeys/<b>/attachments'],
      ['POST', '/v1/attachments'],
      ['GET', '/v1/catalog/exams'],
      ['GET', '/v1/catalog/partner-pharmacies'],
      ['GET', '/v1/catalog/partner-pharmacies/501/treatment-packages?examId=201'],
      ['GET', '/v1/catalog/pharmacies/search?zipCode=78701'],
    ];
    const badHeaders: [string, string | undefined][] = [
      ['none', undefined],
      ['empty', ''],
      ['scheme only', 'Bearer'],
      ['scheme and space', 'Bearer '],
      ['basic', `Basic ${Buffer.from('clinic-a:secret').toString('base64')}`],
      ['another scheme', `Token ${TOKENS.a}`],
      ['no scheme', TOKENS.a],
      ['two tokens', `Bearer ${TOKENS.a} ${TOKENS.b}`],
      ['unknown token', `Bearer ${randomBytes(24).toString('base64url')}`],
      ['token in upper case', `Bearer ${TOKENS.a.toUpperCase()}`],
      ['token cut short', `Bearer ${TOKENS.a.slice(0, -1)}`],
      ['token extended', `Bearer ${TOKENS.a}x`],
      ["the token's hash", `Bearer ${sha(TOKENS.a)}`],
      ['the admin token', `Bearer ${TOKENS.admin}`],
      ['NUL', 'Bearer \u0000'],
    ];
    const DETAILS = ['send the clinic API token as "Authorization: Bearer <token>"', 'the bearer token is not valid'];

    it('every clinic route answers a missing, wrong or malformed Authorization with a 401 that tells nothing', async () => {
      const seen = new Map<string, string>();
      for (const [method, template] of routes) {
        const url = template.replace('<b>', journeyB.id).replace('<missing>', missing);
        for (const [what, header] of badHeaders) {
          const res = await stack.app.inject({
            method: method as 'GET' | 'POST',
            url,
            headers: {
              ...(header !== undefined ? { authorization: header } : {}),
              'idempotency-key': 'sec-auth',
              'content-type': 'application/json',
            },
            // Garbage body: authentication comes first, so nothing is validated (nor revealed) before it.
            ...(method === 'POST' ? { payload: '{"not": "valid"' } : {}),
          });
          const problem = expectProblem(res, 401);
          expect({ what, url, detail: DETAILS.includes(problem.detail) }).toEqual({ what, url, detail: true });
          expect(problem).not.toHaveProperty('errors');
          expect(res.headers['www-authenticate']).toBe('Bearer realm="patient-journeys"');
          for (const secret of [
            TOKENS.a,
            TOKENS.b,
            TOKENS.admin,
            sha(TOKENS.a),
            sha(TOKENS.b),
            'clinic-a',
            'clinic-b',
          ]) {
            expect(res.body).not.toContain(secret);
          }
          // The same answer on every route for the same kind of bad header (bar the instance path).
          const { date: _date, 'content-length': _length, ...headers } = res.headers;
          const shape = JSON.stringify({ ...problem, instance: undefined, headers });
          if (!seen.has(what)) seen.set(what, shape);
          expect({ what, url, shape }).toEqual({ what, url, shape: seen.get(what) });
        }
      }
      // B's journey and a missing one are indistinguishable without a token.
      const unauth = (id: string) => stack.app.inject({ method: 'GET', url: `/v1/journeys/${id}` });
      expect(normalized(await unauth(journeyB.id), journeyB.id)).toEqual(normalized(await unauth(missing), missing));
    });
  });

  describe('webhook tokens', () => {
    const swapCase = (s: string) =>
      [...s].map((c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase())).join('');

    it('a wrong token is the same 404 as an unknown address (body and headers) and leaves no trace', async () => {
      const tokenA = webhookToken(journeyA.id, WEBHOOK_SECRET);
      const tokenB = webhookToken(journeyB.id, WEBHOOK_SECRET);
      const before = await snapshotOf(journeyB.id, TOKENS.b);
      const inboxBefore = await stack.app.callbacks.inbox.stats();
      const wrong: [string, string][] = [
        ['random', randomBytes(32).toString('base64url')],
        ["another journey's", tokenA],
        ['swapped case', swapCase(tokenB)],
        ['upper case', tokenB.toUpperCase()],
        ['lower case', tokenB.toLowerCase()],
        ['cut short', tokenB.slice(0, -1)],
        ['extended', `${tokenB}A`],
        ['padded', `${tokenB}=`],
        ['under another secret', webhookToken(journeyB.id, `${WEBHOOK_SECRET}-other`)],
        ['hex of the right MAC', Buffer.from(tokenB, 'base64url').toString('hex')],
      ];
      for (const [what, token] of wrong) {
        expect(token).not.toBe(tokenB);
        const url = `/webhooks/exam-service/${journeyB.id}/${token}`;
        // An address that does not exist, of the same length (so even Content-Length is the same).
        const unknownUrl = url.replace('/exam-service/', '/exam-servicf/');
        const send = (u: string) =>
          stack.app.inject({ method: 'POST', url: u, payload: event1(journeyB.patientExamId, 'Rejected') });
        const [res, unknown] = [await send(url), await send(unknownUrl)];
        expectProblem(res, 404);
        expect({ what, ...normalized(res, url) }).toEqual({ what, ...normalized(unknown, unknownUrl) });
      }
      // No dead letter, nothing in the inbox, the journey never heard of it.
      const inboxAfter = await stack.app.callbacks.inbox.stats();
      expect([inboxAfter.deadLetters, inboxAfter.depth]).toEqual([inboxBefore.deadLetters, inboxBefore.depth]);
      expect(await snapshotOf(journeyB.id, TOKENS.b)).toEqual(before);
      // The right token is still taken (a callback for a patient exam that is not the journey's: recorded, ignored).
      const right = await stack.app.inject({
        method: 'POST',
        url: webhookPath(journeyB.id),
        payload: event1(1, 'Rejected'),
      });
      expect(right.statusCode).toBe(200);
    });
  });

  describe('rate limit', () => {
    it('holds per clinic across its tokens and routes, spares the other clinic, never applies to the webhook', async () => {
      const secondTokenA = 'second-token-clinic-a-0123456789';
      const limitDirs = tempDataDir();
      const limited = await buildApp({
        config: loadConfig({
          DATA_DIR: limitDirs.dataDir,
          WEBHOOK_SECRET,
          TEMPORAL_TASK_QUEUE: TASK_QUEUE,
          CLINICS_JSON: JSON.stringify([
            {
              clinicId: 'clinic-a',
              examServiceApiKey: 'sandbox-demo-key',
              apiTokenSha256: [sha(TOKENS.a), sha(secondTokenA)],
            },
            { clinicId: 'clinic-b', examServiceApiKey: 'sandbox-demo-key', apiTokenSha256: [sha(TOKENS.b)] },
          ]),
          API_RATE_LIMIT_PER_MINUTE: '4',
          LOG_LEVEL: 'silent',
          PAYLOAD_ENCRYPTION_DISABLED: 'true',
        }),
        temporal: stack.client,
        examServiceFor: () => fakeExamService(),
        startForwarder: false,
      });
      try {
        const call = (method: 'GET' | 'POST', url: string, token: string, payload?: object) =>
          limited.inject({ method, url, headers: auth(token), ...(payload ? { payload } : {}) });
        // Four requests of clinic A, with both of its tokens, on four routes.
        expect((await call('GET', '/v1/catalog/exams', TOKENS.a)).statusCode).toBe(200);
        expect((await call('GET', '/v1/journeys', secondTokenA)).statusCode).toBe(200);
        expect((await call('GET', `/v1/journeys/${journeyA.id}`, TOKENS.a)).statusCode).toBe(200);
        expect((await call('GET', '/v1/catalog/partner-pharmacies', secondTokenA)).statusCode).toBe(200);
        // The fifth is refused, whichever token and route.
        for (const [method, url, token] of [
          ['GET', '/v1/catalog/exams', TOKENS.a],
          ['GET', `/v1/journeys/${journeyA.id}`, secondTokenA],
          ['POST', `/v1/journeys/${journeyA.id}/resend`, TOKENS.a],
        ] as const) {
          const res = await call(method, url, token, method === 'POST' ? {} : undefined);
          const problem = expectProblem(res, 429);
          expect(problem.detail).toMatch(/4 requests per minute/);
          const retryAfter = Number(res.headers['retry-after']);
          expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true);
          expect(res.body).not.toContain(token);
        }
        // Clinic B has its own budget.
        for (let i = 0; i < 4; i++) expect((await call('GET', '/v1/catalog/exams', TOKENS.b)).statusCode).toBe(200);
        expectProblem(await call('GET', '/v1/catalog/exams', TOKENS.b), 429);
        // The webhook is never limited: far more callbacks than the limit, all taken (or refused when not JSON at all).
        const gone = deriveJourneyId(WEBHOOK_SECRET, 'clinic-a', 'never-started-webhook');
        for (let i = 0; i < 25; i++) {
          const taken = await limited.inject({ method: 'POST', url: webhookPath(gone), payload: event1(70_000 + i) });
          expect(taken.statusCode).toBe(200);
          const unreadable = await limited.inject({
            method: 'POST',
            url: webhookPath(gone),
            headers: { 'content-type': 'application/json' },
            payload: '{"event": 1,',
          });
          expect(unreadable.statusCode).toBe(400);
        }
        // And the journey A rate-limited resend never reached the workflow.
        expect(fakes.calls.filter((c) => c.name === 'resendInvite')).toHaveLength(0);
      } finally {
        await limited.close();
        limitDirs.cleanup();
      }
    });
  });
});
