// Operations: liveness, readiness (Temporal reachable) and Prometheus metrics. No auth: keep them off the public edge.
import type { FastifyPluginCallbackZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteOptions } from '../context';
import { Problem, problemBody, sendProblem } from '../problem';

const READY_DEADLINE_MS = 2_000;

export const opsRoutes: FastifyPluginCallbackZod<RouteOptions> = (app, { ctx }, done) => {
  app.get(
    '/healthz',
    {
      schema: {
        tags: ['operations'],
        summary: 'Liveness: the process answers',
        response: { 200: z.object({ status: z.literal('ok') }) },
      },
    },
    () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        tags: ['operations'],
        summary: 'Readiness: Temporal answers (callbacks are still accepted and spooled while it does not)',
        response: {
          200: z.object({ status: z.literal('ready'), temporal: z.literal('ok'), spoolDepth: z.number().int() }),
          503: Problem,
        },
      },
    },
    async (_request, reply) => {
      let timer: NodeJS.Timeout | undefined;
      try {
        // The gRPC deadline does not bound a (lazy) connection's first connect: bound the wall time too.
        await Promise.race([
          ctx.temporal.connection.withDeadline(Date.now() + READY_DEADLINE_MS, () =>
            ctx.temporal.workflowService.getSystemInfo({}),
          ),
          new Promise((_resolve, reject) => {
            timer = setTimeout(() => reject(new Error('readiness deadline')), READY_DEADLINE_MS);
          }),
        ]);
      } catch {
        clearTimeout(timer);
        return sendProblem(
          reply,
          problemBody(503, 'not-ready', `Temporal is not reachable; ${ctx.spool.depth} callbacks wait in the spool`),
        );
      }
      clearTimeout(timer);
      return { status: 'ready' as const, temporal: 'ok' as const, spoolDepth: ctx.spool.depth };
    },
  );

  app.get(
    '/metrics',
    { schema: { tags: ['operations'], summary: 'Prometheus metrics (text format 0.0.4)' } },
    async (_request, reply) =>
      reply.type('text/plain; version=0.0.4; charset=utf-8').send(ctx.metrics.registry.render()),
  );
  done();
};
