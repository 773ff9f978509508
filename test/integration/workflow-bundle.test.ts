// The pre-built workflow bundles (what the image's worker runs): built once by the project's builder, one without
// tracing and its traced twin, loaded through WORKFLOW_BUNDLE_PATH; a journey runs on each to the end on the dev server
// with the sandbox, the worker taking the one that matches its tracing. A path that is not a bundle, or a bundle that
// cannot trace for a tracing worker, is refused when the worker starts, naming the setting.
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { readCallback } from '../../src/inbox/reading';
import { loadConfig } from '../../src/config';
import { buildSandbox, DEMO_API_KEY, type Sandbox } from '../../src/sandbox';
import { createWorker } from '../../src/worker';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { startTracing, WORKER_SERVICE_NAME, type Tracing } from '../../src/observability/tracing';
import { bundleTraces, buildWorkflowBundles, tracedTwin, workflowBundleFor } from '../../src/workflow-bundle';
import { patientJourney } from '../../src/workflows';
import { callbackReceived, journeyWorkflowId, SEARCH_ATTRIBUTE_KEYS } from '../../src/contract/definitions';
import { journeyInput } from '../support/journey-requests';
import { startDevServer } from '../support/temporal-env';

const TASK_QUEUE = 'journeys-bundle';
const dir = mkdtempSync(path.join(tmpdir(), 'journeys-bundle-'));
const bundleFile = path.join(dir, 'workflows.bundle.js');
let env: TestWorkflowEnvironment;
let sandbox: Sandbox;
let receiver: Server;

function configWith(bundlePath: string) {
  return loadConfig({
    TEMPORAL_TASK_QUEUE: TASK_QUEUE,
    EXAM_SERVICE_BASE_URL: sandbox.baseUrl,
    WEBHOOK_SECRET: 'bundle-test-webhook-secret',
    PAYLOAD_ENCRYPTION_DISABLED: 'true',
    CLINICS_JSON: JSON.stringify([{ clinicId: 'demo-clinic', examServiceApiKey: DEMO_API_KEY }]),
    DATA_DIR: path.join(dir, 'data'),
    WORKFLOW_BUNDLE_PATH: bundlePath,
  });
}

beforeAll(async () => {
  [env, sandbox] = await Promise.all([
    startDevServer(SEARCH_ATTRIBUTE_KEYS),
    buildSandbox({ providerDelayMs: 300, prescriptionDelayMs: 300, shipmentDelayMs: 300 }),
  ]);
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const journeyId = decodeURIComponent(req.url!.split('/').pop()!);
      const parsed = readCallback(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(parsed.ok ? 200 : 400).end();
      if (!parsed.ok) return;
      void env.client.workflow
        .getHandle(journeyWorkflowId(journeyId))
        .signal(callbackReceived, {
          deliveryId: randomUUID(),
          receivedAt: new Date().toISOString(),
          callback: parsed.callback,
          raw: parsed.raw,
        })
        .catch(() => undefined);
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
}, 120_000);

afterAll(async () => {
  await sandbox?.close();
  await new Promise((resolve) => receiver?.close(resolve));
  await env?.teardown();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs one GFE journey to its end on a worker created with `config` (and tracing, when given). */
async function journeyOn(config: ReturnType<typeof configWith>, tracing?: Tracing) {
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/callbacks`;
  const created = await createWorker(config, {
    connection: env.nativeConnection,
    deps: { webhookUrlFor: (journeyId) => `${url}/${encodeURIComponent(journeyId)}` },
    ...(tracing ? { tracing } : {}),
  });
  const journeyId = `bundle-${randomUUID().slice(0, 8)}`;
  const result = await created.worker.runUntil(
    env.client.workflow.execute(patientJourney, {
      taskQueue: TASK_QUEUE,
      workflowId: journeyWorkflowId(journeyId),
      args: [journeyInput(journeyId, 'gfe')],
    }),
  );
  await created.close();
  return { result, bundle: created.bundle };
}

it('builds both bundles once (without tracing, and its traced twin), and a worker runs a journey on the plain one', async () => {
  const built = await buildWorkflowBundles(bundleFile);
  expect(built.plain.bytes).toBeGreaterThan(100_000);
  // The twin carries the interceptors' workflow side; the plain one does not.
  expect(built.traced.bytes).toBeGreaterThan(built.plain.bytes);
  expect(bundleTraces(readFileSync(bundleFile, 'utf8'))).toBe(false);
  expect(bundleTraces(readFileSync(tracedTwin(bundleFile), 'utf8'))).toBe(true);

  const { result, bundle } = await journeyOn(configWith(bundleFile));
  expect(bundle).toEqual({ file: bundleFile, traced: false });
  expect(result.stage).toBe('completed');
  expect(result.exams[0]).toMatchObject({ status: 'Approved', verdictSource: 'callback' });
}, 180_000);

it('a tracing worker takes the traced twin, and its workflows make spans', async () => {
  const exporter = new InMemorySpanExporter();
  const tracing = startTracing(WORKER_SERVICE_NAME, { exporter })!;
  try {
    const { result, bundle } = await journeyOn(configWith(bundleFile), tracing);
    expect(bundle).toEqual({ file: tracedTwin(bundleFile), traced: true });
    expect(result.stage).toBe('completed');
    expect(exporter.getFinishedSpans().map((x) => x.name)).toContain('RunWorkflow:patientJourney');
  } finally {
    await tracing.shutdown();
  }
}, 180_000);

it('a tracing worker refuses a bundle that cannot trace, naming the setting; one without tracing takes any', () => {
  const lone = path.join(dir, 'lone', 'workflows.bundle.js');
  mkdirSync(path.dirname(lone));
  copyFileSync(bundleFile, lone);
  expect(() => workflowBundleFor(lone, true)).toThrow(
    /^WORKFLOW_BUNDLE_PATH: tracing is on, but .*lone\/workflows\.bundle\.js was bundled without the tracing interceptors/,
  );
  // A bundle built with tracing by an earlier release: a tracing worker takes it, one without tracing too (its spans
  // go nowhere, which the worker's start-up log says).
  const earlier = path.join(dir, 'earlier.bundle.js');
  copyFileSync(tracedTwin(bundleFile), earlier);
  expect(workflowBundleFor(earlier, true)).toMatchObject({ file: earlier, traced: true });
  expect(workflowBundleFor(earlier, false)).toMatchObject({ file: earlier, traced: true });
  expect(workflowBundleFor(bundleFile, false)).toMatchObject({ file: bundleFile, traced: false });
});

it('refuses to start on a file that is not a bundle of the journey workflows, naming the setting', async () => {
  const notABundle = path.join(dir, 'not-a-bundle.js');
  writeFileSync(notABundle, 'module.exports = {};');
  await expect(createWorker(configWith(notABundle), { connection: env.nativeConnection })).rejects.toThrow(
    'WORKFLOW_BUNDLE_PATH: ',
  );
  await expect(
    createWorker(configWith(path.join(dir, 'missing.js')), { connection: env.nativeConnection }),
  ).rejects.toThrow('WORKFLOW_BUNDLE_PATH: no file at');
}, 60_000);
