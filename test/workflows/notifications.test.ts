// Clinic notifications reach the clinic in sequence: a later one waits for the earlier one's delivery (or its final
// failure), so a receiver that does not sort by `sequence` still never sees the stage go backwards. The receiver is
// a real HTTP server that records what arrives, in arrival order; its first answer to notification 1 is a 503, so
// with notifications sent side by side the later ones would arrive before the retry of the first.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { journeyInput, useHarness, withJourney } from './harness';

const h = useHarness();
let receiver: Server;
let url: string;
const arrivals: { sequence: number; stage: string; status: number }[] = [];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      const n = JSON.parse(body) as { sequence: number; stage: string };
      const status = n.sequence === 1 && !arrivals.some((a) => a.sequence === 1) ? 503 : 204;
      arrivals.push({ sequence: n.sequence, stage: n.stage, status });
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
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
