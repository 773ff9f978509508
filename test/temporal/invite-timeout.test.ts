// The invite's timeout on a real Temporal server: an attempt that had the server record INVITE_SENDING (through the
// worker's heartbeatRecorder, encrypted by the engine's codec) is in doubt when it times out; one that never got that
// far (its task lost on the way to a worker, or the worker gone first) provably sent nothing and is sent again.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Context } from '@temporalio/activity';
import { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { FailureType, INVITE_SENDING } from '../../src/contract/activity-contract';
import { loadConfig } from '../../src/config';
import { dataConverterOf, heartbeatRecorder } from '../../src/temporal';
import { startDevServer } from '../support/temporal-env';
import { timedOutAttemptWorkflow } from '../support/toolchain-workflows';
import { encodingOf, historyPayloads } from '../support/history-payloads';
import { openFilePatientKeys } from '../support/patient-keys';
import { PATIENT_SEALED_ENCODING } from '../../src/codec/patient-codec';

describe('an invite attempt that times out, on the dev server', () => {
  let env: TestWorkflowEnvironment;
  beforeAll(async () => {
    env = await startDevServer();
  });
  afterAll(async () => {
    await env?.teardown();
  });

  it.each([
    [true, FailureType.ambiguous],
    [false, FailureType.not_sent],
  ])('recorded it was sending: %s; the journey takes it for %s', async (recordSending, expected) => {
    const config = loadConfig({
      WEBHOOK_SECRET: 'invite-timeout-test-secret-0123456789',
      CLINICS_JSON: '[]',
      PAYLOAD_ENCRYPTION_KEYS: `t-1:${randomBytes(32).toString('base64')}`,
    });
    const dataConverter = dataConverterOf(config);
    const record = heartbeatRecorder(env.nativeConnection, 'default', dataConverter);
    const recorded: unknown[][] = [];
    const taskQueue = `invite-timeout-${String(recordSending)}`;
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowsPath: require.resolve('../support/toolchain-workflows'),
      ...(dataConverter ? { dataConverter } : {}),
      activities: {
        async stall(record_: boolean) {
          if (record_) {
            await record(Context.current().info, [INVITE_SENDING]);
            recorded.push([INVITE_SENDING]);
          }
          await Context.current().cancelled;
        },
      },
    });
    const client = new Client({ connection: env.connection, ...(dataConverter ? { dataConverter } : {}) });
    const handle = await client.workflow.start(timedOutAttemptWorkflow, {
      taskQueue,
      workflowId: `invite-timeout-${String(recordSending)}-${Date.now()}`,
      args: [recordSending],
    });
    const outcome = await worker.runUntil(handle.result());
    expect(outcome).toBe(expected);
    expect(recorded).toHaveLength(recordSending ? 1 : 0);
    // The record is in the history encrypted, like every payload: the plain marker is nowhere in it.
    const history = JSON.stringify((await handle.fetchHistory()).events);
    expect(history).not.toContain(Buffer.from(JSON.stringify(INVITE_SENDING)).toString('base64'));
  });

  it("seals the record for the journey's patient, as the SDK's own heartbeats are: an erasure reaches it too", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'invite-timeout-keys-'));
    const config = loadConfig({
      WEBHOOK_SECRET: 'invite-timeout-test-secret-0123456789',
      CLINICS_JSON: '[]',
      PAYLOAD_ENCRYPTION_KEYS: `t-1:${randomBytes(32).toString('base64')}`,
    });
    const keys = await openFilePatientKeys(dir, { ring: config.codec.keys });
    try {
      const dataConverter = dataConverterOf(config, keys)!;
      const record = heartbeatRecorder(env.nativeConnection, 'default', dataConverter);
      const taskQueue = 'invite-timeout-sealed';
      const workflowId = `invite-timeout-sealed-${Date.now()}`;
      // Bound before it starts, as the API binds a journey.
      await keys.bindJourney(workflowId, keys.patientRef('clinic-1', 'patient@example.com'));
      const worker = await Worker.create({
        connection: env.nativeConnection,
        taskQueue,
        workflowsPath: require.resolve('../support/toolchain-workflows'),
        dataConverter,
        activities: {
          async stall() {
            await record(Context.current().info, [INVITE_SENDING]);
            await Context.current().cancelled;
          },
        },
      });
      const client = new Client({ connection: env.connection, dataConverter });
      const handle = await client.workflow.start(timedOutAttemptWorkflow, { taskQueue, workflowId, args: [true] });
      expect(await worker.runUntil(handle.result())).toBe(FailureType.ambiguous);
      // The timed-out attempt's failure carries the record into the history: sealed for the patient, not by the
      // payload keys alone (which an erasure does not destroy).
      const found = historyPayloads(await handle.fetchHistory()).own.filter((p) =>
        p.at.includes('lastHeartbeatDetails'),
      );
      expect(found.length).toBeGreaterThan(0);
      expect(found.map((p) => encodingOf(p.payload))).toEqual(found.map(() => PATIENT_SEALED_ENCODING));
    } finally {
      await keys.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
