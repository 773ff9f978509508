// The exam service's callbacks. The URL carries the journey id and its HMAC token (the service signs nothing); a
// wrong token learns nothing but a 404. The body is read as text, so even an unparseable one is kept for operators.
import { randomUUID } from 'node:crypto';
import type { FastifyPluginCallbackZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { parseCallback } from '../../exam-service/schemas';
import { isValidWebhookToken } from '../../webhook-url';
import type { CallbackSignal } from '../../workflows/definitions';
import { toJourneyCallback } from '../callbacks';
import type { RouteOptions } from '../context';
import { NOT_FOUND, Problem, sendProblem, validationProblem, type FieldError } from '../problem';

const JOURNEY_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/** "field.path: message" (the contract's issue format) as a field error. */
function fieldError(issue: string): FieldError {
  const at = issue.indexOf(': ');
  return at < 0 ? { field: '(body)', message: issue } : { field: issue.slice(0, at), message: issue.slice(at + 2) };
}

export const WebhookAck = z.object({
  received: z.literal(true),
  deliveryId: z.string(),
});

export const webhookRoutes: FastifyPluginCallbackZod<RouteOptions> = (app, { ctx }, done) => {
  // Any content type, kept as text: the contract says JSON, but a body we cannot read is still evidence.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body));
  // Fastify answers a malformed Content-Type header (empty, no subtype) with a 415 before any parser runs; a callback
  // must not be refused (nor go unrecorded) for its header, and the body is read as text whatever it says anyway.
  app.addHook('onRequest', (request, _reply, hookDone) => {
    if (request.headers['content-type'] !== undefined) request.headers['content-type'] = 'text/plain; charset=utf-8';
    hookDone();
  });

  app.post(
    '/webhooks/exam-service/:journeyId/:token',
    {
      // A callback is a few kilobytes; no need to accept the clinic API's upload-sized bodies here.
      bodyLimit: Math.min(ctx.config.api.bodyLimitBytes, 1024 * 1024),
      schema: {
        summary: "The exam service's lifecycle callbacks (events 1, 2 and 3) for one journey",
        description:
          'Answers 200 at once: the callback is signalled to the journey, or written durably to the spool and forwarded later. A wrong token is a 404.',
        tags: ['webhooks'],
        params: z.object({ journeyId: z.string(), token: z.string() }),
        response: { 200: WebhookAck, 400: Problem, 404: Problem },
      },
    },
    async (request, reply) => {
      const { journeyId, token } = request.params;
      if (!JOURNEY_ID.test(journeyId) || !isValidWebhookToken(journeyId, token, ctx.config.api.webhookSecret)) {
        return sendProblem(reply, NOT_FOUND);
      }
      const rawBody = typeof request.body === 'string' ? request.body : '';
      const receivedAt = ctx.now().toISOString();
      const parsed = parseCallback(rawBody);
      if (!parsed.ok) {
        await ctx.deadLetters.add(
          {
            journeyId,
            reason: 'unparseable',
            detail: 'the body is not a callback of the contract (events 1, 2 or 3)',
            issues: parsed.issues,
            receivedAt,
            rawBody,
          },
          ctx.now(),
        );
        ctx.metrics.deadLettered.inc({ reason: 'unparseable' });
        ctx.metrics.callbacks.inc({ event: 'unknown', outcome: 'rejected' });
        throw validationProblem(
          parsed.issues.map(fieldError),
          `the callback could not be read (${parsed.issues.slice(0, 3).join('; ')}); it was kept for operators`,
        );
      }
      const signal: CallbackSignal = {
        deliveryId: randomUUID(),
        receivedAt,
        callback: toJourneyCallback(parsed.event),
        raw: JSON.parse(rawBody) as unknown,
      };
      const outcome = await ctx.delivery.deliver(journeyId, signal, rawBody);
      ctx.metrics.callbacks.inc({ event: String(parsed.event.event), outcome });
      return reply.code(200).send({ received: true, deliveryId: signal.deliveryId });
    },
  );

  app.addHook('onResponse', async (request, reply) => {
    if (request.routeOptions.url?.startsWith('/webhooks/')) ctx.metrics.ackSeconds.observe(reply.elapsedTime / 1000);
  });
  done();
};
