// /healthz (liveness), /readyz (readiness: Temporal reachable, the inbox readable) and /metrics (Prometheus). No auth: keep them off the public edge.
import type { FastifyPluginCallbackZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ApiContext } from '../context';
import { restrictToJourneys } from '../journey-query';
import { Problem, problemBody, sendProblem } from '../problem';

const READY_DEADLINE_MS = 2_000;
/** How long a scrape waits for Temporal to count the journeys that need attention. */
const ATTENTION_COUNT_DEADLINE_MS = 1_000;
const NEEDING_ATTENTION = restrictToJourneys('NeedsAttention = true', { runningOnly: true });

const healthAndMetrics: FastifyPluginCallbackZod = (app, _options, done) => {
  const ctx: ApiContext = app;
  async function countNeedingAttention(): Promise<number> {
    const { temporal } = ctx;
    const r = await temporal.connection.withDeadline(Date.now() + ATTENTION_COUNT_DEADLINE_MS, () =>
      temporal.workflowService.countWorkflowExecutions({
        namespace: temporal.options.namespace,
        query: NEEDING_ATTENTION,
      }),
    );
    return Number(r.count ?? 0);
  }

  app.get(
    '/healthz',
    {
      schema: {
        tags: ['operations'],
        summary: 'Liveness: the process answers',
        response: { 200: z.object({ status: z.literal('ok').describe('The process answers') }) },
      },
    },
    () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        tags: ['operations'],
        summary:
          'Readiness: Temporal answers (callbacks are still accepted into the inbox while it does not) and the inbox ' +
          'can be read',
        response: {
          200: z.object({
            status: z.literal('ready').describe('Ready for traffic'),
            temporal: z.literal('ok').describe('Temporal answered'),
            inbox: z.enum(['files', 'postgres']).describe('The callback inbox in use'),
            inboxDepth: z.number().int().describe('Callbacks waiting in the inbox to be signalled'),
          }),
          503: Problem,
        },
      },
    },
    async (_request, reply) => {
      let depth: number;
      try {
        depth = (await ctx.callbacks.inbox.stats()).depth;
      } catch {
        return sendProblem(
          reply,
          problemBody(503, 'not-ready', `the ${ctx.callbacks.inbox.kind} inbox cannot be read`),
        );
      }
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
          problemBody(503, 'not-ready', `Temporal is not reachable; ${depth} callbacks wait in the inbox`),
        );
      }
      clearTimeout(timer);
      return { status: 'ready' as const, temporal: 'ok' as const, inbox: ctx.callbacks.inbox.kind, inboxDepth: depth };
    },
  );

  app.get(
    '/metrics',
    { schema: { tags: ['operations'], summary: 'Prometheus metrics (text format 0.0.4)' } },
    async (request, reply) => {
      const [gauges, attention] = await Promise.all([
        ctx.callbacks.refreshGauges(),
        countNeedingAttention().catch(() => Number.NaN),
      ]);
      // The inbox's gauges as of this scrape; a store that cannot be read keeps the last figures (and /readyz says).
      if (!gauges.ok) request.log.warn({ err: gauges.err }, 'inbox figures could not be read for /metrics');
      // Unknown (NaN) rather than a stale count when Temporal's visibility store does not answer in time.
      ctx.metrics.scraped.journeysNeedingAttention = attention;
      return reply.type(ctx.metrics.contentType).send(await ctx.metrics.render());
    },
  );
  done();
};
export default healthAndMetrics;
