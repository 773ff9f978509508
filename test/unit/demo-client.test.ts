// The demo's API client during a failover: a connection the API's front closes without an answer (a replica or the
// load balancer going away) is a pause for a request that is safe to send again (a read, a start with its
// Idempotency-Key, an upload), and an error for any other; a caller that asks again itself gets the error at once.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiClient, UnreachableError } from '../../scripts/demo/api';

describe("the demo's API client, its connection closed without an answer", () => {
  let server: Server;
  let base: string;
  // How many of the next requests to each path are cut off before an answer.
  const cut = new Map<string, number>();
  const seen: string[] = [];

  beforeAll(async () => {
    server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const route = (req.url ?? '').split('?')[0]!;
      seen.push(`${req.method} ${route}`);
      const left = cut.get(route) ?? 0;
      if (left > 0) {
        cut.set(route, left - 1);
        req.socket.destroy();
        return;
      }
      req.resume();
      req.on('end', () => {
        res.writeHead(route === '/v1/attachments' ? 201 : 200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(route === '/v1/catalog/exams' ? { exams: [] } : { ok: true }));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  beforeEach(() => {
    cut.clear();
    seen.length = 0;
  });

  it('sends a read again and says so', async () => {
    const client = new ApiClient(base, 'token');
    cut.set('/v1/catalog/exams', 2);
    const { status, body } = await client.call({ method: 'GET', route: '/v1/catalog/exams' }, (signal) =>
      client.api.GET('/v1/catalog/exams', { signal }),
    );
    expect({ status, body }).toEqual({ status: 200, body: { exams: [] } });
    expect(seen).toEqual(Array(3).fill('GET /v1/catalog/exams'));
    expect(client.retriedSummary()).toMatch(/^Requests sent again after answers: no answer x2 /);
  }, 30_000);

  it('sends a start with its Idempotency-Key again, and an upload marked to be sent again', async () => {
    const client = new ApiClient(base, 'token');
    cut.set('/v1/journeys', 1);
    cut.set('/v1/attachments', 1);
    const post = (route: '/v1/journeys' | '/v1/attachments', flags: { idempotent?: boolean; resend?: boolean }) =>
      client.call({ method: 'POST', route, ...flags }, (signal) =>
        fetch(`${base}${route}`, { method: 'POST', body: '{}', signal }).then(async (response) => ({
          response,
          data: await response.json(),
        })),
      );
    expect((await post('/v1/journeys', { idempotent: true })).status).toBe(200);
    expect((await post('/v1/attachments', { resend: true })).status).toBe(201);
    expect(seen).toEqual(['POST /v1/journeys', 'POST /v1/journeys', 'POST /v1/attachments', 'POST /v1/attachments']);
    expect(client.retriedAnswers.get(0)).toBe(2);
  }, 30_000);

  it('never sends again a request that is not safe to, nor one whose caller asks again itself', async () => {
    const client = new ApiClient(base, 'token');
    cut.set('/v1/journeys', 1);
    cut.set('/v1/catalog/exams', 1);
    const start = client.call({ method: 'POST', route: '/v1/journeys' }, (signal) =>
      fetch(`${base}/v1/journeys`, { method: 'POST', body: '{}', signal }).then((response) => ({ response })),
    );
    await expect(start).rejects.toBeInstanceOf(UnreachableError);
    const polled = client.call({ method: 'GET', route: '/v1/catalog/exams', resend: false }, (signal) =>
      client.api.GET('/v1/catalog/exams', { signal }),
    );
    await expect(polled).rejects.toThrow(/nothing answers at http:\/\/127\.0\.0\.1:\d+ \(/);
    expect(seen).toEqual(['POST /v1/journeys', 'GET /v1/catalog/exams']);
    expect(client.retriedSummary()).toBe('No request had to be sent again.');
  }, 30_000);
});
