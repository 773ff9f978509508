// Log lines as JSON with ids, never bodies: the worker's Runtime logger writes one JSON object per line with the SDK's
// attributes; the API's request lines of a journey carry its journeyId and workflowId.
import { Writable } from 'node:stream';
import type { LogEntry } from '@temporalio/worker';
import { buildApp, type ApiApp } from '../../src/api/app';
import { apiLoggerOptions } from '../../src/api/server';
import { jsonLogger, jsonLogLine } from '../../src/observability/json-log';
import { journeyWorkflowId } from '../../src/contract/definitions';
import {
  auth,
  eventually,
  fakeExamService,
  gfeBody,
  tempDataDir,
  testConfig,
  TOKENS,
  unreachableTemporal,
  webhookPath,
  type TestDirs,
} from '../api/support';

describe("the worker's log lines", () => {
  const entry = (over: Partial<LogEntry> = {}): LogEntry => ({
    level: 'WARN',
    message: 'Activity failed',
    timestampNanos: 1_764_000_000_123_456_789n,
    meta: {
      sdkComponent: 'activity',
      workflowId: 'journey-jabcdefghijklmnopqrstuvwxyz',
      activityType: 'createInvite',
      taskQueue: 'patient-journeys',
      attempt: 2,
      error: Object.assign(new Error('exam service exam_invite: server (HTTP 500)'), { name: 'ApplicationFailure' }),
    },
    ...over,
  });

  it('are one JSON object each, with level, time, message and the SDK attributes', () => {
    const line = jsonLogLine(entry(), { service: 'patient-journey-worker', pid: 7, hostname: 'w1' });
    expect(line.endsWith('\n')).toBe(true);
    expect(line.trimEnd()).not.toContain('\n');
    expect(JSON.parse(line)).toEqual({
      level: 40,
      time: 1_764_000_000_123,
      pid: 7,
      hostname: 'w1',
      service: 'patient-journey-worker',
      sdkComponent: 'activity',
      workflowId: 'journey-jabcdefghijklmnopqrstuvwxyz',
      activityType: 'createInvite',
      taskQueue: 'patient-journeys',
      attempt: 2,
      error: {
        type: 'ApplicationFailure',
        message: 'exam service exam_invite: server (HTTP 500)',
        stack: expect.any(String),
      },
      msg: 'Activity failed',
    });
  });

  it('keep their own fields from an attribute of the same name, and survive a circular attribute', () => {
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    const clash = JSON.parse(jsonLogLine(entry({ meta: { level: 'x', msg: 'y' } }), { service: 's' }));
    expect(clash).toMatchObject({ level: 40, msg: 'Activity failed', 'meta.level': 'x', 'meta.msg': 'y' });
    const dropped = JSON.parse(jsonLogLine(entry({ meta: { circular } }), { service: 's' }));
    expect(dropped).toMatchObject({ level: 40, msg: 'Activity failed', attributesDropped: true });
  });

  it('go out at the logger level and above, one per line', () => {
    const lines: string[] = [];
    const logger = jsonLogger('INFO', 'patient-journey-worker', (l) => lines.push(l));
    logger.debug('not shown', { workflowId: 'w' });
    logger.info('Workflow started', { workflowId: 'journey-j1', workflowType: 'patientJourney' });
    logger.error('Workflow failed', { workflowId: 'journey-j1', runId: 'r-1' });
    expect(lines.map((l) => JSON.parse(l) as Record<string, unknown>)).toEqual([
      expect.objectContaining({
        level: 30,
        msg: 'Workflow started',
        workflowId: 'journey-j1',
        workflowType: 'patientJourney',
      }),
      expect.objectContaining({ level: 50, msg: 'Workflow failed', runId: 'r-1' }),
    ]);
  });
});

describe("the API's request lines", () => {
  let app: ApiApp;
  let dirs: TestDirs;
  const lines: Record<string, unknown>[] = [];

  beforeAll(async () => {
    dirs = tempDataDir();
    const stream = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(l));
        done();
      },
    });
    app = await buildApp({
      config: testConfig(dirs.dataDir),
      temporal: await unreachableTemporal(),
      examServiceFor: () => fakeExamService(),
      startForwarder: false,
      // The entry's own logger options, its serializers and redaction included.
      logger: { ...apiLoggerOptions({ logLevel: 'info' }), stream },
    });
  });
  afterAll(async () => {
    await app?.close();
    dirs?.cleanup();
  });
  beforeEach(() => (lines.length = 0));

  /** "request completed" is written once the response has finished, after inject has resolved. */
  const completed = (n: number) =>
    eventually(
      () => Promise.resolve(lines.filter((l) => l.msg === 'request completed')),
      (c) => c.length >= n,
      { timeoutMs: 5_000, intervalMs: 20 },
    );

  it("carry a journey route's journeyId and workflowId, not its body", async () => {
    const journeyId = 'jabcdefghijklmnopqrstuvwxyz';
    const res = await app.inject({
      method: 'POST',
      url: `/v1/journeys/${journeyId}/answers`,
      headers: auth(TOKENS.a),
      payload: { answers: [{ examId: 101, answers: [{ no: 1, answer: 'Quillfeather takes lisinopril' }] }] },
    });
    expect(res.statusCode).toBeGreaterThanOrEqual(400);
    expect(await completed(1)).toEqual([
      expect.objectContaining({
        service: 'patient-journey-api',
        journeyId,
        workflowId: journeyWorkflowId(journeyId),
        res: expect.anything(),
      }),
    ]);
    expect(JSON.stringify(lines)).not.toContain('Quillfeather');
  });

  it("give a callback no request lines, and a line the webhook writes its journey's ids and request id", async () => {
    const journeyId = 'jwebhooklinesabcdefghijklmn';
    // Taken: nothing written. Kept as a dead letter (not JSON): one warning, ids only.
    const ok = await app.inject({ method: 'POST', url: webhookPath(journeyId), payload: { event: 1 } });
    expect(ok.statusCode).toBe(200);
    const res = await app.inject({ method: 'POST', url: webhookPath(journeyId), payload: 'not json, Quillfeather' });
    expect(res.statusCode).toBe(400);
    await new Promise((r) => setTimeout(r, 50));
    expect(lines).toEqual([
      expect.objectContaining({
        level: 40,
        msg: 'callback kept as a dead letter',
        reqId: expect.any(String),
        journeyId,
        workflowId: journeyWorkflowId(journeyId),
        refusal: 'unreadable',
      }),
    ]);
    expect(JSON.stringify(lines)).not.toContain('Quillfeather');
    // A journey id of another shape is not repeated in the line.
    lines.length = 0;
    await app.inject({ method: 'POST', url: webhookPath('Jane-Doe-1961'), payload: 'not json' });
    await new Promise((r) => setTimeout(r, 50));
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toHaveProperty('workflowId');
  });

  it('leave out a path segment that is not a journey id of ours', async () => {
    await app.inject({ method: 'GET', url: '/v1/journeys/Jane-Doe-1961', headers: auth(TOKENS.a) });
    await app.inject({ method: 'POST', url: '/v1/journeys', headers: auth(TOKENS.a), payload: gfeBody() });
    expect(await completed(2)).toHaveLength(2);
    for (const line of lines) expect(line).not.toHaveProperty('journeyId');
    expect(JSON.stringify(lines)).not.toContain('Jane-Doe');
  });
});
