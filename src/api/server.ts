// `npm run api`: the clinic API and the webhook receiver on API_PORT (default 3000). Separate from the worker.
// SIGINT/SIGTERM: stop accepting, let running requests and the spool forwarder's current item finish, close.
import { loadConfig, type Config } from '../config';
import { examServiceClients } from '../exam-service/clinic-clients';
import { SignalThread } from '../inbox';
import { lazyClient } from '../temporal';
import { buildApp, type ApiApp } from './app';

export async function startApi(config: Config): Promise<{ app: ApiApp; close(): Promise<void> }> {
  // Lazy: the API starts (and spools callbacks) while Temporal is still down; /readyz tells when it is reachable.
  const temporal = lazyClient(config);
  const clients = examServiceClients(config);
  // The forwarder's signals from a thread of their own: the event loop keeps to the webhook's acknowledgements.
  const thread = config.forwarder.thread
    ? new SignalThread(config, {
        nice: config.forwarder.threadNice,
        // Runs only once the app exists: a thread starts with the first signal.
        onExit: (code) => app.log.warn({ code }, 'signal thread exited; started again on the next signal'),
      })
    : undefined;
  const app = await buildApp({
    config,
    temporal,
    ...(thread ? { signal: thread.signal } : {}),
    // Clinics reach here from configuration only, so each has a client.
    examServiceFor: (clinic) => clients.forClinic(clinic.clinicId)!,
    logger: {
      level: config.logLevel,
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
    },
  });
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

async function main() {
  const config = loadConfig();
  const running = await startApi(config);
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    running.app.log.info({ signal }, 'shutting down');
    running.close().then(
      () => process.exit(0),
      (err: unknown) => {
        running.app.log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
