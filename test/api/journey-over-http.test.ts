// End to end over real HTTP: a clinic starts journeys on the listening API, the lead's worker invites at the sandbox,
// the sandbox calls back through the real webhook route, and the journeys complete; the API shows every event.
import { useApiHarness } from '../support/api-harness';
import { eventually, TOKENS } from './support';

const TASK_QUEUE = 'api-end-to-end';

describe('journeys over HTTP: API -> Temporal -> sandbox -> webhook', () => {
  const stack = useApiHarness({
    taskQueue: TASK_QUEUE,
    worker: 'project',
    examService: 'sandbox',
    // The provider acts 2 s after the invite: time for the journey's uploads and answers on a loaded machine (the
    // service refuses an upload to an exam that already has its verdict).
    sandbox: { providerDelayMs: 2_000, prescriptionDelayMs: 300, shipmentDelayMs: 300, callbackRetries: 0 },
    listen: true,
  });

  const headers = { authorization: `Bearer ${TOKENS.a}` };
  const patient = {
    firstName: 'Test',
    lastName: 'Approve',
    email: 'patient@example.com',
    dob: '1990-01-01',
    phoneNumber: '4155550100',
    teleState: 'TE',
  };

  async function start(key: string, body: object): Promise<string> {
    const res = await fetch(`${stack.url}/v1/journeys`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(201);
    return ((await res.json()) as { journeyId: string }).journeyId;
  }

  async function completed(journeyId: string) {
    return eventually(
      async () => (await fetch(`${stack.url}/v1/journeys/${journeyId}`, { headers })).json() as Promise<any>,
      (j) => j.journey?.stage === 'completed' && j.source === 'query',
      { timeoutMs: 60_000, intervalMs: 200 },
    );
  }

  it('completes a partner pharmacy journey with events 1, 2 and 3, and a GFE with event 1', async () => {
    // The partner package exam needs a Lab attachment: stored first (multipart), then referenced.
    const form = new FormData();
    form.append('kind', 'Lab');
    form.append('file', new Blob(['%PDF-1.4 lab results'], { type: 'application/pdf' }), 'lab.pdf');
    const upload = await fetch(`${stack.url}/v1/attachments`, { method: 'POST', headers, body: form });
    expect(upload.status).toBe(201);
    const { attachment } = (await upload.json()) as { attachment: { ref: string } };

    const partner = await start('e2e-partner', {
      patient,
      exams: [201],
      scenario: { type: 'partner_pharmacy', pharmacyId: 501, orderSetId: '8101' },
      attachments: [{ examId: 201, attachment }],
    });
    const gfe = await start('e2e-gfe', { patient, exams: [101], scenario: { type: 'gfe' } });

    const [p, g] = await Promise.all([completed(partner), completed(gfe)]);

    const pe = p.journey.exams[0];
    expect(pe).toMatchObject({
      examId: 201,
      status: 'Approved',
      rxStatus: 'Pharmacy Confirmed',
      attachmentsUploaded: ['Lab'],
    });
    expect(pe.prescriptions.length).toBeGreaterThan(0);
    for (const rx of pe.prescriptions)
      expect(rx.tracking).toEqual(expect.objectContaining({ trackingNumber: expect.any(String) }));
    expect(g.journey.exams[0]).toMatchObject({ examId: 101, status: 'Approved', providerName: 'Test Provider, NP' });

    // Every callback the sandbox sent is in the journey's events, each applied once.
    for (const view of [p, g]) {
      const patientExamId = view.journey.exams[0].patientExamId;
      const sent = stack.sandbox.store.deliveries.filter((d) => d.patient_exam_id === patientExamId);
      expect(sent.length).toBeGreaterThan(0);
      for (const d of sent) expect(d.attempts.map((a) => a.status)).toEqual([200]);
      const events: { event: number; disposition: string }[] = view.journey.events;
      expect(events.map((e) => e.event).sort()).toEqual(sent.map((d) => d.event).sort());
      expect(events.every((e) => e.disposition === 'applied')).toBe(true);
    }
    const kinds = p.journey.events.map((e: { event: number }) => e.event);
    expect(kinds.filter((k: number) => k === 1)).toHaveLength(1);
    expect(kinds.filter((k: number) => k === 2)).toHaveLength(1);
    expect(kinds.filter((k: number) => k === 3)).toHaveLength(pe.prescriptions.length);

    // The list shows both as completed.
    const list = (await (await fetch(`${stack.url}/v1/journeys?stage=completed`, { headers })).json()) as any;
    expect(list.journeys.map((j: { journeyId: string }) => j.journeyId)).toEqual(
      expect.arrayContaining([partner, gfe]),
    );
  }, 120_000);
});
