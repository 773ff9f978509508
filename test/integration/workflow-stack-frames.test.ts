// The stack-trace query (the Web UI's "Stack Trace" tab) of a journey parked on the real dev server, from a worker
// made by createWorker: with the default WORKFLOW_STACK_TRACE_FRAMES (4) it still names the journey's line each wait is
// on, each stack cut to 4 frames; with 10 (V8's default) the SDK's frames between them come back. The worker's own
// thread keeps its stack limit, and contexts made after the worker started get the process's back.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { loadConfig } from '../../src/config';
import { journeyWorkflowId, SEARCH_ATTRIBUTE_KEYS, snapshotQuery } from '../../src/contract/definitions';
import { buildSandbox, DEMO_API_KEY, type Sandbox } from '../../src/sandbox';
import { createWorker } from '../../src/worker';
import { patientJourney } from '../../src/workflows';
import { newContextStackFrames } from '../../src/workflow-stack-frames';
import { journeyInput } from '../support/journey-requests';
import { startDevServer } from '../support/temporal-env';
import { until } from '../support/until';

const TASK_QUEUE = 'journeys-stack-frames';
const dir = mkdtempSync(path.join(tmpdir(), 'journeys-stack-frames-'));
let env: TestWorkflowEnvironment;
let sandbox: Sandbox;

beforeAll(async () => {
  // The provider never calls back within the test (its callbacks go nowhere anyway): the journey stays parked.
  [env, sandbox] = await Promise.all([
    startDevServer(SEARCH_ATTRIBUTE_KEYS),
    buildSandbox({ providerDelayMs: 600_000 }),
  ]);
}, 120_000);

afterAll(async () => {
  await sandbox?.close();
  await env?.teardown();
  rmSync(dir, { recursive: true, force: true });
});

/** The stack-trace query of a journey parked awaiting its consultation, on a worker with these settings. */
async function parkedStackTrace(settings: Record<string, string>): Promise<string[][]> {
  const config = loadConfig({
    TEMPORAL_TASK_QUEUE: TASK_QUEUE,
    EXAM_SERVICE_BASE_URL: sandbox.baseUrl,
    WEBHOOK_SECRET: 'stack-frames-test-webhook-secret',
    PAYLOAD_ENCRYPTION_DISABLED: 'true',
    CLINICS_JSON: JSON.stringify([{ clinicId: 'demo-clinic', examServiceApiKey: DEMO_API_KEY }]),
    DATA_DIR: path.join(dir, 'data'),
    ...settings,
  });
  const created = await createWorker(config, {
    connection: env.nativeConnection,
    deps: { webhookUrlFor: (journeyId) => `http://127.0.0.1:1/webhooks/${journeyId}` },
  });
  const journeyId = `stack-${randomUUID().slice(0, 8)}`;
  try {
    return await created.worker.runUntil(async () => {
      const handle = await env.client.workflow.start(patientJourney, {
        taskQueue: TASK_QUEUE,
        workflowId: journeyWorkflowId(journeyId),
        args: [journeyInput(journeyId, 'gfe')],
      });
      await until(
        'the journey awaits its consultation',
        async () => ((await handle.query(snapshotQuery)).stage === 'awaiting_consultation' ? true : undefined),
        60_000,
      );
      const trace = await handle.query<string>('__stack_trace');
      await handle.terminate('test done');
      return trace
        .split(/\n\s*\n/)
        .map((block) => block.split('\n').filter((line) => line.trim() !== ''))
        .filter((lines) => lines.length > 0);
    });
  } finally {
    await created.close();
  }
}

it('names the line each wait of a parked journey is on with 4 frames a stack, and the SDK frames between with 10', async () => {
  const mainLimit = Error.stackTraceLimit;
  const contextLimit = newContextStackFrames();

  const lean = await parkedStackTrace({});
  // The deadline wait of `follow` and its caller, and the ownership check's wait: where an operator looks.
  expect(lean.flat().join('\n')).toMatch(/at (Object\.)?follow \(.*src\/workflows\/journey\.ts:\d+:\d+\)/);
  expect(lean.flat().join('\n')).toMatch(/at follow \(.*src\/workflows\/patient-journey\.ts:\d+:\d+\)/);
  expect(lean.flat().join('\n')).toMatch(/at (Object\.)?proveOwnership \(.*src\/workflows\/journey\.ts:\d+:\d+\)/);
  expect(Math.max(...lean.map((lines) => lines.length))).toBeLessThanOrEqual(4);

  const full = await parkedStackTrace({ WORKFLOW_STACK_TRACE_FRAMES: '10' });
  expect(full.flat().join('\n')).toMatch(/at (Object\.)?follow \(.*src\/workflows\/journey\.ts:\d+:\d+\)/);
  expect(full.flat().join('\n')).toMatch(/at condition \(/);
  expect(Math.max(...full.map((lines) => lines.length))).toBeGreaterThan(4);

  // The worker's thread (here, the test's) and contexts made after its start keep what they had.
  expect(Error.stackTraceLimit).toBe(mainLimit);
  expect(newContextStackFrames()).toBe(contextLimit);
}, 120_000);
