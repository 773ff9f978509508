// The forwarder's signals from their own thread, against the real dev server: a signal lands in the journey's
// history encrypted with the payload key and reads back as sent; a journey that is gone and a Temporal that does not
// answer are told apart as the forwarder needs (dead letter, or back off and keep the entry); a closed thread fails
// what it is asked instead of hanging.
import { randomBytes } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { defaultPayloadConverter } from '@temporalio/common';
import { EncryptionCodec } from '../../src/codec/encryption-codec';
import { loadConfig } from '../../src/config';
import { SignalThread } from '../../src/inbox/signaller';
import { forJourney, journeyWorkflowId } from '../../src/contract/definitions';
import { startDevServer } from '../support/temporal-env';
import { signalFor } from './support';

const KEY = randomBytes(32);
let env: TestWorkflowEnvironment;
const threads: SignalThread[] = [];

function threadTo(address: string): SignalThread {
  const config = loadConfig({
    WEBHOOK_SECRET: 'signal-thread-test-secret',
    PAYLOAD_ENCRYPTION_KEYS: `k1:${KEY.toString('base64')}`,
    TEMPORAL_ADDRESS: address,
  });
  const thread = new SignalThread(config, { nice: 5 });
  threads.push(thread);
  return thread;
}

/** A journey workflow no worker runs: it takes signals into its history, which is all this test needs. */
async function parkedJourney(journeyId: string) {
  return env.client.workflow.start('patientJourney', {
    taskQueue: 'signal-thread-test-nobody-polls',
    workflowId: journeyWorkflowId(journeyId),
    args: [],
  });
}

beforeAll(async () => {
  env = await startDevServer();
}, 60_000);

afterAll(async () => {
  for (const t of threads) await t.close();
  await env?.teardown();
});

it('signals a journey from its own thread, encrypted with the payload key', async () => {
  const handle = await parkedJourney('thread-1');
  const thread = threadTo(env.address);
  const signal = signalFor();
  await expect(thread.signal('thread-1', signal, 5_000)).resolves.toEqual({ ok: true });

  const history = await handle.fetchHistory();
  const signalled = history.events!.find((e) => e.workflowExecutionSignaledEventAttributes);
  const payload = signalled!.workflowExecutionSignaledEventAttributes!.input!.payloads![0]!;
  expect(Buffer.from(payload.metadata!.encoding!).toString()).toBe('binary/encrypted');
  expect(Buffer.from(payload.data!).includes(Buffer.from(signal.deliveryId))).toBe(false);
  const [plain] = await new EncryptionCodec([{ id: 'k1', key: KEY }]).decode([payload]);
  // What the journey gets: the callback without the body (the inbox keeps that).
  expect(defaultPayloadConverter.fromPayload(plain!)).toEqual(forJourney(signal));
  expect(defaultPayloadConverter.fromPayload(plain!)).not.toHaveProperty('raw');
}, 30_000);

it('tells a journey that is gone from a Temporal that does not answer', async () => {
  const thread = threadTo(env.address);
  const missing = await thread.signal('thread-nobody', signalFor(), 5_000);
  expect(missing).toMatchObject({ ok: false, gone: 'journey_not_found' });

  const ended = await parkedJourney('thread-ended');
  await ended.terminate('test');
  expect(await thread.signal('thread-ended', signalFor(), 5_000)).toMatchObject({
    ok: false,
    gone: 'journey_finished',
  });

  // Nothing listens on port 1: the signal fails at its deadline as unreachable, and names no payload.
  const away = await threadTo('127.0.0.1:1').signal('thread-1', signalFor(), 1_500);
  expect(away).toMatchObject({ ok: false, unreachable: true });
  expect(away.ok || away.gone).toBeFalsy();
}, 30_000);

it('fails what it is asked once closed, instead of hanging', async () => {
  const thread = threadTo(env.address);
  await parkedJourney('thread-2');
  await expect(thread.signal('thread-2', signalFor(), 5_000)).resolves.toEqual({ ok: true });
  await thread.close();
  await expect(thread.signal('thread-2', signalFor(), 5_000)).resolves.toMatchObject({ ok: false, unreachable: true });
}, 30_000);

it('starts ahead of the first signal when asked, and signals from that same thread', async () => {
  const thread = threadTo(env.address);
  await expect(thread.start()).resolves.toBeUndefined();
  await parkedJourney('thread-3');
  await expect(thread.signal('thread-3', signalFor(), 5_000)).resolves.toEqual({ ok: true });
}, 30_000);
