// The API's request log lines name the journey they are about: journeyId and workflowId fields (ids only, never a
// body, a header or the URL). From the route's :journeyId, or for a start from the Location header of its answer.
import type { IncomingMessage } from 'node:http';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { journeyWorkflowId } from '../contract/definitions';

/** The engine's journey ids (`j` + 26 base32 characters): a path segment of any other shape is not repeated. */
const JOURNEY_ID = /^j[a-z2-7]{26}$/;
const LOCATION = /\/journeys\/(j[a-z2-7]{26})(?:[/?]|$)/;

const bound = new WeakSet<FastifyRequest>();
/** Requests whose logger was made with their journey's ids already (routeLoggers). */
const boundAtStart = new WeakSet<IncomingMessage>();

function bind(request: FastifyRequest, reply: FastifyReply, journeyId: string): void {
  const log = request.log.child({ journeyId, workflowId: journeyWorkflowId(journeyId) });
  request.log = log;
  reply.log = log;
  bound.add(request);
}

type ChildOptions = { level?: string; serializers?: unknown };

/**
 * A route's child logger factory (Fastify's `childLoggerFactory`) that makes each request's logger in one step: the
 * request id and, when `journeyIdOf` finds one of the engine's journey ids in the URL, its journeyId and workflowId
 * (else logJourneyIds binds them from the route's parameters, as for any route). A route with a log level of its own
 * gets its logger from a parent at that level made once, not from a child that rebuilds every log method of pino for
 * each request.
 */
export function routeLoggers(journeyIdOf: (url: string) => string | undefined) {
  const atLevel = new WeakMap<FastifyBaseLogger, Map<string, FastifyBaseLogger>>();
  const parentAt = (logger: FastifyBaseLogger, level: string) => {
    let levels = atLevel.get(logger);
    if (!levels) atLevel.set(logger, (levels = new Map<string, FastifyBaseLogger>()));
    let parent = levels.get(level);
    if (!parent) levels.set(level, (parent = logger.child({}, { level })));
    return parent;
  };
  return function childLogger(
    logger: FastifyBaseLogger,
    bindings: Record<string, unknown>,
    options: ChildOptions,
    raw: IncomingMessage,
  ): FastifyBaseLogger {
    if (options.serializers !== undefined) return logger.child(bindings, options as never);
    const parent = options.level ? parentAt(logger, options.level) : logger;
    const journeyId = raw.url === undefined ? undefined : journeyIdOf(raw.url);
    if (journeyId === undefined || !JOURNEY_ID.test(journeyId)) return parent.child(bindings);
    boundAtStart.add(raw);
    return parent.child({ ...bindings, journeyId, workflowId: journeyWorkflowId(journeyId) });
  };
}

export function logJourneyIds(app: FastifyInstance): void {
  app.addHook('onRequest', (request, reply, done) => {
    if (boundAtStart.has(request.raw)) {
      bound.add(request);
      return done();
    }
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
