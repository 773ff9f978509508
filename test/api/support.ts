// Shared pieces of the API tests: configuration with two clinics, a fake exam service seeded like the sandbox, fake
// activities for a worker that runs the real journey workflow, and small HTTP helpers.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { loadConfig, type Config } from '../../src/config';
import type { ExamServiceApi } from '../../src/exam-service/client';
import { ExamServiceError } from '../../src/exam-service/errors';
import type { Exam } from '../../src/exam-service/schemas';
import { FailureType, type FailureFacts, type JourneyActivities } from '../../src/contract/activity-contract';
import { holdersQuery } from '../../src/activities';
import { webhookToken } from '../../src/webhook-url';
import { closedPortUrl } from '../support/stub-exam-service';

export const TOKENS = { a: 'token-clinic-a-0123456789', b: 'token-clinic-b-0123456789', admin: 'admin-token-xyz' };
export const WEBHOOK_SECRET = 'webhook-secret-for-tests-0123456789';
const sha = (t: string) => createHash('sha256').update(t).digest('hex');

export interface TestDirs {
  dataDir: string;
  cleanup(): void;
}

export function tempDataDir(): TestDirs {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'journey-api-'));
  return { dataDir, cleanup: () => rmSync(dataDir, { recursive: true, force: true }) };
}

export function testConfig(dataDir: string, env: Record<string, string> = {}): Config {
  return loadConfig({
    DATA_DIR: dataDir,
    WEBHOOK_SECRET,
    ADMIN_TOKEN_SHA256: sha(TOKENS.admin),
    EXAM_SERVICE_BASE_URL: 'http://127.0.0.1:9',
    CLINICS_JSON: JSON.stringify([
      { clinicId: 'clinic-a', examServiceApiKey: 'sandbox-demo-key', apiTokenSha256: [sha(TOKENS.a)] },
      { clinicId: 'clinic-b', examServiceApiKey: 'sandbox-demo-key', apiTokenSha256: [sha(TOKENS.b)] },
    ]),
    API_TEMPORAL_TIMEOUT_MS: '3000',
    SPOOL_MAX_BACKOFF_MS: '500',
    LOG_LEVEL: 'silent',
    // These tests read results through the test server's plain client; test/integration/phi-encryption covers the codec.
    PAYLOAD_ENCRYPTION_DISABLED: 'true',
    ...env,
  });
}

/**
 * A Temporal client whose server is not there: every call fails as unavailable, at once. No retry interceptor: the
 * SDK's retry timer would otherwise fire after the test closed the connection and throw outside any test.
 */
export async function unreachableTemporal(): Promise<Client> {
  const address = (await closedPortUrl()).replace('http://', '');
  return new Client({ connection: Connection.lazy({ address, interceptors: [] }) });
}

export const CATALOG: Exam[] = [
  { id: 101, title: 'Good Faith Exam', rx_type: 1, price: null, attachments_required: 1, attachments: [] },
  { id: 102, title: 'GFE - Botox', rx_type: 1, price: '49.00', attachments_required: 2, attachments: ['Lab'] },
  {
    id: 201,
    title: 'Weight Loss - Partner',
    rx_type: 2,
    price: '199.00',
    attachments_required: 2,
    attachments: ['Lab'],
  },
  { id: 301, title: 'Urgent Care Visit', rx_type: 2, price: '79.00', attachments_required: 1, attachments: [] },
];

/** The exam service as the API reads it: the catalog above; other operations answer plausible data. */
export function fakeExamService(overrides: Partial<ExamServiceApi> = {}): ExamServiceApi {
  const unused = () => Promise.reject(new ExamServiceError({ kind: 'server', operation: 'exam_invite' }));
  return {
    examList: () => Promise.resolve({ exams: CATALOG }),
    examInvite: unused,
    uploadAttachment: unused,
    examQuestions: unused,
    submitAnswers: unused,
    resendInvite: unused,
    cancelInvite: unused,
    partnerPharmacyList: () => Promise.resolve({ pharmacies: [{ pharmacy_id: 501, name: 'Lone Star', type: '503A' }] }),
    treatmentPackages: unused,
    customPharmacySearch: unused,
    ...overrides,
  };
}

/**
 * Activities that act like a service which invites at once; patient exam ids count up from `firstPatientExamId`. Who
 * holds a patient exam is read from Temporal visibility once `visibility.client` is set (the harness's client).
 */
export function fakeActivities(firstPatientExamId = 90_000) {
  let next = firstPatientExamId;
  const calls: { name: string; arg: unknown }[] = [];
  const visibility: { client?: Client } = {};
  const activities: JourneyActivities = {
    getExamCatalog: () =>
      Promise.resolve(
        CATALOG.map((e) => ({
          examId: e.id,
          title: e.title,
          rxType: e.rx_type,
          attachmentsRequired: e.attachments_required,
          attachments: e.attachments,
        })),
      ),
    sendInvite: (req) => {
      calls.push({ name: 'sendInvite', arg: req.examIds });
      return Promise.resolve({
        meetingUuid: `meeting-${next}`,
        meetingUrl: `https://meet.example/${next}`,
        patientExams: req.examIds.map((examId) => ({
          patientExamId: next++,
          examId,
          examTitle: CATALOG.find((e) => e.id === examId)?.title ?? 'exam',
        })),
      });
    },
    createInvite: (req) => activities.sendInvite(req),
    uploadAttachment: (req) => {
      calls.push({ name: 'uploadAttachment', arg: req });
      return Promise.resolve({ attachmentId: `upl-${req.attachment.ref}` });
    },
    submitAnswers: (req) => {
      calls.push({ name: 'submitAnswers', arg: req });
      return Promise.resolve({ answered: req.answers.length });
    },
    resendInvite: (req) => {
      calls.push({ name: 'resendInvite', arg: req });
      return Promise.resolve({ deliveries: 2 });
    },
    cancelInvite: (req) => {
      calls.push({ name: 'cancelInvite', arg: req });
      return Promise.resolve({ outcome: 'cancelled', cancelledAt: new Date().toISOString() });
    },
    notifyClinic: () => Promise.resolve({ status: 200 }),
    findPatientExamHolders: async (req) => {
      calls.push({ name: 'findPatientExamHolders', arg: req });
      if (!visibility.client) throw new Error('this fake reads no visibility: set visibility.client');
      const workflowIds: string[] = [];
      for await (const w of visibility.client.workflow.list({
        query: holdersQuery(req.patientExamId, req.workflowId),
        pageSize: 10,
      }))
        workflowIds.push(w.workflowId);
      return { workflowIds };
    },
    deleteAttachments: (req) => {
      calls.push({ name: 'deleteAttachments', arg: req });
      return Promise.resolve({ deleted: req.refs.length });
    },
  };
  return { activities, calls, visibility };
}

/** An activity's failure for a classified exam-service error, as src/activities raises it (not to be retried). */
export function activityFailure(
  facts: FailureFacts & { kind: keyof typeof FailureType },
  message = `exam service ${facts.operation}: ${facts.kind}`,
): ApplicationFailure {
  return ApplicationFailure.create({ type: FailureType[facts.kind], message, nonRetryable: true, details: [facts] });
}

/**
 * The activities with an invite in doubt (sent, and no answer came: src/activities' failure for it) for every journey,
 * or for those `inDoubt` picks; the others are sent as `activities` send them. Such a journey parks for an operator.
 */
export function withInviteInDoubt(
  activities: JourneyActivities,
  inDoubt: (req: Parameters<JourneyActivities['sendInvite']>[0]) => boolean = () => true,
): JourneyActivities {
  return {
    ...activities,
    sendInvite: (req) =>
      inDoubt(req)
        ? Promise.reject(activityFailure({ kind: 'ambiguous', operation: 'exam_invite' }, 'no answer to the invite'))
        : activities.sendInvite(req),
  };
}

/** A bearer token's headers; the static admin token names who acts (X-Actor), as the admin API asks of it. */
export const auth = (token: string): Record<string, string> => ({
  authorization: `Bearer ${token}`,
  ...(token === TOKENS.admin ? { 'x-actor': 'ops-test' } : {}),
});

export function gfeBody(overrides: Record<string, unknown> = {}) {
  return {
    patient: {
      firstName: 'Test',
      lastName: 'Approve',
      email: 'patient@example.com',
      dob: '1990-01-01',
      phoneNumber: '4155550100',
      teleState: 'TE',
    },
    exams: [101],
    scenario: { type: 'gfe' },
    ...overrides,
  };
}

export function startJourney(app: FastifyInstance, key: string, body: unknown = gfeBody(), token = TOKENS.a) {
  return app.inject({
    method: 'POST',
    url: '/v1/journeys',
    headers: { ...auth(token), 'idempotency-key': key },
    payload: body as Record<string, unknown>,
  });
}

export function webhookPath(journeyId: string): string {
  return `/webhooks/exam-service/${journeyId}/${webhookToken(journeyId, WEBHOOK_SECRET)}`;
}

export function event1(patientExamId: number, examStatus = 'Approved', examId = 101) {
  return {
    event: 1,
    reason: 'ok',
    exam_id: String(examId),
    exam_url: 'https://records.example/1.pdf',
    exam_name: 'Good Faith Exam',
    exam_status: examStatus,
    rx_status: null,
    clinic_name: 'Clinic',
    patient_email: 'patient@example.com',
    patient_phone_number: '4155550100',
    patient_exam_id: String(patientExamId),
    provider_name: 'Dr. P',
    additional_data: '',
    questions_answers: [],
  };
}

/** Asserts a problem answer: the status, the problem content type, and (when given) the fields it names. */
export function expectProblem(res: LightMyRequestResponse, status: number, fields: string[] = []) {
  expect({ status: res.statusCode, body: res.json() }).toEqual({
    status,
    body: expect.objectContaining({ status, title: expect.any(String), detail: expect.any(String) }),
  });
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  const named = ((res.json().errors ?? []) as { field: string }[]).map((e) => e.field);
  for (const f of fields) expect(named).toContain(f);
  return res.json();
}

export async function eventually<T>(
  fn: () => Promise<T>,
  ok: (v: T) => boolean,
  { timeoutMs = 20_000, intervalMs = 100 } = {},
): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: T = await fn();
  while (!ok(last)) {
    if (Date.now() > until)
      throw new Error(`condition not met in ${timeoutMs} ms; last value: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, intervalMs));
    last = await fn();
  }
  return last;
}
