// The webhook against hostile input, with a real Temporal dev server and the real journey workflow: one sender's bad
// bodies never cost another's callback, a stream of large callbacks on one journey's URL leaves it running with a
// bounded history, and a journey Temporal ended never reads as waiting.
import { useApiHarness } from '../support/api-harness';
import {
  auth,
  event1,
  eventually,
  fakeActivities,
  gfeBody,
  startJourney,
  TOKENS,
  webhookPath,
  withInviteInDoubt,
} from './support';

const TASK_QUEUE = 'api-hostile-webhook';

describe('webhook against hostile input', () => {
  const fakes = fakeActivities(70_000);
  // A patient named "Doubt" gets an invite in doubt: sent, and no answer came.
  const activities = withInviteInDoubt(fakes.activities, (req) => req.input.patient.lastName === 'Doubt');
  const stack = useApiHarness({
    taskQueue: TASK_QUEUE,
    worker: activities,
    app: { forwarderMinBackoffMs: 50 },
  });
  beforeAll(() => {
    fakes.visibility.client = stack.client;
  });

  const journeyOf = (id: string, token = TOKENS.a) =>
    stack.app.inject({ method: 'GET', url: `/v1/journeys/${id}`, headers: auth(token) }).then((r) => r.json());
  const deadLetters = async (reason: string) =>
    (
      await stack.app.inject({
        method: 'GET',
        url: `/admin/dead-letters?reason=${reason}&limit=500`,
        headers: auth(TOKENS.admin),
      })
    ).json().deadLetters as { id: string; journeyId: string }[];

  async function invitedJourney(key: string, token: string): Promise<{ journeyId: string; patientExamId: number }> {
    const journeyId = (await startJourney(stack.app, key, gfeBody(), token)).json().journeyId as string;
    const j = await eventually(
      () => journeyOf(journeyId, token),
      (v) => v.journey?.stage === 'awaiting_consultation',
    );
    return { journeyId, patientExamId: j.journey.exams[0].patientExamId };
  }

  it('answers every well-formed callback of another clinic 200 the first time while one URL is flooded with poison', async () => {
    const target = await invitedJourney('hostile-a', TOKENS.a);
    const others = await Promise.all(Array.from({ length: 8 }, (_v, i) => invitedJourney(`hostile-b-${i}`, TOKENS.b)));
    // 500,000 levels of nesting, about 1 MB: parsed, it cannot be written as JSON again.
    const poison = `{"event":1,"x":${'['.repeat(500_000)}${']'.repeat(500_000)}}`;
    const sends = [
      ...Array.from({ length: 40 }, () =>
        stack.app.inject({
          method: 'POST',
          url: webhookPath(target.journeyId),
          headers: { 'content-type': 'application/json' },
          payload: poison,
        }),
      ),
      ...others.map((o) =>
        stack.app.inject({ method: 'POST', url: webhookPath(o.journeyId), payload: event1(o.patientExamId) }),
      ),
    ];
    const answers = await Promise.all(sends);
    const poisoned = answers.slice(0, 40);
    const wellFormed = answers.slice(40);
    for (const a of wellFormed) expect(a.statusCode).toBe(200);
    // Each poison body is refused alone and kept for operators.
    for (const p of poisoned) {
      expect(p.statusCode).toBe(400);
      expect(p.json().detail).toMatch(/nested deeper than 32 levels/);
    }
    for (const o of others) {
      const done = await eventually(
        () => journeyOf(o.journeyId, TOKENS.b),
        (j) => j.journey.stage === 'completed',
      );
      expect(done.journey.events).toEqual([expect.objectContaining({ disposition: 'applied' })]);
    }
    const kept = (await deadLetters('unparseable')).filter((l) => l.journeyId === target.journeyId);
    expect(kept).toHaveLength(40);
  }, 120_000);

  it('keeps a journey sent a stream of large callbacks running, its history bounded, the rest held for a person', async () => {
    const { journeyId } = await invitedJourney('hostile-stream', TOKENS.a);
    // About 400 KB each: 150 of them would have put 60 MB into the history, past Temporal's 50 MB limit.
    const answers = 'a'.repeat(400_000);
    const sent = 150;
    for (let i = 0; i < sent; i += 10) {
      const batch = await Promise.all(
        Array.from({ length: 10 }, (_v, k) =>
          stack.app.inject({
            method: 'POST',
            url: webhookPath(journeyId),
            payload: { ...event1(80_000 + i + k), questions_answers: [{ question: 'q', answer: answers }] },
          }),
        ),
      );
      for (const a of batch) expect(a.statusCode).toBe(200);
    }
    expect(await stack.app.callbacks.forwarder.drained(60_000)).toBe(true);
    const view = await eventually(
      () => journeyOf(journeyId),
      (j) => (j.journey.attention ?? []).some((a: { code: string }) => a.code === 'callback_flood'),
    );
    expect(view.workflowStatus).toBe('RUNNING');
    expect(view.journey.stage).toBe('needs_attention');
    // Every callback is somewhere: in the journey, or kept as a dead letter for the person it waits for.
    const flooded = (await deadLetters('journey_flooded')).filter((l) => l.journeyId === journeyId);
    expect(view.journey.events.length + flooded.length).toBe(sent);
    expect(flooded.length).toBeGreaterThan(0);
    const desc = await stack.client.workflow.getHandle(`journey-${journeyId}`).describe();
    expect(desc.historySize).toBeLessThan(2 * 1024 * 1024);
  }, 180_000);

  it("adopts for a journey in doubt only a patient exam proven its own, never another clinic's", async () => {
    type Attention = { code: string; message: string };
    const codes = (j: { journey: { attention?: Attention[] } }) => (j.journey.attention ?? []).map((a) => a.code);
    // Clinic B's journey holds patient exam 70_000 + n; its patient is someone else.
    const other = await invitedJourney('hostile-owner-b', TOKENS.b);
    await eventually(
      () => stack.client.workflow.count(`PatientExamIds = '${other.patientExamId}'`),
      (c) => c.count === 1,
    );
    const doubtful = async (key: string, email: string) => {
      const body = gfeBody({ patient: { ...gfeBody().patient, lastName: 'Doubt', email } });
      const journeyId = (await startJourney(stack.app, key, body, TOKENS.a)).json().journeyId as string;
      await eventually(
        () => journeyOf(journeyId),
        (j) => codes(j).includes('invite_ambiguous'),
      );
      return journeyId;
    };
    const send = (journeyId: string, payload: object) =>
      stack.app.inject({ method: 'POST', url: webhookPath(journeyId), payload });

    // Clinic A's journey in doubt is sent clinic B's patient exam, with A's own patient named: held, not adopted.
    const a = await doubtful('hostile-doubt-a', 'alex@example.com');
    expect((await send(a, { ...event1(other.patientExamId), patient_email: 'alex@example.com' })).statusCode).toBe(200);
    const held = await eventually(
      () => journeyOf(a),
      (j) => codes(j).includes('callback_held'),
    );
    expect(held.journey.exams).toEqual([]);
    expect(codes(held)).toEqual(['invite_ambiguous', 'callback_held']);
    expect(held.journey.attention[1].message).toMatch(/another journey holds it/);
    expect(held.journey.events).toEqual([expect.objectContaining({ disposition: 'held' })]);
    // Clinic B's journey is untouched and takes its own verdict.
    expect((await send(other.journeyId, event1(other.patientExamId))).statusCode).toBe(200);
    await eventually(
      () => journeyOf(other.journeyId, TOKENS.b),
      (j) => j.journey.stage === 'completed',
    );

    // A patient exam no journey holds, but naming another patient: held.
    const b = await doubtful('hostile-doubt-b', 'blair@example.com');
    expect((await send(b, { ...event1(79_001), patient_email: 'someone@example.com' })).statusCode).toBe(200);
    const stranger = await eventually(
      () => journeyOf(b),
      (j) => codes(j).includes('callback_held'),
    );
    expect(stranger.journey.attention[1].message).toMatch(/its patient is not this journey's/);
    expect(stranger.journey.exams).toEqual([]);

    // Its own patient, an exam it asked for, a patient exam no other journey holds: adopted, the doubt settled.
    const c = await doubtful('hostile-doubt-c', 'casey@example.com');
    expect((await send(c, { ...event1(79_002), patient_email: 'Casey@Example.com' })).statusCode).toBe(200);
    const adopted = await eventually(
      () => journeyOf(c),
      (j) => j.journey.stage === 'completed',
    );
    expect(adopted.journey.exams).toEqual([expect.objectContaining({ patientExamId: 79_002, status: 'Approved' })]);
    expect(codes(adopted)).toEqual([]);
  }, 120_000);

  it('reads a journey whose workflow Temporal terminated as ended and needing a person, never as waiting', async () => {
    const { journeyId } = await invitedJourney('hostile-terminated', TOKENS.a);
    await stack.client.workflow.getHandle(`journey-${journeyId}`).terminate('history over its limit');
    const view = await journeyOf(journeyId);
    expect(view.workflowStatus).toBe('TERMINATED');
    expect(view.journey.stage).toBe('failed');
    expect(view.journey.attention).toEqual(
      expect.arrayContaining([expect.objectContaining({ code: 'workflow_ended' })]),
    );
    type Row = { journeyId: string; stage: string; needsAttention: boolean; workflowStatus: string };
    const listed = await eventually(
      async () =>
        (await stack.app.inject({ method: 'GET', url: '/v1/journeys?pageSize=100', headers: auth(TOKENS.a) })).json()
          .journeys as Row[],
      (rows) => rows.some((r) => r.journeyId === journeyId && r.workflowStatus === 'TERMINATED'),
    );
    expect(listed.find((r) => r.journeyId === journeyId)).toMatchObject({ stage: 'failed', needsAttention: true });
  });
});
