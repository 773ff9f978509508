/**
 * buildSandbox(): the exam-service sandbox as an in-process Fastify server on a free port, with its configuration,
 * store and a controllable clock. `npm run sandbox` (main.ts) uses the same builder.
 */
import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import { logFormatOf, prettyStream } from '../observability/log-format';
import { SandboxClock } from './clock';
import { resolveSandboxConfig, type SandboxConfig, type SandboxConfigInput } from './config';
import type { SandboxContext } from './context';
import { CallbackDelivery } from './delivery';
import { FaultControl, type SandboxFaults, type SandboxFaultsInput } from './faults';
import { ExamLifecycle } from './lifecycle';
import { SandboxRandom } from './random';
import { controlRoutes } from './routes/control';
import { docsRoutes } from './routes/docs';
import { pageRoutes } from './routes/pages';
import { serviceRoutes } from './routes/service';
import { SandboxStore } from './store';

export interface SandboxOptions extends Omit<SandboxConfigInput, 'faults'> {
  faults?: SandboxFaultsInput;
  /** Start time of a manual clock (defaults to now). */
  startAt?: Date;
}

export interface Sandbox {
  app: FastifyInstance;
  /** Origin the service's paths hang under: `${baseUrl}/api/exam_list`. */
  baseUrl: string;
  clock: SandboxClock;
  config: SandboxConfig;
  store: SandboxStore;
  /** Replaces the faults in force (same as POST /_sandbox/faults). */
  setFaults(faults: SandboxFaultsInput): SandboxFaults;
  /** Resolves when no scheduled action and no callback attempt is running (future ones are not waited for). */
  idle(): Promise<void>;
  close(): Promise<void>;
}

/** Builds and starts a sandbox. Port 0 (a free port) unless `port` is given. */
export async function buildSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const { startAt, ...configInput } = options;
  const config = resolveSandboxConfig({ port: 0, ...configInput });
  let publicUrl = config.publicUrl ?? `http://${config.host}:${config.port}`;

  const app = Fastify({
    logger:
      config.logLevel === 'silent'
        ? false
        : {
            level: config.logLevel,
            base: { service: 'sandbox' },
            ...(logFormatOf(process.env.LOG_FORMAT, process.stdout) === 'pretty' ? { stream: prettyStream() } : {}),
          },
    // Attachments travel as base64 in JSON; leave room so an oversized file still gets the sandbox's own 400.
    bodyLimit: Math.ceil((config.attachmentMaxBytes * 4) / 3) + 1024 * 1024,
    forceCloseConnections: true,
  });
  const clock = new SandboxClock(config.clockMode, startAt, (err, label) =>
    app.log.error({ err, label }, 'sandbox scheduled action failed'),
  );
  const store = new SandboxStore();
  const random = new SandboxRandom(config.seed);
  const faults = new FaultControl(config.faults);
  const delivery = new CallbackDelivery({ store, clock, config, faults: () => faults.get() });
  const lifecycle = new ExamLifecycle({
    store,
    clock,
    config,
    random,
    delivery,
    faults: () => faults.get(),
    publicUrl: () => publicUrl,
  });
  const ctx: SandboxContext = { config, clock, store, random, faults, delivery, lifecycle, publicUrl: () => publicUrl };

  app.setErrorHandler((err: FastifyError, request, reply) => {
    const status = err.statusCode ?? 500;
    if (status === 413) {
      const field = request.url.endsWith('/exam_upload_attachment') ? 'content_base64' : 'body';
      return reply.code(400).send({
        http_code: 400,
        error_message: `${field}: the request is too large; attachments are limited to ${config.attachmentMaxBytes} bytes after decoding.`,
        field,
      });
    }
    if (status === 415) {
      return reply
        .code(400)
        .send({ http_code: 400, error_message: 'Requests must be JSON (Content-Type: application/json).' });
    }
    if (status >= 400 && status < 500) {
      return reply.code(400).send({ http_code: 400, error_message: `The request is not valid JSON: ${err.message}` });
    }
    request.log.error({ err }, 'sandbox operation failed');
    return reply.code(500).send({ http_code: 500, error_message: 'Internal server error.' });
  });
  app.setNotFoundHandler((_request, reply) =>
    reply.code(404).send({ http_code: 404, error_message: 'No such path in the exam-service sandbox.' }),
  );

  await app.register(serviceRoutes(ctx));
  await app.register(controlRoutes(ctx));
  await app.register(pageRoutes(ctx));
  await app.register(docsRoutes());

  await app.listen({ host: config.host, port: config.port });
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : config.port;
  const hostForUrl = config.host.includes(':') ? `[${config.host}]` : config.host;
  const baseUrl = `http://${hostForUrl === '0.0.0.0' ? '127.0.0.1' : hostForUrl}:${port}`;
  publicUrl = config.publicUrl?.replace(/\/+$/, '') ?? baseUrl;

  let closed = false;
  return {
    app,
    baseUrl,
    clock,
    config: { ...config, port },
    store,
    setFaults: (input) => faults.set(input),
    async idle() {
      await clock.idle();
      await delivery.idle();
    },
    async close() {
      if (closed) return;
      closed = true;
      clock.clear();
      await app.close();
      await delivery.close();
    },
  };
}
