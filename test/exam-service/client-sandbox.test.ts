// The contract client against the sandbox over real HTTP: every operation, and every class of the error taxonomy
// the sandbox can produce.
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { ExamServiceClient } from '../../src/exam-service/client';
import { ExamServiceError } from '../../src/exam-service/errors';
import { isPatientBoundQuestions, isSearchLayoutA, type ExamInviteInput } from '../../src/exam-service/schemas';
import {
  buildSandbox,
  DEMO_API_KEY,
  NO_RX_CONTRACT_API_KEY,
  UNSIGNED_AGREEMENTS_API_KEY,
  type Sandbox,
} from '../../src/sandbox';

const patient = (lastName = 'Pending'): ExamInviteInput => ({
  exams: [101],
  first_name: 'Jordan',
  last_name: lastName,
  email: 'jordan@example.test',
  dob: '1990-06-15',
  phone_number: '+15125550100',
  tele_state: 'TX',
  state: 'TX',
});

async function failure(p: Promise<unknown>): Promise<ExamServiceError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ExamServiceError) return err;
    throw err;
  }
  throw new Error('expected the call to fail');
}

describe('ExamServiceClient against the sandbox', () => {
  let sandbox: Sandbox;
  let client: ExamServiceClient;
  const clientWith = (apiKey: string) => new ExamServiceClient({ baseUrl: sandbox.baseUrl, apiKey });

  beforeAll(async () => {
    sandbox = await buildSandbox({ clockMode: 'manual' });
    client = clientWith(DEMO_API_KEY);
  });
  afterEach(() => sandbox.setFaults({}));
  afterAll(async () => {
    await client.close();
    await sandbox.close();
  });

  it('lists exams, partner pharmacies and treatment packages', async () => {
    const list = await client.examList();
    expect(list.exams.map((e) => e.rx_type)).toEqual(expect.arrayContaining([1, 2]));
    const pharmacies = await client.partnerPharmacyList();
    const pharmacyId = pharmacies.pharmacies[0]!.pharmacy_id;
    const packages = await client.treatmentPackages({ pharmacy_id: pharmacyId, exam_id: 201 });
    expect(packages.treatment_packages[0]).toMatchObject({
      order_set_id: expect.any(String),
      price: expect.any(Number),
    });
  });

  it('searches custom pharmacies in both forms', async () => {
    const a = await client.customPharmacySearch({ zip_code: '78701' });
    expect(isSearchLayoutA(a)).toBe(true);
    const b = await client.customPharmacySearch({ city: 'Austin', state: 'TX' });
    expect(isSearchLayoutA(b)).toBe(false);
  });

  it('invites, reads questions, submits answers, uploads, resends and cancels', async () => {
    const invite = await client.examInvite(patient());
    const pe = invite.patient_exams[0]!;
    const questions = await client.examQuestions({
      meeting_uuid: invite.meeting_uuid,
      patient_exam_id: pe.patient_exam_id,
    });
    expect(isPatientBoundQuestions(questions)).toBe(true);
    const catalog = await client.examQuestions({ exam_id: 101 });
    expect(isPatientBoundQuestions(catalog)).toBe(false);
    if (!isPatientBoundQuestions(questions)) throw new Error('unreachable');
    const text = questions.questions.find((q) => (q.response_type ?? 1) === 1)!;
    const submitted = await client.submitAnswers({
      patient_exam_id: pe.patient_exam_id,
      answers: [{ no: text.no!, question: text.question, answer: 'None' }],
    });
    expect(submitted).toMatchObject({ patient_exam_id: pe.patient_exam_id, answered: 1 });
    const upload = await client.uploadAttachment({
      patient_exam_id: pe.patient_exam_id,
      kind: 'ID',
      file_name: 'id.png',
      content_type: 'image/png',
      content_base64: Buffer.from('png').toString('base64'),
    });
    expect(upload.kind).toBe('ID');
    expect((await client.resendInvite({ patient_exam_id: pe.patient_exam_id })).deliveries).toBe(2);
    const cancelled = await client.cancelInvite({ patient_exam_id: pe.patient_exam_id });
    expect(cancelled).toMatchObject({ status: 'cancelled', alreadyCancelled: false });
    // A repeated cancel is a 400 at the service and a success for the caller.
    expect(await client.cancelInvite({ patient_exam_id: pe.patient_exam_id })).toMatchObject({
      alreadyCancelled: true,
    });
  });

  it('classifies unauthorized, account setup, validation and already final', async () => {
    expect((await failure(clientWith('no-such-key').examList())).kind).toBe('unauthorized');
    const agreements = await failure(clientWith(UNSIGNED_AGREEMENTS_API_KEY).examInvite(patient()));
    expect(agreements).toMatchObject({ kind: 'account_setup', setupCode: 'agreements_unsigned' });
    const rx = await failure(clientWith(NO_RX_CONTRACT_API_KEY).examInvite({ ...patient(), exams: [301] }));
    expect(rx).toMatchObject({ kind: 'account_setup', setupCode: 'prescriptive_contract_unsigned' });
    const noProvider = await failure(client.examInvite({ ...patient(), tele_state: 'AK', state: 'AK' }));
    expect(noProvider).toMatchObject({ kind: 'account_setup', setupCode: 'no_provider_for_state' });
    const twoRx = await failure(client.examInvite({ ...patient(), exams: [201, 301] }));
    expect(twoRx.kind).toBe('validation');

    const invite = await client.examInvite(patient());
    const id = invite.patient_exams[0]!.patient_exam_id;
    const verdict = await fetch(`${sandbox.baseUrl}/_sandbox/patient-exams/${id}/verdict`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ status: 'Approved' }),
    });
    expect(verdict.status).toBe(200);
    expect(await failure(client.cancelInvite({ patient_exam_id: id }))).toMatchObject({
      kind: 'already_final',
      finalStatus: 'Approved',
    });
  });

  it('classifies a 500 as server, a dropped invite as ambiguous, a closed port as not sent', async () => {
    sandbox.setFaults({ errorRate: 1 });
    expect((await failure(client.examList())).kind).toBe('server');
    sandbox.setFaults({ dropAfterInviteRate: 1 });
    const count = async () =>
      ((await (await fetch(`${sandbox.baseUrl}/_sandbox/patient-exams`)).json()) as { patient_exams: unknown[] })
        .patient_exams.length;
    const before = await count();
    expect((await failure(client.examInvite(patient()))).kind).toBe('ambiguous');
    // the invite exists at the service although the caller saw no answer
    expect(await count()).toBe(before + 1);

    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    const closed = new ExamServiceClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: DEMO_API_KEY });
    expect((await failure(closed.examList())).kind).toBe('not_sent');
    await closed.close();
  });
});
