// buildApp(deps): the API as a Fastify instance, dependencies injected (tests pass their own). Laid out as fastify's
// demo: the app's plugins (plugins/: each decorates the app with one part and owns its start and stop), then the
// routes (routes/: a file per thing served, a folder per prefix, its autohooks for what the folder's routes share:
// the clinic's auth and limits under v1/, the operators' sign-in under admin/), both loaded by @fastify/autoload.
import path from 'node:path';
import autoload from '@fastify/autoload';
import Fastify, { type FastifyInstance } from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { logJourneyIds } from '../observability/request-log';
import { traceRequests } from '../observability/tracing';
import type { ApiDeps } from './deps';
import { frameworkErrorProblem, registerProblemHandlers } from './problem';

export type { ApiDeps } from './deps';
export type ApiApp = FastifyInstance;

export async function buildApp(deps: ApiDeps): Promise<ApiApp> {
  const { config } = deps;
  const app = Fastify({
    logger: deps.logger ?? false,
    bodyLimit: config.api.bodyLimitBytes,
    forceCloseConnections: 'idle',
    // Only the balancer in front (which replaces X-Forwarded-For) names the caller; anyone else is their own address.
    ...(config.api.trustedProxies.length > 0 ? { trustProxy: config.api.trustedProxies } : {}),
    return503OnClosing: true,
    frameworkErrors: frameworkErrorProblem,
  }).withTypeProvider<ZodTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerProblemHandlers(app);
  if (deps.tracer) traceRequests(app, deps.tracer);
  if (deps.logger) logJourneyIds(app);

  await app.register(autoload, { dir: path.join(__dirname, 'plugins'), options: deps });
  await app.register(autoload, { dir: path.join(__dirname, 'routes'), autoHooks: true, cascadeHooks: true });
  return app;
}
