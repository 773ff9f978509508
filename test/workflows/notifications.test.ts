// Clinic notifications reach the clinic in sequence: a later one waits for the earlier one's delivery (or its final
// failure), so a receiver that does not sort by `sequence` still never sees the stage go backwards. A notification
// refused for good goes on the journey's record (through dispatch, like every change of state) without a notification
// about itself: the next one carries it. The receiver is
// a real HTTP server that records what arrives, in arrival order; its first answer to notification 1 is a 503, so
// with notifications sent side by side the later ones would arrive before the retry of the first.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { journeyInput, useHarness, withJourney } from './harness';

const h = useHarness();
let receiver: Server;
let url: string;
let rejectingUrl: string;
const arrivals: { sequence: number; stage: string; status: number }[] = [];
/** Notifications to /rejecting: the first refused for good (410), the others taken, each kept whole. */
const rejecting: { status: number; body: { sequence: number; stage: string; lastError: unknown } }[] = [];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      if (req.url === '/rejecting') {
        const n = JSON.parse(body) as (typeof rejecting)[number]['body'];
        const status = n.sequence === 1 ? 410 : 204;
        rejecting.push({ status, body: n });
        res.writeHead(status).end();
        return;
      }
      const n = JSON.parse(body) as { sequence: number; stage: string };
      const status = n.sequence === 1 && !arrivals.some((a) => a.sequence === 1) ? 503 : 204;
      arrivals.push({ sequence: n.sequence, stage: n.stage, status });
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  rejectingUrl = url.replace('/hooks', '/rejecting');
});
afterAll(async () => {
  await new Promise((resolve) => receiver.close(resolve));
});

it('delivers a journey’s notifications one after the other, each after the previous one was taken', async () => {
  const input = { ...journeyInput('gfe'), notificationUrl: url };
  await withJourney(
    h,
    { input, notifications: { notificationSecretFor: () => `whsec_${Buffer.alloc(24, 3).toString('base64')}` } },
    async (j) => {
      const id = await j.firstPatientExamId();
      await j.consultation(id, 'Approved');
      await j.waitFor('the journey to complete', (s) => s.stage === 'completed');
      const deadline = Date.now() + 30_000;
      while (!arrivals.some((a) => a.stage === 'completed' && a.status === 204) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
      }
    },
  );
  // The first attempt of notification 1 was refused and retried; nothing else arrived in between.
  expect(arrivals[0]).toEqual({ sequence: 1, stage: 'validating', status: 503 });
  const taken = arrivals.filter((a) => a.status === 204);
  expect(arrivals.slice(1)).toEqual(taken);
  expect(taken.map((a) => a.sequence)).toEqual(taken.map((_a, i) => i + 1));
  expect(taken.at(-1)?.stage).toBe('completed');
  expect(taken.length).toBeGreaterThanOrEqual(4);
}, 90_000);

it('records a notification refused for good in the journey, says so in the next one, and sends none about it', async () => {
  const input = { ...journeyInput('gfe'), notificationUrl: rejectingUrl };
  await withJourney(
    h,
    { input, notifications: { notificationSecretFor: () => `whsec_${Buffer.alloc(24, 3).toString('base64')}` } },
    async (j) => {
      await j.waitFor('the refused notification on the journey', (s) => s.lastError?.operation === 'notify_clinic');
      const id = await j.firstPatientExamId();
      await j.consultation(id, 'Approved');
      await j.waitFor('the journey to complete', (s) => s.stage === 'completed');
      const deadline = Date.now() + 30_000;
      while (!rejecting.some((r) => r.body.stage === 'completed') && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
      }
    },
  );
  // Refused once, not retried (410 does not get better), and not followed by a notification about itself: the next
  // one came from the journey's next change, carrying the failure as its lastError.
  expect(rejecting[0]).toMatchObject({ status: 410, body: { sequence: 1, lastError: null } });
  expect(rejecting.filter((r) => r.body.sequence === 1)).toHaveLength(1);
  // A later notification carries the failure ...
  expect(rejecting.slice(1).map((r) => r.body.lastError)).toContainEqual(
    expect.objectContaining({ kind: 'notification_rejected', operation: 'notify_clinic' }),
  );
  // ... and none was sent for it alone: each differs from the one before in more than its lastError.
  const withoutError = rejecting.map(({ body }) => {
    const { sequence: _s, lastError: _e, occurredAt: _o, ...rest } = body as typeof body & { occurredAt?: string };
    return JSON.stringify(rest);
  });
  for (let i = 1; i < withoutError.length; i++) expect(withoutError[i]).not.toBe(withoutError[i - 1]);
  expect(rejecting.map((r) => r.body.sequence)).toEqual(rejecting.map((_r, i) => i + 1));
}, 90_000);
