// Uploads have bounds: each clinic's quota on stored attachments and bytes is answered 429 before anything is stored
// (both upload routes); an upload the journey refuses (409) or that comes after it ended leaves nothing stored; and the
// sweep deletes uploads no journey took, keeps those a journey took, and puts each deletion on the audit trail.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sweepOrphanUploads } from '../../src/api/orphan-uploads';
import { useApiHarness } from '../support/api-harness';
import { auth, eventually, expectProblem, fakeActivities, gfeBody, startJourney, TOKENS } from './support';

const FILE_NAME = 'Pemberton-Okafor ferritin.pdf';

describe('upload bounds', () => {
  const auditDir = mkdtempSync(path.join(tmpdir(), 'attachment-bounds-audit-'));
  const auditFile = path.join(auditDir, 'audit.jsonl');
  afterAll(() => rmSync(auditDir, { recursive: true, force: true }));

  const fakes = fakeActivities(60_000);
  const stack = useApiHarness({
    taskQueue: 'api-attachment-bounds',
    worker: fakes.activities,
    env: {
      AUDIT_FILE: auditFile,
      ATTACHMENTS_QUOTA_COUNT: '5',
      ATTACHMENTS_QUOTA_BYTES: '1000',
      // A grace the starts keep within however slow the machine; the sweep runs on a clock a minute ahead, when the
      // test decides.
      ATTACHMENTS_ORPHAN_GRACE_MS: '5000',
    },
    app: { startForwarder: false },
  });

  const preUpload = (size: number, token = TOKENS.a) =>
    stack.app.inject({
      method: 'POST',
      url: '/v1/attachments',
      headers: auth(token),
      payload: { kind: 'Lab', fileName: FILE_NAME, contentType: 'application/pdf', contentBase64: b64(size) },
    });
  const upload = (journeyId: string, patientExamId: number, size = 10) =>
    stack.app.inject({
      method: 'POST',
      url: `/v1/journeys/${journeyId}/attachments`,
      headers: auth(TOKENS.a),
      payload: { patientExamId, kind: 'ID', fileName: FILE_NAME, contentType: 'image/jpeg', contentBase64: b64(size) },
    });
  const b64 = (size: number) => Buffer.alloc(size, 1).toString('base64');
  /** The records in the folder store (usage entries aside). */
  const records = () => {
    const dir = stack.config.attachmentsDir;
    return existsSync(dir) ? readdirSync(dir).filter((n) => n !== 'usage') : [];
  };
  const usage = (clinicId: string) => stack.app.attachments.usage(clinicId);
  const sweep = async () => {
    const { attachments, journeys, config, audit } = stack.app;
    // A minute on: past the 5 s grace and its margin.
    return sweepOrphanUploads({ attachments, journeys, config, audit, now: () => new Date(Date.now() + 60_000) });
  };
  const invited = async (journeyId: string) =>
    (
      await eventually(
        () => stack.app.inject({ method: 'GET', url: `/v1/journeys/${journeyId}`, headers: auth(TOKENS.a) }),
        (r) => r.json().journey?.stage === 'awaiting_consultation',
      )
    ).json().journey.exams[0].patientExamId as number;

  afterEach(async () => {
    await sweep(); // what no journey took goes, so each test starts from what the journeys hold
  });

  it("answers 429 past the clinic's attachment count, before storing anything, naming the quota and usage only", async () => {
    for (let i = 0; i < 5; i++) expect((await preUpload(10, TOKENS.b)).statusCode).toBe(201);
    const before = records();
    const refused = await preUpload(10, TOKENS.b);
    const problem = expectProblem(refused, 429);
    expect(problem.type).toBe('urn:patient-journeys:problem:attachment-quota-exceeded');
    expect(problem.detail).toMatch(/stores 5 attachments of 5 and 50 bytes of 1000; this upload is 10 bytes/);
    expect(refused.body).not.toContain(FILE_NAME);
    expect(refused.headers['retry-after']).toBeUndefined();
    expect(records()).toEqual(before);
    expect(await usage('clinic-b')).toEqual({ count: 5, bytes: 50 });
    // The other clinic is not held to clinic B's uploads.
    expect((await preUpload(10, TOKENS.a)).statusCode).toBe(201);
  });

  it("answers 429 past the clinic's bytes, on the journey's upload route too, and the journey takes nothing", async () => {
    const journeyId = (await startJourney(stack.app, 'bounds-bytes')).json().journeyId as string;
    const patientExamId = await invited(journeyId);
    expect((await preUpload(900)).statusCode).toBe(201);
    const before = records();
    const calls = fakes.calls.length;

    const refused = await upload(journeyId, patientExamId, 200);
    expect(expectProblem(refused, 429).detail).toMatch(
      /stores 1 attachment of 5 and 900 bytes of 1000; this upload is 200 bytes/,
    );
    expect(expectProblem(await preUpload(101), 429).type).toMatch(/attachment-quota-exceeded$/);
    expect(records()).toEqual(before);
    expect(fakes.calls.length).toBe(calls); // no upload reached the journey

    expect((await upload(journeyId, patientExamId, 100)).statusCode).toBe(200);
    expect(await usage('clinic-a')).toEqual({ count: 2, bytes: 1000 });
  });

  it('leaves nothing stored of an upload the journey refuses (409), nor of one after it ended', async () => {
    const journeyId = (await startJourney(stack.app, 'bounds-refused')).json().journeyId as string;
    const patientExamId = await invited(journeyId);
    const before = records();
    const usageBefore = await usage('clinic-a');

    const notPart = await upload(journeyId, patientExamId + 1000);
    expect(expectProblem(notPart, 409).detail).toMatch(/not part of this journey/);
    expect(records()).toEqual(before);
    expect(await usage('clinic-a')).toEqual(usageBefore);

    const cancelled = await stack.app.inject({
      method: 'POST',
      url: `/v1/journeys/${journeyId}/cancel`,
      headers: auth(TOKENS.a),
      payload: { reason: 'patient called' },
    });
    expect(cancelled.statusCode).toBe(200);
    await eventually(
      () => stack.app.inject({ method: 'GET', url: `/v1/journeys/${journeyId}`, headers: auth(TOKENS.a) }),
      (r) => r.json().workflowStatus === 'COMPLETED',
    );
    expect(expectProblem(await upload(journeyId, patientExamId), 409).detail).toMatch(/the journey has ended/);
    expect(records()).toEqual(before);
    expect(await usage('clinic-a')).toEqual(usageBefore);
  });

  it('sweeps uploads no journey took past their grace; a journey keeps what it took, either way', async () => {
    const taken = (await preUpload(10)).json().attachment;
    const orphan = (await preUpload(10)).json().attachment;
    const started = await startJourney(
      stack.app,
      'bounds-sweep',
      gfeBody({ exams: [102], attachments: [{ examId: 102, attachment: taken }] }),
    );
    expect(started.statusCode).toBe(201);
    const journeyId = started.json().journeyId as string;
    const added = (await upload(journeyId, await invited(journeyId))).json().attachment;

    const result = await sweep();
    expect(result).toEqual({ deleted: 1, stale: 0 });
    const { attachments } = stack.app;
    expect(await attachments.get(orphan.ref)).toBeUndefined();
    expect(await attachments.get(taken.ref)).toBeDefined();
    expect(await attachments.get(added.ref)).toBeDefined();

    const trail = readFileSync(auditFile, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { action: string; details: Record<string, unknown> });
    const expired = trail.filter((r) => r.action === 'attachment.orphan-expire');
    expect(expired.map((r) => r.details)).toContainEqual({
      attachment: orphan.ref,
      clinicId: 'clinic-a',
      reason: 'not_taken',
      size: 10,
    });
    expect(JSON.stringify(expired)).not.toContain(FILE_NAME);
  });

  it('refuses an untaken upload past its grace (the sweep may be deleting it), naming the rule; a taken one is named again', async () => {
    const late = (await preUpload(10)).json().attachment;
    const kept = (await preUpload(10)).json().attachment;
    const first = await startJourney(
      stack.app,
      'bounds-in-time',
      gfeBody({ exams: [102], attachments: [{ examId: 102, attachment: kept }] }),
    );
    expect(first.statusCode).toBe(201);
    await new Promise((r) => setTimeout(r, 5_100)); // past the 5 s grace, not yet past the sweep's margin
    const refused = await startJourney(
      stack.app,
      'bounds-too-late',
      gfeBody({ exams: [102], attachments: [{ examId: 102, attachment: late }] }),
    );
    expectProblem(refused, 400, ['attachments.0.attachment.ref']);
    expect(refused.json().errors[0].rule).toBe('attachment-in-time');
    expect(await stack.app.attachments.get(late.ref)).toBeDefined(); // the sweep's, not the start's, to delete
    // Taken by a journey, it is no orphan: the same patient's next journey names it again.
    const again = await startJourney(
      stack.app,
      'bounds-taken-again',
      gfeBody({ exams: [102], attachments: [{ examId: 102, attachment: kept }] }),
    );
    expect(again.statusCode).toBe(201);
  });
});
