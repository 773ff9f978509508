// End to end on the real Temporal dev server: the real worker and activities call the sandbox over HTTP, and the
// sandbox's callbacks reach the workflow through a minimal receiver (the API's webhook has its own tests).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { defaultPayloadConverter } from '@temporalio/common';
import type { Worker } from '@temporalio/worker';
import { buildSandbox, DEMO_API_KEY, type Sandbox } from '../../src/sandbox';
import { readCallback } from '../../src/inbox/reading';
import { ALTERNATIVE_LAYOUTS } from '../../src/sandbox/layouts';
import { loadConfig } from '../../src/config';
import { createWorker } from '../../src/worker';
import { patientJourney } from '../../src/workflows';
import {
  callbackReceived,
  journeyWorkflowId,
  SEARCH_ATTRIBUTE_KEYS,
  snapshotQuery,
} from '../../src/contract/definitions';
import { startDevServer } from '../support/temporal-env';
import { journeyInput, requiredAttachments, type ScenarioName } from '../support/journey-requests';
import type { JourneyInput } from '../../src/contract/journey-request';
import { LocalFolderAttachmentStore } from '../../src/attachments/files';

const TASK_QUEUE = 'journeys-integration';
const HISTORIES = path.resolve(__dirname, '../fixtures/histories');

describe('patient journey on the dev server with the sandbox', () => {
  let env: TestWorkflowEnvironment;
  let sandbox: Sandbox;
  let receiver: Server;
  let receiverUrl: string;
  let notificationsUrl: string;
  let worker: Worker;
  let running: Promise<void>;
  let closeWorker: () => Promise<void>;
  const received: { journeyId: string; event: number }[] = [];
  /** Clinic notifications in arrival order, with what the receiver answered (its first answer to each journey's
   * notification 1 is a 503). */
  const notifications: { journeyId: string; sequence: number; stage: string; status: number; signed: boolean }[] = [];
  const dataDir = path.join(tmpdir(), `journeys-it-${process.pid}`);
  const attachments = new LocalFolderAttachmentStore(path.join(dataDir, 'attachments'));

  beforeAll(async () => {
    env = await startDevServer(SEARCH_ATTRIBUTE_KEYS);
    sandbox = await buildSandbox({ providerDelayMs: 300, prescriptionDelayMs: 300, shipmentDelayMs: 300 });
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const journeyId = decodeURIComponent(req.url!.split('/').pop()!);
        if (req.url!.startsWith('/notifications/')) {
          const n = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { sequence: number; stage: string };
          const first = n.sequence === 1 && !notifications.some((x) => x.journeyId === journeyId && x.sequence === 1);
          const status = first ? 503 : 204;
          const signed = typeof req.headers['webhook-signature'] === 'string';
          notifications.push({ journeyId, sequence: n.sequence, stage: n.stage, status, signed });
          res.writeHead(status).end();
          return;
        }
        // Read as the API's webhook reads it: every layout the service is known to send.
        const parsed = readCallback(Buffer.concat(chunks).toString('utf8'));
        res.writeHead(parsed.ok ? 200 : 400).end();
        if (!parsed.ok) return;
        received.push({ journeyId, event: parsed.event });
        env.client.workflow
          .getHandle(journeyWorkflowId(journeyId))
          .signal(callbackReceived, {
            deliveryId: randomUUID(),
            receivedAt: new Date().toISOString(),
            callback: parsed.callback,
            raw: parsed.raw,
          })
          .catch(() => undefined); // a late callback for a journey that has ended
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/callbacks`;
    notificationsUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/notifications`;

    const config = loadConfig({
      TEMPORAL_TASK_QUEUE: TASK_QUEUE,
      EXAM_SERVICE_BASE_URL: sandbox.baseUrl,
      WEBHOOK_SECRET: 'integration-test-webhook-secret',
      // Recorded histories stay readable for the replay test; phi-encryption.test.ts runs the codec end to end.
      PAYLOAD_ENCRYPTION_DISABLED: 'true',
      CLINICS_JSON: JSON.stringify([
        {
          clinicId: 'demo-clinic',
          examServiceApiKey: DEMO_API_KEY,
          notificationSecret: `whsec_${Buffer.alloc(24, 7).toString('base64')}`,
        },
      ]),
      DATA_DIR: dataDir,
    });
    const created = await createWorker(config, {
      connection: env.nativeConnection,
      deps: { webhookUrlFor: (journeyId) => `${receiverUrl}/${encodeURIComponent(journeyId)}` },
    });
    worker = created.worker;
    closeWorker = created.close;
    running = worker.run();
  });

  afterAll(async () => {
    worker?.shutdown();
    await running;
    await closeWorker?.();
    await sandbox?.close();
    await new Promise((resolve) => receiver?.close(resolve));
    await env?.teardown();
  });

  /** Runs a journey to its end; `fixture` names its recorded history (RECORD_HISTORIES), null records none. */
  async function runJourney(
    name: ScenarioName,
    outcome?: string,
    fixture?: string | null,
    adapt: (input: JourneyInput) => void = () => undefined,
  ) {
    const journeyId = `it-${name}-${randomUUID().slice(0, 8)}`;
    const input = journeyInput(journeyId, name, outcome);
    adapt(input);
    input.attachments = await requiredAttachments(attachments, input.exams);
    const handle = await env.client.workflow.start(patientJourney, {
      taskQueue: TASK_QUEUE,
      workflowId: journeyWorkflowId(journeyId),
      args: [input],
    });
    const result = await handle.result();
    const snapshot = await handle.query(snapshotQuery);
    if (process.env.RECORD_HISTORIES && fixture !== null) {
      const history = await handle.fetchHistory();
      const file = fixture ?? `${name}${outcome ? `-${outcome.toLowerCase().replace(/\W+/g, '-')}` : ''}`;
      writeFileSync(path.join(HISTORIES, `${file}.json`), historyToJSON(history));
    }
    return { journeyId, result, snapshot, handle };
  }

  it('completes a GFE journey on event 1', async () => {
    const { journeyId, result, snapshot } = await runJourney('gfe');
    expect(result.stage).toBe('completed');
    expect(result.exams).toEqual([
      expect.objectContaining({ examId: 101, status: 'Approved', verdictSource: 'callback' }),
    ]);
    expect(snapshot.events.map((e) => [e.event, e.disposition])).toEqual([[1, 'applied']]);
    expect(received.filter((r) => r.journeyId === journeyId).map((r) => r.event)).toEqual([1]);
  });

  it('delivers the clinic’s notifications in sequence, a later one only after the earlier one was taken', async () => {
    const { journeyId, result } = await runJourney('partner_pharmacy', undefined, null, (input) => {
      input.notificationUrl = `${notificationsUrl}/${encodeURIComponent(input.journeyId)}`;
    });
    expect(result.stage).toBe('completed');
    const until = Date.now() + 30_000;
    const mine = () => notifications.filter((n) => n.journeyId === journeyId);
    while (!mine().some((n) => n.stage === 'completed') && Date.now() < until)
      await new Promise((r) => setTimeout(r, 50));
    const arrivals = mine();
    // Notification 1 was refused once and retried; nothing overtook it, and the stage never went backwards.
    expect(arrivals[0]).toMatchObject({ sequence: 1, stage: 'validating', status: 503 });
    const taken = arrivals.slice(1);
    expect(taken.every((n) => n.status === 204 && n.signed)).toBe(true);
    expect(taken.map((n) => n.sequence)).toEqual(taken.map((_n, i) => i + 1));
    expect(taken.map((n) => n.stage)).toEqual(
      expect.arrayContaining(['validating', 'inviting', 'awaiting_consultation', 'awaiting_prescription', 'completed']),
    );
    expect(taken.at(-1)?.stage).toBe('completed');
  });

  it('names every timer and activity in the history for the Temporal UI, by ids and purposes only', async () => {
    const { result, handle, journeyId } = await runJourney('gfe', undefined, null, (input) => {
      input.notificationUrl = `${notificationsUrl}/${encodeURIComponent(input.journeyId)}`;
    });
    const id = result.exams[0]!.patientExamId;
    const history = await handle.fetchHistory();
    const summaries = (
      kind: 'timerStartedEventAttributes' | 'activityTaskScheduledEventAttributes' | 'markerRecordedEventAttributes',
    ) =>
      history
        .events!.filter((e) => e[kind] && e.markerRecordedEventAttributes?.markerName !== 'core_patch')
        .map((e) => {
          const payload = e.userMetadata?.summary;
          return payload ? defaultPayloadConverter.fromPayload<string>(payload) : '(none)';
        });
    expect(summaries('timerStartedEventAttributes')).toContain(`reminder to the patient (patient exam ${id})`);
    // The exam list is read by a local activity: its summary is on its marker.
    const activities = [
      ...summaries('activityTaskScheduledEventAttributes'),
      ...summaries('markerRecordedEventAttributes'),
    ];
    expect(activities).toEqual(
      expect.arrayContaining([
        "read the clinic's exam list",
        'invite the patient to exams 101',
        expect.stringMatching(/^clinic notification 1: validating$/),
      ]),
    );
    expect(activities).not.toContain('(none)');
    const text = JSON.stringify([...summaries('timerStartedEventAttributes'), ...activities]);
    const { patient } = journeyInput(journeyId, 'gfe');
    for (const value of [patient.lastName, patient.email, patient.dob, patient.phoneNumber]) {
      expect(text).not.toContain(value);
    }
  });

  it('completes a partner-pharmacy journey through events 1, 2 and 3', async () => {
    const { journeyId, result, snapshot, handle } = await runJourney('partner_pharmacy');
    expect(result.stage).toBe('completed');
    const exam = result.exams[0]!;
    expect(exam).toMatchObject({ status: 'Approved', rxStatus: 'Pharmacy Confirmed', fulfilment: 'partner' });
    expect(exam.prescriptions.length).toBeGreaterThan(0);
    expect(exam.attachmentsUploaded).toEqual(['Lab']);
    expect(exam.prescriptions.every((rx) => rx.tracking?.trackingNumber)).toBe(true);
    const events = received.filter((r) => r.journeyId === journeyId).map((r) => r.event);
    expect(events).toEqual([1, 2, ...exam.prescriptions.map(() => 3)]);
    expect(snapshot.events.every((e) => e.disposition === 'applied')).toBe(true);
    const description = await handle.describe();
    expect(description.searchAttributes).toMatchObject({
      JourneyStage: ['completed'],
      ExamStatus: ['Approved'],
      RxStatus: ['Pharmacy Confirmed'],
      NeedsAttention: [false],
      ClinicId: ['demo-clinic'],
      Scenario: ['partner_pharmacy'],
    });
  });

  it('completes urgent-care and choose-your-own-pharmacy journeys on events 1 and 2', async () => {
    for (const name of ['urgent_care', 'custom_pharmacy'] as const) {
      const { journeyId, result } = await runJourney(name);
      expect(result.stage).toBe('completed');
      expect(result.exams[0]).toMatchObject({
        status: 'Approved',
        fulfilment: 'custom',
        rxStatus: 'Pharmacy Confirmed',
      });
      expect(received.filter((r) => r.journeyId === journeyId).map((r) => r.event)).toEqual([1, 2]);
    }
  });

  describe.each(ALTERNATIVE_LAYOUTS)('when the sandbox sends the %s layout', (layout) => {
    beforeAll(() => sandbox.setFaults({ callbackLayout: layout }));
    afterAll(() => sandbox.setFaults({}));

    it('completes a journey of every scenario, every callback applied', async () => {
      const names: ScenarioName[] = ['gfe', 'partner_pharmacy', 'urgent_care', 'custom_pharmacy'];
      const runs = await Promise.all(names.map((name) => runJourney(name, undefined, null)));
      for (const { result, snapshot } of runs) {
        expect(result.stage).toBe('completed');
        expect(result.exams.every((e) => e.status === 'Approved')).toBe(true);
        expect(result.attention).toEqual([]);
        // Applied; a second drug of a custom pharmacy in the flat layout may come after the journey ended.
        expect(snapshot.events.filter((e) => e.disposition !== 'applied')).toEqual([]);
      }
      expect(runs.some(({ snapshot }) => snapshot.events.some((e) => e.layout !== undefined))).toBe(true);
      const partner = runs[1]!.result.exams[0]!;
      expect(partner.prescriptions.length).toBeGreaterThan(0);
      expect(partner.prescriptions.every((rx) => rx.tracking?.trackingNumber)).toBe(true);
    });
  });

  // The sandbox's delivery faults on top: each callback twice, and an exam's events held back and sent newest first
  // (event 3 of the last drug, of the first, event 2, event 1), so callbacks without ids arrive before what they need.
  describe.each(ALTERNATIVE_LAYOUTS)('when the sandbox sends the %s layout twice each, newest first', (layout) => {
    beforeAll(() => sandbox.setFaults({ callbackLayout: layout, duplicateCallbacks: 2, outOfOrderCallbacks: true }));
    afterAll(() => sandbox.setFaults({}));

    it('completes a journey of every scenario, each shipment on its own prescription, nothing held', async () => {
      const names: ScenarioName[] = ['gfe', 'partner_pharmacy', 'urgent_care', 'custom_pharmacy'];
      // Histories of the journeys in every alternative layout at once are kept for the replay test.
      const runs = await Promise.all(
        names.map((name) => runJourney(name, undefined, layout === 'all-alternatives' ? `${name}-${layout}` : null)),
      );
      for (const { result, snapshot } of runs) {
        expect(result.stage).toBe('completed');
        expect(result.attention).toEqual([]);
        expect(snapshot.events.filter((e) => !['applied', 'duplicate'].includes(e.disposition))).toEqual([]);
        const exam = result.exams[0]!;
        const atSandbox = sandbox.store.patientExam(exam.patientExamId)!.prescriptions;
        expect(exam.prescriptions.map((rx) => rx.prescriptionId).sort()).toEqual(
          atSandbox.map((rx) => rx.prescription_id).sort(),
        );
        if (result.scenario !== 'partner_pharmacy') continue;
        for (const rx of atSandbox) {
          const got = exam.prescriptions.find((x) => x.prescriptionId === rx.prescription_id);
          expect([rx.prescription_id, got?.tracking?.trackingNumber]).toEqual([rx.prescription_id, rx.tracking_number]);
        }
      }
    });
  });

  it('waits on a deferral for the medical director, whose final verdict completes the journey', async () => {
    // Outside test mode the sandbox's provider waits for its control surface.
    const journeyId = `it-deferred-${randomUUID().slice(0, 8)}`;
    const input = journeyInput(journeyId, 'gfe');
    input.patient = { ...input.patient, teleState: 'CA' };
    const handle = await env.client.workflow.start(patientJourney, {
      taskQueue: TASK_QUEUE,
      workflowId: journeyWorkflowId(journeyId),
      args: [input],
    });
    const stageIs = async (stage: string) => {
      const until = Date.now() + 20_000;
      for (;;) {
        const s = await handle.query(snapshotQuery);
        if (s.stage === stage) return s;
        if (Date.now() > until) throw new Error(`stage ${s.stage}, not ${stage}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    const id = (await stageIs('awaiting_consultation')).exams[0]!.patientExamId;
    const verdict = (status: string) =>
      fetch(`${sandbox.baseUrl}/_sandbox/patient-exams/${id}/verdict`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ status }),
      });
    expect((await verdict('Deferred to Medical Director')).status).toBe(200);
    const waiting = await stageIs('awaiting_final_verdict');
    expect(waiting.exams[0]).toMatchObject({ status: 'Deferred to Medical Director', phase: 'awaiting_final_verdict' });
    expect((await verdict('Approved')).status).toBe(200);
    const result = await handle.result();
    expect(result.stage).toBe('completed');
    expect(result.exams[0]).toMatchObject({ status: 'Approved', verdictSource: 'callback' });
    expect(received.filter((r) => r.journeyId === journeyId).map((r) => r.event)).toEqual([1, 1]);
  });

  it('adopts the exam of an invite whose answer was lost when its callback comes: one invite, completed', async () => {
    const faults = (body: object) =>
      fetch(`${sandbox.baseUrl}/_sandbox/faults`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    // The sandbox creates the invite, then drops the connection: the journey cannot know it exists.
    expect((await faults({ dropAfterInviteRate: 1 })).status).toBe(200);
    let outcome: Awaited<ReturnType<typeof runJourney>>;
    try {
      outcome = await runJourney('gfe', undefined, null);
    } finally {
      await faults({ dropAfterInviteRate: 0 });
    }
    const { journeyId, result } = outcome;
    expect(result.stage).toBe('completed');
    expect(result.exams).toEqual([expect.objectContaining({ status: 'Approved', verdictSource: 'callback' })]);
    expect(result.resolvedAttention).toEqual([expect.objectContaining({ code: 'invite_ambiguous' })]);
    // The service holds exactly the one patient exam the journey adopted.
    const listed = (await (await fetch(`${sandbox.baseUrl}/_sandbox/patient-exams`)).json()) as {
      patient_exams: { patient_exam_id: number; webhook_url: string | null }[];
    };
    const mine = listed.patient_exams.filter((p) => p.webhook_url?.endsWith(`/${encodeURIComponent(journeyId)}`));
    expect(mine.map((p) => p.patient_exam_id)).toEqual([result.exams[0]!.patientExamId]);
  });

  it('ends a rejected prescription journey on event 1', async () => {
    const { journeyId, result } = await runJourney('partner_pharmacy', 'Prescription Reject');
    expect(result.stage).toBe('completed');
    expect(result.exams[0]).toMatchObject({ status: 'Rejected', rxStatus: null });
    expect(received.filter((r) => r.journeyId === journeyId).map((r) => r.event)).toEqual([1]);
  });
});
