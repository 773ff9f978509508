// What a clinic receives is verifiable with the Standard Webhooks library itself: a real HTTP receiver records each
// notification as it arrives (raw body and headers), and `Webhook.verify` checks it with the clinic's secret.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { sendNotification } from '../../src/activities/notify';
import type { ExamNotification } from '../../src/contract/activity-contract';

let receiver: Server;
let url: string;
const arrivals: { body: string; headers: IncomingHttpHeaders }[] = [];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      arrivals.push({ body: Buffer.concat(chunks).toString('utf8'), headers: req.headers });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/journey-events`;
});
afterAll(() => new Promise((resolve) => receiver.close(resolve)));
beforeEach(() => (arrivals.length = 0));

function notification(sequence: number): ExamNotification {
  return {
    type: 'journey.updated',
    journeyId: 'jrn_01HZXAMPLE',
    clinicId: 'clinic-a',
    sequence,
    stage: 'validating',
    occurredAt: new Date().toISOString(),
    exams: [],
    attention: [],
    lastError: null,
  };
}

function signatureHeaders(h: IncomingHttpHeaders): Record<string, string> {
  return {
    'webhook-id': String(h['webhook-id']),
    'webhook-timestamp': String(h['webhook-timestamp']),
    'webhook-signature': String(h['webhook-signature']),
  };
}

it('signs with a whsec_ secret: Webhook.verify accepts what arrives and returns the notification', async () => {
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  await expect(sendNotification(url, secret, notification(3))).resolves.toEqual({ status: 204 });
  expect(arrivals).toHaveLength(1);
  const { body, headers } = arrivals[0]!;
  expect(headers['content-type']).toBe('application/json');
  expect(headers['webhook-id']).toBe('msg_jrn_01HZXAMPLE_3');
  expect(Number(headers['webhook-timestamp'])).toBeCloseTo(Date.now() / 1000, -2);
  expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+={0,2}$/);
  expect(new Webhook(secret).verify(body, signatureHeaders(headers))).toMatchObject({
    journeyId: 'jrn_01HZXAMPLE',
    sequence: 3,
  });
});

it('the same notification does not verify with another secret, nor with a changed body', async () => {
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  await sendNotification(url, secret, notification(1));
  const { body, headers } = arrivals[0]!;
  const other = new Webhook(`whsec_${randomBytes(24).toString('base64')}`);
  expect(() => other.verify(body, signatureHeaders(headers))).toThrow(WebhookVerificationError);
  expect(() =>
    new Webhook(secret).verify(body.replace('"sequence":1', '"sequence":2'), signatureHeaders(headers)),
  ).toThrow(WebhookVerificationError);
});

it('signs with a raw secret (not whsec_) by its UTF-8 bytes, as before', async () => {
  const secret = 'a-raw-clinic-secret-of-some-length';
  await sendNotification(url, secret, notification(2));
  const { body, headers } = arrivals[0]!;
  const raw = new Webhook(Buffer.from(secret, 'utf8'), { format: 'raw' });
  expect(raw.verify(body, signatureHeaders(headers))).toMatchObject({ sequence: 2 });
  // Read as whsec_ base64 instead, the same secret does not verify it.
  expect(() =>
    new Webhook(`whsec_${Buffer.from(secret).toString('hex')}`).verify(body, signatureHeaders(headers)),
  ).toThrow(WebhookVerificationError);
});
