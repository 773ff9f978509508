// POST /webhooks/exam-service/{journeyId}/{token}: the exam service's callbacks, handed to the callback path
// (inbox/callback-path.ts), which stores each durably before the 200, as the service sends each one once; what cannot
// be stored is a 503. Any JSON body with an event number is acknowledged (docs/design-notes.md#the-webhook).
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginCallbackZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { CallbackNotStoredError, type Acceptance } from '../../../inbox/callback-path';
import { routeLoggers } from '../../../observability/request-log';
import { isValidWebhookToken } from '../../../webhook-url';
import {
  ApiProblem,
  NOT_FOUND,
  problemResponses,
  sendProblem,
  validationProblem,
  type FieldError,
} from '../../problem';

const JOURNEY_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
/** The journey id in a callback's URL (/webhooks/exam-service/{journeyId}/{token}), before the router decodes it. */
const JOURNEY_IN_URL = /\/exam-service\/([^/?]+)\//;

/** "field.path: message" (the contract's issue format) as a field error. */
function fieldError(issue: string): FieldError {
  const at = issue.indexOf(': ');
  return at < 0 ? { field: '(body)', message: issue } : { field: issue.slice(0, at), message: issue.slice(at + 2) };
}

export const WebhookAck = z.object({
  received: z.literal(true).describe('The callback is durably stored'),
  deliveryId: z.string().describe('The id given to this delivery (in the journey and the dead letters)'),
});

/** The answer to a body kept as a dead letter instead of going to its journey. */
function refusalProblem(refused: Extract<Acceptance, { ok: false }>): ApiProblem {
  const kept = `${refused.detail}; it was kept for operators`;
  switch (refused.refusal) {
    case 'unreadable':
      return validationProblem((refused.issues ?? []).map(fieldError), kept);
    case 'too-large':
      return new ApiProblem(413, 'callback-too-large', kept);
    case 'unstorable':
      return new ApiProblem(422, 'callback-unstorable', kept);
  }
}

const webhook: FastifyPluginCallbackZod = (app, _options, done) => {
  const { callbacks, config } = app;
  // Any content type, kept as text: the contract says JSON, but a body we cannot read is still evidence.
  const asText = (_request: unknown, body: string | Buffer, parsed: (err: null, body: string | Buffer) => void) =>
    parsed(null, body);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, asText);
  // The one type every callback's header becomes (below): Fastify keeps the parser it finds for a named type, and
  // looks the catch-all up again, parsing the header anew, for every request.
  app.addContentTypeParser('text/plain', { parseAs: 'string' }, asText);
  // Fastify answers a malformed Content-Type header (empty, no subtype) with a 415 before any parser runs; a callback
  // must not be refused (nor go unrecorded) for its header, and the body is read as text (UTF-8) whatever it says.
  app.addHook('onRequest', (request, _reply, hookDone) => {
    if (request.headers['content-type'] !== undefined) request.headers['content-type'] = 'text/plain';
    hookDone();
  });

  /**
   * The callbacks taken, each with how long it waited for its durable write: only their answers feed acknowledgement
   * pressure, each less this wait (docs/design-notes.md#acknowledgement-pressure).
   */
  const takenStoreWaitMs = new WeakMap<FastifyRequest, number>();
  const withoutSchema = callbacks.measureWithout.has('response-schema');

  app.post(
    '/exam-service/:journeyId/:token',
    {
      bodyLimit: callbacks.keptMaxBytes,
      // No request lines for callbacks: two JSON lines written for each, at 1,000 a second, cost the acknowledgement
      // more of its event loop than the token check, the reading and the sealing together (docs/cpu-profiles.md).
      // Each callback is counted (journey_api_callbacks_total, the answers by status) and recorded in its journey;
      // a body kept as a dead letter and a callback not stored are logged below and by the callback path.
      logLevel: 'warn',
      // Each callback's logger made in one step, its journey's ids in it, from a parent at `warn` made once.
      childLoggerFactory: routeLoggers((url) => JOURNEY_IN_URL.exec(url)?.[1]),
      // A wrong address is answered before its body is read: a sender without the journey's token costs no reading.
      onRequest: async (request, reply) => {
        const { journeyId, token } = request.params;
        if (callbacks.measureWithout.has('token')) return;
        if (!JOURNEY_ID.test(journeyId) || !isValidWebhookToken(journeyId, token, config.api.webhookSecret)) {
          return sendProblem(reply, NOT_FOUND);
        }
      },
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
        params: z.object({
          journeyId: z.string().describe('The journey the webhook address was made for'),
          token: z.string().describe("The address's token, which the journey's invite gave the service"),
        }),
        response: {
          200: WebhookAck,
          ...problemResponses([400, 404, 413, 414, 422, 503], {
            400:
              'The body is not JSON, has no event number or is nested deeper than 32 levels (`validation`, what ' +
              'could not be read in `errors`); it was kept as a dead letter',
            404: 'No journey has this webhook address: the token is not its (`not-found`)',
            413:
              'The body is over 1 MiB, or more than a journey keeps of a callback (`callback-too-large`: kept as a ' +
              'dead letter); over `WEBHOOK_MAX_BODY_BYTES` (16 MiB) it is not read at all (`body-too-large`)',
            414: 'A part of the path is longer than the API reads (`uri-too-long`)',
            422: 'The callback cannot be stored as an inbox entry (`callback-unstorable`); it was kept as a dead letter',
            503:
              'The inbox could not store the callback, so it was not accepted (`inbox-unavailable`, `Retry-After: 1`): ' +
              'send it again',
          }),
        },
      },
    },
    async (request, reply) => {
      const { journeyId } = request.params;
      const rawBody = typeof request.body === 'string' ? request.body : '';
      let accepted: Acceptance;
      let storeWaitMs = 0;
      try {
        accepted = await callbacks.accept(journeyId, rawBody, (ms) => (storeWaitMs += ms));
      } catch (err) {
        if (!(err instanceof CallbackNotStoredError)) throw err;
        throw new ApiProblem(
          503,
          'inbox-unavailable',
          'the callback could not be stored; it was not accepted (send it again)',
          { headers: { 'retry-after': '1' } },
        );
      }
      if (!accepted.ok) {
        // Ids and the reason only: never the body.
        request.log.warn({ req: request, journeyId, refusal: accepted.refusal }, 'callback kept as a dead letter');
        throw refusalProblem(accepted);
      }
      takenStoreWaitMs.set(request, storeWaitMs);
      if (withoutSchema) {
        // A measurement of the response schema's cost: the same answer written by hand (a string is sent as it is).
        const text = `{"received":true,"deliveryId":${JSON.stringify(accepted.deliveryId)}}`;
        return reply
          .code(200)
          .type('application/json; charset=utf-8')
          .send(text as never); // typed for the schema
      }
      return reply.code(200).send({ received: true, deliveryId: accepted.deliveryId });
    },
  );

  // Taken callbacks only: a refusal (a wrong token, a body kept as a dead letter, a store down) is not the webhook's
  // speed, and a wrong address is anyone's to send as slowly as they like, to hold back every journey's callbacks.
  app.addHook('onResponse', async (request, reply) => {
    const storeWaitMs = takenStoreWaitMs.get(request);
    if (storeWaitMs !== undefined && reply.statusCode === 200) callbacks.answered(reply.elapsedTime, storeWaitMs);
  });
  done();
};
export default webhook;
