// Runs patient journeys on the time-skipping test server against the real activities and an in-memory exam service.
// One server and one workflow bundle per test file; one worker, task queue and fake per journey.
import { randomUUID } from 'node:crypto';
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, DefaultLogger, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createActivities } from '../../src/activities';
import { heartbeatRecorder } from '../../src/temporal';
import {
  callbackReceived,
  journeyWorkflowId,
  SEARCH_ATTRIBUTE_KEYS,
  SearchAttr,
  snapshotQuery,
} from '../../src/workflows/definitions';
import {
  DEFAULT_TIMINGS,
  JourneyRequest,
  resolveTimings,
  type JourneyInput,
  type JourneyTimings,
} from '../../src/contract/journey-request';
import type { JourneyCallback, JourneySnapshot, PrescriptionFacts } from '../../src/workflows/journey-state';
import type { patientJourney } from '../../src/workflows/patient-journey';
import { FakeExamService, GFE_EXAM, RX_EXAM } from '../support/fake-exam-service';
import { startTimeSkippingServer } from '../support/temporal-env';

export const HOUR = 3_600_000;

/** Attachment refs the journeys' retention deleted (in the order it did). */
export const deletedAttachments: string[] = [];
export const DAY = 24 * HOUR;

/** Patient data no operator-facing output may contain. */
export const PATIENT = {
  firstName: 'Test',
  lastName: 'Quartermaine',
  email: 'zelda.quartermaine@example.org',
  dob: '1984-02-29',
  phoneNumber: '+15550142387',
  teleState: 'TE',
} as const;
export const PHI_VALUES = [PATIENT.lastName, PATIENT.email, PATIENT.dob, PATIENT.phoneNumber, '5550142387'];

export interface Harness {
  env: TestWorkflowEnvironment;
  bundle: WorkflowBundleWithSourceMap;
}

export async function startHarness(): Promise<Harness> {
  const [env, bundle] = await Promise.all([
    startTimeSkippingServer(),
    bundleWorkflowCode({ workflowsPath: require.resolve('../../src/workflows'), logger: new DefaultLogger('ERROR') }),
  ]);
  await registerSearchAttributes(env);
  return { env, bundle };
}

// The test server refuses to upsert a search attribute it does not know ("search attribute X is not defined"), and
// the failed workflow task would be retried forever: register the journey's attributes through its operator service.
async function registerSearchAttributes(env: TestWorkflowEnvironment): Promise<void> {
  const searchAttributes = Object.fromEntries(
    SEARCH_ATTRIBUTE_KEYS.map((k) => [k.name, encodeSearchAttributeIndexedValueType(k.type)!]),
  );
  await env.connection.operatorService.addSearchAttributes({ namespace: env.namespace ?? 'default', searchAttributes });
}

export type ScenarioName = 'gfe' | 'urgent_care' | 'custom_pharmacy' | 'partner_pharmacy';

export function journeyInput(
  scenario: ScenarioName,
  overrides: Partial<Omit<JourneyInput, 'timings'>> & { timings?: Partial<JourneyTimings> } = {},
): JourneyInput {
  const journeyId = `j${randomUUID().slice(0, 8)}`;
  const pharmacy = { ncpdpid: '1234567', name: 'Main Street Pharmacy', state: 'TX', zipCode: '73301' };
  const scenarios = {
    gfe: { type: 'gfe' as const },
    urgent_care: { type: 'urgent_care' as const, pharmacy },
    custom_pharmacy: { type: 'custom_pharmacy' as const, pharmacy, patientChoice: 1 as const },
    partner_pharmacy: { type: 'partner_pharmacy' as const, pharmacyId: 7, orderSetId: 'os-semaglutide-1' },
  };
  const { timings, ...rest } = overrides;
  // Checked as the API would check a clinic's request, so every journey here is one a clinic could start.
  const request = JourneyRequest.parse({
    clinicId: 'clinic-7',
    journeyId,
    patient: { ...PATIENT },
    exams: [scenario === 'gfe' ? GFE_EXAM.id : RX_EXAM.id],
    scenario: scenarios[scenario],
    ...rest,
    timings,
  });
  return { ...request, timings: resolveTimings(DEFAULT_TIMINGS, request.timings) };
}

export type JourneyHandle = WorkflowHandle<typeof patientJourney>;

export interface Journey {
  handle: JourneyHandle;
  fake: FakeExamService;
  input: JourneyInput;
  env: TestWorkflowEnvironment;
  snapshot(): Promise<JourneySnapshot>;
  /** Polls the snapshot until the predicate holds (real time; the server's clock does not skip meanwhile). */
  waitFor(what: string, predicate: (s: JourneySnapshot) => boolean, timeoutMs?: number): Promise<JourneySnapshot>;
  /** Waits until the fake has seen `n` calls of an operation. */
  waitForCalls(operation: Parameters<FakeExamService['count']>[0], n: number): Promise<void>;
  /** Sends a callback as the webhook would; returns the delivery id. */
  deliver(callback: JourneyCallback): Promise<string>;
  consultation(patientExamId: number, examStatus: string, rxStatus?: string | null): Promise<string>;
  prescription(patientExamId: number, prescriptions?: PrescriptionFacts[]): Promise<string>;
  tracking(patientExamId: number, prescriptionId: number, trackingNumber?: string): Promise<string>;
  /** The first patient exam id the invite created (waits for the invite). */
  firstPatientExamId(): Promise<number>;
}

export interface JourneyOptions {
  fake?: FakeExamService;
  input?: JourneyInput;
  /** The clinic's notification secret (none: notifications are skipped) and how they are sent. */
  notifications?: Pick<Parameters<typeof createActivities>[0], 'notificationSecretFor' | 'sendNotification'>;
  /** Stands in for recording heartbeat details with the server (default: the real recorder). */
  recordHeartbeat?: Parameters<typeof createActivities>[0]['recordHeartbeat'];
  /**
   * Stands in for Temporal visibility (the time-skipping server keeps none): the workflow ids a query matches. Default:
   * none, so no other journey holds a patient exam.
   */
  listWorkflowIds?: Parameters<typeof createActivities>[0]['listWorkflowIds'];
}

export const PRESCRIPTIONS: PrescriptionFacts[] = [
  { prescriptionId: 7001, drugName: 'Semaglutide', strength: '2.5 mg/ml', quantity: '1', pharmacyName: 'Partner Rx' },
  { prescriptionId: 7002, drugName: 'Ondansetron', strength: '4 mg', quantity: '10', pharmacyName: 'Partner Rx' },
];

let deliveries = 0;

/** Starts a journey with its own worker and runs `body` while the worker runs; terminates what is left running. */
export async function withJourney(
  h: Harness,
  options: JourneyOptions,
  body: (j: Journey) => Promise<void>,
): Promise<void> {
  const fake = options.fake ?? new FakeExamService();
  const input = options.input ?? journeyInput('gfe');
  const taskQueue = `journeys-${input.journeyId}`;
  const real = createActivities({
    examServiceFor: () => fake,
    webhookUrlFor: (id) => 'http://127.0.0.1:1/webhooks/' + id,
    attachments: {
      get: (_ref: string) => Promise.resolve({ bytes: Buffer.from('x') }),
      delete: (ref: string) => {
        deletedAttachments.push(ref);
        return Promise.resolve();
      },
    },
    notificationSecretFor: () => undefined,
    ...options.notifications,
    catalogTtlMs: 60_000,
    recordHeartbeat: options.recordHeartbeat ?? heartbeatRecorder(h.env.nativeConnection, h.env.namespace ?? 'default'),
    listWorkflowIds: options.listWorkflowIds ?? (() => Promise.resolve([])),
  });
  const worker = await Worker.create({
    connection: h.env.nativeConnection,
    taskQueue,
    workflowBundle: h.bundle,
    activities: real,
  });
  await worker.runUntil(async () => {
    const handle: JourneyHandle = await h.env.client.workflow.start<typeof patientJourney>('patientJourney', {
      taskQueue,
      workflowId: journeyWorkflowId(input.journeyId),
      args: [input],
    });
    const snapshot = () => handle.query(snapshotQuery);
    const waitFor: Journey['waitFor'] = async (what, predicate, timeoutMs = 10_000) => {
      const deadline = Date.now() + timeoutMs;
      let last: JourneySnapshot | undefined;
      for (;;) {
        last = await snapshot();
        if (predicate(last)) return last;
        if (Date.now() > deadline) {
          throw new Error(`timed out waiting for ${what}; last snapshot: ${JSON.stringify(last, null, 1)}`);
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const deliver = async (callback: JourneyCallback) => {
      const deliveryId = `delivery-${++deliveries}`;
      await handle.signal(callbackReceived, {
        deliveryId,
        receivedAt: new Date().toISOString(),
        callback,
        raw: { event: callback.event, patient_exam_id: String(callback.patientExamId) },
      });
      return deliveryId;
    };
    const examIdOf = (patientExamId: number) => fake.exams.get(patientExamId)?.examId ?? 0;
    const journey: Journey = {
      handle,
      fake,
      input,
      env: h.env,
      snapshot,
      waitFor,
      async waitForCalls(operation, n) {
        const deadline = Date.now() + 10_000;
        while (fake.count(operation) < n) {
          if (Date.now() > deadline) throw new Error(`timed out waiting for ${n} ${operation} calls`);
          await new Promise((r) => setTimeout(r, 20));
        }
      },
      deliver,
      consultation: (patientExamId, examStatus, rxStatus = null) =>
        deliver({
          event: 1,
          patientExamId,
          examId: examIdOf(patientExamId),
          examStatus,
          rxStatus,
          examUrl: examStatus === 'NA' || examStatus === 'Missed' ? null : 'https://records.example.test/r.pdf',
          providerName: examStatus === 'NA' || examStatus === 'Missed' ? null : 'Dr. Provider',
          reason: 'consultation finished',
        }),
      prescription: (patientExamId, prescriptions = PRESCRIPTIONS) =>
        deliver({
          event: 2,
          patientExamId,
          examId: examIdOf(patientExamId),
          rxStatus: 'Pharmacy Confirmed',
          prescribedOrderSetId: 11,
          prescriptions,
        }),
      tracking: (patientExamId, prescriptionId, trackingNumber = `1Z${prescriptionId}`) =>
        deliver({
          event: 3,
          patientExamId,
          prescriptionId,
          trackingNumber,
          deliveryService: 'Overnight',
          pharmacyLocation: 'Austin, TX',
          orderId: `order-${prescriptionId}`,
        }),
      async firstPatientExamId() {
        const s = await waitFor('the invite', (x) => x.exams.length > 0);
        return s.exams[0]!.patientExamId;
      },
    };
    try {
      await body(journey);
    } finally {
      const { status } = await handle.describe();
      // (It may close between the two calls: then there is nothing to terminate.)
      if (status.name === 'RUNNING') {
        await handle.terminate('test over').catch((err: unknown) => {
          if (!(err instanceof WorkflowNotFoundError)) throw err;
        });
      }
    }
  });
}

/** The message of a refused update (the validator's error), for assertions. */
export async function refusal(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError) return err.cause?.message ?? err.message;
    throw err;
  }
  throw new Error('the update was accepted');
}

/** The journey's search attributes as the list API and the UI see them. */
export async function searchAttributesOf(handle: JourneyHandle) {
  const d = await handle.describe();
  const t = d.typedSearchAttributes;
  return {
    ClinicId: t.get(SearchAttr.ClinicId),
    Scenario: t.get(SearchAttr.Scenario),
    JourneyStage: t.get(SearchAttr.JourneyStage),
    ExamStatus: t.get(SearchAttr.ExamStatus),
    RxStatus: t.get(SearchAttr.RxStatus),
    NeedsAttention: t.get(SearchAttr.NeedsAttention),
    /** Both views, serialized, for the no-PHI checks. */
    raw: JSON.stringify({ untyped: d.searchAttributes, typed: d.typedSearchAttributes }),
  };
}

/** Polls describe() until the journey's search attributes say `stage` (they are written when a task completes). */
export async function waitForSearchAttributes(handle: JourneyHandle, stage: string) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const attrs = await searchAttributesOf(handle);
    if (attrs.JourneyStage === stage) return attrs;
    if (Date.now() > deadline) throw new Error(`search attributes still say ${attrs.JourneyStage}, not ${stage}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
