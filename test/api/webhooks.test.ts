// The webhook receiver against a real Temporal dev server and the real journey workflow: callbacks go through the
// inbox to their journey exactly once, also when Temporal is slow or away, and what no journey takes is a dead letter.
import { readdirSync } from 'node:fs';
import { Client, type WorkflowClientInterceptor } from '@temporalio/client';
import { buildApp, type ApiApp } from '../../src/api/app';
import { seriesValue } from '../../src/api/metrics';
import type { Config } from '../../src/config';
import { signalJourney } from '../../src/inbox/forwarder';
import { journeyWorkflowId, SearchAttr } from '../../src/contract/definitions';
import { DEFAULT_TIMINGS, type JourneyInput } from '../../src/contract/journey-request';
import { useApiHarness } from '../support/api-harness';
import {
  auth,
  event1,
  eventually,
  expectProblem,
  fakeActivities,
  fakeExamService,
  gfeBody,
  startJourney,
  tempDataDir,
  testConfig,
  TOKENS,
  unreachableTemporal,
  webhookPath,
} from './support';
import { signalFor } from '../inbox/support';

const TASK_QUEUE = 'api-webhooks';

describe('webhook receiver with Temporal', () => {
  const stack = useApiHarness({
    taskQueue: TASK_QUEUE,
    worker: fakeActivities(60_000).activities,
    app: { forwarderMinBackoffMs: 50 },
  });

  const journeyOf = (a: ApiApp, id: string) =>
    a.inject({ method: 'GET', url: `/v1/journeys/${id}`, headers: auth(TOKENS.a) }).then((r) => r.json());
  const admin = (method: 'GET' | 'POST', url: string) => stack.app.inject({ method, url, headers: auth(TOKENS.admin) });

  /** Starts a GFE journey over the API and waits for its invite; gives the journey and patient exam ids. */
  async function invitedJourney(key: string): Promise<{ journeyId: string; patientExamId: number }> {
    const journeyId = (await startJourney(stack.app, key)).json().journeyId;
    const j = await eventually(
      () => journeyOf(stack.app, journeyId),
      (v) => v.journey?.stage === 'awaiting_consultation',
    );
    return { journeyId, patientExamId: j.journey.exams[0].patientExamId };
  }

  it('signals event 1 to its journey at once: the journey completes and shows the delivery', async () => {
    const { journeyId, patientExamId } = await invitedJourney('wh-1');
    const res = await stack.app.inject({ method: 'POST', url: webhookPath(journeyId), payload: event1(patientExamId) });
    expect(res.statusCode).toBe(200);
    const { deliveryId } = res.json();
    expect(res.json()).toEqual({ received: true, deliveryId: expect.any(String) });

    const done = await eventually(
      () => journeyOf(stack.app, journeyId),
      (j) => j.journey.stage === 'completed',
    );
    expect(done.journey.events).toEqual([
      expect.objectContaining({ deliveryId, event: 1, patientExamId, disposition: 'applied' }),
    ]);
    expect(done.journey.exams[0]).toMatchObject({ status: 'Approved', providerName: 'Dr. P' });

    const metrics = (await stack.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toMatch(/journey_api_callbacks_total\{event="1",outcome="accepted"\} 1/);
    expect(metrics).toMatch(/journey_api_callbacks_forwarded_total \d+/);
    expect(metrics).toMatch(/journey_api_inbox_depth 0/);
    expect(metrics).toMatch(/journey_api_webhook_ack_seconds_count \d+/);
    expect(metrics).toMatch(/journey_api_journeys_started_total\{clinic="clinic-a",scenario="gfe"\} \d+/);

    // The same callback again, after the journey finished: 200 for the service, a dead letter for operators.
    await eventually(
      () => journeyOf(stack.app, journeyId),
      (j) => j.workflowStatus === 'COMPLETED',
    );
    // But the very delivery it finished on, signalled again (its answer lost as Temporal came back), is no dead
    // letter: the finished journey's snapshot shows it took it.
    const retried = await signalJourney(stack.client, journeyId, { ...signalFor(patientExamId), deliveryId }, 10_000);
    expect(retried).toEqual({ ok: true, alreadyApplied: true });
    // The same for an operator replaying such a delivery kept as a dead letter (before the forwarder asked).
    const kept = await stack.app.callbacks.inbox.deadLetters.add({
      journeyId,
      reason: 'journey_finished',
      detail: 'the journey has already finished; it takes no more callbacks',
      event: 1,
      patientExamId,
      deliveryId,
      receivedAt: new Date().toISOString(),
      rawBody: JSON.stringify(event1(patientExamId)),
    });
    const replayed = await admin('POST', `/admin/dead-letters/${kept.id}/replay`);
    expect(replayed.json()).toEqual({ id: kept.id, outcome: 'already_recorded' });
    expect(await stack.app.callbacks.inbox.deadLetters.get(kept.id)).toBeUndefined();
    const again = await stack.app.inject({
      method: 'POST',
      url: webhookPath(journeyId),
      payload: event1(patientExamId),
    });
    expect(again.statusCode).toBe(200);
    // The forwarder finds the journey finished: the callback becomes a dead letter.
    const letters = await eventually(
      async () => (await admin('GET', '/admin/dead-letters')).json().deadLetters as { id: string; journeyId: string }[],
      (all) => all.some((l) => l.journeyId === journeyId),
    );
    expect(letters).toContainEqual(
      expect.objectContaining({ journeyId, reason: 'journey_finished', event: 1, patientExamId }),
    );
    // A late copy (a delivery of its own) is no delivery the journey took: replaying it is refused.
    const late = letters.find((l) => l.journeyId === journeyId)!;
    const refused = await admin('POST', `/admin/dead-letters/${late.id}/replay`);
    expect(expectProblem(refused, 409).detail).toMatch(/has finished; it takes no more callbacks/);
  });

  it('keeps a callback for an unknown journey as a dead letter that an operator can replay once it exists', async () => {
    const journeyId = 'jreplaylater';
    const res = await stack.app.inject({
      method: 'POST',
      url: webhookPath(journeyId),
      payload: event1(123, 'Rejected'),
    });
    expect(res.statusCode).toBe(200);
    const { deliveryId } = res.json();
    const letters = await eventually(
      async () => (await admin('GET', '/admin/dead-letters')).json().deadLetters as { id: string; journeyId: string }[],
      (all) => all.some((l) => l.journeyId === journeyId),
    );
    const letter = letters.find((l) => l.journeyId === journeyId)!;
    expect(letter).toMatchObject({ reason: 'journey_not_found', deliveryId, event: 1, patientExamId: 123 });

    const tooEarly = await admin('POST', `/admin/dead-letters/${letter.id}/replay`);
    expect(expectProblem(tooEarly, 409).detail).toMatch(/no journey jreplaylater exists/);

    const input: JourneyInput = {
      ...(gfeBody() as Omit<JourneyInput, 'clinicId' | 'journeyId' | 'timings'>),
      clinicId: 'clinic-a',
      journeyId,
      timings: DEFAULT_TIMINGS,
    };
    await stack.client.workflow.start('patientJourney', {
      workflowId: journeyWorkflowId(journeyId),
      taskQueue: TASK_QUEUE,
      args: [input],
      typedSearchAttributes: [{ key: SearchAttr.ClinicId, value: 'clinic-a' }],
    });
    const replay = await admin('POST', `/admin/dead-letters/${letter.id}/replay`);
    expect(replay.statusCode).toBe(200);
    expect(replay.json()).toEqual({ id: letter.id, outcome: 'signalled' });
    expectProblem(await admin('GET', `/admin/dead-letters/${letter.id}`), 404);
    const j = await eventually(
      () => journeyOf(stack.app, journeyId),
      (v) => v.journey?.events?.length === 1,
    );
    expect(j.journey.events[0]).toMatchObject({ deliveryId, patientExamId: 123 });
  });

  it('acknowledges without waiting for a slow Temporal: the forwarder signals in the background, once', async () => {
    const { journeyId, patientExamId } = await invitedJourney('wh-late');
    // Every signal of this client waits until the test lets it go: an answer before then did not wait for it.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let signalsStarted = 0;
    const slow: WorkflowClientInterceptor = {
      async signal(input, next) {
        signalsStarted++;
        await held;
        return next(input);
      },
    };
    const slowClient = new Client({ connection: stack.client.connection, interceptors: { workflow: [slow] } });
    const lateDirs = tempDataDir();
    const lateApp = await buildApp({
      config: testConfig(lateDirs.dataDir, { TEMPORAL_TASK_QUEUE: TASK_QUEUE }),
      temporal: slowClient,
      examServiceFor: () => fakeExamService(),
      forwarderMinBackoffMs: 50,
    });
    await lateApp.ready();
    try {
      const res = await lateApp.inject({ method: 'POST', url: webhookPath(journeyId), payload: event1(patientExamId) });
      // Answered from the inbox while its signal is still held.
      expect(res.statusCode).toBe(200);
      await eventually(
        () => Promise.resolve(signalsStarted),
        (n) => n >= 1,
      );
      expect((await lateApp.callbacks.inbox.stats()).depth).toBe(1);
      release();
      expect(await seriesValue(lateApp.metrics.callbacks, { event: '1', outcome: 'accepted' })).toBe(1);
      expect(await lateApp.callbacks.forwarder.drained(10_000)).toBe(true);
      expect((await lateApp.callbacks.inbox.stats()).depth).toBe(0);
      const done = await eventually(
        () => journeyOf(stack.app, journeyId),
        (j) => j.journey.stage === 'completed',
      );
      expect(done.journey.events).toEqual([
        expect.objectContaining({ deliveryId: res.json().deliveryId, disposition: 'applied' }),
      ]);
      expect(await seriesValue(lateApp.metrics.forwarded)).toBe(1);
    } finally {
      release(); // a failed expectation must not leave the forwarder's signal held
      await lateApp.close();
      lateDirs.cleanup();
    }
  });

  it('acknowledges while Temporal is unreachable and forwards the inbox when the API starts again', async () => {
    const { journeyId, patientExamId } = await invitedJourney('wh-spool');
    const inboxDir = `${stack.dirs.dataDir}/inbox-restart`;
    const spoolConfig: Config = {
      ...stack.config,
      inbox: { ...(stack.config.inbox as Extract<Config['inbox'], { store: 'files' }>), dir: inboxDir },
      api: { ...stack.config.api, temporalTimeoutMs: 500 },
    };
    const down = await unreachableTemporal();
    const cut = await buildApp({
      config: spoolConfig,
      temporal: down,
      examServiceFor: () => fakeExamService(),
      startForwarder: false,
    });
    const res = await cut.inject({ method: 'POST', url: webhookPath(journeyId), payload: event1(patientExamId) });
    expect(res.statusCode).toBe(200);
    await cut.close();
    await down.connection.close();
    // One log segment holds it.
    const spooled = readdirSync(inboxDir);
    expect(spooled).toEqual([expect.stringMatching(/^seg_\d{15}\.log$/)]);

    // A new API process (same inbox folder) with Temporal back drains it on start.
    const back = await buildApp({
      config: spoolConfig,
      temporal: stack.client,
      examServiceFor: () => fakeExamService(),
      forwarderMinBackoffMs: 50,
    });
    await back.ready();
    try {
      expect(await back.callbacks.forwarder.drained(15_000)).toBe(true);
      // Settled: the segment that held it is deleted (the new process writes to segments of its own).
      expect((await back.callbacks.inbox.stats()).depth).toBe(0);
      expect(readdirSync(inboxDir)).not.toContain(spooled[0]);
      const done = await eventually(
        () => journeyOf(stack.app, journeyId),
        (j) => j.journey.stage === 'completed',
      );
      expect(done.journey.events).toEqual([
        expect.objectContaining({ deliveryId: res.json().deliveryId, disposition: 'applied' }),
      ]);
      expect(await seriesValue(back.metrics.forwarded)).toBe(1);
    } finally {
      await back.close();
    }
  });
});
