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

/** pino's levels by name: a method writes when its level is at least the logger's. */
const LEVEL_VALUES: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 };
type Method = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';

/**
 * A request's logger that becomes pino's child of `parent` (with `bindings`) at its first line, and never when the
 * request writes none: a callback, logged at `warn`, writes none unless it is kept as a dead letter or not stored, and
 * making a child for each (its bindings serialized) was a few percent of the acknowledgement's CPU.
 * Its lines are the child's: the same bindings, in the same order.
 */
export class LazyChildLogger {
  #real: FastifyBaseLogger | undefined;
  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Record<string, unknown>,
  ) {}

  /** pino's child, made now if not yet. */
  get logger(): FastifyBaseLogger {
    return (this.#real ??= this.parent.child(this.bindings));
  }

  get level(): string {
    return (this.#real ?? this.parent).level;
  }

  set level(level: string) {
    this.logger.level = level;
  }

  #writes(method: Method): boolean {
    if (this.#real) return true;
    const threshold = LEVEL_VALUES[this.parent.level];
    // A level of another name (silent, or a custom one): pino's child decides.
    return threshold === undefined ? this.parent.level !== 'silent' : LEVEL_VALUES[method]! >= threshold;
  }

  #log(method: Method, args: unknown[]): void {
    if (!this.#writes(method)) return;
    const write: (...a: unknown[]) => void = this.logger[method];
    write.apply(this.logger, args);
  }

  trace(...args: unknown[]): void {
    this.#log('trace', args);
  }

  debug(...args: unknown[]): void {
    this.#log('debug', args);
  }

  info(...args: unknown[]): void {
    this.#log('info', args);
  }

  warn(...args: unknown[]): void {
    this.#log('warn', args);
  }

  error(...args: unknown[]): void {
    this.#log('error', args);
  }

  fatal(...args: unknown[]): void {
    this.#log('fatal', args);
  }

  silent(): void {}

  child(bindings: Record<string, unknown>, options?: object): FastifyBaseLogger {
    return this.logger.child(bindings, options);
  }
}

/**
 * A route's child logger factory (Fastify's `childLoggerFactory`) that makes each request's logger in one step, at its
 * first line (LazyChildLogger): the
 * request id and, when `journeyIdOf` finds one of the engine's journey ids in the URL, its journeyId and workflowId
 * (else logJourneyIds binds them from the route's parameters, as for any route). A route with a log level of its own
 * gets its logger from a parent at that level made once, not from a child that rebuilds every log method of pino for
 * each request.
 */
const lazy = (parent: FastifyBaseLogger, bindings: Record<string, unknown>) =>
  new LazyChildLogger(parent, bindings) as unknown as FastifyBaseLogger;

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
    if (journeyId === undefined || !JOURNEY_ID.test(journeyId)) return lazy(parent, bindings);
    boundAtStart.add(raw);
    return lazy(parent, { ...bindings, journeyId, workflowId: journeyWorkflowId(journeyId) });
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
