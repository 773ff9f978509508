// Journeys for the bench: started through the clinic API (bound to their patients, every payload sealed under the
// patient's key, as a clinic's are) or straight through the Temporal client (as the API would, minus HTTP and the
// patient's key), counted through visibility, and the exam service's callbacks for them (event 1 bodies, webhook paths
// with valid tokens).
import { type Client, WorkflowIdConflictPolicy, WorkflowIdReusePolicy } from '@temporalio/client';
import { Agent, request } from 'undici';
import { type Config, loadConfig } from '../../src/config';
import { patientKeysFrom } from '../../src/patient-keys/from-settings';
import type { PatientKeys } from '../../src/patient-keys/patient-keys';
import { connectClient } from '../../src/temporal';
import { webhookToken } from '../../src/webhook-url';
import { journeyWorkflowId, SearchAttr } from '../../src/contract/definitions';
import { JOURNEY_RULES, type JourneyInput } from '../../src/contract/journey-request';
import { sleep } from '../../scripts/lib/processes';

export function benchConfig(env: Record<string, string>): Config {
  return loadConfig({ ...env });
}

const clientKeys = new WeakMap<Client, PatientKeys>();

/**
 * A client of the bench's stack that reads journeys as an operator's tools do: with the patient keys (read-only), since
 * a journey started through the API has every payload sealed for its patient, its memo and query results included.
 */
export async function benchClient(config: Config): Promise<Client> {
  const keys = patientKeysFrom(config.patientKeys, {
    ring: config.codec.keys,
    writer: false,
    applicationName: 'bench patient keys',
  });
  await keys?.init();
  const client = await connectClient(config, keys ? { patientKeys: keys } : {});
  if (keys) clientKeys.set(client, keys);
  return client;
}

/** Closes a bench client: its connection and its patient keys. */
export async function closeBenchClient(client: Client): Promise<void> {
  await client.connection.close().catch(() => undefined);
  await clientKeys
    .get(client)
    ?.close()
    .catch(() => undefined);
}

/** A test patient of its own for each journey (the e-mail from `id`); lastName as the sandbox reads it. */
const benchPatient = (id: string, lastName: string): JourneyInput['patient'] => ({
  firstName: 'Test',
  lastName,
  email: `${id.toLowerCase()}@bench.example.test`,
  dob: '1988-04-12',
  phoneNumber: '5125550199',
  teleState: 'TE',
});

/** A GFE journey in test mode. lastName 'Approve': the sandbox's provider approves it; anything else stays pending. */
export function gfeInput(config: Config, clinicId: string, journeyId: string, lastName: string): JourneyInput {
  return {
    clinicId,
    journeyId,
    patient: benchPatient(journeyId, lastName),
    exams: [101],
    scenario: { type: 'gfe' },
    additionalData: JSON.stringify({ bench: journeyId }),
    timings: config.timings,
    callbackFloodLimit: config.callbackFloodLimit,
    rules: JOURNEY_RULES,
  };
}

/** The bench's client of the API: kept-alive connections and undici's request (fetch costs more CPU per call). */
const apiAgent = new Agent({ connections: 64, keepAliveTimeout: 30_000 });

/**
 * POST /v1/journeys for a GFE journey of a patient of its own (the e-mail from the Idempotency-Key): the API binds it
 * to the patient and makes their data key first. lastName 'Approve': the sandbox's provider approves it; anything
 * else stays waiting for the consultation.
 */
export async function startThroughApi(
  apiUrl: string,
  token: string,
  key: string,
  lastName: string,
): Promise<{ journeyId?: string; status: number; startMs: number }> {
  const t = performance.now();
  let status = 0;
  let body: { journeyId?: string } = {};
  try {
    const res = await request(`${apiUrl}/v1/journeys`, {
      method: 'POST',
      dispatcher: apiAgent,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify({ patient: benchPatient(key, lastName), exams: [101], scenario: { type: 'gfe' } }),
      headersTimeout: 60_000,
      bodyTimeout: 60_000,
    });
    status = res.statusCode;
    body = (await res.body.json().catch(() => ({}))) ?? {};
  } catch {
    // No answer: status 0.
  }
  const startMs = performance.now() - t;
  return { ...(body.journeyId ? { journeyId: body.journeyId } : {}), status, startMs };
}

/** The API's start (src/api/journeys.ts), without the HTTP and catalog check in front of it. */
export async function startJourney(client: Client, config: Config, input: JourneyInput): Promise<void> {
  await client.workflow.start('patientJourney', {
    workflowId: journeyWorkflowId(input.journeyId),
    taskQueue: config.temporal.taskQueue,
    args: [input],
    workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL,
    memo: { clinicId: input.clinicId, requestSha256: 'bench' },
    typedSearchAttributes: [
      { key: SearchAttr.ClinicId, value: input.clinicId },
      { key: SearchAttr.Scenario, value: input.scenario.type },
      { key: SearchAttr.JourneyStage, value: 'validating' },
      { key: SearchAttr.NeedsAttention, value: false },
    ],
  });
}

/** Runs fn over items with at most `concurrency` at once; resolves with the results in order. */
export async function pool<T, R>(
  items: T[],
  concurrency: number,
  fn: (item: T, i: number) => Promise<R>,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  });
  await Promise.all(workers);
  return out;
}

export async function countWorkflows(client: Client, query: string): Promise<number> {
  const { count } = await client.workflow.count(query);
  return count;
}

/** Polls a visibility count until it reaches `target`; calls progress(count) on each poll. */
export async function waitForCount(
  client: Client,
  query: string,
  target: number,
  timeoutMs: number,
  progress?: (count: number) => void,
  everyMs = 1_000,
): Promise<number> {
  const until = Date.now() + timeoutMs;
  let count = 0;
  for (;;) {
    try {
      count = await countWorkflows(client, query);
    } catch {
      // visibility busy: try again
    }
    progress?.(count);
    if (count >= target) return count;
    if (Date.now() > until) throw new Error(`only ${count} of ${target} workflows matched ${query} in time`);
    await sleep(everyMs);
  }
}

export interface ClosedWorkflow {
  workflowId: string;
  startTime: Date;
  closeTime: Date | undefined;
  status: string;
}

export async function listWorkflows(client: Client, query: string): Promise<ClosedWorkflow[]> {
  const out: ClosedWorkflow[] = [];
  for await (const wf of client.workflow.list({ query, pageSize: 1000 })) {
    out.push({ workflowId: wf.workflowId, startTime: wf.startTime, closeTime: wf.closeTime, status: wf.status.name });
  }
  return out;
}

export function webhookPath(journeyId: string, secret: string): string {
  return `/webhooks/exam-service/${encodeURIComponent(journeyId)}/${webhookToken(journeyId, secret)}`;
}

/** An event 1 body as the service sends it (the sandbox's shape, src/sandbox/events.ts). */
export function event1Body(patientExamId: number, status: 'Approved' | 'Rejected' = 'Approved'): string {
  return JSON.stringify({
    event: 1,
    reason: status === 'Approved' ? 'Looks good' : 'Not a candidate',
    exam_id: '101',
    exam_url: `http://127.0.0.1/records/bench-${patientExamId}.pdf?expires=2099-01-01T00:00:00.000Z`,
    exam_name: 'Good Faith Exam',
    exam_status: status,
    rx_status: null,
    clinic_name: '7001 Sandbox Demo Clinic',
    patient_email: 'bench@bench.example.test',
    patient_phone_number: '5125550199',
    patient_exam_id: String(patientExamId),
    provider_name: 'Test Provider, NP',
    additional_data: '',
    questions_answers: [
      { no: 1, question: 'What brings you in today?', answer: 'Benchmark' },
      { no: 2, question: 'Any allergies?', answer: 'No' },
    ],
  });
}

/**
 * Each journey's event 1 (Approved) POSTed to the webhook, `concurrency` at once, as the service would send it:
 * every acknowledgement's time, and how many were not answered 200.
 */
export async function postEvent1s(
  apiUrl: string,
  webhookSecret: string,
  items: { journeyId: string; patientExamId: number }[],
  concurrency: number,
): Promise<{ acks: number[]; not200: number }> {
  const acks: number[] = [];
  let not200 = 0;
  await pool(items, concurrency, async (it) => {
    const t = performance.now();
    const res = await fetch(`${apiUrl}${webhookPath(it.journeyId, webhookSecret)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: event1Body(it.patientExamId, 'Approved'),
      signal: AbortSignal.timeout(30_000),
    }).catch(() => undefined);
    if (res) await res.arrayBuffer();
    acks.push(performance.now() - t);
    if (res?.status !== 200) not200++;
  });
  return { acks, not200 };
}
