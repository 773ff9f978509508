// One trace from the clinic's request to the exam service: the API (over real HTTP) starts the journey, the worker runs
// the workflow and its activities, an activity calls the sandbox. The API and the worker trace as their processes do
// (each its own provider and service name), into one in-memory exporter; the dev server carries the trace context in
// the workflow's and the activities' headers. Spans hold ids, routes and status codes, never PHI or a secret.
import { createHash } from 'node:crypto';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { startApi } from '../../src/api/server';
import { loadConfig } from '../../src/config';
import {
  API_SERVICE_NAME,
  startTracing,
  tracingRequested,
  WORKER_SERVICE_NAME,
  type Tracing,
} from '../../src/observability/tracing';
import { buildSandbox, DEMO_API_KEY, type Sandbox } from '../../src/sandbox';
import { createWorker } from '../../src/worker';
import { SEARCH_ATTRIBUTE_KEYS } from '../../src/contract/definitions';
import { eventually, gfeBody, tempDataDir, type TestDirs } from '../api/support';
import { freePort } from '../support/dev-server-process';
import { startDevServer } from '../support/temporal-env';

const TOKEN = 'tracing-clinic-token-0123456789';
const sha = (t: string) => createHash('sha256').update(t).digest('hex');
const headers = { authorization: `Bearer ${TOKEN}` };

describe('tracing', () => {
  it('is off unless an OTLP endpoint or a traces exporter is named', () => {
    expect(tracingRequested({})).toBe(false);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(true);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' })).toBe(true);
    expect(tracingRequested({ OTEL_TRACES_EXPORTER: 'console' })).toBe(true);
    expect(tracingRequested({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toBe(
      false,
    );
    expect(tracingRequested({ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toBe(false);
    expect(startTracing(API_SERVICE_NAME, { env: {} })).toBeUndefined();
  });

  describe('one trace across the API, the workflow, an activity and the exam service', () => {
    let env: TestWorkflowEnvironment;
    let sandbox: Sandbox;
    let dirs: TestDirs;
    let api: Awaited<ReturnType<typeof startApi>>;
    let worker: Worker;
    let running: Promise<void>;
    let closeWorker: () => Promise<void>;
    let apiUrl: string;
    const exporter = new InMemorySpanExporter();
    let apiTracing: Tracing;
    let workerTracing: Tracing;

    beforeAll(async () => {
      env = await startDevServer(SEARCH_ATTRIBUTE_KEYS);
      sandbox = await buildSandbox({ providerDelayMs: 300, prescriptionDelayMs: 300, shipmentDelayMs: 300 });
      dirs = tempDataDir();
      const port = await freePort();
      apiUrl = `http://127.0.0.1:${port}`;
      const config = loadConfig({
        TEMPORAL_ADDRESS: env.address,
        TEMPORAL_TASK_QUEUE: 'tracing',
        DATA_DIR: dirs.dataDir,
        WEBHOOK_SECRET: 'tracing-webhook-secret-0123456789',
        PAYLOAD_ENCRYPTION_DISABLED: 'true',
        EXAM_SERVICE_BASE_URL: sandbox.baseUrl,
        PUBLIC_BASE_URL: apiUrl,
        API_PORT: String(port),
        CLINICS_JSON: JSON.stringify([
          { clinicId: 'trace-clinic', examServiceApiKey: DEMO_API_KEY, apiTokenSha256: [sha(TOKEN)] },
        ]),
        FORWARDER_THREAD: 'false',
        LOG_LEVEL: 'silent',
      });
      // The worker's first: the exam-service client traces with the process's global provider, the worker's here.
      workerTracing = startTracing(WORKER_SERVICE_NAME, { exporter })!;
      apiTracing = startTracing(API_SERVICE_NAME, { exporter })!;
      const created = await createWorker(config, { connection: env.nativeConnection, tracing: workerTracing });
      worker = created.worker;
      closeWorker = created.close;
      running = worker.run();
      api = await startApi(config, { tracing: apiTracing });
    }, 120_000);

    afterAll(async () => {
      await api?.close();
      worker?.shutdown();
      await running;
      await closeWorker?.();
      await apiTracing?.shutdown();
      await workerTracing?.shutdown();
      await sandbox?.close();
      await env?.teardown();
      dirs?.cleanup();
    });

    it('links the request, StartWorkflow, RunWorkflow, the activities and the exam-service calls', async () => {
      const body = gfeBody();
      const started = await fetch(`${apiUrl}/v1/journeys`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', 'idempotency-key': 'trace-1' },
        body: JSON.stringify(body),
      });
      expect(started.status).toBe(201);
      const { journeyId } = (await started.json()) as { journeyId: string };
      const done = await eventually(
        async () => (await fetch(`${apiUrl}/v1/journeys/${journeyId}`, { headers })).json() as Promise<any>,
        (j) => ['completed', 'failed', 'cancelled', 'abandoned', 'needs_attention'].includes(j.journey?.stage),
        { timeoutMs: 60_000, intervalMs: 250 },
      );
      expect(done.journey.stage).toBe('completed');
      // RunWorkflow ends with the workflow; its span leaves through the sink on that last task.
      await eventually(
        () => Promise.resolve(exporter.getFinishedSpans().map((x) => x.name)),
        (names) => names.includes('RunWorkflow:patientJourney'),
        { timeoutMs: 10_000, intervalMs: 100 },
      );
      const spans = exporter.getFinishedSpans();

      const request = spans.find((s) => s.name === 'POST /v1/journeys')!;
      expect(request).toBeDefined();
      expect(request.parentSpanId).toBeUndefined();
      expect(request.resource.attributes['service.name']).toBe(API_SERVICE_NAME);
      expect(request.attributes).toMatchObject({
        'http.request.method': 'POST',
        'http.route': '/v1/journeys',
        'http.response.status_code': 201,
      });
      const trace = spans.filter((s) => s.spanContext().traceId === request.spanContext().traceId);
      const byId = new Map(trace.map((s) => [s.spanContext().spanId, s]));
      const parentOf = (s: ReadableSpan) => (s.parentSpanId ? byId.get(s.parentSpanId) : undefined);
      const one = (name: string) => {
        const found = trace.filter((s) => s.name === name);
        expect([name, found.length > 0]).toEqual([name, true]);
        return found[0]!;
      };

      const start = one('StartWorkflow:patientJourney');
      expect(parentOf(start)).toBe(request);
      const run = one('RunWorkflow:patientJourney');
      expect(parentOf(run)).toBe(start);
      expect(run.resource.attributes['service.name']).toBe(WORKER_SERVICE_NAME);
      const scheduled = one('StartActivity:sendInvite');
      expect(parentOf(scheduled)).toBe(run);
      const activity = one('RunActivity:sendInvite');
      expect(parentOf(activity)).toBe(scheduled);
      expect(activity.resource.attributes['service.name']).toBe(WORKER_SERVICE_NAME);
      const invite = one('POST /api/exam_invite');
      expect(parentOf(invite)).toBe(activity);
      expect(invite.attributes).toEqual({
        'http.request.method': 'POST',
        'url.template': '/api/exam_invite',
        'http.response.status_code': 200,
      });
      // The callback's signal comes from the API's inbox in a trace of its own; in this one: the workflow's own work.
      expect(trace.map((s) => s.name)).toEqual(expect.arrayContaining(['RunActivity:getExamCatalog']));

      // Nothing of the patient, the clinic's keys or the webhook's token in any span of the run.
      const text = JSON.stringify(
        exporter.getFinishedSpans().map((s) => ({ name: s.name, attributes: s.attributes, events: s.events })),
      );
      for (const secret of [
        body.patient.email,
        body.patient.phoneNumber,
        body.patient.dob,
        DEMO_API_KEY,
        TOKEN,
        'trace-1',
        '/webhooks/exam-service/j',
      ]) {
        expect([secret, text.includes(secret)]).toEqual([secret, false]);
      }
    }, 90_000);
  });
});
