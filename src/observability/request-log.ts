// The API's request log lines name the journey they are about: journeyId and workflowId fields (ids only, never a
// body, a header or the URL). From the route's :journeyId, or for a start from the Location header of its answer.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { journeyWorkflowId } from '../contract/definitions';

/** The engine's journey ids (`j` + 26 base32 characters): a path segment of any other shape is not repeated. */
const JOURNEY_ID = /^j[a-z2-7]{26}$/;
const LOCATION = /\/journeys\/(j[a-z2-7]{26})(?:[/?]|$)/;

const bound = new WeakSet<FastifyRequest>();

function bind(request: FastifyRequest, reply: FastifyReply, journeyId: string): void {
  const log = request.log.child({ journeyId, workflowId: journeyWorkflowId(journeyId) });
  request.log = log;
  reply.log = log;
  bound.add(request);
}

export function logJourneyIds(app: FastifyInstance): void {
  app.addHook('onRequest', (request, reply, done) => {
    const journeyId = (request.params as { journeyId?: unknown } | undefined)?.journeyId;
    if (typeof journeyId === 'string' && JOURNEY_ID.test(journeyId)) bind(request, reply, journeyId);
    done();
  });
  // Runs before Fastify writes "request completed" with reply.log.
  app.addHook('onResponse', (request, reply, done) => {
    if (!bound.has(request)) {
      const location = reply.getHeader('location');
      const match = typeof location === 'string' ? LOCATION.exec(location) : null;
      if (match) bind(request, reply, match[1]!);
    }
    done();
  });
}
