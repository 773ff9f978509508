// With OTEL_EXPORTER_OTLP_ENDPOINT set, spans leave over OTLP/HTTP to that endpoint's /v1/traces, named by service.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { API_SERVICE_NAME, startTracing } from '../../src/observability/tracing';

let collector: Server;
const received: { path: string; body: string }[] = [];
const saved = { ...process.env };

beforeAll(async () => {
  collector = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ path: req.url ?? '', body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  process.env = saved;
  await new Promise((resolve) => collector.close(resolve));
});

it('sends the spans to the collector the standard variables name', async () => {
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
  process.env.OTEL_RESOURCE_ATTRIBUTES = 'deployment.environment=test';
  const tracing = startTracing(API_SERVICE_NAME);
  expect(tracing).toBeDefined();
  tracing!.tracer.startSpan('GET /v1/journeys/:journeyId').end();
  await tracing!.shutdown();
  expect(received.map((r) => r.path)).toEqual(['/v1/traces']);
  const body = received[0]!.body;
  expect(body).toContain('GET /v1/journeys/:journeyId');
  expect(body).toContain(API_SERVICE_NAME);
  expect(body).toContain('deployment.environment');
});
