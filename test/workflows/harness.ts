// Runs patient journeys on the time-skipping test server with the real activities and the real exam-service client
// against the sandbox. One server, workflow bundle and sandbox per test file; one worker, task queue and scripted
// service (test/support/scripted-exam-service) per journey. Callbacks reach a journey as signals, as the webhook sends
// them: the sandbox's own callbacks go to an address nobody listens on.
import { randomUUID } from 'node:crypto';
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, DefaultLogger, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createActivities, type OtherJourneys } from '../../src/activities';
import { heartbeatRecorder } from '../../src/temporal';
import {
  callbackReceived,
  journeyWorkflowId,
  SEARCH_ATTRIBUTE_KEYS,
  SearchAttr,
  snapshotQuery,
} from '../../src/contract/definitions';
import {
  DEFAULT_TIMINGS,
  JOURNEY_RULES,
  JourneyRequest,
  resolveTimings,
  type JourneyInput,
  type JourneyTimings,
} from '../../src/contract/journey-request';
import type { JourneyCallback, JourneySnapshot, PrescriptionFacts } from '../../src/workflows/journey-state';
import type { patientJourney } from '../../src/workflows/patient-journey';
import { attachmentRetentionId } from '../../src/workflows/attachment-retention';
import { ExamServiceClient } from '../../src/exam-service/client';
import { buildSandbox, DEMO_API_KEY, SEED_EXAMS, type PatientExamRecord, type Sandbox } from '../../src/sandbox';
import type { Verdict } from '../../src/sandbox/store';
import { ScriptedExamService } from '../support/scripted-exam-service';
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

const seedExam = (id: number) => SEED_EXAMS.find((e) => e.id === id)!;
/** Exams of the sandbox's catalog (every clinic's) that the journeys here ask for. */
export const GFE_EXAM = seedExam(101);
export const GFE_EXAM_2 = seedExam(103);
/** A GFE that needs a lab result and a face photo uploaded (attachments_required 2). */
export const GFE_WITH_LAB = seedExam(102);
export const URGENT_CARE_EXAM = seedExam(301);
/** Choose your own pharmacy; needs a scalp photo. */
export const OWN_PHARMACY_EXAM = seedExam(302);
/** A partner pharmacy package (pharmacy 501, order set 8101); needs a lab result. */
export const PARTNER_EXAM = seedExam(201);

export interface Harness {
  env: TestWorkflowEnvironment;
  bundle: WorkflowBundleWithSourceMap;
  sandbox: Sandbox;
  /** The demo clinic's client of the sandbox: what a journey's scripted service sends through. */
  client: ExamServiceClient;
}

/** The harness of a test file: started before its tests, stopped after them. */
export function useHarness(): Harness {
  const h = {} as Harness;
  beforeAll(async () => {
    const [env, bundle, sandbox] = await Promise.all([
      startTimeSkippingServer(),
      bundleWorkflowCode({ workflowsPath: require.resolve('../../src/workflows'), logger: new DefaultLogger('ERROR') }),
      buildSandbox({ callbackRetries: 0 }),
    ]);
    await registerSearchAttributes(env);
    Object.assign(h, {
      env,
      bundle,
      sandbox,
      client: new ExamServiceClient({ baseUrl: sandbox.baseUrl, apiKey: DEMO_API_KEY }),
    });
  }, 60_000);
  afterAll(async () => {
    await h.env?.teardown();
    await h.client?.close();
    await h.sandbox?.close();
  });
  return h;
}

/** A scripted exam service for one journey (script it before the journey starts). */
export function examService(h: Harness): ScriptedExamService {
  return new ScriptedExamService(h.client);
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
    partner_pharmacy: { type: 'partner_pharmacy' as const, pharmacyId: 501, orderSetId: '8101' },
  };
  const exam = {
    gfe: GFE_EXAM,
    urgent_care: URGENT_CARE_EXAM,
    custom_pharmacy: OWN_PHARMACY_EXAM,
    partner_pharmacy: PARTNER_EXAM,
  };
  // Today's rules named as the API names them; `rules: undefined` starts one as a starter of an earlier release did.
  const { timings, rules = 'rules' in overrides ? undefined : JOURNEY_RULES, ...rest } = overrides;
  const exams = rest.exams ?? [exam[scenario].id];
  // Checked as the API would check a clinic's request, so every journey here is one a clinic could start.
  const request = JourneyRequest.parse({
    clinicId: 'clinic-7',
    journeyId,
    patient: { ...PATIENT },
    exams,
    scenario: scenarios[scenario],
    ...requiredAttachments(exams),
    ...rest,
    timings,
  });
  return {
    ...request,
    timings: resolveTimings(DEFAULT_TIMINGS, request.timings),
    ...(rules !== undefined ? { rules } : {}),
  };
}

/** The documents the catalog requires of these exams (attachments_required 2), one file each. */
function requiredAttachments(examIds: number[]): Pick<JourneyInput, 'attachments'> {
  const attachments = examIds.flatMap((examId) =>
    SEED_EXAMS.filter((e) => e.id === examId && e.attachments_required === 2).flatMap((e) =>
      e.attachments.map((kind, i) => ({
        examId,
        attachment: {
          ref: `att_required_${examId}_${i}`,
          kind,
          fileName: 'document.pdf',
          contentType: 'application/pdf',
          size: 1,
        },
      })),
    ),
  );
  return attachments.length > 0 ? { attachments } : {};
}

export type JourneyHandle = WorkflowHandle<typeof patientJourney>;

export interface Journey {
  handle: JourneyHandle;
  /** The journey's calls of the exam service, as its activities made them. */
  service: ScriptedExamService;
  input: JourneyInput;
  env: TestWorkflowEnvironment;
  snapshot(): Promise<JourneySnapshot>;
  /** Polls the snapshot until the predicate holds (real time; the server's clock does not skip meanwhile). */
  waitFor(what: string, predicate: (s: JourneySnapshot) => boolean, timeoutMs?: number): Promise<JourneySnapshot>;
  /** Waits until the service has been called `n` times for an operation. */
  waitForCalls(operation: Parameters<ScriptedExamService['count']>[0], n: number): Promise<void>;
  /** Waits until the sandbox holds `n` patient exams invited for this journey (its webhook URL); their ids. */
  examsAtService(n: number): Promise<number[]>;
  /** The patient exam as the sandbox holds it. */
  atService(patientExamId: number): PatientExamRecord;
  /** Cancels the patient exam at the service, not through the journey (as in the service portal). */
  cancelElsewhere(patientExamId: number): Promise<void>;
  /** The provider's verdict at the sandbox; its event 1 never reaches the journey. */
  verdictNotDelivered(patientExamId: number, verdict: Verdict): Promise<void>;
  /** Sends a callback as the webhook would; returns the delivery id. */
  deliver(callback: JourneyCallback): Promise<string>;
  consultation(patientExamId: number, examStatus: string, rxStatus?: string | null): Promise<string>;
  prescription(patientExamId: number, prescriptions?: PrescriptionFacts[]): Promise<string>;
  tracking(patientExamId: number, prescriptionId: number, trackingNumber?: string): Promise<string>;
  /** The first patient exam id the invite created (waits for the invite). */
  firstPatientExamId(): Promise<number>;
}

export interface JourneyOptions {
  /** The journey's exam service, scripted (default: examService(h), unscripted). */
  service?: ScriptedExamService;
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
  /**
   * Stands in for the journeys that hold patient exams without naming them (earlier rules), found through visibility
   * as well. Default: none.
   */
  journeys?: OtherJourneys;
}

/** No journey holds patient exams without naming them. */
export const NO_UNNAMED_JOURNEYS: OtherJourneys = {
  list: () => Promise.resolve([]),
  askToName: () => Promise.resolve(),
  patientExamIdsOf: () => Promise.reject(new Error('no such journey')),
};

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
  const service = options.service ?? examService(h);
  const input = options.input ?? journeyInput('gfe');
  const taskQueue = `journeys-${input.journeyId}`;
  const webhookUrlFor = (id: string) => 'http://127.0.0.1:1/webhooks/' + id;
  const real = createActivities({
    examServiceFor: () => service,
    webhookUrlFor,
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
    journeys: options.journeys ?? NO_UNNAMED_JOURNEYS,
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
    const examIdOf = (patientExamId: number) => h.sandbox.store.patientExam(patientExamId)?.exam_id ?? 0;
    const invited = () =>
      [...h.sandbox.store.meetings.values()]
        .filter((m) => m.webhook_url === webhookUrlFor(input.journeyId))
        .flatMap((m) => m.patient_exam_ids);
    const journey: Journey = {
      handle,
      service,
      input,
      env: h.env,
      snapshot,
      waitFor,
      async waitForCalls(operation, n) {
        const deadline = Date.now() + 10_000;
        while (service.count(operation) < n) {
          if (Date.now() > deadline) throw new Error(`timed out waiting for ${n} ${operation} calls`);
          await new Promise((r) => setTimeout(r, 20));
        }
      },
      async examsAtService(n) {
        const deadline = Date.now() + 10_000;
        while (invited().length < n) {
          if (Date.now() > deadline) throw new Error(`timed out waiting for ${n} patient exams at the sandbox`);
          await new Promise((r) => setTimeout(r, 20));
        }
        return invited();
      },
      atService(patientExamId) {
        const record = h.sandbox.store.patientExam(patientExamId);
        if (!record) throw new Error(`the sandbox holds no patient exam ${patientExamId}`);
        return record;
      },
      async cancelElsewhere(patientExamId) {
        await h.client.cancelInvite({ patient_exam_id: patientExamId });
      },
      async verdictNotDelivered(patientExamId, verdict) {
        const res = await h.sandbox.app.inject({
          method: 'POST',
          url: `/_sandbox/patient-exams/${patientExamId}/verdict`,
          payload: { status: verdict },
        });
        if (res.statusCode !== 200) throw new Error(`the sandbox refused the verdict: ${res.body}`);
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
      await settleRetention(h, input.journeyId);
    }
  });
}

/**
 * Runs the retention a journey with documents started as it ended to its end, while the journey's worker still runs.
 * The time-skipping server keeps a lock on its clock for each abandoned child that completes after its parent
 * (temporalio/sdk-java#2392): it is handed back, or the later journeys' timers would wait in real time.
 */
async function settleRetention(h: Harness, journeyId: string): Promise<void> {
  const retention = h.env.client.workflow.getHandle(attachmentRetentionId(journeyId));
  try {
    await retention.describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return;
    throw err;
  }
  await retention.result();
  await h.env.connection.testService!.unlockTimeSkipping({});
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
