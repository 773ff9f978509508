// Calls public integrations of the live service make, which the sandbox accepts as the live service evidently does
// (docs/exam-service.md, "Calls the sandbox accepts from real clients"); and what those callers read back is there.
// The contract our own client keeps is unchanged: its schemas still refuse these forms.
import { request } from 'undici';
import { ExamInviteRequest, InviteCancelRequest, TreatmentPackagesRequest } from '../../src/exam-service/schemas';
import { buildSandbox, type Sandbox } from '../../src/sandbox';
import { DEMO_API_KEY } from '../../src/sandbox/seed';
import { callService, inviteBody, postJson } from './support';

let sandbox: Sandbox;
let baseUrl: string;

beforeAll(async () => {
  sandbox = await buildSandbox({ clockMode: 'manual', startAt: new Date('2025-03-01T12:00:00.000Z') });
  baseUrl = sandbox.baseUrl;
});
afterAll(() => sandbox.close());

/** An invite as the callers read it back: http_code 200, a meeting link and uuid, the patient exam ids. */
async function invited(body: Record<string, unknown>, path = '/api/exam_invite') {
  const res = await postJson(`${baseUrl}${path}`, body);
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({
    http_code: 200,
    meeting_url: expect.any(String),
    meeting_uuid: expect.any(String),
    patient_exams: expect.arrayContaining([expect.objectContaining({ patient_exam_id: expect.any(Number) })]),
  });
  return res.body as { meeting_uuid: string; patient_exams: { patient_exam_id: number; exam_id: number }[] };
}

describe('the sandbox accepts calls of real clients', () => {
  it('takes `exams` as a lone id (a number or a digit string) as a list of one', async () => {
    for (const exams of [101, '101']) {
      const body = await invited(inviteBody({ exams }));
      expect(body.patient_exams.map((pe) => pe.exam_id)).toEqual([101]);
    }
    // Our contract keeps the list.
    expect(ExamInviteRequest.safeParse(inviteBody({ exams: 101 })).success).toBe(false);
  });

  it('answers the operation paths with a trailing slash', async () => {
    const body = await invited(inviteBody(), '/api/exam_invite/');
    const pe = body.patient_exams[0]!.patient_exam_id;
    const resend = await postJson(`${baseUrl}/api/exam_invite_resend/`, {
      api_key: DEMO_API_KEY,
      meeting_uuid: body.meeting_uuid,
      patient_exam_id: pe,
    });
    // The caller judges the resend by http_code alone.
    expect(resend).toMatchObject({ status: 200, body: { http_code: 200 } });
    const list = await postJson(`${baseUrl}/api/exam_list/`, { api_key: DEMO_API_KEY });
    expect(list.status).toBe(200);
    expect(list.body.exams.length).toBeGreaterThan(0);
  });

  it('takes patient exam ids as digit strings (cancel, resend) in the interface layout', async () => {
    const body = await invited(inviteBody({ exams: [101, 102] }));
    const [first, second] = body.patient_exams.map((pe) => String(pe.patient_exam_id));
    const cancel = await callService(baseUrl, 'exam_invite_cancel', { patient_exam_id: first });
    // The caller reads nothing of the answer but the HTTP status.
    expect(cancel.status).toBe(200);
    expect(sandbox.store.patientExam(Number(first))?.status).toBe('cancelled');
    const resend = await callService(baseUrl, 'exam_invite_resend', {
      meeting_uuid: body.meeting_uuid,
      patient_exam_id: second,
    });
    expect(resend).toMatchObject({ status: 200, body: { http_code: 200 } });
    expect(InviteCancelRequest.safeParse({ api_key: DEMO_API_KEY, patient_exam_id: first }).success).toBe(false);
  });

  it('takes the treatment packages request in the list form (pharmacy_ids, exam_ids, patient_state) alone', async () => {
    const res = await callService(baseUrl, 'partner_pharmacy_treatment_packages', {
      pharmacy_ids: [501],
      exam_ids: ['201'],
      patient_state: 'TX',
    });
    expect(res.status).toBe(200);
    expect(res.body.treatment_packages.map((p: { order_set_id: string }) => p.order_set_id)).toContain('8101');
    expect(
      TreatmentPackagesRequest.safeParse({ api_key: DEMO_API_KEY, pharmacy_ids: [501], exam_ids: [201] }).success,
    ).toBe(false);
  });

  it('ignores fields and headers it does not know, as callers send them', async () => {
    const res = await request(`${baseUrl}/api/exam_invite`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', 'user-agent': 'Clinic-API/1.0' },
      body: JSON.stringify(inviteBody({ source: 'landing-page', exams: ['101'], pharmacy_type: 'Retail' })),
    });
    expect(res.statusCode).toBe(200);
    expect(((await res.body.json()) as { http_code: number }).http_code).toBe(200);
  });

  it('still refuses what no real client sends: a non-digit id, an empty exam list, a wrong key', async () => {
    expect((await callService(baseUrl, 'exam_invite', inviteBody({ exams: 'gfe' }))).status).toBe(400);
    expect((await callService(baseUrl, 'exam_invite', inviteBody({ exams: [] }))).status).toBe(400);
    expect((await callService(baseUrl, 'exam_invite_cancel', { patient_exam_id: 'PE-1' })).status).toBe(400);
    expect((await postJson(`${baseUrl}/api/exam_list/`, { api_key: 'not-a-key' })).status).toBe(401);
  });
});
