// Journeys started before journeys published the ids of their patient exams (the rules of journey-rules-2026-11) hold
// patient exams as well: after the upgrade, a journey in doubt that is sent a callback claiming one of them must not
// adopt it. On the real dev server, whose visibility the check reads; the journeys of earlier rules are made by a build
// of the workflows that knows no patch after those rules, then taken over by today's workers.
import path from 'node:path';
import { WorkflowNotFoundError } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, DefaultLogger, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createActivities } from '../../src/activities';
import {
  callbackReceived,
  journeyWorkflowId,
  SEARCH_ATTRIBUTE_KEYS,
  SearchAttr,
  snapshotQuery,
} from '../../src/contract/definitions';
import type { JourneyInput } from '../../src/contract/journey-request';
import { ExamServiceClient } from '../../src/exam-service/client';
import type { ExamServiceApi } from '../../src/exam-service/client';
import { buildSandbox, DEMO_API_KEY, type Sandbox } from '../../src/sandbox';
import { heartbeatRecorder, workflowIdLister } from '../../src/temporal';
import type { JourneyCallback, JourneySnapshot } from '../../src/workflows/journey-state';
import { sourceVariant, type SourceVariant } from '../../scripts/lib/workflow-variant';
import { ScriptedExamService, serviceError } from '../support/scripted-exam-service';
import { startDevServer } from '../support/temporal-env';
import { GFE_EXAM, journeyInput, PATIENT } from './harness';

jest.setTimeout(180_000);

const root = path.resolve(__dirname, '../..');
const PATCH_IMPORT = "import { patched, workflowInfo } from '@temporalio/workflow';\n";

/**
 * Today's workflows, as a release that knows none of these patches would run them (it never asks them), nor the rules
 * a start names (it records the marker of its own rules whatever the start says).
 */
function releaseWithout(name: string, unknownPatches: string[]): SourceVariant {
  return sourceVariant(root, `${name}-${process.pid}`, [
    {
      file: 'workflows/journey-rules.ts',
      find: PATCH_IMPORT,
      replace:
        "import { patched as patchedToday, workflowInfo } from '@temporalio/workflow';\n" +
        `const unknownPatches: string[] = ${JSON.stringify(unknownPatches)};\n` +
        'const patched = (id: string) => !unknownPatches.includes(id) && patchedToday(id);\n',
    },
    {
      file: 'workflows/journey-rules.ts',
      find: '  const named = started === TODAYS_RULES;\n',
      replace: '  void started;\n  const named = false as boolean;\n',
    },
  ]);
}

let env: TestWorkflowEnvironment;
let sandbox: Sandbox;
let client: ExamServiceClient;
const variants: SourceVariant[] = [];
const bundles: Record<'today' | 'rules202611' | 'rules202701', WorkflowBundleWithSourceMap> = {} as never;

beforeAll(async () => {
  const before202612 = releaseWithout('rules-2026-11', [
    'journey-rules-2026-12',
    'journey-rules-2027-01',
    'journey-rules-2027-02',
    'patient-exam-ids-named',
  ]);
  const before202702 = releaseWithout('rules-2027-01', ['journey-rules-2027-02']);
  variants.push(before202612, before202702);
  const logger = new DefaultLogger('ERROR');
  const bundle = (workflowsPath: string) => bundleWorkflowCode({ workflowsPath, logger });
  [env, sandbox, bundles.today, bundles.rules202611, bundles.rules202701] = await Promise.all([
    startDevServer(SEARCH_ATTRIBUTE_KEYS),
    buildSandbox({ callbackRetries: 0 }),
    bundle(require.resolve('../../src/workflows')),
    bundle(before202612.workflowsPath),
    bundle(before202702.workflowsPath),
  ]);
  client = new ExamServiceClient({ baseUrl: sandbox.baseUrl, apiKey: DEMO_API_KEY });
}, 180_000);

afterAll(async () => {
  await env?.teardown();
  await client?.close();
  await sandbox?.close();
  for (const v of variants) v.remove();
});

/** A worker of one release on a task queue, with the real activities reading the dev server's visibility. */
function worker(taskQueue: string, release: keyof typeof bundles, service: ExamServiceApi = client) {
  const namespace = env.namespace ?? 'default';
  return Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: bundles[release],
    activities: createActivities({
      examServiceFor: () => service,
      webhookUrlFor: (id) => `http://127.0.0.1:1/webhooks/${id}`,
      attachments: { get: () => Promise.resolve({ bytes: Buffer.from('x') }), delete: () => Promise.resolve() },
      notificationSecretFor: () => undefined,
      catalogTtlMs: 60_000,
      recordHeartbeat: heartbeatRecorder(env.nativeConnection, namespace),
      listWorkflowIds: workflowIdLister(env.nativeConnection, namespace),
    }),
  });
}

const handleOf = (input: JourneyInput) => env.client.workflow.getHandle(journeyWorkflowId(input.journeyId));

async function until<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

let deliveries = 0;
function deliver(input: JourneyInput, callback: JourneyCallback) {
  return handleOf(input).signal(callbackReceived, {
    deliveryId: `earlier-rules-${++deliveries}`,
    receivedAt: new Date().toISOString(),
    callback,
  });
}
const verdict = (patientExamId: number, patientEmail?: string): JourneyCallback => ({
  event: 1,
  patientExamId,
  examId: GFE_EXAM.id,
  examStatus: 'Approved',
  rxStatus: null,
  examUrl: 'https://records.example.test/r.pdf',
  providerName: 'Dr. Provider',
  reason: 'consultation finished',
  ...(patientEmail ? { patientEmail } : {}),
});

const snapshotOf = (input: JourneyInput) => handleOf(input).query(snapshotQuery);
const settled = (s: JourneySnapshot) => s.exams.length > 0 || s.events.some((e) => e.disposition === 'held');

/** Journeys of the rules of 2026-11 holding a patient exam each, taken over by today's workers on their task queue. */
async function holdersOfEarlierRules(taskQueue: string, count: number): Promise<{ input: JourneyInput; id: number }[]> {
  const holders = Array.from({ length: count }, () => ({ input: journeyInput('gfe'), id: 0 }));
  await (
    await worker(taskQueue, 'rules202611')
  ).runUntil(async () => {
    for (const h of holders) {
      await env.client.workflow.start('patientJourney', {
        taskQueue,
        workflowId: journeyWorkflowId(h.input.journeyId),
        args: [h.input],
      });
      const s = await until(
        'the invite',
        () => snapshotOf(h.input),
        (x) => x.exams.length === 1,
      );
      h.id = s.exams[0]!.patientExamId;
    }
    // Visibility shows them as earlier rules left them: patient exams, no PatientExamIds.
    const ids = holders.map((h) => `'${journeyWorkflowId(h.input.journeyId)}'`).join(', ');
    await until(
      'the holders in visibility',
      () => env.client.workflow.count(`WorkflowId IN (${ids}) AND ExamStatus IS NOT NULL AND PatientExamIds IS NULL`),
      (c) => c.count === count,
    );
  });
  return holders;
}

/** A journey in doubt about its invite (sent, no answer), on a release's rules: its task queue's worker runs it. */
async function inDoubt(taskQueue: string, release: keyof typeof bundles, body: (input: JourneyInput) => Promise<void>) {
  const service = new ScriptedExamService(client).failNext('exam_invite', serviceError('ambiguous', 'exam_invite'));
  const input = journeyInput('gfe');
  await (
    await worker(taskQueue, release, service)
  ).runUntil(async () => {
    await env.client.workflow.start('patientJourney', {
      taskQueue,
      workflowId: journeyWorkflowId(input.journeyId),
      args: [input],
    });
    await until(
      'the invite in doubt',
      () => snapshotOf(input),
      (s) => s.stage === 'needs_attention',
    );
    try {
      await body(input);
    } finally {
      await handleOf(input)
        .terminate('test over')
        .catch((err: unknown) => {
          if (!(err instanceof WorkflowNotFoundError)) throw err;
        });
    }
  });
}

it('keeps a patient exam a journey on earlier rules holds from a journey in doubt that claims it', async () => {
  const [holder] = await holdersOfEarlierRules('earlier-rules-running', 1);
  const { input: heldBy, id } = holder!;
  const today = await worker('earlier-rules-running', 'today');
  await today.runUntil(() =>
    inDoubt('in-doubt-today', 'today', async (input) => {
      // Its own patient, an exam it asked for, a patient exam the journey of earlier rules holds.
      await deliver(input, verdict(id, PATIENT.email));
      const s = await until('the claim settled', () => snapshotOf(input), settled);
      expect(s.exams).toEqual([]);
      expect(s.attention.map((a) => a.code)).toEqual(['invite_ambiguous', 'callback_held']);
      expect(s.attention[1]!.message).toMatch(/another journey holds it/);

      // Asked, the holder named its patient exam, and goes on by the rules of its history with today's workers.
      const named = (await handleOf(heldBy).describe()).typedSearchAttributes.get(SearchAttr.PatientExamIds);
      expect(named).toEqual([String(id)]);
      await deliver(heldBy, verdict(id));
      expect(await handleOf(heldBy).result()).toMatchObject({ stage: 'completed', exams: [{ patientExamId: id }] });
      // Its history, made by both releases (the naming under a patch of its own), replays on today's workflows.
      const history = await handleOf(heldBy).fetchHistory();
      const patches = (history.events ?? []).flatMap((e) => {
        const data = e.markerRecordedEventAttributes?.details?.['patch-data']?.payloads?.[0];
        return data ? [defaultPayloadConverter.fromPayload<{ id: string }>(data).id] : [];
      });
      expect(patches).toEqual(['journey-rules-2026-11', 'patient-exam-ids-named']);
      await Worker.runReplayHistory({ workflowBundle: bundles.today }, history, journeyWorkflowId(heldBy.journeyId));
    }),
  );
});

it('reads the patient exams of a journey on earlier rules that ended before the upgrade', async () => {
  const [holder] = await holdersOfEarlierRules('earlier-rules-ended', 1);
  const { input: heldBy, id } = holder!;
  // It ends on earlier rules: it never names its patient exams, and cannot be asked to.
  await (
    await worker('earlier-rules-ended', 'rules202611')
  ).runUntil(async () => {
    await deliver(heldBy, verdict(id));
    await handleOf(heldBy).result();
  });
  await inDoubt('in-doubt-ended', 'today', async (input) => {
    await deliver(input, verdict(id, PATIENT.email));
    const s = await until('the claim settled', () => snapshotOf(input), settled);
    expect(s.exams).toEqual([]);
    expect(s.attention[1]!.message).toMatch(/another journey holds it/);
  });
});

it('holds the claim for a person, never adopts, in a journey in doubt on the rules of 2027-01', async () => {
  const [holder] = await holdersOfEarlierRules('earlier-rules-2027-01', 1);
  await inDoubt('in-doubt-2027-01', 'rules202701', async (input) => {
    await deliver(input, verdict(holder!.id, PATIENT.email));
    const s = await until('the claim settled', () => snapshotOf(input), settled);
    expect(s.exams).toEqual([]);
    expect(s.attention.map((a) => a.code)).toEqual(['invite_ambiguous', 'callback_held']);
  });
});
