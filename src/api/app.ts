// buildApp(deps): the API as a Fastify instance, dependencies injected (tests pass their own). Layout after
// fastify/demo: external plugins first (swagger), then the shared context, then one encapsulated plugin per route
// group, auth and rate limits in the group that needs them.
import rateLimit from '@fastify/rate-limit';
import multipart from '@fastify/multipart';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { Tracer } from '@opentelemetry/api';
import type { Client } from '@temporalio/client';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import {
  jsonSchemaTransform,
  jsonSchemaTransformObject,
  serializerCompiler,
  validatorCompiler,
  type FastifyPluginAsyncZod,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import { createAttachmentStore } from '../attachments';
import type { AttachmentStore } from '../attachments/types';
import type { Config } from '../config';
import { auditSignIns, clinicAuth } from './auth';
import { RecordSealer } from '../codec/at-rest';
import { logJourneyIds } from '../observability/request-log';
import { traceRequests } from '../observability/tracing';
import { createInbox, InboxForwarder, sealerKeys, type CallbackInbox, type InboxForwarderOptions } from '../inbox';
import type { ApiContext, RouteOptions } from './context';
import { ClinicExamService, type ExamServiceFor } from './exam-service';
import { JourneyGateway } from './journeys';
import { AckPressure } from './ack-pressure';
import { createApiMetrics } from './metrics';
import { ApiProblem, frameworkErrorProblem, registerProblemHandlers } from './problem';
import { SourceGuard } from './source-guard';
import { adminRoutes } from './routes/admin';
import { auditRoutes } from './routes/audit';
import { catalogRoutes } from './routes/catalog';
import { journeyRoutes } from './routes/journeys';
import { operationRoutes } from './routes/operations';
import { opsRoutes } from './routes/ops';
import { webhookRoutes } from './routes/webhooks';
import { auditLogFrom, type AuditEvent } from '../audit';
import { expireDeadLetters } from '../inbox/retention';
import { sweepOrphanUploads } from './orphan-uploads';
import { tokenVerifier, type TokenVerifier } from '../auth/tokens';

export interface ApiDeps {
  config: Config;
  temporal: Client;
  /** The exam-service client acting for a clinic (tests pass fakes or point it at the sandbox). */
  examServiceFor: ExamServiceFor;
  attachments?: AttachmentStore;
  /** The callback inbox; by default the one the configuration names (files or PostgreSQL). */
  inbox?: CallbackInbox;
  clock?: () => Date;
  logger?: FastifyServerOptions['logger'];
  /** A server span per request, the parent of the workflow calls it makes (server.ts: when tracing is on). */
  tracer?: Tracer;
  /** How the forwarder sends a signal (server.ts: from a thread of its own); by default with `temporal`, inline. */
  signal?: InboxForwarderOptions['signal'];
  /** The inbox forwarder starts with the app unless false (tests drive it themselves). */
  startForwarder?: boolean;
  /** First wait of the forwarder after a failed attempt; doubles up to config.forwarder.maxBackoffMs. */
  forwarderMinBackoffMs?: number;
  /** How operators' access tokens are checked; by default against OIDC_ISSUER when it is set. */
  verifyOperator?: TokenVerifier;
}

export type ApiApp = FastifyInstance & { journeyApi: ApiContext };

/** Error answers are application/problem+json (what the API sends), not the generator's application/json. */
function problemMediaType<T>(document: T): T {
  const paths = (document as { paths?: Record<string, Record<string, { responses?: Record<string, unknown> }>> }).paths;
  for (const operations of Object.values(paths ?? {})) {
    for (const operation of Object.values(operations)) {
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        const content = (response as { content?: Record<string, unknown> }).content;
        if (Number(status) < 400 || !content?.['application/json']) continue;
        content['application/problem+json'] = content['application/json'];
        delete content['application/json'];
      }
    }
  }
  return document;
}

/** Refused sign-ins of one address audited one by one in a minute; past them, in one record per address and minute. */
const SIGN_IN_REFUSALS_AUDITED_ALONE = 10;

export async function buildApp(deps: ApiDeps): Promise<ApiApp> {
  const { config } = deps;
  const now = deps.clock ?? (() => new Date());
  const app = Fastify({
    logger: deps.logger ?? false,
    bodyLimit: config.api.bodyLimitBytes,
    forceCloseConnections: 'idle',
    // The load balancers' X-Forwarded-For names the caller, so limits per source count the caller, not the balancer.
    ...(config.api.trustedProxies.length > 0 ? { trustProxy: config.api.trustedProxies } : {}),
    return503OnClosing: true,
    frameworkErrors: frameworkErrorProblem,
  }).withTypeProvider<ZodTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerProblemHandlers(app);
  if (deps.tracer) traceRequests(app, deps.tracer);
  if (deps.logger) logJourneyIds(app);

  // The audit trail (AUDIT_STORE): the file of AUDIT_FILE, or the table every process shares; checked before anything
  // else starts (a table missing, or a role that could change it, stops the start).
  const auditTrail = auditLogFrom(config.audit, { applicationName: 'journey-api audit' });
  try {
    await auditTrail?.init();
  } catch (err) {
    await auditTrail?.close().catch(() => undefined);
    throw err;
  }
  const audit = auditTrail ? (e: AuditEvent) => auditTrail.append(e) : undefined;
  const sealer = new RecordSealer(sealerKeys(config));
  const metrics = createApiMetrics();
  const inbox =
    deps.inbox ??
    createInbox(config, sealer, {
      onBatch: (size, seconds) => {
        metrics.inboxAppendBatch.observe(size);
        metrics.inboxWriteSeconds.observe(seconds);
      },
      onListenError: (err) => app.log.warn({ err }, 'inbox LISTEN connection lost; reconnecting'),
      now,
    });
  await inbox.init();
  const ackPressure = new AckPressure(config.forwarder.ackPressureMs, config.forwarder.maxDeferMs);
  const forwarder = new InboxForwarder({
    inbox,
    temporal: deps.temporal,
    ...(deps.signal ? { signal: deps.signal } : {}),
    signalTimeoutMs: config.forwarder.signalTimeoutMs,
    concurrency: config.forwarder.concurrency,
    maxBackoffMs: config.forwarder.maxBackoffMs,
    pressure: () => ackPressure.underPressure(),
    policy: config.forwarder.policy,
    maxDeferMs: config.forwarder.maxDeferMs,
    probe: () =>
      deps.temporal.connection
        .withDeadline(Date.now() + 1_000, () => deps.temporal.workflowService.getSystemInfo({}))
        .then(() => true),
    ...(deps.forwarderMinBackoffMs !== undefined ? { minBackoffMs: deps.forwarderMinBackoffMs } : {}),
    metrics: {
      forwarded: (_entry, delay) => {
        metrics.forwarded.inc();
        metrics.forwardDelaySeconds.observe(delay);
      },
      deadLettered: (reason) => metrics.deadLettered.inc({ reason }),
      failedAttempt: (unreachable) => metrics.forwardFailures.inc({ kind: unreachable ? 'unreachable' : 'refused' }),
    },
    log: app.log,
    now,
  });
  const oidc = config.codec.oidc;
  const operatorTokens =
    deps.verifyOperator ??
    (oidc
      ? tokenVerifier({
          issuer: oidc.issuer,
          audience: oidc.audience,
          roleClaim: oidc.roleClaim,
          clockSkewSeconds: oidc.clockSkewSeconds,
          ...(oidc.jwksUrl ? { jwksUrl: oidc.jwksUrl } : {}),
        })
      : undefined);
  // Every sign-in with an access token (its first request to this process) is on the trail.
  const verifyOperator = operatorTokens && audit ? auditSignIns(operatorTokens, audit) : operatorTokens;
  const ctx: ApiContext = {
    config,
    temporal: deps.temporal,
    journeys: new JourneyGateway({
      temporal: deps.temporal,
      taskQueue: config.temporal.taskQueue,
      timeoutMs: config.api.temporalTimeoutMs,
      pageTokenSecret: config.api.webhookSecret,
    }),
    examService: new ClinicExamService(deps.examServiceFor, config.examService.catalogCacheTtlMs),
    attachments: deps.attachments ?? createAttachmentStore(config, sealer),
    inbox,
    forwarder,
    ackPressure,
    metrics,
    now,
    signInGuard: new SourceGuard({
      maxFailures: config.api.signInFailuresPerMinute,
      windowMs: 60_000,
      auditEach: SIGN_IN_REFUSALS_AUDITED_ALONE,
      ...(audit ? { audit } : {}),
      now: () => now().getTime(),
    }),
    ...(verifyOperator ? { verifyOperator } : {}),
    ...(audit ? { audit } : {}),
    ...(auditTrail ? { auditTrail } : {}),
  };
  app.decorate('journeyApi', ctx);
  app.decorateRequest('clinic', null);
  app.decorateRequest('operator', null);

  app.addHook('onResponse', async (request, reply) => {
    metrics.httpRequests.inc({
      method: request.method,
      route: request.routeOptions.url ?? 'unmatched',
      status: String(reply.statusCode),
    });
  });
  if (deps.startForwarder !== false) {
    app.addHook('onReady', (done) => {
      forwarder.start();
      done();
    });
  }
  // Retention: dead letters past their period are deleted at start and every hour (any replica; each deletion once).
  const retentionDays = config.api.deadLetterRetentionDays;
  let retentionTimer: NodeJS.Timeout | undefined;
  if (retentionDays > 0 && deps.startForwarder !== false) {
    const sweep = () =>
      expireDeadLetters(inbox.deadLetters, {
        olderThan: new Date(now().getTime() - retentionDays * 86_400_000),
        ...(audit ? { audit } : {}),
      }).then(
        ({ removed }) => {
          if (removed > 0) app.log.info({ removed, retentionDays }, 'dead letters past their retention deleted');
        },
        (err: unknown) => app.log.warn({ err }, 'dead-letter retention sweep failed; the next one tries again'),
      );
    app.addHook('onReady', (done) => {
      void sweep();
      retentionTimer = setInterval(() => void sweep(), 3_600_000).unref();
      done();
    });
  }
  // Uploads no journey took: deleted once older than their grace, at start and every hour (any replica).
  let orphanTimer: NodeJS.Timeout | undefined;
  if (config.attachmentOrphanGraceMs > 0 && deps.startForwarder !== false) {
    const sweep = () =>
      sweepOrphanUploads(ctx).then(
        ({ deleted, stale }) => {
          if (deleted + stale > 0) app.log.info({ deleted, stale }, 'uploads no journey took deleted');
        },
        (err: unknown) => app.log.warn({ err }, 'orphan upload sweep failed; the next one tries again'),
      );
    app.addHook('onReady', (done) => {
      void sweep();
      orphanTimer = setInterval(() => void sweep(), 3_600_000).unref();
      done();
    });
  }
  // Stop taking new work first (Fastify closes the listener), then let the forwarder finish its claim, then close
  // the inbox (an injected one belongs to the caller).
  app.addHook('onClose', async () => {
    clearInterval(retentionTimer);
    clearInterval(orphanTimer);
    await forwarder.stop();
    if (!deps.inbox) await inbox.close();
    await ctx.signInGuard.close();
    await auditTrail?.close();
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Patient journey engine',
        version: '1.0.0',
        description:
          'Clinic API (/v1), the exam-service webhook receiver, operator routes (/admin) and operations. Errors are application/problem+json (RFC 9457).',
      },
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', description: "a clinic's API token" },
          adminAuth: { type: 'http', scheme: 'bearer', description: 'the operator token' },
        },
      },
    },
    transform: jsonSchemaTransform,
    transformObject: (input) => problemMediaType(jsonSchemaTransformObject(input)),
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });

  const opts: RouteOptions = { ctx };
  await app.register(opsRoutes, opts);
  await app.register(webhookRoutes, opts);
  await app.register(adminRoutes, { ...opts, prefix: '/admin' });
  await app.register(operationRoutes, { ...opts, prefix: '/admin' });
  await app.register(auditRoutes, { ...opts, prefix: '/admin' });
  await app.register(clinicApi, { ...opts, prefix: '/v1' });
  return app as unknown as ApiApp;
}

/** Everything a clinic calls: bearer auth, then a rate limit per clinic, multipart for uploads. */
const clinicApi: FastifyPluginAsyncZod<RouteOptions> = async (app, { ctx }) => {
  const { config } = ctx;
  app.addHook('onRequest', clinicAuth(config, ctx.signInGuard));
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
  await app.register(journeyRoutes, { ctx });
  await app.register(catalogRoutes, { ctx });
};
