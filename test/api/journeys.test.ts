// The clinic API against a real Temporal dev server and a worker running the real journey workflow (activities are
// fakes that invite at once): idempotent starts, catalog checks, reads, lists, clinic isolation and the updates.
import { useApiHarness } from '../support/api-harness';
import { auth, eventually, expectProblem, fakeActivities, gfeBody, startJourney, TOKENS } from './support';

const TASK_QUEUE = 'api-journeys';

describe('clinic API with Temporal', () => {
  const fakes = fakeActivities(70_000);
  const stack = useApiHarness({ taskQueue: TASK_QUEUE, worker: fakes.activities, app: { startForwarder: false } });

  const get = (url: string, token = TOKENS.a) => stack.app.inject({ method: 'GET', url, headers: auth(token) });
  const post = (url: string, payload: object, token = TOKENS.a) =>
    stack.app.inject({ method: 'POST', url, headers: auth(token), payload });
  const journeyOf = (id: string) => get(`/v1/journeys/${id}`).then((r) => r.json());
  const invited = (id: string) =>
    eventually(
      () => journeyOf(id),
      (j) => j.journey?.stage === 'awaiting_consultation',
    );

  describe('start', () => {
    it('starts once per Idempotency-Key: 201, then 200 with the same journey, 409 for another body', async () => {
      const first = await startJourney(stack.app, 'order-1001');
      expect(first.statusCode).toBe(201);
      const { journeyId, created, links } = first.json();
      expect(created).toBe(true);
      expect(journeyId).toMatch(/^j[a-z2-7]{26}$/);
      expect(first.headers.location).toBe(`/v1/journeys/${journeyId}`);
      expect(links.cancel).toBe(`/v1/journeys/${journeyId}/cancel`);

      const replay = await startJourney(stack.app, 'order-1001');
      expect(replay.statusCode).toBe(200);
      expect(replay.json()).toMatchObject({ journeyId, created: false });

      // Key order and whitespace do not matter: the hash is over the canonical body.
      const reordered = await startJourney(
        stack.app,
        'order-1001',
        Object.fromEntries(Object.entries(gfeBody()).reverse()),
      );
      expect(reordered.statusCode).toBe(200);

      const other = await startJourney(stack.app, 'order-1001', gfeBody({ exams: [101, 102] }));
      expect(expectProblem(other, 409, ['headers.idempotency-key']).detail).toMatch(/different request body/);

      const runs = [];
      for await (const w of stack.client.workflow.list({ query: `WorkflowId = 'journey-${journeyId}'` })) runs.push(w);
      expect(runs).toHaveLength(1);
    });

    it('never starts a second workflow when the same key arrives twice at once', async () => {
      const results = await Promise.all([startJourney(stack.app, 'order-race'), startJourney(stack.app, 'order-race')]);
      expect(results.map((r) => r.statusCode).sort()).toEqual([200, 201]);
      expect(new Set(results.map((r) => r.json().journeyId)).size).toBe(1);
    });

    it("keeps the same key of two clinics apart (each clinic's own journey)", async () => {
      const a = await startJourney(stack.app, 'shared-key', gfeBody(), TOKENS.a);
      const b = await startJourney(stack.app, 'shared-key', gfeBody(), TOKENS.b);
      expect([a.statusCode, b.statusCode]).toEqual([201, 201]);
      expect(a.json().journeyId).not.toBe(b.json().journeyId);
    });

    it("checks the request against the clinic's live exam list and names the failing fields", async () => {
      const unknown = await startJourney(stack.app, 'cat-1', gfeBody({ exams: [101, 999] }));
      expect(expectProblem(unknown, 400, ['exams.1']).detail).toMatch(/999 is not in the clinic's exam list/);

      const rxInGfe = await startJourney(stack.app, 'cat-2', gfeBody({ exams: [201] }));
      expectProblem(rxInGfe, 400, ['scenario.type']);

      const missingLab = await startJourney(stack.app, 'cat-3', gfeBody({ exams: [102] }));
      expect(expectProblem(missingLab, 400, ['attachments']).detail).toMatch(/missing Lab/);

      const foreignRef = await startJourney(
        stack.app,
        'cat-4',
        gfeBody({
          exams: [102],
          attachments: [
            {
              examId: 102,
              attachment: {
                ref: 'att_notInTheStore1',
                kind: 'Lab',
                fileName: 'l.pdf',
                contentType: 'application/pdf',
                size: 3,
              },
            },
          ],
        }),
      );
      expectProblem(foreignRef, 400, ['attachments.0.attachment.ref']);
    });

    it('takes attachments stored beforehand (multipart) and the workflow uploads them after the invite', async () => {
      const boundary = 'B0UNDARY';
      const upload = await stack.app.inject({
        method: 'POST',
        url: '/v1/attachments',
        headers: { ...auth(TOKENS.a), 'content-type': `multipart/form-data; boundary=${boundary}` },
        payload:
          `--${boundary}\r\nContent-Disposition: form-data; name="kind"\r\n\r\nLab\r\n` +
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="lab.pdf"\r\nContent-Type: application/pdf\r\n\r\n%PDF-1.4 lab\r\n` +
          `--${boundary}--\r\n`,
      });
      expect(upload.statusCode).toBe(201);
      const attachment = upload.json().attachment;
      expect(attachment).toMatchObject({ kind: 'Lab', fileName: 'lab.pdf', contentType: 'application/pdf', size: 12 });
      expect(attachment.ref).toMatch(/^att_/);

      // Another clinic cannot use it.
      const body = gfeBody({ exams: [102], attachments: [{ examId: 102, attachment }] });
      expectProblem(await startJourney(stack.app, 'with-lab', body, TOKENS.b), 400, ['attachments.0.attachment.ref']);

      const started = await startJourney(stack.app, 'with-lab', body);
      expect(started.statusCode).toBe(201);
      const journeyId = started.json().journeyId;
      const j = await invited(journeyId);
      expect(j.journey.exams[0].attachmentsUploaded).toEqual(['Lab']);
      const uploaded = fakes.calls.filter((c) => c.name === 'uploadAttachment').map((c) => (c.arg as any).attachment);
      expect(uploaded).toContainEqual(attachment);
    });
  });

  describe('read and list', () => {
    let journeyA: string;
    let journeyB: string;

    beforeAll(async () => {
      journeyA = (await startJourney(stack.app, 'read-a')).json().journeyId;
      journeyB = (await startJourney(stack.app, 'read-b', gfeBody(), TOKENS.b)).json().journeyId;
      await invited(journeyA);
    });

    it('shows the journey from the workflow: stage, exams, events, deadlines', async () => {
      const res = await get(`/v1/journeys/${journeyA}`);
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body).toMatchObject({ journeyId: journeyA, workflowStatus: 'RUNNING', source: 'query', closedAt: null });
      expect(body.journey).toMatchObject({
        clinicId: 'clinic-a',
        scenario: 'gfe',
        stage: 'awaiting_consultation',
        events: [],
        exams: [expect.objectContaining({ examId: 101, status: 'pending' })],
      });
      expect(body.journey.deadlines.map((d: { action: string }) => d.action)).toContain('expire_meeting');
    });

    it("answers 404 for another clinic's journey, for reads and actions alike, and for an unknown id", async () => {
      expectProblem(await get(`/v1/journeys/${journeyB}`), 404);
      expectProblem(await post(`/v1/journeys/${journeyB}/cancel`, {}), 404);
      expectProblem(await post(`/v1/journeys/${journeyB}/resend`, {}), 404);
      expectProblem(await get(`/v1/journeys/jdoesnotexist`), 404);
      expect((await get(`/v1/journeys/${journeyB}`, TOKENS.b)).statusCode).toBe(200);
    });

    it("lists only the caller's journeys, filtered and paginated", async () => {
      const listA = await eventually(
        () => get('/v1/journeys?pageSize=100').then((r) => r.json()),
        (l) => l.journeys?.some((j: { journeyId: string }) => j.journeyId === journeyA),
      );
      const idsA = listA.journeys.map((j: { journeyId: string }) => j.journeyId);
      expect(idsA).not.toContain(journeyB);
      const listB = (await get('/v1/journeys?pageSize=100', TOKENS.b)).json();
      expect(listB.journeys.map((j: { journeyId: string }) => j.journeyId)).toContain(journeyB);
      expect(listB.journeys.map((j: { journeyId: string }) => j.journeyId)).not.toContain(journeyA);

      const entry = listA.journeys.find((j: { journeyId: string }) => j.journeyId === journeyA);
      expect(entry).toMatchObject({
        scenario: 'gfe',
        workflowStatus: 'RUNNING',
        links: { self: `/v1/journeys/${journeyA}` },
      });

      const awaiting = await eventually(
        () =>
          get('/v1/journeys?stage=awaiting_consultation&examStatus=pending&needsAttention=false').then((r) => r.json()),
        (l) => l.journeys.some((j: { journeyId: string }) => j.journeyId === journeyA),
      );
      expect(awaiting.journeys.every((j: { stage: string }) => j.stage === 'awaiting_consultation')).toBe(true);
      const none = (await get('/v1/journeys?scenario=urgent_care')).json();
      expect(none.journeys).toEqual([]);

      const page1 = (await get('/v1/journeys?pageSize=2')).json();
      expect(page1.journeys).toHaveLength(2);
      expect(page1.nextPageToken).toEqual(expect.any(String));
      const page2 = (await get(`/v1/journeys?pageSize=2&nextPageToken=${page1.nextPageToken}`)).json();
      const ids1 = page1.journeys.map((j: { journeyId: string }) => j.journeyId);
      for (const j of page2.journeys) expect(ids1).not.toContain(j.journeyId);

      // A token only continues the list it came from: not forged, not with other filters, not for another clinic.
      const forged = await get('/v1/journeys?nextPageToken=bm90LWEtcGFnZS10b2tlbg.AAAAAAAAAAAAAAAAAAAAAA');
      expectProblem(forged, 400, ['querystring.nextPageToken']);
      const otherFilter = await get(`/v1/journeys?pageSize=2&stage=completed&nextPageToken=${page1.nextPageToken}`);
      expectProblem(otherFilter, 400, ['querystring.nextPageToken']);
      const otherClinic = await get(`/v1/journeys?pageSize=2&nextPageToken=${page1.nextPageToken}`, TOKENS.b);
      expectProblem(otherClinic, 400, ['querystring.nextPageToken']);
    });
  });

  describe('actions', () => {
    let journeyId: string;
    let patientExamId: number;

    beforeAll(async () => {
      journeyId = (await startJourney(stack.app, 'act-1')).json().journeyId;
      patientExamId = (await invited(journeyId)).journey.exams[0].patientExamId;
    });

    it('resends the invite and submits answers through the workflow', async () => {
      const resend = await post(`/v1/journeys/${journeyId}/resend`, {});
      expect(resend.statusCode).toBe(200);
      expect(resend.json()).toEqual({ journeyId, result: { resent: [patientExamId] } });

      const answers = await post(`/v1/journeys/${journeyId}/answers`, {
        patientExamId,
        answers: [
          { no: 1, question: 'Allergies?', answer: 'none' },
          { no: 3, question: 'Conditions', answer: ['Diabetes', 'Other: asthma'] },
        ],
      });
      expect(answers.statusCode).toBe(200);
      expect(answers.json().result).toEqual({ answered: 2 });
    });

    it('uploads an attachment as JSON base64 to a patient exam', async () => {
      const res = await post(`/v1/journeys/${journeyId}/attachments`, {
        patientExamId,
        kind: 'ID',
        fileName: 'id.jpg',
        contentType: 'image/jpeg',
        contentBase64: Buffer.from('jpeg bytes').toString('base64'),
      });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({
        journeyId,
        attachment: { kind: 'ID', fileName: 'id.jpg', size: 10 },
        result: { attachmentId: expect.stringMatching(/^upl-att_/) },
      });
      const stored = await stack.app.attachments.get(res.json().attachment.ref);
      expect(stored?.bytes.toString()).toBe('jpeg bytes');
    });

    it("answers the workflow validator's refusal with 409 and its message", async () => {
      const res = await post(`/v1/journeys/${journeyId}/resend`, { patientExamId: 1 });
      expect(expectProblem(res, 409).detail).toBe('patient exam 1 is not part of this journey');
      const answers = await post(`/v1/journeys/${journeyId}/answers`, {
        patientExamId: 1,
        answers: [{ no: 1, question: 'q', answer: 'a' }],
      });
      expect(expectProblem(answers, 409).detail).toMatch(/not part of this journey/);
    });

    it('cancels the invite; the ended journey is still readable and refuses further actions', async () => {
      const res = await post(`/v1/journeys/${journeyId}/cancel`, { reason: 'patient called' });
      expect(res.statusCode).toBe(200);
      expect(res.json().result).toEqual({ cancelled: [patientExamId], alreadyFinal: [] });

      const ended = await eventually(
        () => journeyOf(journeyId),
        (j) => j.workflowStatus === 'COMPLETED',
      );
      expect(ended).toMatchObject({ source: 'query', journey: { stage: 'cancelled' }, closedAt: expect.any(String) });
      const again = await post(`/v1/journeys/${journeyId}/resend`, {});
      expect(expectProblem(again, 409).detail).toMatch(/the journey has ended/);
    });

    it('falls back to the workflow result when no worker answers the query', async () => {
      await stack.stopWorker();
      const res = await get(`/v1/journeys/${journeyId}`);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({
        source: 'result',
        journey: { journeyId, stage: 'cancelled', eventsApplied: 0 },
      });
    });
  });
});
