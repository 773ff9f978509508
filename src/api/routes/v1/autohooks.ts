// What every /v1 route shares: the clinic's bearer token, then a rate limit per clinic (before the body is read),
// JSON and multipart bodies only (uploads).
import multipart from '@fastify/multipart';
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance } from 'fastify';
import { clinicAuth } from '../../auth';
import { ApiProblem } from '../../problem';

export default async function clinicApi(app: FastifyInstance): Promise<void> {
  const { config } = app;
  app.addHook('onRequest', clinicAuth(config, app.signInGuard));
  // JSON (and multipart for uploads) only: text bodies are a 415, not a confusing type error.
  app.removeContentTypeParser('text/plain');
  await app.register(rateLimit, {
    max: config.api.rateLimitPerMinute,
    timeWindow: 60_000,
    // Before the body is read: a request refused here never has its body parsed, and its connection is closed.
    hook: 'onRequest',
    keyGenerator: (request) => `clinic:${request.clinic?.clinicId ?? request.ip}`,
    errorResponseBuilder: (_request, context) =>
      new ApiProblem(
        429,
        'rate-limited',
        `more than ${context.max} requests per minute for this clinic; retry in ${context.after}`,
        { headers: { 'retry-after': String(Math.ceil(context.ttl / 1000)), connection: 'close' } },
      ),
  });
  await app.register(multipart, {
    limits: { fileSize: config.api.bodyLimitBytes, files: 1, fields: 10, parts: 12 },
  });
}
