// PHI never reaches the Temporal server in the clear: raw histories read without the codec hold none of the
// patient's identity nor the exam service's api_key; with the codec the same payloads decode. A journey bound to its
// patient (as the API binds every journey it starts) has every payload of its history sealed under that patient's
// data key, the worker reading the key file the writer keeps; once the patient is erased the same history no longer
// decodes (the worker's side is told it was erased), while another patient's journey still does.
import { randomBytes, randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@temporalio/client';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { LocalFolderAttachmentStore } from '../../src/attachments/files';
import { EncryptionCodec } from '../../src/codec/encryption-codec';
import {
  PATIENT_SEALED_ENCODING,
  PatientCodec,
  PayloadErasedError,
  sealedPatientOf,
} from '../../src/codec/patient-codec';
import { FileErasureLog, FilePatientKeyStore, PatientKeys } from '../../src/patient-keys';
import { loadConfig, type Config } from '../../src/config';
import { parseCallback } from '../../src/exam-service/schemas';
import { toJourneyCallback } from '../../src/inbox/reading';
import { buildSandbox, DEMO_API_KEY, type Sandbox } from '../../src/sandbox';
import { dataConverterOf } from '../../src/temporal';
import { createWorker } from '../../src/worker';
import { patientJourney } from '../../src/workflows';
import { callbackReceived, journeyWorkflowId, SEARCH_ATTRIBUTE_KEYS } from '../../src/contract/definitions';
import type { JourneyInput } from '../../src/contract/journey-request';
import { encodingOf, historyPayloads } from '../support/history-payloads';
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
  let patientClient: Client;
  /** The key file's writer, as the API is; the worker reads the same file (the configuration's default). */
  let patientKeys: PatientKeys;
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
    if (encrypted.patientKeys.store !== 'file' || encrypted.patientKeys.erasureLog.store !== 'file') {
      throw new Error('the test expects the default file store beside its erasure log file');
    }
    patientKeys = new PatientKeys({
      ring: encrypted.codec.keys,
      store: new FilePatientKeyStore(encrypted.patientKeys.file),
      erasureLog: new FileErasureLog(encrypted.patientKeys.erasureLog.file),
      audit: () => Promise.resolve(),
      cache: { ttlMs: 200 },
    });
    await patientKeys.init();
    patientClient = new Client({
      connection: env.connection,
      dataConverter: dataConverterOf(encrypted, patientKeys)!,
    });
    clientFor = (journeyId) =>
      journeyId.startsWith('enc-') ? encryptedClient : journeyId.startsWith('pt-') ? patientClient : env.client;
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
    await patientKeys?.close();
    await sandbox?.close();
    await new Promise((resolve) => receiver?.close(resolve));
    await env?.teardown();
  });

  async function runJourney(
    client: Client,
    taskQueue: string,
    prefix: string,
    patient: Partial<JourneyInput['patient']> = PATIENT,
  ) {
    const journeyId = `${prefix}-${randomUUID().slice(0, 8)}`;
    const input: JourneyInput = journeyInput(journeyId, 'partner_pharmacy');
    input.patient = { ...input.patient, ...patient };
    // Bound to its patient before it starts, as the API does (journeys of the other clients are bound to none).
    if (client === patientClient) {
      const ref = patientKeys.patientRef(input.clinicId, input.patient.email);
      await patientKeys.bindJourney(journeyWorkflowId(journeyId), ref);
    }
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

  it("seals a bound journey's whole history for its patient; erased, it no longer decodes, another patient's does", async () => {
    const other = { ...PATIENT, email: 'bo.quillfeather@example.test', lastName: 'Brightwater' };
    const [mine, theirs] = await Promise.all([
      runJourney(patientClient, 'phi-encrypted', 'pt', PATIENT),
      runJourney(patientClient, 'phi-encrypted', 'pt', other),
    ]);
    expect(mine.result.stage).toBe('completed');
    expect(theirs.result.stage).toBe('completed');

    // Every payload of the history (input, activities' arguments and results, signals, the failure's details) is
    // sealed for the patient: none under the master key ring alone, none in the clear.
    const { own, others: notOwn } = historyPayloads(mine.history);
    const payloads = own.map((f) => f.payload);
    expect(own.filter((f) => encodingOf(f.payload) !== PATIENT_SEALED_ENCODING).map((f) => f.at)).toEqual([]);
    expect(payloads.length).toBeGreaterThan(10);
    const others = notOwn.map((f) => f.payload);
    const master = new EncryptionCodec(encrypted.codec.keys);
    expect(textOf(await master.decode(others))).not.toMatch(new RegExp(SECRETS.join('|')));
    const ref = patientKeys.patientRef('demo-clinic', PATIENT.email);
    expect(new Set(payloads.map(sealedPatientOf))).toEqual(new Set([ref]));
    const raw = textOf(mine.history);
    for (const secret of SECRETS) expect(raw).not.toContain(secret);

    // Decoded (as the codec server would, without the workflow's context): the start input holds the patient.
    const codec = new PatientCodec(patientKeys, new EncryptionCodec(encrypted.codec.keys));
    const started = mine.history.events!.find((e) => e.workflowExecutionStartedEventAttributes)!;
    const startPayloads = started.workflowExecutionStartedEventAttributes!.input!.payloads as Payload[];
    const [input] = await codec.decode(startPayloads);
    expect(defaultPayloadConverter.fromPayload<JourneyInput>(input!).patient).toMatchObject(PATIENT);

    // Erased: the same stored history no longer decodes, its patient named by the erasure, not by any data.
    const erased = await patientKeys.erase(ref, { erasureId: 'er_phi-test' });
    expect(erased.state).toBe('erased');
    const err = await codec.decode(startPayloads).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PayloadErasedError);
    await expect(codec.decode(payloads.slice(-3))).rejects.toBeInstanceOf(PayloadErasedError);
    // Another patient's journey still decodes.
    const theirStart = theirs.history.events!.find((e) => e.workflowExecutionStartedEventAttributes)!;
    const [theirInput] = await codec.decode(
      theirStart.workflowExecutionStartedEventAttributes!.input!.payloads as Payload[],
    );
    expect(defaultPayloadConverter.fromPayload<JourneyInput>(theirInput!).patient).toMatchObject(other);
  });

  it('would show the same values in a history written without the codec (the check above can fail)', async () => {
    const { history } = await runJourney(env.client, 'phi-plain', 'plain');
    const raw = textOf(history);
    expect(raw).toContain(PATIENT.email);
    expect(raw).toContain(PATIENT.lastName);
    expect(raw).not.toContain(DEMO_API_KEY);
  });
});
