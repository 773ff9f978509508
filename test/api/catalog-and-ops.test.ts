// The catalog pass-through against the exam-service sandbox (real HTTP), and the operations routes and docs.
import { useApiHarness } from '../support/api-harness';
import { auth, expectProblem, TOKENS } from './support';

describe('catalog pass-through (sandbox) and operations', () => {
  const stack = useApiHarness({
    temporal: 'unreachable',
    examService: 'sandbox',
    // clinic-b holds a key the service does not know.
    sandboxApiKey: (clinic) => (clinic.clinicId === 'clinic-b' ? 'revoked-key' : clinic.examServiceApiKey),
    app: { startForwarder: false },
  });

  const get = (url: string, token = TOKENS.a) => stack.app.inject({ method: 'GET', url, headers: auth(token) });

  it("lists the clinic's exams in the API's layout", async () => {
    const res = await get('/v1/catalog/exams');
    expect(res.statusCode).toBe(200);
    const exams = res.json().exams;
    expect(exams.map((e: { examId: number }) => e.examId)).toEqual([101, 102, 103, 201, 202, 301, 302]);
    expect(exams.find((e: { examId: number }) => e.examId === 202)).toEqual({
      examId: 202,
      title: 'Testosterone Therapy - Partner Pharmacy Package',
      rxType: 2,
      price: null,
      attachmentsRequired: 2,
      attachments: ['ID', 'Lab'],
    });
  });

  it('lists partner pharmacies and the treatment packages of one for an exam', async () => {
    const pharmacies = (await get('/v1/catalog/partner-pharmacies')).json().pharmacies;
    expect(pharmacies).toContainEqual({
      pharmacyId: 501,
      name: 'Lone Star Compounding Pharmacy',
      type: '503A Compounding',
    });
    const packages = await get('/v1/catalog/partner-pharmacies/501/treatment-packages?examId=201');
    expect(packages.statusCode).toBe(200);
    expect(packages.json().treatmentPackages).toContainEqual(
      expect.objectContaining({
        orderSetId: '8101',
        examPosId: 3101,
        priceCents: 29900,
        durationDays: expect.any(Number),
      }),
    );
    // Not a partner pharmacy: there is nothing at that address. An exam not in the clinic's list: the stated rule.
    const unknown = await get('/v1/catalog/partner-pharmacies/999/treatment-packages?examId=201');
    expectProblem(unknown, 404);
    const notListed = await get('/v1/catalog/partner-pharmacies/501/treatment-packages?examId=999');
    expectProblem(notListed, 400, ['querystring.examId']);
    expect(notListed.json().errors).toEqual([expect.objectContaining({ rule: 'exam-in-list' })]);
  });

  it('searches pharmacies in either form and answers in one layout, ready for scenario.pharmacy', async () => {
    const byZip = await get('/v1/catalog/pharmacies/search?zipCode=78701');
    expect(byZip.statusCode).toBe(200);
    expect(byZip.json().pharmacies).toContainEqual(
      expect.objectContaining({ ncpdpid: '4512345', name: 'Sandbox Drug Mart #101', city: 'Austin', state: 'TX' }),
    );
    const byCity = await get('/v1/catalog/pharmacies/search?city=austin&state=TX');
    expect(byCity.statusCode).toBe(200);
    expect(byCity.json().pharmacies.length).toBeGreaterThan(0);
    for (const p of byCity.json().pharmacies)
      expect(p).toMatchObject({ city: 'Austin', state: 'TX', zipCode: expect.any(String) });
    const byId = await get('/v1/catalog/pharmacies/search?ncpdpid=4512345');
    expect(byId.json().pharmacies).toHaveLength(1);
  });

  it("answers 502 when the service refuses the clinic's key, and 503 when it is down", async () => {
    const refused = await get('/v1/catalog/exams', TOKENS.b);
    expect(expectProblem(refused, 502).detail).toMatch(/refused the clinic's api key/);
    stack.sandbox.setFaults({ errorRate: 1 });
    try {
      const down = await get('/v1/catalog/partner-pharmacies');
      expectProblem(down, 503);
      expect(down.headers['retry-after']).toBe('10');
    } finally {
      stack.sandbox.setFaults({});
    }
  });

  it('answers liveness, and Prometheus metrics in the text format', async () => {
    expect((await stack.app.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({ status: 'ok' });
    const metrics = await stack.app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(metrics.body).toMatch(/# TYPE journey_api_webhook_ack_seconds histogram/);
    expect(metrics.body).toMatch(
      /# TYPE journey_api_callbacks_forwarded_total counter\njourney_api_callbacks_forwarded_total 0/,
    );
    expect(metrics.body).toMatch(/journey_api_inbox_depth 0/);
    expect(metrics.body).toMatch(/journey_api_inbox_oldest_age_seconds 0/);
    expect(metrics.body).toMatch(/# TYPE journey_api_inbox_append_batch_size histogram/);
    expect(metrics.body).toMatch(/# TYPE journey_api_inbox_write_seconds histogram/);
    expect(metrics.body).toMatch(/journey_api_dead_letters 0/);
    expect(metrics.body).toMatch(
      /journey_api_http_requests_total\{method="GET",route="\/v1\/catalog\/exams",status="200"\} \d/,
    );
  });

  it('serves the OpenAPI document generated from the route schemas, and the interactive page at /docs', async () => {
    const doc = (await stack.app.inject({ method: 'GET', url: '/docs/json' })).json();
    expect(doc.openapi).toBe('3.1.0');
    for (const path of [
      '/v1/journeys',
      '/v1/journeys/{journeyId}',
      '/v1/journeys/{journeyId}/cancel',
      '/v1/journeys/{journeyId}/attachments',
      '/v1/catalog/pharmacies/search',
      '/webhooks/exam-service/{journeyId}/{token}',
      '/admin/dead-letters/{id}/replay',
      '/admin/journeys',
      '/admin/journeys/{journeyId}/{action}',
      '/readyz',
    ]) {
      expect(doc.paths).toHaveProperty([path]);
    }
    const start = doc.paths['/v1/journeys'].post;
    expect(start.parameters).toContainEqual(
      expect.objectContaining({ in: 'header', name: 'idempotency-key', required: true }),
    );
    expect(JSON.stringify(start.requestBody)).toMatch(/StartJourneyRequest|"patient"/);
    expect(doc.components.schemas).toHaveProperty('Problem');
    const page = await stack.app.inject({ method: 'GET', url: '/docs' });
    const html =
      page.statusCode === 302 ? await stack.app.inject({ method: 'GET', url: page.headers.location! }) : page;
    expect(html.statusCode).toBe(200);
    expect(html.body).toMatch(/swagger/i);
  });
});
