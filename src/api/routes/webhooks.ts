// The exam service's callbacks: appended durably to the inbox before the 200, as the service sends each one once (what
// cannot be stored is a 503); any JSON body with an event number is acknowledged (docs/design-notes.md#the-webhook).
import { randomUUID } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginCallbackZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { isValidWebhookToken } from '../../webhook-url';
import { isUnread } from '../../workflows/journey-state';
import { UnstorableCallbackError } from '../../inbox/types';
import { callbackSignal, readCallback } from '../callbacks';
import type { RouteOptions } from '../context';
import { ApiProblem, NOT_FOUND, Problem, sendProblem, validationProblem, type FieldError } from '../problem';

const JOURNEY_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/** "field.path: message" (the contract's issue format) as a field error. */
function fieldError(issue: string): FieldError {
  const at = issue.indexOf(': ');
  return at < 0 ? { field: '(body)', message: issue } : { field: issue.slice(0, at), message: issue.slice(at + 2) };
}

/** The event label of the callback metrics: 1, 2, 3, or `other` (so a sender cannot grow the label set). */
function metricEvent(event: number): string {
  return event >= 1 && event <= 3 ? String(event) : 'other';
}

export const WebhookAck = z.object({
  received: z.literal(true).describe('The callback is durably stored'),
  deliveryId: z.string().describe('The id given to this delivery (in the journey and the dead letters)'),
});

/** A callback is a few kilobytes; a body over this is not one, but it is kept (up to WEBHOOK_MAX_BODY_BYTES). */
export const CALLBACK_MAX_BYTES = 1024 * 1024;

export const webhookRoutes: FastifyPluginCallbackZod<RouteOptions> = (app, { ctx }, done) => {
  // The largest body read as a callback (the API's own body limit when lower), and the largest kept at all.
  const callbackMax = Math.min(ctx.config.api.bodyLimitBytes, CALLBACK_MAX_BYTES);
  const keptMax = Math.max(ctx.config.api.webhookMaxBodyBytes, callbackMax);
  // Any content type, kept as text: the contract says JSON, but a body we cannot read is still evidence.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body));
  // Fastify answers a malformed Content-Type header (empty, no subtype) with a 415 before any parser runs; a callback
  // must not be refused (nor go unrecorded) for its header, and the body is read as text whatever it says anyway.
  app.addHook('onRequest', (request, _reply, hookDone) => {
    if (request.headers['content-type'] !== undefined) request.headers['content-type'] = 'text/plain; charset=utf-8';
    hookDone();
  });

  /**
   * How long each answer waited for its durable write: acknowledgement pressure counts the webhook's own time, the
   * answer's less this wait (docs/design-notes.md#acknowledgement-pressure).
   */
  const storeWaitMs = new WeakMap<FastifyRequest, number>();

  /** Runs a write that must be durable before the answer; when it fails the caller gets a 503, never a 200. */
  async function stored<T>(
    request: FastifyRequest,
    what: 'inbox' | 'dead_letters',
    write: () => Promise<T>,
    journeyId: string,
  ): Promise<T> {
    const started = performance.now();
    try {
      return await write();
    } catch (err) {
      // The entry's own fault, not the store's: the caller keeps the body another way.
      if (err instanceof UnstorableCallbackError) throw err;
      ctx.metrics.inboxFailures.inc({ store: what });
      ctx.metrics.callbacks.inc({ event: 'unknown', outcome: 'refused' });
      // The error names the store and its code only (no body, no URL token).
      app.log.error({ err, journeyId, store: what }, 'callback NOT stored: answered 503');
      throw new ApiProblem(
        503,
        'inbox-unavailable',
        'the callback could not be stored; it was not accepted (send it again)',
        { headers: { 'retry-after': '1' } },
      );
    } finally {
      storeWaitMs.set(request, (storeWaitMs.get(request) ?? 0) + performance.now() - started);
    }
  }

  app.post(
    '/webhooks/exam-service/:journeyId/:token',
    {
      bodyLimit: keptMax,
      schema: {
        summary: "The exam service's lifecycle callbacks (events 1, 2 and 3) for one journey",
        description:
          'Answers 200 once the callback is durably in the inbox; a forwarder signals it to the journey in the ' +
          'background. Any JSON body with an event number is a 200, in any layout the service is known to send; ' +
          'one that cannot be read is held in the journey for a person. 503 when the inbox cannot store it ' +
          '(nothing was accepted). A wrong token is a 404. A body that is not JSON, has no event number or is ' +
          'nested deeper than 32 levels (400), is over 1 MiB or more than a journey keeps of a callback (413), or ' +
          'cannot be stored as an inbox entry (422) is kept as a dead letter for operators.',
        tags: ['webhooks'],
        params: z.object({ journeyId: z.string(), token: z.string() }),
        response: { 200: WebhookAck, 400: Problem, 404: Problem, 413: Problem, 422: Problem, 503: Problem },
      },
    },
    async (request, reply) => {
      const { journeyId, token } = request.params;
      if (!JOURNEY_ID.test(journeyId) || !isValidWebhookToken(journeyId, token, ctx.config.api.webhookSecret)) {
        return sendProblem(reply, NOT_FOUND);
      }
      const rawBody = typeof request.body === 'string' ? request.body : '';
      const receivedAt = ctx.now().toISOString();
      const bodyBytes = Buffer.byteLength(rawBody);
      /** Keeps the body for operators (the webhook's answer says so); a failed write is a 503. */
      const keep = async (reason: 'oversized' | 'unparseable', detail: string, issues?: string[]) => {
        await stored(
          request,
          'dead_letters',
          () =>
            ctx.inbox.deadLetters.add(
              { journeyId, reason, detail, ...(issues ? { issues } : {}), receivedAt, bodyBytes, rawBody },
              ctx.now(),
            ),
          journeyId,
        );
        ctx.metrics.deadLettered.inc({ reason });
        ctx.metrics.callbacks.inc({ event: 'unknown', outcome: 'dead_lettered' });
      };
      if (bodyBytes > callbackMax) {
        const detail = `the body is ${bodyBytes} bytes, over the ${callbackMax} a callback may be`;
        await keep('oversized', detail);
        throw new ApiProblem(413, 'callback-too-large', `${detail}; it was kept for operators`);
      }
      const parsed = readCallback(rawBody);
      if (!parsed.ok) {
        await keep('unparseable', 'the body is not JSON, or JSON without an event number', parsed.issues);
        throw validationProblem(
          parsed.issues.map(fieldError),
          `the callback could not be read (${parsed.issues.slice(0, 3).join('; ')}); it was kept for operators`,
        );
      }
      const made = callbackSignal(parsed, { deliveryId: randomUUID(), receivedAt, rawBody });
      if (!made.ok) {
        await keep('oversized', `the callback is too large for its journey: ${made.over}`);
        throw new ApiProblem(413, 'callback-too-large', `${made.over}; it was kept for operators`);
      }
      const { signal } = made;
      try {
        await stored(request, 'inbox', () => ctx.inbox.append(journeyId, signal), journeyId);
      } catch (err) {
        // This callback alone cannot be written as an inbox entry: its body still can, as a dead letter.
        if (!(err instanceof UnstorableCallbackError)) throw err;
        await keep('unparseable', err.message);
        throw new ApiProblem(422, 'callback-unstorable', `${err.message}; it was kept for operators`);
      }
      const outcome = isUnread(parsed.callback) ? 'held' : 'accepted';
      ctx.metrics.callbacks.inc({ event: metricEvent(parsed.event), outcome });
      return reply.code(200).send({ received: true, deliveryId: signal.deliveryId });
    },
  );

  app.addHook('onResponse', async (request, reply) => {
    if (request.routeOptions.url?.startsWith('/webhooks/')) {
      ctx.metrics.ackSeconds.observe(reply.elapsedTime / 1000);
      // The webhook's own time: a durable write the storage was slow with (a disk's flush stall) is not something
      // holding the journeys' signals back could make faster.
      ctx.ackPressure.record(Math.max(0, reply.elapsedTime - (storeWaitMs.get(request) ?? 0)));
    }
  });
  done();
};
