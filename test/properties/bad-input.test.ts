// Property-based bad input on every clinic route and on the webhook, against a real Temporal dev server, a worker
// running the real journey workflow (fake activities) and the exam-service sandbox for the catalog. Whatever arrives
// (random JSON, wrong types, huge strings and arrays, deep nesting, lone surrogates, RTL, NUL, prototype keys, cut-off
// bodies, wrong content types, random query strings and path parameters), the answer is a 4xx problem that says what
// is wrong (never a 5xx), the process stays up, and no journey changes: the journeys' snapshots and history lengths,
// the activity calls, the stored attachments and the set of workflows are the same after the run as before it.
//
// Seed and runs: FC_SEED (default in ./arbitraries) and FC_RUNS; fast-check prints the seed and path of a failure.
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import type { ApiApp } from '../../src/api/app';
import {
  AnswersBody,
  AttachmentMultipartFields,
  AttachmentUploadJson,
  CancelBody,
  EXAM_STATUS_VALUES,
  IdempotencyHeaders,
  JOURNEY_STAGES,
  JourneyAttachmentJson,
  JourneyIdParam,
  ListJourneysQuery,
  PharmacyParams,
  PharmacySearchQuery,
  ResendBody,
  SCENARIO_TYPES,
  StartJourneyBody,
  TreatmentPackagesQuery,
} from '../../src/api/schemas';
import { callbackSignal, readCallback } from '../../src/inbox/reading';
import { webhookToken } from '../../src/webhook-url';
import { journeyWorkflowId } from '../../src/contract/definitions';
import {
  auth,
  event1,
  eventually,
  fakeActivities,
  gfeBody,
  startJourney,
  TOKENS,
  WEBHOOK_SECRET,
  webhookPath,
} from '../api/support';
import { useApiHarness } from '../support/api-harness';
import {
  anyContentType,
  expectNoServerError,
  expectRefusal,
  FC_RUNS,
  FC_SEED,
  fcOptions,
  hugeString,
  JSON_CONTENT_TYPES,
  jsonValue,
  mutationOf,
  nastyKey,
  nastyString,
  NON_JSON_CONTENT_TYPES,
  pathSegment,
  queryCase,
  refusedBodyText,
  truncated,
  type QueryCase,
} from './arbitraries';

const TASK_QUEUE = 'property-bad-input';
const BODY_LIMIT = 256 * 1024;
/** What no answer may ever contain. */
const SECRETS = [TOKENS.a, TOKENS.b, TOKENS.admin, WEBHOOK_SECRET, 'sandbox-demo-key'];

/** A start request using every optional part, so that a mutation can reach every field. */
const START_BODY = {
  patient: {
    firstName: 'Test',
    lastName: 'Approve',
    email: 'patient@example.com',
    dob: '1990-01-01',
    phoneNumber: '+14155550100',
    teleState: 'TE',
    gender: 2,
    dmvLicenseNumber: 'D1234567',
  },
  homeAddress: { line1: '1 Main St', line2: 'Apt 2', city: 'Austin', state: 'TX', zipCode: '78701' },
  shippingAddress: { line1: '2 Side St', city: 'Austin', state: 'TX', zipCode: '78701-1234' },
  exams: [101, 102],
  scenario: {
    type: 'custom_pharmacy',
    pharmacy: {
      ncpdpid: '4512345',
      name: 'Drug Mart',
      addressLine1: '100 Congress Ave',
      city: 'Austin',
      state: 'TX',
      zipCode: '78701',
      phone: '5125550111',
      type: 'Retail',
    },
    patientChoice: 1,
    billing: { billedTo: 'clinic', clinicBillingId: 'B-1' },
    deliveryMethod: 'ship',
    skipConfirmation: true,
  },
  answers: [
    {
      examId: 101,
      answers: [
        { no: 1, question: 'Allergies?', answer: 'none' },
        { no: 2, answer: ['a'] },
      ],
    },
  ],
  attachments: [
    {
      examId: 102,
      attachment: { ref: 'att_abcdefgh12', kind: 'Lab', fileName: 'l.pdf', contentType: 'application/pdf', size: 3 },
    },
  ],
  redirects: { approve: 'https://clinic.example/ok', reject: 'https://clinic.example/no' },
  additionalData: '{"order":"A-1"}',
  notificationUrl: 'https://clinic.example/hooks',
  timings: { remindersMs: [60_000], consultationDeadlineMs: 3_600_000, reinviteMaxAttempts: 1 },
};

const UPDATE_ROUTES = [
  { action: 'cancel', schema: CancelBody, valid: { patientExamId: 1, reason: 'changed plans' } },
  { action: 'resend', schema: ResendBody, valid: { patientExamId: 1 } },
  {
    action: 'answers',
    schema: AnswersBody,
    valid: {
      patientExamId: 1,
      answers: [
        { no: 1, question: 'q', answer: 'a' },
        { no: 2, answer: ['x', 'y'] },
      ],
    },
  },
  {
    action: 'attachments',
    schema: JourneyAttachmentJson,
    valid: {
      patientExamId: 1,
      kind: 'Lab',
      fileName: 'a.pdf',
      contentType: 'application/pdf',
      contentBase64: 'JVBERi0=',
    },
  },
] as const;

const ATTACHMENT_BODY = { kind: 'Lab', fileName: 'a.pdf', contentType: 'application/pdf', contentBase64: 'JVBERi0=' };

const EVENT2 = {
  event: 2,
  exam_id: 201,
  exam_name: 'Weight Loss',
  exam_status: 'Approved',
  exam_url: 'https://records.example/2.pdf',
  rx_status: 'Pharmacy Confirmed',
  clinic_name: 'Clinic',
  patient_email: 'patient@example.com',
  patient_phone_number: '4155550100',
  provider_name: 'Dr. P',
  reason: 'Approved',
  patient_exam_id: 90_002,
  prescribed_os_id: 8101,
  prescription: [{ prescription_id: 7001, drug_name: 'Semaglutide' }],
  questions_answers: [],
};
const EVENT3 = {
  event: 3,
  patient_exam_id: '90002',
  prescription_id: '7001',
  tracking_number: '1Z999',
  delivery_service: 'Overnight',
  pharmacy_location: 'Austin, TX',
  order_id: 'ORD-1',
};

/** Raw text of a request body as the wire carries it. */
const bytesOf = (text: string) => Buffer.byteLength(text, 'utf8');

// ---- multipart bodies that must be refused ---------------------------------------------------------------------

const MULTIPART_DEFECTS = [
  'no-kind',
  'bad-kind',
  'no-exam',
  'bad-exam',
  'no-file',
  'empty-file',
  'two-files',
  'truncated',
  'wrong-boundary',
  'no-boundary',
  'garbage',
  'proto-field',
  'too-many-fields',
] as const;
type MultipartDefect = (typeof MULTIPART_DEFECTS)[number];

function multipartCase(withExam: boolean, patientExamId: number) {
  const defects = MULTIPART_DEFECTS.filter((d) => withExam || (d !== 'no-exam' && d !== 'bad-exam'));
  // What the route's own schema refuses (it coerces: "1e3" and "0x10" are patient exam ids 1000 and 16).
  const badExamId = nastyString.filter(
    (s) => s.length < 1000 && !AttachmentMultipartFields.shape.patientExamId.safeParse(s).success,
  );
  return fc
    .record({
      defect: fc.constantFrom<MultipartDefect>(...defects),
      boundary: fc.string({ unit: fc.constantFrom(...'abcXYZ0123456789-_'.split('')), minLength: 1, maxLength: 40 }),
      file: fc.oneof(nastyString, fc.constant('%PDF-1.4')),
      badKind: fc.oneof(fc.constant(''), fc.constant('k'.repeat(101))),
      badExamId,
      extraName: nastyKey.filter((k) => !['kind', 'patientExamId', 'file', '__proto__'].includes(k)),
      extraValue: nastyString.filter((s) => s.length < 2000),
      cut: fc.double({ min: 0, max: 1, noNaN: true }),
      garbage: nastyString,
    })
    .map((c) => {
      const b = `pb${c.boundary}`;
      const field = (name: string, value: string) =>
        `--${b}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
      const filePart = (name: string) =>
        `--${b}\r\nContent-Disposition: form-data; name="${name}"; filename="lab.pdf"\r\n` +
        `Content-Type: application/pdf\r\n\r\n${c.defect === 'empty-file' ? '' : c.file || 'x'}\r\n`;
      const parts: string[] = [];
      if (c.defect !== 'no-kind') parts.push(field('kind', c.defect === 'bad-kind' ? c.badKind : 'Lab'));
      if (withExam && c.defect !== 'no-exam') {
        parts.push(field('patientExamId', c.defect === 'bad-exam' ? c.badExamId : String(patientExamId)));
      }
      parts.push(field(c.extraName.replace(/["\r\n]/g, '_') || 'extra', c.extraValue));
      if (c.defect === 'proto-field') parts.push(field('__proto__', 'x'));
      if (c.defect === 'too-many-fields') for (let i = 0; i < 12; i++) parts.push(field(`f${i}`, 'v'));
      if (c.defect !== 'no-file') parts.push(filePart('file'));
      if (c.defect === 'two-files') parts.push(filePart('file2'));
      const head = parts.join('');
      let body = `${head}--${b}--\r\n`;
      let contentType = `multipart/form-data; boundary=${b}`;
      if (c.defect === 'truncated') body = head.slice(0, Math.floor(c.cut * head.length));
      if (c.defect === 'wrong-boundary') contentType = `multipart/form-data; boundary=${b}x`;
      if (c.defect === 'no-boundary') contentType = 'multipart/form-data';
      if (c.defect === 'garbage') body = c.garbage;
      return { defect: c.defect, contentType, body };
    });
}

describe(`bad input never gets past the edge (fast-check seed ${FC_SEED}, FC_RUNS ${FC_RUNS})`, () => {
  const fakes = fakeActivities(80_000);
  const stack = useApiHarness({
    taskQueue: TASK_QUEUE,
    worker: fakes.activities,
    examService: 'sandbox',
    env: {
      API_BODY_LIMIT_BYTES: String(BODY_LIMIT),
      // The properties send thousands of requests a minute; the rate limit has its own test (test/security).
      API_RATE_LIMIT_PER_MINUTE: '1000000',
    },
  });

  /** A journey of clinic A waiting for its consultation: the target of every clinic action. */
  let live: { id: string; patientExamId: number };
  /** A journey of clinic A that has ended (its exam approved): the webhook's target for any body. */
  let finished: string;
  /** A journey of clinic B. */
  let other: string;
  let before: Awaited<ReturnType<typeof observe>>;
  let catalogBaseline: Record<string, string>;

  const get = (url: string, token = TOKENS.a) => stack.app.inject({ method: 'GET', url, headers: auth(token) });

  async function view(id: string, token = TOKENS.a) {
    // The live snapshot (a busy worker may answer a query late: then the API falls back; wait for the query).
    return eventually(
      () => get(`/v1/journeys/${id}`, token).then((r) => r.json()),
      (v) => v.source === 'query',
      { timeoutMs: 20_000 },
    );
  }

  async function historyLength(id: string) {
    return (await stack.client.workflow.getHandle(journeyWorkflowId(id)).describe()).historyLength;
  }

  const attachmentFiles = () => {
    const dir = path.join(stack.dirs.dataDir, 'attachments');
    return existsSync(dir) ? readdirSync(dir).sort() : [];
  };

  async function workflowIds() {
    const ids: string[] = [];
    for await (const w of stack.client.workflow.list({ query: `WorkflowType = 'patientJourney'` }))
      ids.push(w.workflowId);
    return ids.sort();
  }

  /** Everything bad input must leave alone. */
  async function observe() {
    return {
      views: {
        running: await view(live.id),
        finished: await view(finished),
        other: await view(other, TOKENS.b),
      },
      historyLengths: [await historyLength(live.id), await historyLength(finished), await historyLength(other)],
      activityCalls: fakes.calls.length,
      attachments: attachmentFiles(),
      workflows: await workflowIds(),
    };
  }

  beforeAll(async () => {
    const started = await Promise.all([
      startJourney(stack.app, 'prop-running'),
      startJourney(stack.app, 'prop-finished'),
      startJourney(stack.app, 'prop-other', gfeBody(), TOKENS.b),
    ]);
    for (const s of started) expect(s.statusCode).toBe(201);
    const [runningId, finishedId, otherId] = started.map((s) => s.json().journeyId as string);
    finished = finishedId!;
    other = otherId!;
    const invited = (id: string, token = TOKENS.a) =>
      eventually(
        () => get(`/v1/journeys/${id}`, token).then((r) => r.json()),
        (v) => v.journey?.stage === 'awaiting_consultation',
      );
    const [r, f] = await Promise.all([invited(runningId!), invited(finished), invited(other, TOKENS.b)]);
    live = { id: runningId!, patientExamId: r.journey.exams[0].patientExamId };
    const approve = await stack.app.inject({
      method: 'POST',
      url: webhookPath(finished),
      payload: event1(f.journey.exams[0].patientExamId),
    });
    expect(approve.statusCode).toBe(200);
    await eventually(
      () => stack.client.workflow.getHandle(journeyWorkflowId(finished)).describe(),
      (d) => d.status.name === 'COMPLETED',
    );
    catalogBaseline = {};
    for (const url of ['/v1/catalog/exams', '/v1/catalog/partner-pharmacies']) {
      const res = await get(url);
      expect(res.statusCode).toBe(200);
      catalogBaseline[url] = res.body;
    }
    // Visibility is eventually consistent: wait until it lists the three journeys.
    before = await eventually(observe, (o) => o.workflows.length === 3);
  }, 120_000);

  const ids = () => [live.id, finished, other];
  /** A journey id segment: one of the three journeys (clinic B's among them), or anything. */
  const journeySegment = () =>
    fc.oneof({ arbitrary: fc.constantFrom(...ids()), weight: 1 }, { arbitrary: pathSegment, weight: 3 });
  const withQuery = (url: string, q: QueryCase | undefined) => (q && q.text !== '' ? `${url}?${q.text}` : url);

  describe('clinic routes', () => {
    it('POST /v1/journeys: refused bodies, wrong content types and bad Idempotency-Keys are 4xx problems', async () => {
      const validText = JSON.stringify(START_BODY);
      const goodKey = fc.uuid();
      const badKey = fc.oneof(
        fc.constant(undefined),
        fc.constantFrom('', ' ', 'has space', 'tab\there', 'caf\u00e9', 'k'.repeat(256)),
        fc.string({ unit: fc.constantFrom('a', ' ', '\u00e9', '\u00ff', '"'), minLength: 1, maxLength: 30 }),
      );
      const keyIsValid = (key: string | undefined) =>
        IdempotencyHeaders.safeParse({ 'idempotency-key': key === undefined ? undefined : key.trim() }).success;
      const request = fc.oneof(
        fc.record({ text: refusedBodyText(StartJourneyBody, START_BODY), contentType: anyContentType, key: goodKey }),
        fc.record({
          text: fc.constant(validText),
          contentType: fc.constantFrom(...NON_JSON_CONTENT_TYPES),
          key: goodKey,
        }),
        fc.record({
          text: fc.constant(validText),
          contentType: fc.constantFrom(...JSON_CONTENT_TYPES),
          key: badKey.filter((k) => !keyIsValid(k)),
        }),
      );
      await fc.assert(
        fc.asyncProperty(request, queryCase(['x']), async ({ text, contentType, key }, q) => {
          const res = await stack.app.inject({
            method: 'POST',
            url: withQuery('/v1/journeys', q),
            headers: {
              ...auth(TOKENS.a),
              ...(contentType !== undefined ? { 'content-type': contentType } : {}),
              ...(key !== undefined ? { 'idempotency-key': key } : {}),
            },
            payload: text,
          });
          const problem = expectRefusal(res, SECRETS);
          // Read as JSON, a body over the limit is a 413 (a multipart or unknown media type is refused before).
          if (bytesOf(text) > BODY_LIMIT && contentType?.startsWith('application/json')) {
            expect(res.statusCode).toBe(413);
          }
          if (text === validText && contentType?.startsWith('application/json')) {
            expect(problem.errors.map((e: { field: string }) => e.field)).toContain('headers.idempotency-key');
          }
        }),
        fcOptions(2),
      );
    });

    it('GET /v1/journeys: random query strings are refused naming the field, or list only the clinic own', async () => {
      const own = new Set([live.id, finished]);
      const q = queryCase(
        ['stage', 'scenario', 'examStatus', 'needsAttention', 'pageSize', 'nextPageToken'],
        [...JOURNEY_STAGES, ...SCENARIO_TYPES, ...EXAM_STATUS_VALUES, 'true', 'false', '20', 'abc.def'],
      );
      await fc.assert(
        fc.asyncProperty(q, async (query) => {
          const res = await get(withQuery('/v1/journeys', query));
          expectNoServerError(res);
          const parsed = query.parsed === undefined ? undefined : ListJourneysQuery.safeParse(query.parsed);
          if (res.statusCode === 200) {
            if (parsed) expect(parsed.success).toBe(true);
            for (const j of res.json().journeys) expect(own).toContain(j.journeyId);
            return;
          }
          const problem = expectRefusal(res, SECRETS);
          expect(res.statusCode).toBe(400);
          expect(problem.errors.every((e: { field: string }) => e.field.startsWith('querystring'))).toBe(true);
          // A well-formed query the schema takes is refused only for a page token that is not this list's.
          if (parsed?.success)
            expect(problem.errors.map((e: { field: string }) => e.field)).toEqual(['querystring.nextPageToken']);
        }),
        fcOptions(2),
      );
    });

    it('GET /v1/journeys/:id: any path parameter is the own journey, a 404 like a missing one, or a 4xx', async () => {
      await fc.assert(
        fc.asyncProperty(journeySegment(), fc.option(queryCase(['x', 'journeyId'])), async (segment, q) => {
          const res = await get(withQuery(`/v1/journeys/${segment}`, q ?? undefined));
          expectNoServerError(res);
          let decoded: string | undefined;
          try {
            decoded = decodeURIComponent(segment);
          } catch {
            decoded = undefined;
          }
          if (decoded === live.id || decoded === finished) {
            expect(res.statusCode).toBe(200);
            expect(res.json().journeyId).toBe(decoded);
            return;
          }
          const problem = expectRefusal(res, SECRETS);
          if (decoded !== undefined && JourneyIdParam.safeParse(decoded).success) {
            // Clinic B's journey is as absent as one that never existed.
            expect(res.statusCode).toBe(404);
            expect(problem.detail).toBe(`journey ${decoded} not found`);
          }
        }),
        fcOptions(2),
      );
    });

    for (const route of UPDATE_ROUTES) {
      it(`POST /v1/journeys/:id/${route.action}: refused bodies and wrong content types are 4xx problems`, async () => {
        const validText = JSON.stringify(route.valid);
        const request = fc.oneof(
          fc.record({ text: refusedBodyText(route.schema, route.valid), contentType: anyContentType }),
          fc.record({ text: fc.constant(validText), contentType: fc.constantFrom(...NON_JSON_CONTENT_TYPES) }),
        );
        const target = fc.oneof(
          { arbitrary: fc.constant(live.id), weight: 4 },
          { arbitrary: journeySegment(), weight: 1 },
        );
        await fc.assert(
          fc.asyncProperty(request, target, async ({ text, contentType }, segment) => {
            const res = await stack.app.inject({
              method: 'POST',
              url: `/v1/journeys/${segment}/${route.action}`,
              headers: { ...auth(TOKENS.a), ...(contentType !== undefined ? { 'content-type': contentType } : {}) },
              payload: text,
            });
            expectRefusal(res, SECRETS);
          }),
          fcOptions(1),
        );
      });
    }

    it('POST /v1/journeys/:id/attachments and POST /v1/attachments: broken multipart bodies are 4xx problems', async () => {
      const routes = fc.constantFrom(
        { url: `/v1/journeys/${live.id}/attachments`, withExam: true },
        { url: '/v1/attachments', withExam: false },
      );
      await fc.assert(
        fc.asyncProperty(
          routes.chain((r) => multipartCase(r.withExam, live.patientExamId).map((m) => ({ ...r, ...m }))),
          async ({ url, contentType, body }) => {
            const res = await stack.app.inject({
              method: 'POST',
              url,
              headers: { ...auth(TOKENS.a), 'content-type': contentType },
              payload: body,
            });
            expectRefusal(res, SECRETS);
          },
        ),
        fcOptions(2),
      );
    });

    it('POST /v1/attachments: refused JSON bodies and wrong content types are 4xx problems', async () => {
      const validText = JSON.stringify(ATTACHMENT_BODY);
      const request = fc.oneof(
        fc.record({ text: refusedBodyText(AttachmentUploadJson, ATTACHMENT_BODY), contentType: anyContentType }),
        fc.record({ text: fc.constant(validText), contentType: fc.constantFrom(...NON_JSON_CONTENT_TYPES) }),
      );
      await fc.assert(
        fc.asyncProperty(request, async ({ text, contentType }) => {
          const res = await stack.app.inject({
            method: 'POST',
            url: '/v1/attachments',
            headers: { ...auth(TOKENS.a), ...(contentType !== undefined ? { 'content-type': contentType } : {}) },
            payload: text,
          });
          expectRefusal(res, SECRETS);
        }),
        fcOptions(1),
      );
    });

    it('GET /v1/catalog/exams and /partner-pharmacies: a random query string changes nothing', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom('/v1/catalog/exams', '/v1/catalog/partner-pharmacies'),
          queryCase(['examId', 'clinicId', 'api_key']),
          async (url, q) => {
            const res = await get(withQuery(url, q));
            expect({ status: res.statusCode, body: res.body }).toEqual({ status: 200, body: catalogBaseline[url] });
          },
        ),
        fcOptions(1),
      );
    });

    it('GET /v1/catalog/partner-pharmacies/:id/treatment-packages: bad ids and queries are 4xx problems', async () => {
      const pharmacy = fc.oneof(fc.constantFrom('501', '999', '0', '-1', '1.5', '1e3', '0x10'), pathSegment);
      await fc.assert(
        fc.asyncProperty(pharmacy, queryCase(['examId'], ['201', '101', '0']), async (segment, q) => {
          const res = await get(withQuery(`/v1/catalog/partner-pharmacies/${segment}/treatment-packages`, q));
          expectNoServerError(res);
          let decoded: string | undefined;
          try {
            decoded = decodeURIComponent(segment);
          } catch {
            decoded = undefined;
          }
          const valid =
            decoded !== undefined &&
            !decoded.includes('/') &&
            q.parsed !== undefined &&
            PharmacyParams.safeParse({ pharmacyId: decoded }).success &&
            TreatmentPackagesQuery.safeParse(q.parsed).success;
          // What the schemas take goes to the service, which may still refuse it (an unknown pharmacy): a 4xx too.
          if (!valid || res.statusCode !== 200) expectRefusal(res, SECRETS);
        }),
        fcOptions(1),
      );
    });

    it('GET /v1/catalog/pharmacies/search: random queries are refused naming the field, or searched', async () => {
      const q = queryCase(
        ['search', 'ncpdpid', 'zipCode', 'city', 'state', 'pharmacyName'],
        ['Drug', '78701', 'Austin', 'TX', '4512345', 'tx'],
      );
      await fc.assert(
        fc.asyncProperty(q, async (query) => {
          const res = await get(withQuery('/v1/catalog/pharmacies/search', query));
          expectNoServerError(res);
          const valid = query.parsed !== undefined && PharmacySearchQuery.safeParse(query.parsed).success;
          if (!valid || res.statusCode !== 200) {
            const problem = expectRefusal(res, SECRETS);
            if (!valid && query.parsed !== undefined) {
              expect(problem.errors.every((e: { field: string }) => e.field.startsWith('querystring'))).toBe(true);
            }
          }
        }),
        fcOptions(1),
      );
    });
  });

  describe('webhook (valid token)', () => {
    const validCallback = fc.constantFrom<Record<string, unknown>>(event1(90_001), EVENT2, EVENT3);
    const anyBody = fc.oneof(
      { arbitrary: jsonValue.map((v) => JSON.stringify(v) ?? ''), weight: 3 },
      { arbitrary: validCallback.chain(mutationOf).map((v) => (v === undefined ? '' : JSON.stringify(v))), weight: 6 },
      { arbitrary: validCallback.map((v) => JSON.stringify(v)), weight: 1 },
      { arbitrary: validCallback.chain((v) => truncated(JSON.stringify(v))), weight: 2 },
      { arbitrary: nastyString, weight: 1 },
      { arbitrary: hugeString.map((s) => JSON.stringify({ ...event1(90_001), additional_data: s })), weight: 1 },
      {
        arbitrary: fc.integer({ min: 10, max: 40_000 }).map((n) => '['.repeat(n) + ']'.repeat(n)),
        weight: 1,
      },
    );

    /** The answer to a body on a valid URL: 200 for JSON with an event number (any layout), else a 400 naming fields. */
    function expectWebhookAnswer(res: Awaited<ReturnType<ApiApp['inject']>>, text: string) {
      expectNoServerError(res);
      if (bytesOf(text) > Math.min(BODY_LIMIT, 1024 * 1024)) {
        // Too large for a callback, and still kept as a dead letter (nothing the service sent is dropped).
        const problem = expectRefusal(res, SECRETS);
        expect(problem.status).toBe(413);
        expect(problem.detail).toMatch(/it was kept for operators$/);
        return;
      }
      const reading = readCallback(text);
      if (reading.ok) {
        const made = callbackSignal(reading, { deliveryId: 'd', receivedAt: '', rawBody: text });
        if (!made.ok) {
          // Read, but more than a journey's history may take from one callback: kept for operators instead.
          const problem = expectRefusal(res, SECRETS);
          expect(problem.status).toBe(413);
          expect(problem.detail).toMatch(/it was kept for operators$/);
          return;
        }
        expect(res.statusCode).toBe(200);
        expect(res.json()).toEqual({ received: true, deliveryId: expect.any(String) });
        return;
      }
      const problem = expectRefusal(res, SECRETS);
      expect(res.statusCode).toBe(400);
      expect(problem.detail).toMatch(/^the callback could not be read \(.+\); it was kept for operators$/s);
      expect(problem.errors.length).toBeGreaterThan(0);
    }

    it('a finished journey: any body, any content type: 200 when it parses, else a 400 naming fields (or 413), all kept', async () => {
      const deadLettersBefore = (await stack.app.callbacks.inbox.stats()).deadLetters;
      let kept = 0;
      await fc.assert(
        fc.asyncProperty(anyBody, anyContentType, async (text, contentType) => {
          const res = await stack.app.inject({
            method: 'POST',
            url: webhookPath(finished),
            headers: contentType !== undefined ? { 'content-type': contentType } : {},
            payload: text,
          });
          expectWebhookAnswer(res, text);
          if ([200, 400, 413].includes(res.statusCode)) kept++;
        }),
        fcOptions(3),
      );
      // Nothing is lost: every answered callback is a dead letter now (the journey has ended) or still in the inbox.
      await eventually(
        async () => {
          const stats = await stack.app.callbacks.inbox.stats();
          return stats.deadLetters + stats.depth - deadLettersBefore;
        },
        (n) => n === kept,
      );
    });

    it('a running journey: bodies that are not JSON with an event number are a 400 and never reach it', async () => {
      const unreadable = fc.tuple(anyBody, anyContentType).filter(([text]) => !readCallback(text).ok);
      await fc.assert(
        fc.asyncProperty(unreadable, async ([text, contentType]) => {
          const res = await stack.app.inject({
            method: 'POST',
            url: webhookPath(live.id),
            headers: contentType !== undefined ? { 'content-type': contentType } : {},
            payload: text,
          });
          expectWebhookAnswer(res, text);
        }),
        fcOptions(2),
      );
    });

    it('random journey ids and tokens: the same 404 as an unknown address (or a 4xx for a malformed URL)', async () => {
      const nowhere = await stack.app.inject({ method: 'POST', url: '/webhooks/nothing-here', payload: event1(1) });
      const token = (id: string) => webhookToken(id, WEBHOOK_SECRET);
      const pair = fc.oneof(
        fc.tuple(fc.constantFrom(...ids()), pathSegment),
        fc.tuple(pathSegment, pathSegment),
        // A real token on another journey's URL, or in another case.
        fc.constant([finished, token(live.id)] as [string, string]),
        fc.constant([live.id, token(live.id).toUpperCase()] as [string, string]),
        fc.constant([live.id, token(live.id).toLowerCase()] as [string, string]),
      );
      await fc.assert(
        fc.asyncProperty(pair, anyBody, async ([id, tok], text) => {
          const res = await stack.app.inject({
            method: 'POST',
            url: `/webhooks/exam-service/${id}/${tok}`,
            headers: { 'content-type': 'application/json' },
            payload: text,
          });
          const problem = expectRefusal(res, SECRETS);
          if (res.statusCode === 404) expect(problem).toEqual({ ...nowhere.json(), instance: expect.any(String) });
          else expect([400, 413, 414]).toContain(res.statusCode);
        }),
        fcOptions(2),
      );
    });
  });

  describe('afterwards', () => {
    it('no journey changed, nothing was started or stored, the process answers and valid requests work', async () => {
      const after = await observe();
      expect(after).toEqual(before);

      expect((await stack.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
      expect((await get(`/v1/journeys/${live.id}`)).statusCode).toBe(200);
      expect((await get('/v1/catalog/exams')).statusCode).toBe(200);
      const fresh = await startJourney(stack.app, `prop-after-${randomUUID()}`);
      expect(fresh.statusCode).toBe(201);
      const cb = await stack.app.inject({
        method: 'POST',
        url: webhookPath(live.id),
        payload: event1(live.patientExamId),
      });
      expect(cb.statusCode).toBe(200);
      await eventually(
        () => get(`/v1/journeys/${live.id}`).then((r) => r.json()),
        (v) => v.journey?.stage === 'completed',
      );
    });
  });
});
