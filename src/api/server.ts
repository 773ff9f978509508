// `npm run api`: the clinic API and the webhook receiver on API_PORT (default 3000). Separate from the worker.
// SIGINT/SIGTERM: stop accepting, let running requests and the spool forwarder's current item finish, close.
import { profileOnSignal } from './cpu-profile';
import { hostname } from 'node:os';
import { loadConfig, type Config } from '../config';
import { examServiceClients } from '../exam-service/clinic-clients';
import { SignalThread } from '../inbox';
import { logFormatOf, prettyStream } from '../observability/log-format';
import { asStackPart } from '../part-lifecycle';
import { API_SERVICE_NAME, startTracing, tracingClientInterceptors, type Tracing } from '../observability/tracing';
import { lazyClient } from '../temporal';
import { PatientKeysWhenReady } from '../codec/patient-codec';
import { buildApp, type ApiApp } from './app';

/**
 * The API's logger: JSON lines (pino) without headers or URLs, pretty on a terminal; request lines of a journey carry
 * its journeyId and workflowId (src/observability/request-log.ts).
 */
export function apiLoggerOptions(config: Pick<Config, 'logLevel' | 'logFormat'>) {
  return {
    ...(logFormatOf(config.logFormat, process.stdout) === 'pretty' ? { stream: prettyStream() } : {}),
    level: config.logLevel,
    base: { pid: process.pid, hostname: hostname(), service: API_SERVICE_NAME },
    // Plugins may log request headers (@fastify/multipart logs its busboy options at trace, every header of the
    // upload in them, the bearer token included): any headers object in a log line is censored.
    redact: { paths: ['headers', '*.headers', '*.*.headers'], censor: '[redacted]' },
    // Headers carry bearer tokens; URLs carry webhook tokens. Log neither.
    serializers: {
      req: (req: { method: string; routeOptions?: { url?: string } }) => ({
        method: req.method,
        route: req.routeOptions?.url,
      }),
    },
  };
}

export interface StartApiOptions {
  /** Request spans, and workflow starts, signals and updates that carry their trace context. */
  tracing?: Tracing;
}

export async function startApi(
  config: Config,
  options: StartApiOptions = {},
): Promise<{ app: ApiApp; close(): Promise<void> }> {
  const { tracing } = options;
  // Lazy: the API starts (and spools callbacks) while Temporal is still down; /readyz tells when it is reachable.
  // The patient keys open with the app (after its audit trail); the client, made now, waits for them.
  const patientKeysReady = new PatientKeysWhenReady();
  const temporal = lazyClient(config, {
    interceptors: tracingClientInterceptors(tracing),
    // An erased journey's payloads read as `[erased]`: it is answered from visibility, without patient data.
    ...(config.patientKeys.store !== 'off' ? { patientKeys: patientKeysReady, erased: 'marker' as const } : {}),
  });
  const clients = examServiceClients(config);
  // The forwarder's signals from a thread of their own: the event loop keeps to the webhook's acknowledgements.
  const thread = config.forwarder.thread
    ? new SignalThread(config, {
        nice: config.forwarder.threadNice,
        // Runs only once the app exists: a thread that exits is started again with the next signal.
        onExit: (code) => app.log.warn({ code }, 'signal thread exited; started again on the next signal'),
      })
    : undefined;
  const app = await buildApp({
    config,
    temporal,
    patientKeysReady,
    ...(thread ? { signal: thread.signal } : {}),
    // Clinics reach here from configuration only, so each has a client.
    examServiceFor: (clinic) => clients.forClinic(clinic.clinicId)!,
    ...(tracing ? { tracer: tracing.tracer } : {}),
    logger: apiLoggerOptions(config),
  });
  // The thread loads before the API listens, so its start does not compete with the first callbacks for the CPU.
  await thread?.start();
  await app.listen({ host: config.api.host, port: config.api.port });
  return {
    app,
    async close() {
      await app.close();
      await thread?.close();
      await clients.close();
      await temporal.connection.close();
    },
  };
}

/** A stop that has not finished by then (a request or a signal held by a server that is gone) ends anyway. */
const STOP_WITHIN_MS = 10_000;

async function main() {
  const config = loadConfig();
  const tracing = startTracing(API_SERVICE_NAME);
  const running = await startApi(config, tracing ? { tracing } : {});
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    running.app.log.info({ signal }, 'shutting down');
    running
      .close()
      .then(() => tracing?.shutdown())
      .then(
        () => process.exit(0),
        (err: unknown) => {
          running.app.log.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  // Diagnostics only: a CPU profile on SIGUSR2 (src/api/cpu-profile.ts).
  if (process.env.API_CPU_PROFILE_DIR) profileOnSignal(process.env.API_CPU_PROFILE_DIR, running.app.log);
  asStackPart(STOP_WITHIN_MS, (message) => running.app.log.warn(message));
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
