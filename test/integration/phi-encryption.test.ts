// PHI never reaches the Temporal server in the clear: raw histories read without the codec hold none of the
// patient's identity nor the exam service's api_key; with the codec the same payloads decode.
import { randomBytes, randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@temporalio/client';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { LocalFolderAttachmentStore } from '../../src/attachments/files';
import { EncryptionCodec } from '../../src/codec/encryption-codec';
import { loadConfig, type Config } from '../../src/config';
import { parseCallback } from '../../src/exam-service/schemas';
import { toJourneyCallback } from '../../src/inbox/reading';
import { buildSandbox, DEMO_API_KEY, type Sandbox } from '../../src/sandbox';
import { dataConverterOf } from '../../src/temporal';
import { createWorker } from '../../src/worker';
import { patientJourney } from '../../src/workflows';
import { callbackReceived, journeyWorkflowId, SEARCH_ATTRIBUTE_KEYS } from '../../src/contract/definitions';
import type { JourneyInput } from '../../src/contract/journey-request';
import { journeyInput, requiredAttachments } from '../support/journey-requests';
import { startDevServer } from '../support/temporal-env';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

const PATIENT = {
  firstName: 'Test Prescription Approve',
  lastName: 'Quillfeather',
  email: 'ada.quillfeather@example.test',
  phoneNumber: '5125557391',
  dob: '1961-09-27',
};

/** Every string and every byte field of a history as text, so a value is found whatever encoding carried it. */
function textOf(value: unknown): string {
  if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8');
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map(textOf).join('\n');
  if (value && typeof value === 'object') return Object.values(value).map(textOf).join('\n');
  return typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint' ? String(value) : '';
}

describe('PHI is encrypted in Temporal', () => {
  let env: TestWorkflowEnvironment;
  let sandbox: Sandbox;
  let receiver: Server;
  const workers: { worker: Worker; running: Promise<void>; close(): Promise<void> }[] = [];
  const dataDir = path.join(tmpdir(), `journeys-phi-${process.pid}`);
  const attachments = new LocalFolderAttachmentStore(path.join(dataDir, 'attachments'));
  const keySpec = `phi-test:${randomBytes(32).toString('base64')}`;
  let encryptedClient: Client;
  let encrypted: Config;
  let plain: Config;

  function configFor(taskQueue: string, receiverUrl: string, extra: Record<string, string>): Config {
    return loadConfig({
      TEMPORAL_TASK_QUEUE: taskQueue,
      EXAM_SERVICE_BASE_URL: sandbox.baseUrl,
      WEBHOOK_SECRET: 'phi-test-webhook-secret-0123',
      CLINICS_JSON: JSON.stringify([{ clinicId: 'demo-clinic', examServiceApiKey: DEMO_API_KEY }]),
      DATA_DIR: dataDir,
      PUBLIC_BASE_URL: receiverUrl,
      ...extra,
    });
  }

  beforeAll(async () => {
    env = await startDevServer(SEARCH_ATTRIBUTE_KEYS);
    sandbox = await buildSandbox({ providerDelayMs: 200, prescriptionDelayMs: 200, shipmentDelayMs: 200 });
    // Callbacks go to the workflow through the client that matches the worker's encryption.
    let clientFor: (journeyId: string) => Client = () => env.client;
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const journeyId = decodeURIComponent(req.url!.split('/')[3]!);
        const raw: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        const parsed = parseCallback(raw);
        res.writeHead(200).end();
        if (!parsed.ok) return;
        void clientFor(journeyId)
          .workflow.getHandle(journeyWorkflowId(journeyId))
          .signal(callbackReceived, {
            deliveryId: randomUUID(),
            receivedAt: new Date().toISOString(),
            callback: toJourneyCallback(parsed.event),
            raw,
          });
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

    encrypted = configFor('phi-encrypted', receiverUrl, { PAYLOAD_ENCRYPTION_KEYS: keySpec });
    plain = configFor('phi-plain', receiverUrl, { PAYLOAD_ENCRYPTION_DISABLED: 'true' });
    encryptedClient = new Client({ connection: env.connection, dataConverter: dataConverterOf(encrypted)! });
    clientFor = (journeyId) => (journeyId.startsWith('enc-') ? encryptedClient : env.client);
    for (const config of [encrypted, plain]) {
      const created = await createWorker(config, { connection: env.nativeConnection });
      workers.push({ worker: created.worker, running: created.worker.run(), close: created.close });
    }
  });

  afterAll(async () => {
    for (const w of workers) w.worker.shutdown();
    for (const w of workers) {
      await w.running;
      await w.close();
    }
    await sandbox?.close();
    await new Promise((resolve) => receiver?.close(resolve));
    await env?.teardown();
  });

  async function runJourney(client: Client, taskQueue: string, prefix: string) {
    const journeyId = `${prefix}-${randomUUID().slice(0, 8)}`;
    const input: JourneyInput = journeyInput(journeyId, 'partner_pharmacy');
    input.patient = { ...input.patient, ...PATIENT };
    input.attachments = await requiredAttachments(attachments, input.exams);
    // An answer to a question the exam does not have: its failure message must be encrypted as well.
    input.answers = [{ examId: input.exams[0]!, answers: [{ no: 99, answer: 'Quillfeather allergy' }] }];
    const handle = await client.workflow.start(patientJourney, {
      taskQueue,
      workflowId: journeyWorkflowId(journeyId),
      args: [input],
    });
    const result = await handle.result();
    // Raw: the server's history through a client without the codec.
    const history = await env.client.workflow.getHandle(handle.workflowId).fetchHistory();
    return { result, history };
  }

  const SECRETS = [PATIENT.lastName, PATIENT.email, PATIENT.phoneNumber, PATIENT.dob, DEMO_API_KEY];

  it('keeps the patient and the api_key out of raw histories, and decodes with the codec', async () => {
    const { result, history } = await runJourney(encryptedClient, 'phi-encrypted', 'enc');
    expect(result.stage).toBe('completed');
    expect(result.lastError).toMatchObject({ operation: 'exam_submit_answers', field: 'answers.0.no' });

    const raw = textOf(history);
    for (const secret of SECRETS) expect(raw).not.toContain(secret);
    expect(raw).not.toContain("is not one of the exam's questions");
    expect(raw).toContain('binary/encrypted');

    // With the codec, the same payloads decode: the start input holds the patient.
    const codec = new EncryptionCodec(encrypted.codec.keys);
    const started = history.events!.find((e) => e.workflowExecutionStartedEventAttributes)!;
    const [input] = await codec.decode(started.workflowExecutionStartedEventAttributes!.input!.payloads as Payload[]);
    const decoded = defaultPayloadConverter.fromPayload<JourneyInput>(input!);
    expect(decoded.patient).toMatchObject(PATIENT);

    // Callback signals carried the raw payloads with the patient's e-mail: encrypted too, and decodable.
    const signals = history.events!.filter((e) => e.workflowExecutionSignaledEventAttributes);
    expect(signals.length).toBeGreaterThanOrEqual(3);
    const [signal] = await codec.decode(
      signals[0]!.workflowExecutionSignaledEventAttributes!.input!.payloads as Payload[],
    );
    expect(JSON.stringify(defaultPayloadConverter.fromPayload(signal!))).toContain(PATIENT.email);

    // The api_key never entered the history at all, encrypted or not.
    const all = await Promise.all(
      history.events!.flatMap((e) =>
        Object.values(e)
          .filter((attrs): attrs is { input?: { payloads?: Payload[] } } => !!attrs && typeof attrs === 'object')
          .flatMap((attrs) => (attrs.input?.payloads ? [codec.decode(attrs.input.payloads)] : [])),
      ),
    );
    expect(textOf(all)).not.toContain(DEMO_API_KEY);
  });

  it('would show the same values in a history written without the codec (the check above can fail)', async () => {
    const { history } = await runJourney(env.client, 'phi-plain', 'plain');
    const raw = textOf(history);
    expect(raw).toContain(PATIENT.email);
    expect(raw).toContain(PATIENT.lastName);
    expect(raw).not.toContain(DEMO_API_KEY);
  });
});
