// The whole engine on one machine: Temporal dev server (file-persisted, with its Web UI), the exam-service sandbox,
// the worker and the API. Ctrl-C stops everything; started again, it resumes the journeys that were running.
import path from 'node:path';
import { DEMO_API_KEY } from '../src/sandbox/seed';
import { loopbackHosts } from '../src/codec/host-check';
import { freeLoopbackPort, startHostFront } from './lib/host-front';
import { api, codec, makeVersionCurrent, sandbox, temporalDevServer, worker, workerVersion } from './lib/stack/parts';
import { runStack, Stack } from './lib/stack/stack';
import type { StackPort } from './lib/stack-guard';
import { openStackLog } from './lib/stack-log';
import {
  DEMO_CLINIC_ID,
  DEMO_CLINIC_TOKEN,
  LOCAL_ADMIN_TOKEN,
  sha256,
  stackSecrets,
  stackTemporalProfile,
  writeDemoClinics,
} from './lib/stack-secrets';

const root = path.resolve(__dirname, '..');
const dataDir = path.resolve(process.env.DATA_DIR ?? path.join(root, '.data'));
const ports = {
  temporal: Number(process.env.TEMPORAL_PORT ?? 7233),
  ui: Number(process.env.TEMPORAL_UI_PORT ?? 8233),
  sandbox: Number(process.env.SANDBOX_PORT ?? 4010),
  api: Number(process.env.API_PORT ?? 3000),
  codec: Number(process.env.CODEC_PORT ?? 8888),
};
/** The worker's Prometheus page: WORKER_METRICS_ADDRESS as given (`off` for none), else 127.0.0.1:WORKER_METRICS_PORT. */
const workerMetricsAddress =
  process.env.WORKER_METRICS_ADDRESS ?? `127.0.0.1:${Number(process.env.WORKER_METRICS_PORT ?? 9464)}`;
const workerMetricsOff = ['', 'off'].includes(workerMetricsAddress.trim().toLowerCase());
const log = openStackLog('stack');
const say = (message: string) => log.say(message);
/**
 * Another exam service for the demo clinic (a clinic's test account at the live service, or a sandbox run on its
 * own): the stack then starts no sandbox, and the key is the clinic's for that service.
 */
const external = (() => {
  try {
    return externalExamService(process.env);
  } catch (err) {
    log.say(err instanceof Error ? err.message : String(err), 'error');
    return process.exit(2);
  }
})();
export { DEMO_CLINIC_ID, DEMO_CLINIC_TOKEN, LOCAL_ADMIN_TOKEN };

/** Local secrets and the demo clinic, made once and kept in the git-ignored data folder. */
function localConfig(): Record<string, string> {
  const secrets = stackSecrets(dataDir);
  const clinicsFile = writeDemoClinics(dataDir, secrets, {
    name: external ? 'Demo Clinic' : 'Demo Clinic (sandbox)',
    ...(external ? { examServiceApiKey: external.apiKey } : {}),
  });
  return {
    DATA_DIR: dataDir,
    TEMPORAL_ADDRESS: `127.0.0.1:${ports.temporal}`,
    TEMPORAL_CONFIG_FILE: stackTemporalProfile(dataDir),
    EXAM_SERVICE_BASE_URL: external?.baseUrl ?? `http://127.0.0.1:${ports.sandbox}`,
    CLINICS_FILE: clinicsFile,
    WEBHOOK_SECRET: secrets.webhookSecret,
    API_PORT: String(ports.api),
    PUBLIC_BASE_URL: process.env.PUBLIC_BASE_URL ?? `http://127.0.0.1:${ports.api}`,
    SANDBOX_PORT: String(ports.sandbox),
    // The sandbox logs every request at info: too loud beside the engine's own output.
    SANDBOX_LOG_LEVEL: process.env.SANDBOX_LOG_LEVEL ?? 'warn',
    ADMIN_TOKEN_SHA256: sha256(LOCAL_ADMIN_TOKEN),
    PAYLOAD_ENCRYPTION_KEYS: process.env.PAYLOAD_ENCRYPTION_KEYS ?? secrets.payloadEncryptionKeys,
    CODEC_PORT: String(ports.codec),
    CODEC_CORS_ORIGINS: `http://127.0.0.1:${ports.ui},http://localhost:${ports.ui}`,
    // The audit trails, one per process: the API's operator actions and retention, the codec server's decodes (the
    // worker's retention deletions go to audit/worker.jsonl).
    AUDIT_FILE: path.join(dataDir, 'audit', 'api.jsonl'),
    CODEC_AUDIT_FILE: path.join(dataDir, 'audit', 'codec.jsonl'),
    WORKER_METRICS_ADDRESS: workerMetricsAddress,
  };
}

const version = workerVersion();

/** The ports this stack listens on, each with the part that needs it and the variable that moves it. */
function stackPorts(): StackPort[] {
  const metricsPort = Number(workerMetricsAddress.trim().split(':').pop());
  return [
    { part: 'Temporal frontend', port: ports.temporal, variable: 'TEMPORAL_PORT' },
    { part: 'Temporal Web UI', port: ports.ui, variable: 'TEMPORAL_UI_PORT' },
    ...(external ? [] : [{ part: 'exam-service sandbox', port: ports.sandbox, variable: 'SANDBOX_PORT' }]),
    { part: 'codec server', port: ports.codec, variable: 'CODEC_PORT' },
    { part: 'clinic API', port: ports.api, variable: 'API_PORT' },
    ...(workerMetricsOff || !Number.isInteger(metricsPort)
      ? []
      : [{ part: "worker's metrics", port: metricsPort, variable: 'WORKER_METRICS_PORT' }]),
  ];
}

async function up(stack: Stack) {
  // The API's and the worker's JSON lines at info (journey and workflow ids, never PHI); LOG_LEVEL sets another.
  const logLevel = { LOG_LEVEL: process.env.LOG_LEVEL ?? 'info' };
  const env = { ...logLevel, ...localConfig() };
  // The key lives in the clinics file only: the processes get none of it through their environment.
  delete process.env.EXAM_SERVICE_API_KEY;
  // The dev server's Web UI answers any `Host`: it listens on a port of its own, picked at random on 127.0.0.1, and
  // the UI's address is a front that passes on only requests naming the stack's own address (no DNS rebinding).
  const uiBehind = await freeLoopbackPort(Object.values(ports));
  await startHostFront({
    listen: { host: '127.0.0.1', port: ports.ui },
    target: { host: '127.0.0.1', port: uiBehind },
    allowedHosts: loopbackHosts('127.0.0.1', ports.ui),
    refused: (host) => say(`Temporal UI: refused a request for Host ${host} (421: not this stack's address)`),
  });
  const codecUrl = `http://127.0.0.1:${ports.codec}`;
  const dbFile = path.join(dataDir, 'temporal.db');
  await stack.up(
    temporalDevServer({ port: ports.temporal, ui: { port: uiBehind, codec: codecUrl }, dbFile, env: logLevel }),
    codec(ports.codec, env),
    ...(external ? [] : [sandbox(ports.sandbox, env)]),
  );
  // Each process its own audit trail (one writer per trail): the worker's beside the API's.
  const workerTrail = { AUDIT_FILE: path.join(dataDir, 'audit', 'worker.jsonl') };
  await stack.up(worker({ ...env, ...version, ...workerTrail }), api(ports.api, env));
  const address = `127.0.0.1:${ports.temporal}`;
  if (version.WORKER_BUILD_ID)
    await makeVersionCurrent(address, version.WORKER_BUILD_ID, { env: process.env, log: say });
  say('the engine is up:');
  say(`  API            http://127.0.0.1:${ports.api}  (docs: http://127.0.0.1:${ports.api}/docs)`);
  say(`  demo clinic    Authorization: Bearer ${DEMO_CLINIC_TOKEN}`);
  say(`  admin routes   Authorization: Bearer ${LOCAL_ADMIN_TOKEN}, X-Actor: <who>  (/admin/dead-letters)`);
  say(`  Temporal UI    http://127.0.0.1:${ports.ui}`);
  say(`  Temporal gRPC  127.0.0.1:${ports.temporal}`);
  say(`  codec server   ${codecUrl}  (the UI shows decrypted payloads through it)`);
  say(`  metrics        http://127.0.0.1:${ports.api}/metrics  (API)`);
  if (!workerMetricsOff) say(`                 http://${workerMetricsAddress.trim()}/metrics  (worker)`);
  if (external) {
    say(`  exam service   ${external.baseUrl}  (the demo clinic's key from EXAM_SERVICE_API_KEY; no sandbox)`);
  } else {
    say(`  sandbox        http://127.0.0.1:${ports.sandbox}  (api_key ${DEMO_API_KEY})`);
  }
  say(`  data           ${dataDir}`);
  say('Ctrl-C stops everything.');
}

/** EXAM_SERVICE_BASE_URL (with EXAM_SERVICE_API_KEY) points the demo clinic at another exam service. */
export function externalExamService(env: NodeJS.ProcessEnv): { baseUrl: string; apiKey: string } | undefined {
  const baseUrl = env.EXAM_SERVICE_BASE_URL?.trim();
  if (!baseUrl) return undefined;
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new Error('EXAM_SERVICE_BASE_URL must be an http(s) URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('EXAM_SERVICE_BASE_URL must be http(s)');
  const apiKey = env.EXAM_SERVICE_API_KEY?.trim();
  if (!apiKey) throw new Error('EXAM_SERVICE_API_KEY is required with EXAM_SERVICE_BASE_URL (the clinic key there)');
  return { baseUrl: url.href.replace(/\/+$/, ''), apiKey };
}

void runStack({
  log,
  dataDir,
  ports: stackPorts(),
  // The stack runs one installed part, the Temporal CLI's dev server; the rest is this project's own code.
  install: {
    part: 'tools',
    command: ['bash', path.join(root, 'scripts/install-temporal-cli.sh')],
    checking: 'checking the Temporal CLI (installed into .tools/ on first run)...',
    failed: 'installing the Temporal CLI failed',
  },
  stopping: 'stopping...',
  make: (onFatal) => new Stack({ echo: log, log: say, onFatal }),
  up,
});
