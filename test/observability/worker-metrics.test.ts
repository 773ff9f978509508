// The worker's Prometheus page (WORKER_METRICS_ADDRESS, the SDK's Runtime telemetry) and the API's /metrics, as the
// processes they are in production: `src/worker.ts` and `src/api/server.ts` run as children (Runtime.install may run
// once per process, and a jest worker process may already hold a runtime), against a real Temporal dev server and the
// exam-service sandbox. Two journeys run through them: the first one's invite is answered 500, so an activity fails
// and the journey needs attention; the second completes. Then the worker's page has `temporal_*` series of this task
// queue, and every metric that the dashboard and the alerting rules in deploy/observability use is on one of the two
// pages (the list test/observability/rules.test.ts checks them against is written from these pages with
// UPDATE_METRICS_FIXTURE=1).
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { buildSandbox, DEMO_API_KEY, type Sandbox } from '../../src/sandbox';
import { SEARCH_ATTRIBUTE_KEYS } from '../../src/contract/definitions';
import { freePort } from '../support/dev-server-process';
import { startDevServer } from '../support/temporal-env';
import { FIXTURE_PATH, metricFamilies, parseExposition, usedMetricNames } from './support';

const ROOT = path.resolve(__dirname, '../..');
const TASK_QUEUE = 'observability-metrics';
const sha = (t: string) => createHash('sha256').update(t).digest('hex');

async function eventually<T>(fn: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 60_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined && ok(v)) return v;
    if (Date.now() > until) throw new Error(`condition not met in ${timeoutMs} ms; last value: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

function spawnEntry(entry: string, env: Record<string, string>): { child: ChildProcess; output: () => string } {
  let output = '';
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, entry)], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.on('data', (d: Buffer) => (output += d.toString('utf8')));
  child.stderr.on('data', (d: Buffer) => (output += d.toString('utf8')));
  return { child, output: () => output };
}

async function stop(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

const text = (url: string) => fetch(url, { signal: AbortSignal.timeout(5_000) }).then((r) => r.text());

describe('worker and API metrics pages', () => {
  let env: TestWorkflowEnvironment;
  let sandbox: Sandbox;
  let dataDir: string;
  let api: ReturnType<typeof spawnEntry> | undefined;
  let worker: ReturnType<typeof spawnEntry> | undefined;
  let apiUrl: string;
  let workerMetricsUrl: string;
  const token = randomBytes(24).toString('base64url');
  const headers = { authorization: `Bearer ${token}` };

  async function startJourney(idempotencyKey: string): Promise<string> {
    const started = await fetch(`${apiUrl}/v1/journeys`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
      body: JSON.stringify({
        patient: {
          firstName: 'Test',
          lastName: 'Approve',
          email: 'metrics@example.test',
          dob: '1990-01-01',
          phoneNumber: '4155550100',
          teleState: 'TE',
        },
        exams: [101],
        scenario: { type: 'gfe' },
      }),
    });
    expect(started.status).toBe(201);
    return ((await started.json()) as { journeyId: string }).journeyId;
  }

  /** The journey once it completed or stopped for a person. */
  function settled(journeyId: string) {
    return eventually(
      async () =>
        (await (await fetch(`${apiUrl}/v1/journeys/${journeyId}`, { headers })).json()) as {
          journey: { stage: string };
        },
      (j) => ['completed', 'failed', 'cancelled', 'abandoned', 'needs_attention'].includes(j.journey?.stage),
      90_000,
    );
  }

  beforeAll(async () => {
    env = await startDevServer(SEARCH_ATTRIBUTE_KEYS);
    sandbox = await buildSandbox({ providerDelayMs: 200, prescriptionDelayMs: 200, shipmentDelayMs: 200 });
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'observability-'));
    const [apiPort, metricsPort] = [await freePort(), await freePort()];
    apiUrl = `http://127.0.0.1:${apiPort}`;
    workerMetricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    const shared = {
      TEMPORAL_ADDRESS: env.address,
      TEMPORAL_TASK_QUEUE: TASK_QUEUE,
      DATA_DIR: dataDir,
      WEBHOOK_SECRET: randomBytes(32).toString('base64url'),
      PAYLOAD_ENCRYPTION_KEYS: `metrics:${randomBytes(32).toString('base64')}`,
      EXAM_SERVICE_BASE_URL: sandbox.baseUrl,
      PUBLIC_BASE_URL: apiUrl,
      API_PORT: String(apiPort),
      CLINICS_JSON: JSON.stringify([
        { clinicId: 'metrics-clinic', examServiceApiKey: DEMO_API_KEY, apiTokenSha256: [sha(token)] },
      ]),
      LOG_LEVEL: 'warn',
    };
    api = spawnEntry('src/api/server.ts', shared);
    worker = spawnEntry('src/worker.ts', { ...shared, WORKER_METRICS_ADDRESS: `127.0.0.1:${metricsPort}` });
    await eventually(
      () => fetch(`${apiUrl}/readyz`).then((r) => r.status),
      (s) => s === 200,
    );
    // The page answers as soon as the worker's runtime is installed (the log line saying so may be filtered).
    await eventually(
      () => fetch(workerMetricsUrl).then((r) => r.status),
      (status) => status === 200,
    );
  }, 120_000);

  afterAll(async () => {
    try {
      await Promise.all([stop(api?.child), stop(worker?.child)]);
      await sandbox?.close();
    } finally {
      await env?.teardown();
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('shows temporal_* series of the task queue, and the API counts the journey that needs attention', async () => {
    // The first journey's invite is answered 500 (in doubt whether the service stored it): the activity fails and
    // the journey parks for a person. The second runs without faults to completion.
    sandbox.setFaults({ errorRates: { exam_invite: 1 } });
    const parked = await startJourney('metrics-journey-1');
    const failed = await eventually(
      async () => parseExposition(await text(workerMetricsUrl)),
      (s) => s.some((x) => x.name === 'temporal_activity_execution_failed_total'),
    );
    expect(failed.find((x) => x.name === 'temporal_activity_execution_failed_total')?.labels).toMatchObject({
      task_queue: TASK_QUEUE,
      activity_type: expect.any(String),
    });
    // The same failure by the engine's own classification: an invite answered 500 may have been stored.
    const byKind = await eventually(
      async () => parseExposition(await text(workerMetricsUrl)),
      (s) => s.some((x) => x.name.endsWith('journey_activity_failures_total')),
    );
    expect(byKind.find((x) => x.name.endsWith('journey_activity_failures_total'))?.labels).toMatchObject({
      kind: 'ExamService.ambiguous',
      activity_type: 'sendInvite',
      task_queue: TASK_QUEUE,
    });
    expect((await settled(parked)).journey.stage).toBe('needs_attention');
    sandbox.setFaults({});
    expect((await settled(await startJourney('metrics-journey-2'))).journey.stage).toBe('completed');

    const series = parseExposition(await text(workerMetricsUrl));
    const ofQueue = (name: string) => series.filter((s) => s.name === name && s.labels.task_queue === TASK_QUEUE);
    expect(ofQueue('temporal_worker_task_slots_available').map((s) => s.labels.worker_type)).toEqual(
      expect.arrayContaining(['WorkflowWorker', 'ActivityWorker']),
    );
    expect(ofQueue('temporal_workflow_task_schedule_to_start_latency_seconds_count')[0]?.value).toBeGreaterThan(0);
    expect(ofQueue('temporal_activity_execution_latency_seconds_count').length).toBeGreaterThan(0);
    expect(ofQueue('temporal_workflow_completed_total')[0]?.value).toBe(1);
    expect(ofQueue('temporal_sticky_cache_hit_total')[0]?.value).toBeGreaterThan(0);
    expect(series.find((s) => s.name === 'temporal_sticky_cache_size')?.value).toBeGreaterThanOrEqual(1);

    // The API's own page, beside it: the starts, and the journey needing attention counted in visibility.
    const apiValue = async (name: string, labels: Record<string, string> = {}) =>
      parseExposition(await text(`${apiUrl}/metrics`)).find(
        (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
      )?.value;
    expect(await apiValue('journey_api_journeys_started_total', { clinic: 'metrics-clinic', scenario: 'gfe' })).toBe(2);
    await eventually(
      () => apiValue('journey_api_journeys_needing_attention'),
      (n) => n === 1,
    );
    expect(await apiValue('process_cpu_user_seconds_total')).toBeGreaterThan(0);
  }, 180_000);

  it('counts a workflow task that fails: a workflow type the worker does not have', async () => {
    // The journeys' own code does not fail a task on purpose; a start of a type the worker does not have does (as
    // a bad deploy's non-determinism would): the JourneyNonDeterminism and JourneyWorkflowTaskErrors alerts read it.
    const handle = await env.client.workflow.start('notAJourneyWorkflow', {
      taskQueue: TASK_QUEUE,
      workflowId: `metrics-unknown-type-${process.pid}`,
    });
    try {
      const series = await eventually(
        async () => parseExposition(await text(workerMetricsUrl)),
        (s) => s.some((x) => x.name === 'temporal_workflow_task_execution_failed_total' && x.value > 0),
      );
      expect(series.find((x) => x.name === 'temporal_workflow_task_execution_failed_total')?.labels).toMatchObject({
        namespace: 'default',
        task_queue: TASK_QUEUE,
        failure_reason: expect.stringMatching(/^(WorkflowError|NonDeterminismError)$/),
      });
      // The SDK core's warning about it is a JSON line of the worker's log, not coloured text.
      const warned = await eventually(
        () =>
          Promise.resolve(
            worker!
              .output()
              .split('\n')
              .flatMap((l) => {
                try {
                  return [JSON.parse(l) as { level: number; msg: string }];
                } catch {
                  return [];
                }
              })
              .find((r) => /failing workflow task/i.test(r.msg)),
          ),
        (r) => r !== undefined,
      );
      expect(warned?.level).toBe(40);
      expect(worker!.output()).not.toContain('\u001b[');
    } finally {
      await handle.terminate('the test is done with it');
    }
  }, 90_000);

  it('exposes every metric the dashboard and the alerting rules use', async () => {
    const exposed = new Set([
      ...metricFamilies(await text(workerMetricsUrl)),
      ...metricFamilies(await text(`${apiUrl}/metrics`)),
    ]);
    if (process.env.UPDATE_METRICS_FIXTURE === '1') {
      writeFileSync(FIXTURE_PATH, `${JSON.stringify([...exposed].sort(), null, 2)}\n`);
    }
    expect([...usedMetricNames()].filter((name) => !exposed.has(name))).toEqual([]);
  });
});
