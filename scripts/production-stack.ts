// `npm run start:production`: the production shape on one machine, every part a real server (see
// scripts/lib/production-stack.ts): PostgreSQL, the Temporal server and its Web UI, MinIO, the codec server, the
// sandbox, two workers, two API replicas and HAProxy in front of them. The first run installs what is missing
// (scripts/install-production.sh). Ctrl-C stops the parts in the reverse order; started again on the same DATA_DIR,
// it picks up the journeys, the inbox and the attachments it left.
//
// Honours the ports of `npm start` (API_PORT is the load balancer's; TEMPORAL_PORT, TEMPORAL_UI_PORT, SANDBOX_PORT,
// CODEC_PORT) and DATA_DIR (default .data/production), plus POSTGRES_PORT (5433), OBJECT_STORE_PORT (9000),
// OBJECT_STORE_CONSOLE_PORT (9001), API_REPLICA_PORTS (API_PORT+1,API_PORT+2), TEMPORAL_MEMBERSHIP_PORT (6933),
// TEMPORAL_METRICS_PORT (9091), WORKERS (2) and WORKER_METRICS_PORTS (9464,9465: each worker's Prometheus page).
import path from 'node:path';
import { DEMO_API_KEY } from '../src/sandbox/seed';
import { ProductionStack, productionPorts, productionStackPorts } from './lib/production-stack';
import { claimStack } from './lib/stack-guard';
import { openStackLog } from './lib/stack-log';

const root = path.resolve(__dirname, '..');

const log = openStackLog('production');
const say = (line: string) => log.say(line);

async function main() {
  const workers = Number(process.env.WORKERS ?? 2);
  if (!Number.isInteger(workers) || workers < 1) throw new Error(`WORKERS: not a count: ${process.env.WORKERS}`);
  const ports = productionPorts(process.env, 2);
  const dataDir = path.resolve(process.env.DATA_DIR ?? path.join(root, '.data', 'production'));
  await claimStack(dataDir, productionStackPorts(ports, workers), (m, level) => log.say(m, level));

  say('checking the servers (installed on first run: a few minutes)...');
  const installed = await log.run('install', 'bash', [path.join(root, 'scripts/install-production.sh')]);
  if (installed !== 0) throw new Error('installing the production parts failed');

  let stopping: Promise<void> | undefined;
  const stack = new ProductionStack({
    dataDir,
    ports,
    workers,
    echo: log,
    supervise: true,
    log: say,
    onFatal: () => void stop(1),
  });
  const stop = (code: number) => {
    stopping ??= (async () => {
      say('stopping (load balancer, API replicas, workers, sandbox, UI, codec, object store, Temporal, PostgreSQL)...');
      await stack.stop();
      say('stopped');
      process.exit(code);
    })();
    return stopping;
  };
  // Ctrl-C, a kill, or the terminal closing (SIGHUP, as when an SSH session drops): every part stops in order.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => void stop(0));
  process.on('exit', () => stack.killNow());

  const started = Date.now();
  try {
    await stack.start();
  } catch (err) {
    log.say(
      `could not start: ${err instanceof Error ? err.message : String(err)} (logs in ${path.join(dataDir, 'logs')})`,
      'error',
    );
    await stop(1);
    return;
  }
  const p = ports;
  say(`the production-shaped stack is up (${((Date.now() - started) / 1000).toFixed(0)} s):`);
  say(`  API (HAProxy)    ${stack.apiUrl}  -> replicas on ${p.apiReplicas.join(', ')}  (docs: ${stack.apiUrl}/docs)`);
  say(`  demo clinic      Authorization: Bearer ${ProductionStack.tokens.clinic}`);
  say(`  admin routes     Authorization: Bearer ${ProductionStack.tokens.admin}  (/admin/dead-letters)`);
  say(`  workers          ${workers}  (metrics: ${stack.workerMetricsUrls.join(', ') || 'none'})`);
  say(
    `  Temporal         ${stack.temporalAddress} on PostgreSQL 127.0.0.1:${p.postgres} (metrics :${p.temporalMetrics})`,
  );
  say(`  Temporal UI      ${stack.uiUrl}  (decrypts through the codec server http://127.0.0.1:${p.codec})`);
  say(`  object store     ${stack.objectStore?.endpoint}  (MinIO; attachments, sealed)`);
  say(`  sandbox          ${stack.sandboxUrl}  (api_key ${DEMO_API_KEY})`);
  say(`  data and logs    ${dataDir}`);
  say(`try: npm run demo -- --api ${stack.apiUrl}`);
  say('Ctrl-C stops everything.');
}

main().catch((err: unknown) => {
  log.say(err instanceof Error ? err.message : String(err), 'error');
  process.exit(1);
});
