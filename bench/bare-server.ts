// The baseline of the webhook latency runs: a bare Fastify server in its own process (node with the tsx loader,
// like the API), with the webhook's route shape and text body parser, that answers 200 at once. What it costs is
// the floor of this machine, this Node.js and the load generator; the API's figures above it are the engine's.
//
//   BARE_PORT=22201 node --import tsx bench/bare-server.ts
import { randomUUID } from 'node:crypto';
import Fastify from 'fastify';

async function main() {
  const port = Number(process.env.BARE_PORT ?? 22_201);
  const app = Fastify({ logger: false, forceCloseConnections: 'idle' });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body));
  app.post('/webhooks/exam-service/:journeyId/:token', () =>
    Promise.resolve({ received: true, deliveryId: randomUUID() }),
  );
  app.get('/healthz', () => Promise.resolve({ ok: true }));
  await app.listen({ host: '127.0.0.1', port });
  console.log(`bare server on http://127.0.0.1:${port}`);
  const stop = () => void app.close().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
