/**
 * The States and Events tables: test mode, the control surface, the provider-wait countdown, prescriptions and
 * shipments, and the exact events each scenario yields, with every field typed as the spec's tables say.
 */
import { parseCallback } from '../../src/exam-service/schemas';
import type { Sandbox } from '../../src/sandbox';
import { SEED_QUESTIONS, TEST_PROVIDER_NAME } from '../../src/sandbox/seed';
import {
  ANSWER_TABLE,
  callService,
  CONTACT_TABLE,
  EVENT1_TABLE,
  EVENT2_TABLE,
  EVENT3_TABLE,
  getJson,
  inviteBody,
  postJson,
  PRESCRIPTION_ITEM_TABLE,
  type Receiver,
  startManualSandbox,
  testModeInvite,
  TRACKING_TABLE,
  typeMismatches,
} from './support';

let sandbox: Sandbox;
let receiver: Receiver;
let baseUrl: string;
const ADDITIONAL_DATA = JSON.stringify({ journey: 'j-123', clinic_ref: 'A7' });
const DELAYS = { providerDelayMs: 1_000, prescriptionDelayMs: 2_000, shipmentDelayMs: 3_000 };
const EVERYTHING = 60_000;

beforeAll(async () => {
  ({ sandbox, receiver } = await startManualSandbox({ ...DELAYS, callbackRetries: 0 }));
  baseUrl = sandbox.baseUrl;
});
afterAll(async () => {
  await sandbox.close();
  await receiver.close();
});
beforeEach(async () => {
  await postJson(`${baseUrl}/_sandbox/reset`);
  receiver.callbacks.length = 0;
});

async function invite(body: Record<string, unknown>): Promise<{ meetingUuid: string; ids: number[] }> {
  const res = await callService(baseUrl, 'exam_invite', {
    webhook_url: receiver.url,
    additional_data: ADDITIONAL_DATA,
    ...body,
  });
  expect(res.status).toBe(200);
  return { meetingUuid: res.body.meeting_uuid, ids: res.body.patient_exams.map((p: any) => p.patient_exam_id) };
}

const eventsOf = (id: number) => receiver.events(id).map((e) => e.event as number);
const view = async (id: number) => (await getJson(`${baseUrl}/_sandbox/patient-exams/${id}`)).body;
const control = (id: number, action: string, body: Record<string, unknown> = {}) =>
  postJson(`${baseUrl}/_sandbox/patient-exams/${id}/${action}`, body);

function expectEvent1(payload: any) {
  expect(typeMismatches(payload, EVENT1_TABLE)).toEqual([]);
  for (const answer of payload.questions_answers) {
    expect(typeMismatches(answer, ANSWER_TABLE)).toEqual([]);
    expect(typeof answer.answer).toBe('string');
  }
  const parsed = parseCallback(payload);
  expect(parsed.ok).toBe(true);
}

function expectEvent2(payload: any) {
  expect(typeMismatches(payload, EVENT2_TABLE)).toEqual([]);
  expect(payload.prescription.length).toBeGreaterThan(0);
  for (const item of payload.prescription) {
    expect(typeMismatches(item, PRESCRIPTION_ITEM_TABLE)).toEqual([]);
    for (const c of item.pharmacy_contacts) expect(typeMismatches(c, CONTACT_TABLE)).toEqual([]);
    for (const t of item.prescription_tracking) expect(typeMismatches(t, TRACKING_TABLE)).toEqual([]);
  }
  for (const answer of payload.questions_answers) expect(typeMismatches(answer, ANSWER_TABLE)).toEqual([]);
  const parsed = parseCallback(payload);
  expect(parsed.ok).toBe(true);
}

function expectEvent3(payload: any) {
  expect(typeMismatches(payload, EVENT3_TABLE)).toEqual([]);
  expect(Object.keys(payload).sort()).toEqual(Object.keys(EVENT3_TABLE).sort());
  expect(parseCallback(payload).ok).toBe(true);
}

describe('scenarios yield exactly their events (test mode, Approve)', () => {
  it('GFE gives event 1 only', async () => {
    const { ids } = await invite(testModeInvite('Approve', { exams: [101] }));
    await sandbox.clock.advance(EVERYTHING);
    expect(eventsOf(ids[0]!)).toEqual([1]);
    const [e1] = receiver.events(ids[0]);
    expectEvent1(e1);
    expect(e1).toMatchObject({
      event: 1,
      exam_id: '101',
      exam_name: 'Good Faith Exam',
      exam_status: 'Approved',
      rx_status: null,
      clinic_name: 'Sandbox Demo Clinic',
      patient_email: 'jamie.rivera@example.com',
      patient_phone_number: '+14155550100',
      patient_exam_id: String(ids[0]),
      provider_name: TEST_PROVIDER_NAME,
      additional_data: ADDITIONAL_DATA,
    });
    expect(e1.exam_url).toMatch(
      /^http:\/\/127\.0\.0\.1:\d+\/records\/[0-9a-f]+\.pdf\?expires=2025-03-02T12%3A00%3A01\.000Z$/,
    );
    expect(e1.questions_answers.map((a: any) => a.no)).toEqual([1, 2, 3, 4]);
  });

  it('partner pharmacy gives events 1, 2 and one 3 per shipped prescription', async () => {
    const { ids } = await invite(testModeInvite('Approve', { exams: [201], pharmacy_id: 501, order_set_id: '8101' }));
    const id = ids[0]!;
    await sandbox.clock.advance(EVERYTHING);
    expect(eventsOf(id)).toEqual([1, 2, 3, 3]);
    const [e1, e2, ...e3s] = receiver.events(id);
    expectEvent1(e1);
    expectEvent2(e2);
    expect(e2).toMatchObject({
      exam_id: 201,
      patient_exam_id: id,
      exam_status: 'Approved',
      rx_status: 'Pharmacy Confirmed',
      prescribed_os_id: 8101,
      provider_name: TEST_PROVIDER_NAME,
    });
    expect(e2.prescription.map((p: any) => p.drug_name)).toEqual(['Semaglutide', 'Ondansetron']);
    expect(e2.prescription[0].pharmacy_name).toBe('Lone Star Compounding Pharmacy');
    expect(e2.prescription[0].prescription_tracking[0]).toMatchObject({
      rx_number: `RX${e2.prescription[0].prescription_id}`,
    });
    expect(typeof e2.exam_url).toBe('string');
    for (const e3 of e3s) expectEvent3(e3);
    expect(e3s.map((e: any) => e.prescription_id)).toEqual(e2.prescription.map((p: any) => String(p.prescription_id)));
    expect(e3s[0]).toMatchObject({
      patient_exam_id: String(id),
      delivery_service: 'Overnight',
      pharmacy_location: 'Austin, TX',
    });
    expect(e3s[1].delivery_service).toBe('Standard');
    expect((await view(id)).prescriptions.every((p: any) => p.shipped_at !== null)).toBe(true);
  });

  it('a controlled substance carries its schedule_code', async () => {
    const { ids } = await invite(testModeInvite('Prescription Approve', { exams: [202], pharmacy_id: 502 }));
    await sandbox.clock.advance(EVERYTHING);
    const e2 = receiver.events(ids[0]).find((e) => e.event === 2);
    expect(e2.prescription[0]).toMatchObject({ drug_name: 'Testosterone Cypionate', schedule_code: 'C3' });
  });

  it('urgent care gives events 1 and 2, never 3', async () => {
    const { ids } = await invite(
      testModeInvite('Approve', {
        exams: [301],
        custom_pharmacy: 1,
        ncpdpid: '4512345',
        pharmacy_name: 'Sandbox Drug Mart #101',
      }),
    );
    await sandbox.clock.advance(EVERYTHING);
    expect(eventsOf(ids[0]!)).toEqual([1, 2]);
    const e2 = receiver.events(ids[0])[1];
    expectEvent2(e2);
    expect(e2.prescription.map((p: any) => p.drug_name)).toEqual(['Amoxicillin', 'Benzonatate']);
    expect(e2.prescription[0].pharmacy_name).toBe('Sandbox Drug Mart #101');
    expect((await control(ids[0]!, 'ship')).status).toBe(409);
    expect(eventsOf(ids[0]!)).toEqual([1, 2]);
  });

  it('choose your own pharmacy gives events 1 and 2, never 3', async () => {
    const { ids } = await invite(
      testModeInvite('Prescription Approve', { exams: [302], custom_pharmacy: 1, ncpdpid: '0512001' }),
    );
    await sandbox.clock.advance(EVERYTHING);
    expect(eventsOf(ids[0]!)).toEqual([1, 2]);
    expectEvent2(receiver.events(ids[0])[1]);
    expect((await view(ids[0]!)).fulfilment).toBe('own_pharmacy');
  });

  it('events keep their delays: verdict, then confirmation, then shipment', async () => {
    const { ids } = await invite(testModeInvite('Approve', { exams: [201], pharmacy_id: 501, order_set_id: '8102' }));
    await sandbox.clock.advance(DELAYS.providerDelayMs - 1);
    expect(eventsOf(ids[0]!)).toEqual([]);
    await sandbox.clock.advance(1);
    expect(eventsOf(ids[0]!)).toEqual([1]);
    await sandbox.clock.advance(DELAYS.prescriptionDelayMs);
    expect(eventsOf(ids[0]!)).toEqual([1, 2]);
    await sandbox.clock.advance(DELAYS.shipmentDelayMs);
    expect(eventsOf(ids[0]!)).toEqual([1, 2, 3]);
  });
});

describe('rejected, NA and Missed exams give event 1 only', () => {
  it.each([
    ['Reject', 'Rejected'],
    ['Prescription Reject', 'Rejected'],
    ['N/A', 'NA'],
  ])('%s on a partner pharmacy exam: one event 1 with %s', async (keyword, status) => {
    const { ids } = await invite(testModeInvite(keyword, { exams: [201], pharmacy_id: 501 }));
    await sandbox.clock.advance(EVERYTHING);
    expect(eventsOf(ids[0]!)).toEqual([1]);
    const e1 = receiver.events(ids[0])[0];
    expectEvent1(e1);
    expect(e1).toMatchObject({ exam_status: status, rx_status: null });
    if (status === 'NA') expect(e1).toMatchObject({ exam_url: null, provider_name: null });
    else expect(typeof e1.exam_url).toBe('string');
  });

  it('Missed: the 3-minute provider wait expires; event 1 with Missed, no exam_url, no provider', async () => {
    const { ids } = await invite(
      inviteBody({
        exams: [101, 301],
        custom_pharmacy: 1,
        ncpdpid: '4512345',
        redirect_missed: 'https://clinic.example/missed',
      }),
    );
    const wait = await control(ids[0]!, 'wait');
    expect(wait.status).toBe(200);
    const now = sandbox.clock.nowMs();
    expect(wait.body).toMatchObject({
      waiting_since: new Date(now).toISOString(),
      missed_at: new Date(now + 180_000).toISOString(),
    });
    expect((await control(ids[0]!, 'wait')).status).toBe(409);
    await sandbox.clock.advance(179_999);
    expect(receiver.callbacks).toEqual([]);
    await sandbox.clock.advance(1);
    for (const id of ids) {
      expect(eventsOf(id)).toEqual([1]);
      const e1 = receiver.events(id)[0];
      expectEvent1(e1);
      expect(e1).toMatchObject({
        exam_status: 'Missed',
        exam_url: null,
        provider_name: null,
        rx_status: null,
        questions_answers: [],
      });
      expect((await view(id)).redirected_to).toBe('https://clinic.example/missed');
    }
    await sandbox.clock.advance(EVERYTHING);
    expect(receiver.callbacks.length).toBe(2);
  });

  it('a verdict during the wait wins; only the still-pending exams are Missed', async () => {
    const { ids } = await invite(inviteBody({ exams: [101, 103] }));
    await control(ids[0]!, 'wait');
    await sandbox.clock.advance(60_000);
    expect((await control(ids[0]!, 'verdict', { status: 'Approved' })).status).toBe(200);
    await sandbox.clock.advance(120_000);
    expect(receiver.events().map((e) => [Number(e.patient_exam_id), e.exam_status])).toEqual([
      [ids[0], 'Approved'],
      [ids[1], 'Missed'],
    ]);
  });
});

describe('test mode keywords on a stacked invite (GFE + prescription exam)', () => {
  const stacked = { exams: [101, 102, 301], custom_pharmacy: 1, ncpdpid: '4512345' };

  it.each([
    ['Approve', ['Approved', 'Approved', 'Approved'], [[1], [1], [1, 2]]],
    ['Prescription Approve', ['Approved', 'Approved', 'Approved'], [[1], [1], [1, 2]]],
    ['Reject', ['Rejected', 'Rejected', 'Rejected'], [[1], [1], [1]]],
    ['Prescription Reject', ['Approved', 'Approved', 'Rejected'], [[1], [1], [1]]],
    ['N/A', ['NA', 'NA', 'NA'], [[1], [1], [1]]],
  ])('%s', async (keyword, statuses, events) => {
    const { ids } = await invite(testModeInvite(keyword, stacked));
    await sandbox.clock.advance(EVERYTHING);
    expect(await Promise.all(ids.map(async (id) => (await view(id)).status))).toEqual(statuses);
    expect(ids.map(eventsOf)).toEqual(events);
  });

  it('the keyword is also read from the first name ("Test Reject"), case-insensitively', async () => {
    const { ids } = await invite(testModeInvite('Patient', { first_name: 'Test Reject' }));
    const lower = await invite(
      testModeInvite('prescription approve', { exams: [302], custom_pharmacy: 1, ncpdpid: '0512001' }),
    );
    await sandbox.clock.advance(EVERYTHING);
    expect((await view(ids[0]!)).status).toBe('Rejected');
    expect(eventsOf(lower.ids[0]!)).toEqual([1, 2]);
  });

  it('a test-mode patient without a keyword stays pending until the control surface acts', async () => {
    const { ids } = await invite(testModeInvite('Smith'));
    await sandbox.clock.advance(EVERYTHING);
    expect((await view(ids[0]!)).status).toBe('pending');
    expect(receiver.callbacks).toEqual([]);
  });

  it('outside test mode the name does not steer anything: "Test Approve" in CA stays pending', async () => {
    const { ids } = await invite(inviteBody({ first_name: 'Test', last_name: 'Approve' }));
    await sandbox.clock.advance(EVERYTHING);
    expect((await view(ids[0]!)).status).toBe('pending');
  });
});

describe('state machine driven through the control surface', () => {
  it.each([
    ['Approved', 'https://clinic.example/approved'],
    ['Rejected', 'https://clinic.example/rejected'],
    ['Deferred to Medical Director', null],
    ['NA', 'https://clinic.example/na'],
  ])('pending -> %s sends event 1 and applies the matching redirect', async (status, redirect) => {
    const { ids } = await invite(
      inviteBody({
        redirect_approve: 'https://clinic.example/approved',
        redirect_reject: 'https://clinic.example/rejected',
        redirect_na: 'https://clinic.example/na',
        redirect_missed: 'https://clinic.example/missed',
      }),
    );
    const res = await control(ids[0]!, 'verdict', { status, reason: 'Reviewed by the sandbox.' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status, redirected_to: redirect, events_emitted: [1] });
    // The control call returns after the callback went out.
    const [e1] = receiver.events(ids[0]);
    expectEvent1(e1);
    expect(e1).toMatchObject({ exam_status: status, reason: 'Reviewed by the sandbox.' });
    expect(e1.provider_name).toBe(status === 'NA' ? null : 'Dr. Riley Sandbox, MD');
    if (status === 'Deferred to Medical Director') {
      // The medical director's final verdict: event 1 again; after it, the verdict stands.
      const final = await control(ids[0]!, 'verdict', { status: 'Approved' });
      expect(final.status).toBe(200);
      expect(final.body).toMatchObject({ status: 'Approved', events_emitted: [1, 1] });
      expect(receiver.events(ids[0]).map((e) => e.exam_status)).toEqual([status, 'Approved']);
      expect((await control(ids[0]!, 'verdict', { status: 'Deferred to Medical Director' })).status).toBe(409);
    }
    expect((await control(ids[0]!, 'verdict', { status: 'Rejected' })).status).toBe(409);
  });

  it('Approved prescription exam -> confirm (event 2, Pharmacy Confirmed) -> ship (event 3)', async () => {
    const { ids } = await invite(inviteBody({ exams: [101, 201], pharmacy_id: 502 }));
    const rx = ids[1]!;
    expect((await control(rx, 'confirm-prescription')).status).toBe(409); // not approved yet
    expect((await control(rx, 'ship')).status).toBe(409);
    await control(rx, 'verdict', { status: 'Approved' });
    expect((await view(rx)).rx_status).toBeNull();
    const confirmed = await control(rx, 'confirm-prescription', { order_set_id: '8111' });
    expect(confirmed.body).toMatchObject({
      rx_status: 'Pharmacy Confirmed',
      prescribed_os_id: 8111,
      events_emitted: [1, 2],
    });
    expect((await control(rx, 'confirm-prescription')).status).toBe(409);
    const shipped = await control(rx, 'ship');
    expect(shipped.body.events_emitted).toEqual([1, 2, 3]);
    expect(shipped.body.rx_status).toBe('Pharmacy Confirmed');
    expect((await control(rx, 'ship')).status).toBe(409);
    expect(eventsOf(rx)).toEqual([1, 2, 3]);
    // The GFE of the same meeting is untouched and cannot get prescriptions.
    expect((await control(ids[0]!, 'confirm-prescription')).status).toBe(409);
    expect(eventsOf(ids[0]!)).toEqual([]);
  });

  it('ship can send one prescription at a time', async () => {
    const { ids } = await invite(inviteBody({ exams: [201], pharmacy_id: 501, order_set_id: '8101' }));
    const id = ids[0]!;
    await control(id, 'verdict', { status: 'Approved' });
    const confirmed = await control(id, 'confirm-prescription');
    const [first, second] = confirmed.body.prescriptions.map((p: any) => p.prescription_id);
    await control(id, 'ship', { prescription_id: second });
    expect(
      receiver
        .events(id)
        .filter((e) => e.event === 3)
        .map((e) => e.prescription_id),
    ).toEqual([String(second)]);
    await control(id, 'ship', { prescription_id: first });
    expect(eventsOf(id)).toEqual([1, 2, 3, 3]);
    expect((await control(id, 'ship', { prescription_id: first })).status).toBe(404);
  });

  it('cancelled exams send no events, even in test mode with a keyword', async () => {
    const { ids } = await invite(testModeInvite('Approve', { exams: [101, 201], pharmacy_id: 501 }));
    for (const id of ids)
      expect((await callService(baseUrl, 'exam_invite_cancel', { patient_exam_id: id })).status).toBe(200);
    await sandbox.clock.advance(EVERYTHING);
    expect(receiver.callbacks).toEqual([]);
    expect((await control(ids[0]!, 'verdict', { status: 'Approved' })).status).toBe(409);
    expect((await control(ids[0]!, 'wait')).status).toBe(409);
  });

  it('NA and Missed are final: cancel answers 400 with their status', async () => {
    const { ids } = await invite(inviteBody({ exams: [101, 103] }));
    await control(ids[0]!, 'verdict', { status: 'NA' });
    const na = await callService(baseUrl, 'exam_invite_cancel', { patient_exam_id: ids[0] });
    expect(na.body).toEqual({ http_code: 400, error_message: 'Exam status is already NA.' });
    await control(ids[1]!, 'wait');
    await sandbox.clock.advance(180_000);
    const missed = await callService(baseUrl, 'exam_invite_cancel', { patient_exam_id: ids[1] });
    expect(missed.body.error_message).toBe('Exam status is already Missed.');
  });

  it('unknown patient exams are 404 and bad bodies 400 on the control surface', async () => {
    expect((await control(424242, 'verdict', { status: 'Approved' })).status).toBe(404);
    const { ids } = await invite(inviteBody());
    const bad = await control(ids[0]!, 'verdict', { status: 'Missed' });
    expect(bad.status).toBe(400);
    expect(bad.body.error_message).toMatch(/status/);
  });
});

describe('callback content', () => {
  it('submitted answers travel in event 1 (strings) and event 2 (rich form, checkbox as array)', async () => {
    const { ids } = await invite(testModeInvite('Approve', { exams: [301], custom_pharmacy: 1, ncpdpid: '4512345' }));
    const id = ids[0]!;
    const q = SEED_QUESTIONS[301]!;
    await callService(baseUrl, 'exam_submit_answers', {
      patient_exam_id: id,
      answers: [
        { no: 2, question: q[1]!.question, answer: 'Yes: sulfa' },
        { no: 3, question: q[2]!.question, answer: ['Diabetes', 'Other: asthma'] },
      ],
    });
    await sandbox.clock.advance(EVERYTHING);
    const [e1, e2] = receiver.events(id);
    const a3 = e1.questions_answers.find((a: any) => a.no === 3);
    expect(a3).toEqual({ no: 3, question: q[2]!.question, answer: 'Diabetes, Other: asthma' });
    expect(e1.questions_answers.find((a: any) => a.no === 2).answer).toBe('Yes: sulfa');
    const rich = e2.questions_answers.find((a: any) => a.no === 3);
    expect(rich).toMatchObject({
      id: q[2]!.id,
      position: 3,
      response_type: 3,
      answer: ['Diabetes', 'Other: asthma'],
      answers: ['Diabetes', 'Other: asthma'],
    });
    expect(rich.responses.length).toBe(5);
    expect(e2.additional_data).toBe(ADDITIONAL_DATA);
  });

  it('exam_url is a working link until it expires', async () => {
    const { ids } = await invite(testModeInvite('Approve'));
    await sandbox.clock.advance(1_000);
    const url: string = receiver.events(ids[0])[0].exam_url;
    const expires = new URL(url).searchParams.get('expires')!;
    expect(Date.parse(expires) - sandbox.clock.nowMs()).toBe(sandbox.config.examUrlTtlMs);
    const ok = await getJson(url);
    expect(ok.status).toBe(200);
    expect(String(ok.body).startsWith('%PDF')).toBe(true);
    await sandbox.clock.advance(sandbox.config.examUrlTtlMs + 1);
    expect((await getJson(url)).status).toBe(410);
  });

  it('an invite without webhook_url still moves through its states and sends nothing', async () => {
    const res = await callService(
      baseUrl,
      'exam_invite',
      testModeInvite('Approve', { exams: [201], pharmacy_id: 501 }),
    );
    const id = res.body.patient_exams[0].patient_exam_id;
    await sandbox.clock.advance(EVERYTHING);
    expect((await view(id)).events_emitted).toEqual([1, 2, 3, 3]);
    expect((await getJson(`${baseUrl}/_sandbox/deliveries`)).body.deliveries).toEqual([]);
    expect(receiver.callbacks).toEqual([]);
  });

  it('additional_data is echoed as sent; without it the field is an empty string', async () => {
    const { ids } = await invite(testModeInvite('Reject', { additional_data: undefined }));
    await sandbox.clock.advance(EVERYTHING);
    expect(receiver.events(ids[0])[0].additional_data).toBe('');
  });
});

describe('control surface: listings, clock, reset', () => {
  it('lists patient exams and their state, filtered by status', async () => {
    const { ids } = await invite(inviteBody({ exams: [101, 103] }));
    await control(ids[0]!, 'verdict', { status: 'Rejected' });
    const all = await getJson(`${baseUrl}/_sandbox/patient-exams`);
    expect(all.body.patient_exams.map((p: any) => [p.patient_exam_id, p.status])).toEqual([
      [ids[0], 'Rejected'],
      [ids[1], 'pending'],
    ]);
    const pending = await getJson(`${baseUrl}/_sandbox/patient-exams?status=pending`);
    expect(pending.body.patient_exams.map((p: any) => p.patient_exam_id)).toEqual([ids[1]]);
  });

  it('lists at most `limit` patient exams, the first invited first, after the filter', async () => {
    const { ids } = await invite(inviteBody({ exams: [101, 102, 103] }));
    await control(ids[0]!, 'verdict', { status: 'Rejected' });
    const first = await getJson(`${baseUrl}/_sandbox/patient-exams?limit=1`);
    expect(first.body.patient_exams.map((p: any) => p.patient_exam_id)).toEqual([ids[0]]);
    // The limit counts what the filter keeps: the first two pending, not the first two invited.
    const pending = await getJson(`${baseUrl}/_sandbox/patient-exams?status=pending&limit=2`);
    expect(pending.body.patient_exams.map((p: any) => p.patient_exam_id)).toEqual([ids[1], ids[2]]);
    const refused = await getJson(`${baseUrl}/_sandbox/patient-exams?limit=0`);
    expect(refused.status).toBe(400);
  });

  it('the deliveries log says what went to which receiver, with status and latency per attempt', async () => {
    const { ids } = await invite(testModeInvite('Approve', { exams: [301], custom_pharmacy: 1, ncpdpid: '4512345' }));
    await sandbox.clock.advance(EVERYTHING);
    const log = await getJson(`${baseUrl}/_sandbox/deliveries?patient_exam_id=${ids[0]}`);
    expect(log.body.deliveries.map((d: any) => [d.event, d.receiver, d.state, d.copy])).toEqual([
      [1, receiver.url, 'delivered', 1],
      [2, receiver.url, 'delivered', 1],
    ]);
    const attempt = log.body.deliveries[0].attempts[0];
    expect(attempt).toMatchObject({ attempt: 1, status: 200 });
    // Slow is whatever took longer than SANDBOX_SLOW_CALLBACK_MS: said of this attempt by its own latency (a busy
    // machine may make a quick receiver slow, so the flag is checked against the latency, not a guess).
    expect(typeof attempt.latency_ms).toBe('number');
    expect(attempt.slow).toBe(attempt.latency_ms > 100);
    const onlyTwo = await getJson(`${baseUrl}/_sandbox/deliveries?event=2`);
    expect(onlyTwo.body.deliveries.map((d: any) => d.event)).toEqual([2]);
  });

  it('the clock can be read and advanced over HTTP', async () => {
    const { ids } = await invite(testModeInvite('Approve'));
    const clock = await getJson(`${baseUrl}/_sandbox/clock`);
    expect(clock.body.mode).toBe('manual');
    expect(clock.body.scheduled.length).toBe(1);
    const advanced = await postJson(`${baseUrl}/_sandbox/clock/advance`, { ms: 1_000 });
    expect(advanced.status).toBe(200);
    expect(eventsOf(ids[0]!)).toEqual([1]);
  });

  it('reset empties the store, pending actions and the id counters', async () => {
    const first = await invite(testModeInvite('Approve'));
    await postJson(`${baseUrl}/_sandbox/reset`);
    expect((await getJson(`${baseUrl}/_sandbox/patient-exams`)).body.patient_exams).toEqual([]);
    expect((await getJson(`${baseUrl}/_sandbox/clock`)).body.scheduled).toEqual([]);
    const second = await invite(testModeInvite('Approve'));
    expect(second.ids).toEqual(first.ids);
    expect(second.meetingUuid).toBe(first.meetingUuid); // same seed, same generated ids
  });

  it('GET /_sandbox/seed documents the keys and catalog', async () => {
    const seed = await getJson(`${baseUrl}/_sandbox/seed`);
    expect(seed.body.demo_api_key).toBe('sandbox-demo-key');
    expect(seed.body.clinics.length).toBe(4);
    expect(seed.body.state_without_provider).toBe('AK');
  });
});
