// No PHI and no secret in the logs. The API (`npm run api`) and the worker (`npm run worker`) run as the processes
// they are in production, at LOG_LEVEL=trace, their stdout and stderr captured whole; a complete partner-pharmacy
// journey runs through them (the exam-service sandbox in test mode, a real Temporal dev server, the callbacks over
// real HTTP to the API's webhook, signed notifications to a clinic receiver), with a few refusals on the way (a bad
// start request full of PHI, an unreadable callback, a wrong token, a screening answer to a question the exam does
// not have). Then none of the patient's identity, the clinic's api_key, the bearer token, the webhook secret and
// token, the payload key, the notification secret or the Idempotency-Key appears in any captured line; and the capture
// is shown to work (the journey id, the API's routes and the worker's activities are in it).
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { buildSandbox, DEMO_API_KEY, type Sandbox } from '../../src/sandbox';
import { webhookToken } from '../../src/webhook-url';
import { SEARCH_ATTRIBUTE_KEYS } from '../../src/contract/definitions';
import { eventually, tempDataDir, type TestDirs } from '../api/support';
import { freePort } from '../support/dev-server-process';
import { startDevServer } from '../support/temporal-env';

const ROOT = path.resolve(__dirname, '../..');
const sha = (t: string) => createHash('sha256').update(t).digest('hex');

const PATIENT = {
  // Test mode: the sandbox's test provider prescribes for "Prescription Approve".
  firstName: 'Test Prescription Approve',
  lastName: 'Quillfeather',
  email: 'ozy.quillfeather.4417@example.test',
  dob: '1961-09-27',
  phoneNumber: '5125557391',
  teleState: 'TE',
  dmvLicenseNumber: 'QF7731904',
};
// Test mode needs the home state TE as well as the tele state.
const HOME = { line1: '742 Evergreen Terrace', line2: 'Unit 9Q', city: 'Quillby', state: 'TE', zipCode: '78701-4417' };
const SHIPPING = { line1: '31 Spooner Street', city: 'Quahog Falls', state: 'TX', zipCode: '78702-9931' };

/** What a child wrote, whole. */
class Captured {
  text = '';
  readonly exited: Promise<number | null>;
  constructor(readonly child: ChildProcessWithoutNullStreams) {
    child.stdout.on('data', (d: Buffer) => (this.text += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (this.text += d.toString('utf8')));
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  /** Stops the process (by its pid) if it still runs; resolves with its exit code. */
  stop(): Promise<number | null> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    return this.exited;
  }
}

function spawnEntry(entry: string, env: Record<string, string>): Captured {
  const child = spawn(process.execPath, [require.resolve('tsx/cli'), path.join(ROOT, entry)], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  return new Captured(child);
}

/** Every forbidden value found in a text, with the line it is on. */
function leaksIn(text: string, forbidden: Record<string, string>): string[] {
  const found: string[] = [];
  const haystack = text.toLowerCase();
  for (const [name, value] of Object.entries(forbidden)) {
    // As written, in any case, or escaped inside a JSON string.
    for (const variant of new Set([value.toLowerCase(), JSON.stringify(value).slice(1, -1).toLowerCase()])) {
      const at = haystack.indexOf(variant);
      if (at < 0) continue;
      const end = text.indexOf('\n', at);
      found.push(`${name}: ${text.slice(text.lastIndexOf('\n', at) + 1, end < 0 ? undefined : end).slice(0, 300)}`);
      break;
    }
  }
  return found;
}

describe('logs of a complete journey hold no PHI and no secret', () => {
  let env: TestWorkflowEnvironment;
  let sandbox: Sandbox;
  let dirs: TestDirs;
  let receiver: Server;
  let api: Captured | undefined;
  let worker: Captured | undefined;
  let apiUrl: string;
  const notifications: string[] = [];

  const token = randomBytes(24).toString('base64url');
  const adminToken = randomBytes(24).toString('base64url');
  const webhookSecret = randomBytes(32).toString('base64url');
  const payloadKey = randomBytes(32).toString('base64');
  const notificationSecret = `whsec_${randomBytes(32).toString('base64')}`;
  const idempotencyKey = `order-${PATIENT.lastName}-${PATIENT.dob}`;
  const headers = { authorization: `Bearer ${token}` };

  beforeAll(async () => {
    env = await startDevServer(SEARCH_ATTRIBUTE_KEYS);
    sandbox = await buildSandbox({ providerDelayMs: 300, prescriptionDelayMs: 300, shipmentDelayMs: 300 });
    dirs = tempDataDir();
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString('utf8')));
      req.on('end', () => {
        notifications.push(body);
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const apiPort = await freePort();
    apiUrl = `http://127.0.0.1:${apiPort}`;
    const shared = {
      TEMPORAL_ADDRESS: env.address,
      TEMPORAL_TASK_QUEUE: 'security-logs',
      DATA_DIR: dirs.dataDir,
      WEBHOOK_SECRET: webhookSecret,
      PAYLOAD_ENCRYPTION_KEYS: `logs:${payloadKey}`,
      EXAM_SERVICE_BASE_URL: sandbox.baseUrl,
      PUBLIC_BASE_URL: apiUrl,
      API_PORT: String(apiPort),
      ADMIN_TOKEN_SHA256: sha(adminToken),
      CLINICS_JSON: JSON.stringify([
        { clinicId: 'log-clinic', examServiceApiKey: DEMO_API_KEY, apiTokenSha256: [sha(token)], notificationSecret },
      ]),
      LOG_LEVEL: 'trace',
    };
    api = spawnEntry('src/api/server.ts', shared);
    worker = spawnEntry('src/worker.ts', shared);
    await eventually(
      () =>
        fetch(`${apiUrl}/readyz`).then(
          (r) => r.status,
          () => 0,
        ),
      (s) => s === 200,
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    await eventually(
      () => Promise.resolve(worker!.text),
      (t) => t.includes('worker polling task queue'),
      { timeoutMs: 60_000, intervalMs: 250 },
    );
  }, 120_000);

  afterAll(async () => {
    try {
      await Promise.all([api?.stop(), worker?.stop()]);
      await sandbox?.close();
      if (receiver) await new Promise((resolve) => receiver.close(resolve));
    } finally {
      await env?.teardown();
      dirs?.cleanup();
    }
  });

  it('runs the journey, stops both processes, and finds none of them in their output', async () => {
    const json = { ...headers, 'content-type': 'application/json' };
    // The lab result, with the patient's name in its file name (as clinics name files).
    const form = new FormData();
    form.append('kind', 'Lab');
    form.append('file', new Blob(['%PDF-1.4 lab'], { type: 'application/pdf' }), `lab-${PATIENT.lastName}.pdf`);
    const upload = await fetch(`${apiUrl}/v1/attachments`, { method: 'POST', headers, body: form });
    expect(upload.status).toBe(201);
    const { attachment } = (await upload.json()) as { attachment: unknown };

    const request = {
      patient: PATIENT,
      homeAddress: HOME,
      shippingAddress: SHIPPING,
      exams: [201],
      scenario: { type: 'partner_pharmacy', pharmacyId: 501, orderSetId: '8101' },
      attachments: [{ examId: 201, attachment }],
      // The second answer is to a question the exam does not have: a failure the worker handles (and may log).
      answers: [
        {
          examId: 201,
          answers: [
            { no: 1, answer: `${PATIENT.lastName} takes lisinopril` },
            { no: 99, answer: `${PATIENT.lastName} allergy` },
          ],
        },
      ],
      notificationUrl: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/journey-events`,
    };
    // A refusal first: the same PHI in a request the schema refuses (a date of birth in the wrong format).
    const refused = await fetch(`${apiUrl}/v1/journeys`, {
      method: 'POST',
      headers: { ...json, 'idempotency-key': `${idempotencyKey}-bad` },
      body: JSON.stringify({ ...request, patient: { ...PATIENT, dob: '09/27/1961' } }),
    });
    expect(refused.status).toBe(400);

    const started = await fetch(`${apiUrl}/v1/journeys`, {
      method: 'POST',
      headers: { ...json, 'idempotency-key': idempotencyKey },
      body: JSON.stringify(request),
    });
    expect(started.status).toBe(201);
    const { journeyId } = (await started.json()) as { journeyId: string };

    const done = await eventually(
      async () => (await fetch(`${apiUrl}/v1/journeys/${journeyId}`, { headers })).json() as Promise<any>,
      (j) => ['completed', 'failed', 'cancelled', 'abandoned', 'needs_attention'].includes(j.journey?.stage),
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    expect(done.journey.stage).toBe('completed');
    expect(done.journey.exams[0]).toMatchObject({ status: 'Approved', rxStatus: 'Pharmacy Confirmed' });
    expect(done.journey.events.map((e: { event: number }) => e.event)).toEqual(expect.arrayContaining([1, 2, 3]));
    expect(notifications.length).toBeGreaterThan(0);

    // More callbacks and refusals with PHI in them: a callback the journey cannot read (taken, kept for a person),
    // a body that is not JSON, a wrong token, an action on the finished journey.
    const hook = `${apiUrl}/webhooks/exam-service/${journeyId}/${webhookToken(journeyId, webhookSecret)}`;
    const held = await fetch(hook, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ event: 1, patient_email: PATIENT.email, patient_exam_id: PATIENT.lastName }),
    });
    expect(held.status).toBe(200);
    const unreadable = await fetch(hook, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `{"event": 1, "patient_email": "${PATIENT.email}", "patient_exam_id": ${PATIENT.lastName}`,
    });
    expect(unreadable.status).toBe(400);
    const wrongToken = await fetch(`${hook.slice(0, -1)}x`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ event: 1, patient_email: PATIENT.email }),
    });
    expect(wrongToken.status).toBe(404);
    const late = await fetch(`${apiUrl}/v1/journeys/${journeyId}/resend`, {
      method: 'POST',
      headers: json,
      body: '{}',
    });
    expect(late.status).toBe(409);
    const unauthorized = await fetch(`${apiUrl}/v1/journeys/${journeyId}`, {
      headers: { authorization: `Bearer ${token}x` },
    });
    expect(unauthorized.status).toBe(401);

    // Stop both the way production does; what they print while stopping counts too.
    expect(await Promise.all([api!.stop(), worker!.stop()])).toEqual([0, 0]);

    const forbidden = {
      'first name': PATIENT.firstName,
      'last name': PATIENT.lastName,
      'e-mail': PATIENT.email,
      'e-mail user': PATIENT.email.split('@')[0]!,
      phone: PATIENT.phoneNumber,
      'date of birth': PATIENT.dob,
      'date of birth (US)': '09/27/1961',
      "driver's license": PATIENT.dmvLicenseNumber,
      'home address': HOME.line1,
      'home address line 2': HOME.line2,
      'home city': HOME.city,
      'home ZIP': HOME.zipCode,
      'shipping address': SHIPPING.line1,
      'shipping city': SHIPPING.city,
      'shipping ZIP': SHIPPING.zipCode,
      "the clinic's exam-service api_key": DEMO_API_KEY,
      'bearer token': token,
      'admin token': adminToken,
      'webhook secret': webhookSecret,
      'webhook token': webhookToken(journeyId, webhookSecret),
      'payload key': payloadKey,
      'notification secret': notificationSecret,
      'Idempotency-Key': idempotencyKey,
    };
    const logs = { api: api!.text, worker: worker!.text };
    // SECURITY_LOGS_DIR=/tmp/x keeps what was captured, to read after a failure.
    if (process.env.SECURITY_LOGS_DIR) {
      mkdirSync(process.env.SECURITY_LOGS_DIR, { recursive: true });
      for (const [name, text] of Object.entries(logs)) {
        writeFileSync(path.join(process.env.SECURITY_LOGS_DIR, `${name}.log`), text);
      }
    }
    expect({ api: leaksIn(logs.api, forbidden), worker: leaksIn(logs.worker, forbidden) }).toEqual({
      api: [],
      worker: [],
    });

    // The capture works: the API logged its requests by route, the worker its activities for this journey.
    expect(logs.api).toContain('"route":"/v1/journeys"');
    expect(logs.api).toContain('"route":"/webhooks/exam-service/:journeyId/:token"');
    expect(logs.api).toContain('request completed');
    expect(logs.worker).toContain(journeyId);
    expect(logs.worker).toMatch(/sendInvite|invite created/);
    // And the check itself finds what it looks for.
    expect(leaksIn(`x\n{"to":"${PATIENT.email.toUpperCase()}"}\ny`, forbidden)).toContain(
      `e-mail: {"to":"${PATIENT.email.toUpperCase()}"}`,
    );
  }, 120_000);
});
