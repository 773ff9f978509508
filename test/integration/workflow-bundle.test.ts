// The pre-built workflow bundle (what the image's worker runs): built once by the project's builder, loaded through
// WORKFLOW_BUNDLE_PATH, and a journey runs on it to the end on the dev server with the sandbox. A path that is not a
// bundle is refused when the worker starts, naming the setting.
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { readCallback } from '../../src/api/callbacks';
import { loadConfig } from '../../src/config';
import { buildSandbox, DEMO_API_KEY, type Sandbox } from '../../src/sandbox';
import { createWorker } from '../../src/worker';
import { buildWorkflowBundle } from '../../src/workflow-bundle';
import { patientJourney } from '../../src/workflows';
import { callbackReceived, journeyWorkflowId, SEARCH_ATTRIBUTE_KEYS } from '../../src/workflows/definitions';
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

it('builds the bundle once, and a worker that loads it runs a journey to the end', async () => {
  const built = await buildWorkflowBundle(bundleFile);
  expect(built.bytes).toBeGreaterThan(100_000);

  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/callbacks`;
  const { worker, close } = await createWorker(configWith(bundleFile), {
    connection: env.nativeConnection,
    deps: { webhookUrlFor: (journeyId) => `${url}/${encodeURIComponent(journeyId)}` },
  });
  const journeyId = `bundle-${randomUUID().slice(0, 8)}`;
  const result = await worker.runUntil(
    env.client.workflow.execute(patientJourney, {
      taskQueue: TASK_QUEUE,
      workflowId: journeyWorkflowId(journeyId),
      args: [journeyInput(journeyId, 'gfe')],
    }),
  );
  await close();
  expect(result.stage).toBe('completed');
  expect(result.exams[0]).toMatchObject({ status: 'Approved', verdictSource: 'callback' });
}, 180_000);

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
