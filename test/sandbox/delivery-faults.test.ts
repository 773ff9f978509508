/** Callback delivery (attempts, latency, slow flag, retries with backoff) and every injectable fault. */
import { request } from 'undici';
import { readCallback } from '../../src/inbox/reading';
import { buildSandbox, type Sandbox } from '../../src/sandbox';
import {
  callService,
  getJson,
  inviteBody,
  postJson,
  type Receiver,
  startManualSandbox,
  startReceiver,
  testModeInvite,
} from './support';

const EVERYTHING = 60_000;

describe('callback delivery', () => {
  let sandbox: Sandbox;
  let receiver: Receiver;

  beforeAll(async () => {
    ({ sandbox, receiver } = await startManualSandbox({ callbackRetries: 3, callbackRetryBaseMs: 1_000 }));
  });
  afterAll(async () => {
    await sandbox.close();
    await receiver.close();
  });
  beforeEach(async () => {
    await postJson(`${sandbox.baseUrl}/_sandbox/reset`);
    receiver.callbacks.length = 0;
    receiver.respondWith([]);
    receiver.delayMs = 0;
  });

  async function approvedGfe(webhookUrl = receiver.url): Promise<number> {
    const res = await callService(sandbox.baseUrl, 'exam_invite', inviteBody({ webhook_url: webhookUrl }));
    const id: number = res.body.patient_exams[0].patient_exam_id;
    await postJson(`${sandbox.baseUrl}/_sandbox/patient-exams/${id}/verdict`, { status: 'Approved' });
    return id;
  }
  const deliveries = () => sandbox.store.deliveries;

  it('retries a non-200 answer with exponential backoff on the sandbox clock', async () => {
    receiver.respondWith([500, 503]);
    await approvedGfe();
    expect(deliveries()[0]!.state).toBe('retrying');
    expect(deliveries()[0]!.attempts.map((a) => a.status)).toEqual([500]);
    await sandbox.clock.advance(999);
    expect(deliveries()[0]!.attempts.length).toBe(1);
    await sandbox.clock.advance(1);
    expect(deliveries()[0]!.attempts.map((a) => a.status)).toEqual([500, 503]);
    await sandbox.clock.advance(1_999);
    expect(deliveries()[0]!.attempts.length).toBe(2);
    await sandbox.clock.advance(1);
    expect(deliveries()[0]!.attempts.map((a) => a.status)).toEqual([500, 503, 200]);
    expect(deliveries()[0]!.state).toBe('delivered');
    expect(receiver.callbacks.length).toBe(3);
    expect(new Set(receiver.callbacks.map((c) => JSON.stringify(c.body))).size).toBe(1);
  });

  it('gives up after the configured retries', async () => {
    receiver.respondWith([500, 500, 500, 500, 500]);
    await approvedGfe();
    await sandbox.clock.advance(EVERYTHING);
    expect(deliveries()[0]!.attempts.length).toBe(4);
    expect(deliveries()[0]!.state).toBe('failed');
  });

  it('records an unreachable receiver as status null with the error, and retries it', async () => {
    const gone = await startReceiver();
    const url = gone.url;
    await gone.close();
    await approvedGfe(url);
    await sandbox.clock.advance(EVERYTHING);
    const [record] = deliveries();
    expect(record!.attempts.length).toBe(4);
    expect(record!.attempts.every((a) => a.status === null && typeof a.error === 'string')).toBe(true);
    expect(record!.state).toBe('failed');
  });

  it('flags receivers slower than 100 ms', async () => {
    receiver.delayMs = 150;
    await approvedGfe();
    receiver.delayMs = 0;
    await approvedGfe();
    const log = (await getJson(`${sandbox.baseUrl}/_sandbox/deliveries`)).body.deliveries;
    expect(log[0].attempts[0].latency_ms).toBeGreaterThanOrEqual(150);
    expect(log[0].attempts[0].slow).toBe(true);
    // The prompt receiver's flag follows its own measured time: a loaded machine can take 100 ms over any exchange.
    const prompt = log[1].attempts[0];
    expect(prompt.slow).toBe(prompt.latency_ms > 100);
  });
});

describe('callback retries off', () => {
  it('0 retries means one attempt', async () => {
    const { sandbox, receiver } = await startManualSandbox({ callbackRetries: 0 });
    try {
      receiver.respondWith([500]);
      const res = await callService(
        sandbox.baseUrl,
        'exam_invite',
        testModeInvite('Approve', { webhook_url: receiver.url }),
      );
      expect(res.status).toBe(200);
      await sandbox.clock.advance(EVERYTHING);
      expect(sandbox.store.deliveries.map((d) => [d.state, d.attempts.length])).toEqual([['failed', 1]]);
    } finally {
      await sandbox.close();
      await receiver.close();
    }
  });
});

describe('fault injection', () => {
  let sandbox: Sandbox;
  let receiver: Receiver;
  let baseUrl: string;

  beforeAll(async () => {
    ({ sandbox, receiver } = await startManualSandbox({ callbackRetries: 0, seed: 7 }));
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
  const setFaults = (faults: Record<string, unknown>) => postJson(`${baseUrl}/_sandbox/faults`, faults);

  it('POST /_sandbox/faults replaces the faults; GET shows them; bad values are a 400; reset clears', async () => {
    const set = await setFaults({ errorRate: 0.5, latencyMs: 5 });
    expect(set.status).toBe(200);
    expect(set.body.faults).toMatchObject({ errorRate: 0.5, latencyMs: 5, duplicateCallbacks: 1 });
    expect((await getJson(`${baseUrl}/_sandbox/faults`)).body.faults.errorRate).toBe(0.5);
    expect((await setFaults({ errorRate: 3 })).status).toBe(400);
    expect((await setFaults({ nonsense: true })).status).toBe(400);
    await postJson(`${baseUrl}/_sandbox/reset`);
    expect((await getJson(`${baseUrl}/_sandbox/faults`)).body.faults.errorRate).toBe(0);
  });

  it('errorRate 1 answers 500 on every operation, before doing anything', async () => {
    await setFaults({ errorRate: 1 });
    for (const op of ['exam_list', 'exam_invite', 'exam_invite_cancel']) {
      const res = await callService(baseUrl, op, inviteBody());
      expect(res).toEqual({ status: 500, body: { http_code: 500, error_message: 'Internal server error.' } });
    }
    expect(sandbox.store.patientExams.size).toBe(0);
    // Counted per operation since the reset, for whoever reports on a fault run.
    expect((await getJson(`${baseUrl}/_sandbox/faults`)).body.injected).toEqual({
      errors: { exam_list: 1, exam_invite: 1, exam_invite_cancel: 1 },
      delayed: 0,
      droppedInvites: 0,
    });
    // The control surface is never faulted.
    expect((await getJson(`${baseUrl}/_sandbox/patient-exams`)).status).toBe(200);
  });

  it('per-operation shares override the global share', async () => {
    await setFaults({ errorRate: 0, errorRates: { exam_invite: 1 } });
    expect((await callService(baseUrl, 'exam_invite', inviteBody())).status).toBe(500);
    expect((await callService(baseUrl, 'exam_list')).status).toBe(200);
    await setFaults({ errorRate: 1, errorRates: { exam_list: 0 } });
    expect((await callService(baseUrl, 'exam_list')).status).toBe(200);
    expect((await callService(baseUrl, 'partner_pharmacy_list')).status).toBe(500);
  });

  it('a share of 500s follows the seeded random source: same seed, same pattern', async () => {
    const pattern = async () => {
      const out: number[] = [];
      for (let i = 0; i < 20; i++) out.push((await callService(baseUrl, 'exam_list')).status);
      return out;
    };
    await setFaults({ errorRate: 0.5, seed: 99 });
    const first = await pattern();
    await setFaults({ errorRate: 0.5, seed: 99 });
    expect(await pattern()).toEqual(first);
    expect(first.filter((s) => s === 500).length).toBeGreaterThan(3);
    expect(first.filter((s) => s === 200).length).toBeGreaterThan(3);
  });

  it('latencyMs delays every answer', async () => {
    await setFaults({ latencyMs: 120 });
    const started = Date.now();
    expect((await callService(baseUrl, 'exam_list')).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(115);
  });

  it('dropAfterInviteRate 1: the connection resets but the invite exists and proceeds', async () => {
    await setFaults({ dropAfterInviteRate: 1 });
    const attempt = request(`${baseUrl}/api/exam_invite`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(testModeInvite('Approve', { webhook_url: receiver.url })),
    });
    await expect(attempt).rejects.toThrow(/closed|reset|socket/i);
    const stored = (await getJson(`${baseUrl}/_sandbox/patient-exams`)).body.patient_exams;
    expect(stored.length).toBe(1);
    await setFaults({});
    await sandbox.clock.advance(EVERYTHING);
    expect(receiver.events().map((e) => e.event)).toEqual([1]);
  });

  it('duplicateCallbacks n sends n copies of every callback', async () => {
    await setFaults({ duplicateCallbacks: 3 });
    await callService(
      baseUrl,
      'exam_invite',
      testModeInvite('Approve', { exams: [301], custom_pharmacy: 1, ncpdpid: '4512345', webhook_url: receiver.url }),
    );
    await sandbox.clock.advance(EVERYTHING);
    expect(receiver.events().map((e) => e.event)).toEqual([1, 1, 1, 2, 2, 2]);
    expect(sandbox.store.deliveries.map((d) => d.copy)).toEqual([1, 2, 3, 1, 2, 3]);
  });

  it.each([
    ['partner pharmacy', { exams: [201], pharmacy_id: 501, order_set_id: '8102' }, [3, 2, 1]],
    ['partner pharmacy, two drugs', { exams: [201], pharmacy_id: 501, order_set_id: '8101' }, [3, 3, 2, 1]],
    ['urgent care', { exams: [301], custom_pharmacy: 1, ncpdpid: '4512345' }, [2, 1]],
    ['GFE', { exams: [101] }, [1]],
  ])('outOfOrderCallbacks: %s', async (_label, fields, order) => {
    await setFaults({ outOfOrderCallbacks: true });
    await callService(baseUrl, 'exam_invite', testModeInvite('Approve', { ...fields, webhook_url: receiver.url }));
    await sandbox.clock.advance(EVERYTHING);
    expect(receiver.events().map((e) => e.event)).toEqual(order);
  });

  it('switching out-of-order off sends what it held back', async () => {
    await setFaults({ outOfOrderCallbacks: true });
    const res = await callService(
      baseUrl,
      'exam_invite',
      inviteBody({ exams: [301], custom_pharmacy: 1, ncpdpid: '4512345', webhook_url: receiver.url }),
    );
    const id = res.body.patient_exams[0].patient_exam_id;
    await postJson(`${baseUrl}/_sandbox/patient-exams/${id}/verdict`, { status: 'Approved' });
    expect(receiver.callbacks).toEqual([]);
    await setFaults({});
    expect(receiver.events().map((e) => e.event)).toEqual([1]);
  });

  it('callbackDelayMs holds every callback back on the sandbox clock', async () => {
    await setFaults({ callbackDelayMs: 5_000 });
    const res = await callService(baseUrl, 'exam_invite', inviteBody({ webhook_url: receiver.url }));
    const id = res.body.patient_exams[0].patient_exam_id;
    await postJson(`${baseUrl}/_sandbox/patient-exams/${id}/verdict`, { status: 'Rejected' });
    expect(receiver.callbacks).toEqual([]);
    expect(sandbox.store.deliveries[0]!.state).toBe('scheduled');
    await sandbox.clock.advance(4_999);
    expect(receiver.callbacks).toEqual([]);
    await sandbox.clock.advance(1);
    expect(receiver.events().map((e) => e.exam_status)).toEqual(['Rejected']);
  });
});

describe('faults and timing set at start', () => {
  it('options.faults are in force from the first request', async () => {
    const sandbox = await buildSandbox({ faults: { errorRates: { exam_list: 1 } } });
    try {
      expect((await callService(sandbox.baseUrl, 'exam_list')).status).toBe(500);
      expect((await callService(sandbox.baseUrl, 'partner_pharmacy_list')).status).toBe(200);
    } finally {
      await sandbox.close();
    }
  });

  it('real-time clock with short delays: a partner pharmacy journey completes in milliseconds', async () => {
    const receiver = await startReceiver();
    const sandbox = await buildSandbox({ providerDelayMs: 10, prescriptionDelayMs: 10, shipmentDelayMs: 10 });
    try {
      expect(sandbox.clock.mode).toBe('real');
      await callService(
        sandbox.baseUrl,
        'exam_invite',
        testModeInvite('Approve', { exams: [201], pharmacy_id: 501, webhook_url: receiver.url }),
      );
      const deadline = Date.now() + 3_000;
      while (receiver.callbacks.length < 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      await sandbox.idle();
      expect(receiver.events().map((e) => e.event)).toEqual([1, 2, 3, 3]);
    } finally {
      await sandbox.close();
      await receiver.close();
    }
  });
});

describe('callback layouts', () => {
  let sandbox: Sandbox;
  let receiver: Receiver;

  beforeAll(async () => {
    ({ sandbox, receiver } = await startManualSandbox({ callbackRetries: 0 }));
  });
  afterAll(async () => {
    await sandbox.close();
    await receiver.close();
  });
  beforeEach(async () => {
    await postJson(`${sandbox.baseUrl}/_sandbox/reset`);
    receiver.callbacks.length = 0;
  });
  const deliveries = () => sandbox.store.deliveries;
  async function approvedGfe(): Promise<void> {
    const res = await callService(sandbox.baseUrl, 'exam_invite', inviteBody({ webhook_url: receiver.url }));
    const id: number = res.body.patient_exams[0].patient_exam_id;
    await postJson(`${sandbox.baseUrl}/_sandbox/patient-exams/${id}/verdict`, { status: 'Approved' });
  }

  async function partnerJourney(layout?: string): Promise<Record<string, unknown>[]> {
    const res = await callService(
      sandbox.baseUrl,
      'exam_invite',
      inviteBody({ exams: [201], pharmacy_id: 501, order_set_id: '8101', webhook_url: receiver.url }),
    );
    const id: number = res.body.patient_exams[0].patient_exam_id;
    if (layout) {
      const set = await postJson(`${sandbox.baseUrl}/_sandbox/patient-exams/${id}/callback-layout`, { layout });
      expect(set.status).toBe(200);
    }
    await postJson(`${sandbox.baseUrl}/_sandbox/patient-exams/${id}/verdict`, {
      status: 'Deferred to Medical Director',
    });
    return receiver.callbacks.map((c) => c.body as Record<string, unknown>);
  }

  it('sends the interface layout by default, and another one per invite', async () => {
    expect((await partnerJourney())[0]).toMatchObject({ event: 1, exam_status: 'Deferred to Medical Director' });
    receiver.callbacks.length = 0;
    expect((await partnerJourney('all-alternatives'))[0]).toMatchObject({ event: '1', exam_status: 'Deferred' });
    expect(
      (await postJson(`${sandbox.baseUrl}/_sandbox/patient-exams/1/callback-layout`, { layout: 'x' })).status,
    ).toBeGreaterThanOrEqual(400);
  });

  it('flat prescription: event 2 once per drug; tracking array: event 3 without ids; each one readable', async () => {
    sandbox.setFaults({ callbackLayout: 'all-alternatives' });
    const res = await callService(
      sandbox.baseUrl,
      'exam_invite',
      inviteBody({ exams: [201], pharmacy_id: 501, order_set_id: '8101', webhook_url: receiver.url }),
    );
    const id: number = res.body.patient_exams[0].patient_exam_id;
    await postJson(`${sandbox.baseUrl}/_sandbox/patient-exams/${id}/verdict`, { status: 'Approved' });
    await postJson(`${sandbox.baseUrl}/_sandbox/patient-exams/${id}/confirm-prescription`, {});
    await postJson(`${sandbox.baseUrl}/_sandbox/patient-exams/${id}/ship`, {});
    const bodies = receiver.callbacks.map((c) => c.body as Record<string, unknown>);
    expect(bodies.map((b) => b.event)).toEqual(['1', '2', '2', '3', '3']);
    expect(bodies[0]).toMatchObject({ exam_status: 'approved' });
    expect(bodies[1]).not.toHaveProperty('prescription');
    expect(bodies[1]).toMatchObject({
      prescription_id: expect.any(Number),
      drug_details: { drug_name: expect.any(String) },
    });
    expect(bodies[3]).not.toHaveProperty('patient_exam_id');
    expect(bodies[3]).not.toHaveProperty('prescription_id');
    expect(bodies[3]).toMatchObject({ prescription_tracking: [{ tracking_number: expect.stringMatching(/^1Z/) }] });
    const layouts = bodies.map((b) => {
      const r = readCallback(JSON.stringify(b));
      if (!r.ok || 'unread' in r.callback) throw new Error('not read');
      return r.callback.layout;
    });
    expect(layouts).toEqual([
      'string-event+verdict-spelling',
      'string-event+flat-prescription',
      'string-event+flat-prescription',
      'string-event+tracking-array',
      'string-event+tracking-array',
    ]);
    expect(deliveries().map((d) => d.event)).toEqual([1, 2, 2, 3, 3]);
    // Each delivery says what it is about in the sandbox's ids, which the layout may leave out of the body.
    const prescriptions = sandbox.store.patientExam(id)!.prescriptions.map((p) => p.prescription_id);
    expect(deliveries().map((d) => [d.patient_exam_id, d.prescription_id, d.layout])).toEqual([
      [id, undefined, 'all-alternatives'],
      [id, prescriptions[0], 'all-alternatives'],
      [id, prescriptions[1], 'all-alternatives'],
      [id, prescriptions[0], 'all-alternatives'],
      [id, prescriptions[1], 'all-alternatives'],
    ]);
    expect(bodies[1]!.prescription_id).toBe(prescriptions[0]);
    const listed = await getJson(`${sandbox.baseUrl}/_sandbox/deliveries?patient_exam_id=${id}&event=3`);
    expect(listed.body.deliveries.map((d: { prescription_id: number }) => d.prescription_id)).toEqual(prescriptions);
    sandbox.setFaults({});
  });

  it('rotate gives each invite the next alternative layout', async () => {
    sandbox.setFaults({ callbackLayout: 'rotate' });
    for (let n = 0; n < 3; n++) await approvedGfe();
    expect(receiver.callbacks.map((c) => (c.body as Record<string, unknown>).event)).toEqual(['1', 1, 1]);
    expect(receiver.callbacks.map((c) => (c.body as Record<string, unknown>).exam_status)).toEqual([
      'Approved',
      'approved',
      'Approved',
    ]);
    sandbox.setFaults({});
  });
});
