// `npm run start:production`: the production shape on one machine, every part a real server (see
// scripts/lib/production-stack.ts): PostgreSQL, the Temporal server and its Web UI, MinIO, the codec server, the
// sandbox, two workers, two API replicas and HAProxy in front of them. The first run installs what is missing
// (scripts/install-production.sh). Ctrl-C stops the parts in the reverse order; started again on the same DATA_DIR,
// it picks up the journeys, the inbox and the attachments it left. Killed without stopping them, its guardian stops
// them (scripts/lib/stack-guardian.ts).
//
// Honours the ports of `npm start` (API_PORT is the load balancer's; TEMPORAL_PORT, TEMPORAL_UI_PORT, SANDBOX_PORT,
// CODEC_PORT) and DATA_DIR (default .data/production), plus POSTGRES_PORT (5433), OBJECT_STORE_PORT (9000),
// OBJECT_STORE_CONSOLE_PORT (9001), API_REPLICA_PORTS (API_PORT+1,API_PORT+2), TEMPORAL_MEMBERSHIP_PORT (6933),
// TEMPORAL_METRICS_PORT (9091), WORKERS (2) and WORKER_METRICS_PORTS (9464,9465: each worker's Prometheus page).
// Operators sign in through Keycloak (KEYCLOAK_PORT 8180, KEYCLOAK_MANAGEMENT_PORT 8181; the Temporal server's
// internal frontend on TEMPORAL_INTERNAL_FRONTEND_PORT 7236 and TEMPORAL_INTERNAL_FRONTEND_HTTP_PORT 7244); the demo
// realm has no people: the banner says how to add yourself (npm run add-person); admins sign in (no static admin
// token). PostgreSQL is a highly available cluster (a primary and a synchronous standby run by Patroni with etcd,
// HAProxy on POSTGRES_PORT as the primary's address, the nodes and etcd on the 33 ports after it; the WAL archived and
// a full backup taken at start and daily by pgBackRest into a backup store of its own, BACKUP_STORE_PORT 9010 and
// BACKUP_STORE_CONSOLE_PORT 9011); POSTGRES_HA=off runs one server instead. IDENTITY=off runs
// the stack without it (nothing decoded in the Web UI then, and the Temporal server open to whoever reaches it on this
// host); the admin routes then take a token the stack makes once, kept in <DATA_DIR>/secrets/admin_token (mode 0600).
// TEMPORAL_SPLIT=on runs the Temporal server as a cluster deploys it: each service processes of its own (two frontends
// behind HAProxy on TEMPORAL_PORT, their own ports from TEMPORAL_PORT+20; two history and two matching nodes; the
// internal worker), a membership and a metrics port each from TEMPORAL_MEMBERSHIP_PORT and TEMPORAL_METRICS_PORT.
// TEMPORAL_HISTORY_SHARDS (4) is the server's shard count, fixed at the first start on a DATA_DIR.
// The engine's secrets are files in <DATA_DIR>/secrets, each mode 0600, named by its *_FILE settings.
import path from 'node:path';
import { DEMO_API_KEY } from '../src/sandbox/seed';
import { ProductionStack, productionPorts, productionStackPorts } from './lib/production-stack';
import { runStack } from './lib/stack/stack';
import { openStackLog } from './lib/stack-log';

const root = path.resolve(__dirname, '..');

const log = openStackLog('production');
const say = (line: string) => log.say(line);

function settings() {
  const workers = Number(process.env.WORKERS ?? 2);
  if (!Number.isInteger(workers) || workers < 1) throw new Error(`WORKERS: not a count: ${process.env.WORKERS}`);
  const identity = (process.env.IDENTITY ?? 'keycloak').trim().toLowerCase();
  if (!['keycloak', 'off'].includes(identity)) throw new Error(`IDENTITY: keycloak or off, not ${identity}`);
  const ha = (process.env.POSTGRES_HA ?? 'on').trim().toLowerCase();
  if (!['on', 'off'].includes(ha)) throw new Error(`POSTGRES_HA: on or off, not ${ha}`);
  const split = (process.env.TEMPORAL_SPLIT ?? 'off').trim().toLowerCase();
  if (!['on', 'off'].includes(split)) throw new Error(`TEMPORAL_SPLIT: on or off, not ${split}`);
  const historyShards = Number(process.env.TEMPORAL_HISTORY_SHARDS ?? 4);
  if (!Number.isInteger(historyShards) || historyShards < 1)
    throw new Error(`TEMPORAL_HISTORY_SHARDS: not a count: ${process.env.TEMPORAL_HISTORY_SHARDS}`);
  return {
    workers,
    identity: identity === 'keycloak',
    database: ha === 'on' ? ('cluster' as const) : ('single' as const),
    temporalSplit: split === 'on',
    historyShards,
    ports: productionPorts(process.env, 2),
    dataDir: path.resolve(process.env.DATA_DIR ?? path.join(root, '.data', 'production')),
  };
}

async function up(stack: ProductionStack) {
  const { ports: p, dataDir, identity, workers } = stack.o;
  const started = Date.now();
  await stack.start();
  say(`the production-shaped stack is up (${((Date.now() - started) / 1000).toFixed(0)} s):`);
  say(`  API (HAProxy)    ${stack.apiUrl}  -> replicas on ${p.apiReplicas.join(', ')}  (docs: ${stack.apiUrl}/docs)`);
  say(`  demo clinic      Authorization: Bearer ${ProductionStack.tokens.clinic}`);
  if (stack.adminTokenFile) {
    say(`  admin routes     Authorization: Bearer <the token in ${stack.adminTokenFile}>  (/admin/dead-letters;`);
    say(`                   made for this stack, mode 0600: export ADMIN_TOKEN="$(cat ${stack.adminTokenFile})")`);
  } else {
    say('  admin routes     signed-in admins only (the journey-admin role; no static token beside Keycloak)');
  }
  say(`  workers          ${workers}  (metrics: ${stack.workerMetricsUrls.join(', ') || 'none'})`);
  say(
    `  Temporal         ${stack.temporalAddress} on PostgreSQL 127.0.0.1:${p.postgres} (metrics :${p.temporalMetrics})`,
  );
  if (stack.cluster) {
    say(`  PostgreSQL       a primary and a synchronous standby (Patroni, etcd) behind 127.0.0.1:${p.postgres}; the`);
    say(`                   primary now: ${await stack.cluster.primary()}; nodes' logs in ${stack.cluster.logDir}`);
    say(`  backups          WAL archived and full backups (at start, daily; two kept) by pgBackRest into`);
    say(`                   ${stack.backupStore?.endpoint} (docs/operations.md: failover, switchover, restore)`);
  }
  const nodes = stack.temporal?.nodes ?? [];
  if (nodes.length > 1) {
    say(`  Temporal         ${stack.temporalAddress} (HAProxy) -> ${nodes.map((n) => n.name).join(', ')};`);
    say(
      `                   ${stack.temporal!.historyShards} history shards, fixed at the first start (docs/deploy.md)`,
    );
  }
  if (identity) {
    say(`  Temporal UI      ${stack.uiUrl}  (sign-in; patient data decoded by ${stack.codecUrl} for operators)`);
    say(`  codec server     ${stack.codecUrl}  (HTTPS with a certificate made for this machine: open`);
    say(`                   ${stack.codecUrl}/healthz once in your browser and accept it, or trust`);
    say(`                   ${stack.codecCertificate})`);
    say(`  Keycloak         ${stack.issuer}  (realm journeys; admin console http://127.0.0.1:${p.keycloak}/admin)`);
    say('  people           none yet: add yourself, with a role (viewer, operator or admin), and sign in with the');
    say('                   temporary password it prints (a second factor is set up at the first sign-in):');
    say(
      `                   KEYCLOAK_URL=http://127.0.0.1:${p.keycloak} KEYCLOAK_ADMIN_PASSWORD_FILE=${stack.keycloakAdminPasswordFile} \\`,
    );
    say('                     npm run add-person -- --username <you> --role operator');
    say(`  ops sign-in      npm run ops -- sign-in --issuer ${stack.issuer}`);
  } else {
    say(`  Temporal UI      ${stack.uiUrl}  (no sign-in: IDENTITY=off; payloads stay encrypted in it)`);
  }
  say(`  object store     ${stack.objectStore?.endpoint}  (MinIO; attachments, sealed; audit checkpoints, locked)`);
  say('  audit trail      checked against its checkpoints by:');
  say(
    `                   ${Object.entries(stack.auditVerifyEnv)
      .filter(([, v]) => v !== '')
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')} npm run audit-trail:verify`,
  );
  say(`  secrets          ${path.join(dataDir, 'secrets')} (a file each, mode 0600)`);
  say(`  sandbox          ${stack.sandboxUrl}  (api_key ${DEMO_API_KEY})`);
  say(`  data and logs    ${dataDir}`);
  say(`try: npm run demo -- --api ${stack.apiUrl}`);
  say('Ctrl-C stops everything.');
}

try {
  const o = settings();
  void runStack({
    log,
    dataDir: o.dataDir,
    ports: productionStackPorts(o.ports, o.workers, o.identity, o.database === 'cluster', o.temporalSplit),
    install: {
      part: 'install',
      command: ['bash', path.join(root, 'scripts/install-production.sh')],
      checking: 'checking the servers (installed on first run: a few minutes)...',
      failed: 'installing the production parts failed',
    },
    stopping:
      'stopping (load balancer, API replicas, workers, sandbox, UI, codec, object store, Temporal, PostgreSQL, its backup store)...',
    make: (onFatal) => new ProductionStack({ ...o, echo: log, supervise: true, log: say, onFatal }),
    up,
  });
} catch (err) {
  log.say(err instanceof Error ? err.message : String(err), 'error');
  process.exit(1);
}
