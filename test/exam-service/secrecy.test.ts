import { inspect } from 'node:util';
import { ExamServiceClient } from '../../src/exam-service/client';
import { ExamServiceError, type ExamServiceErrorKind } from '../../src/exam-service/errors';
import type { ExamInviteInput } from '../../src/exam-service/schemas';
import {
  SAMPLE,
  StubExamService,
  closedPortUrl,
  startConnectionDropper,
  type RecordedRequest,
} from '../support/stub-exam-service';

// Regex metacharacters on purpose: redaction must not treat the key as a pattern.
const API_KEY = 'ek_live_9f8e.7d6c+5b4a(SECRET)';

const invite: ExamInviteInput = {
  exams: [101],
  first_name: 'Test',
  last_name: 'Approve',
  email: 'pat@example.test',
  dob: '1990-05-17',
  phone_number: '+15125550100',
  tele_state: 'TE',
};

/** A service that repeats the api_key it received inside its error text, as careless services do. */
const echoing =
  (status: number, message: string, extra: Record<string, unknown> = {}) =>
  (req: RecordedRequest) => ({
    status,
    body: {
      http_code: status,
      error_message: `${message} [key ${(req.body as { api_key: string }).api_key}]`,
      ...extra,
    },
  });

function expectNoKey(err: ExamServiceError): void {
  const surfaces = {
    message: err.message,
    stack: err.stack ?? '',
    json: JSON.stringify(err),
    inspect: inspect(err, { depth: 10 }),
    properties: JSON.stringify(Object.entries(err)),
    serviceMessage: err.serviceMessage ?? '',
    field: err.field ?? '',
  };
  for (const [surface, text] of Object.entries(surfaces)) {
    if (text.includes(API_KEY)) throw new Error(`api_key leaked through ${surface} of a ${err.kind} error`);
  }
}

async function rejection(promise: Promise<unknown>): Promise<ExamServiceError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(ExamServiceError);
    return err as ExamServiceError;
  }
  throw new Error('expected the call to reject');
}

describe('the api_key never leaves through an error', () => {
  let stub: StubExamService;
  let client: ExamServiceClient;
  const consoleCalls: unknown[][] = [];

  beforeAll(() => {
    for (const method of ['log', 'info', 'warn', 'error', 'debug'] as const) {
      jest.spyOn(console, method).mockImplementation((...args: unknown[]) => {
        consoleCalls.push(args);
      });
    }
  });

  afterAll(() => {
    jest.restoreAllMocks();
  });

  beforeEach(async () => {
    stub = await StubExamService.start();
    client = new ExamServiceClient({ baseUrl: stub.url, apiKey: API_KEY, requestTimeoutMs: 300 });
  });

  afterEach(async () => {
    await stub.close();
    await client.close();
  });

  it('covers every error kind, keeping the rest of the service message intact', async () => {
    const seen = new Set<ExamServiceErrorKind>();
    const check = (err: ExamServiceError, kind: ExamServiceErrorKind, serviceMessage?: string) => {
      expect(err.kind).toBe(kind);
      expectNoKey(err);
      if (serviceMessage !== undefined) expect(err.serviceMessage).toBe(serviceMessage);
      seen.add(err.kind);
    };

    stub.reply('exam_list', echoing(401, 'Unauthorized access.'));
    check(await rejection(client.examList()), 'unauthorized', 'Unauthorized access. [key [redacted]]');

    stub.reply('exam_invite', echoing(401, 'Need to add Patient Care Provider via the service Portal!'));
    check(
      await rejection(client.examInvite(invite)),
      'account_setup',
      'Need to add Patient Care Provider via the service Portal! [key [redacted]]',
    );

    stub.reply('exam_invite', echoing(400, 'Invalid dob', { field: 'dob', errors: { dob: [API_KEY] } }));
    check(await rejection(client.examInvite(invite)), 'validation', 'Invalid dob [key [redacted]]');

    stub.reply('exam_invite', (req) => ({ status: 400, text: `bad field near ${JSON.stringify(req.body)}` }));
    check(await rejection(client.examInvite(invite)), 'validation');

    check(await rejection(client.examInvite({ ...invite, phone_number: '555' })), 'validation');

    stub.reply('exam_invite_cancel', echoing(400, 'Exam status is already approved.'));
    check(
      await rejection(client.cancelInvite({ patient_exam_id: 90001 })),
      'already_final',
      'Exam status is already approved. [key [redacted]]',
    );

    stub.reply('exam_list', (req) => ({ status: 500, text: `Fatal: ${req.rawBody}` }));
    check(await rejection(client.examList()), 'server');

    stub.reply('exam_invite', (req) => ({
      status: 200,
      body: { meeting_uuid: (req.body as { api_key: string }).api_key, error_message: API_KEY },
    }));
    check(await rejection(client.examInvite(invite)), 'bad_response');

    stub.reply('exam_list', (req) => ({ status: 200, text: `<html>${req.rawBody}</html>` }));
    check(await rejection(client.examList()), 'bad_response');

    stub.reply('exam_invite', { fault: 'reset' });
    check(await rejection(client.examInvite(invite)), 'ambiguous');

    stub.reply('exam_invite', { fault: 'hang' });
    check(await rejection(client.examInvite(invite)), 'ambiguous');

    const closed = new ExamServiceClient({ baseUrl: await closedPortUrl(), apiKey: API_KEY });
    check(await rejection(closed.examList()), 'not_sent');
    await closed.close();

    const dropper = await startConnectionDropper();
    const cut = new ExamServiceClient({ baseUrl: `https://127.0.0.1:${dropper.port}`, apiKey: API_KEY });
    check(await rejection(cut.examInvite(invite)), 'not_sent');
    await cut.close();
    await dropper.close();

    expect([...seen].sort()).toEqual(
      [
        'unauthorized',
        'account_setup',
        'validation',
        'already_final',
        'server',
        'bad_response',
        'ambiguous',
        'not_sent',
      ].sort(),
    );
    // The key did reach the service, in the body: the redaction above is not vacuous.
    expect(stub.requests.every((r) => (r.body as { api_key?: string }).api_key === API_KEY)).toBe(true);
  });

  it('the already-cancelled result carries the message without the key', async () => {
    stub.reply('exam_invite_cancel', echoing(400, 'Exam status is already cancelled.'));
    const result = await client.cancelInvite({ patient_exam_id: 90001 });
    expect(result).toMatchObject({
      alreadyCancelled: true,
      serviceMessage: 'Exam status is already cancelled. [key [redacted]]',
    });
    expect(JSON.stringify(result)).not.toContain(API_KEY);
  });

  it('the client itself does not expose the key when serialized or inspected', async () => {
    stub.reply('exam_list', { body: SAMPLE.examList });
    await client.examList();
    expect(JSON.stringify(client)).not.toContain(API_KEY);
    expect(inspect(client, { depth: 10, showHidden: true })).not.toContain(API_KEY);
  });

  it('nothing was written to the console', () => {
    expect(consoleCalls).toEqual([]);
  });
});
