// The parts a stack starts, each described once: its command, its own settings and what says it is ready. The local
// stack (scripts/local-stack.ts), the production-shaped one (scripts/lib/production-stack.ts) and the bench's
// (bench/lib/stack.ts) each pick theirs and give them the stack's settings. A part's environment ends with the
// stack's pid (src/part-lifecycle.ts: an engine process stops when its stack is gone) and JSON logs.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { API_NODE_FLAGS } from '../../../src/api/node-flags';
import { DEFAULT_DEPLOYMENT_NAME } from '../../../src/config';
import { makeCurrentVersion } from '../../../src/temporal';
import { SEARCH_ATTRIBUTE_KEYS } from '../../../src/contract/definitions';
import { stackBuildId } from '../build-id';
import { CLIENTS, keycloakCommand, type IdentitySecrets } from '../keycloak';
import { httpProbe, outputProbe, portProbe, ROOT, tsx, type Env, type ProcessOptions, type Probe } from '../processes';
import { searchAttributeTypeName } from '../stack-secrets';
import { partEnv } from '../stack-log';

export const TOOLS = process.env.TEMPORAL_TOOLS_DIR ?? path.join(ROOT, '.tools');
/** What a part is: a process's command, settings and readiness, without where its output goes. */
export type PartSpec = Omit<ProcessOptions, 'logDir' | 'echo' | 'log' | 'onUnexpectedExit' | 'restartAfterMs'>;

const part = (spec: PartSpec): PartSpec => ({ ...spec, env: { ...spec.env, ...partEnv() } });
const local = (port: number) => `http://127.0.0.1:${port}`;

/** WAL lets readers and the writer work at once; NORMAL syncs at checkpoints, not at every commit. */
export const TEMPORAL_DEFAULT_PRAGMAS = ['journal_mode=wal', 'synchronous=normal'];

/** Ready once the Temporal frontend at the address answers (its system info). */
export const temporalProbe =
  (address: string): Probe =>
  async () => {
    const conn = await Connection.connect({ address, connectTimeout: 2_000 });
    try {
      await conn.withDeadline(Date.now() + 2_000, () => conn.workflowService.getSystemInfo({}));
      return true;
    } finally {
      await conn.close();
    }
  };

/**
 * The Temporal dev server (the CLI's), its data in one SQLite file, with the journeys' search attributes: with the
 * Web UI on `ui.port` (asking `ui.codec` to decode payloads) or headless.
 */
export function temporalDevServer(o: {
  name?: string;
  port: number;
  httpPort?: number;
  metricsPort?: number;
  ui?: { port: number; codec: string };
  dbFile: string;
  pragmas?: string[];
  args?: string[];
  env?: Env;
}): PartSpec {
  const opt = (flag: string, v: number | undefined) => (v === undefined ? [] : [flag, String(v)]);
  return part({
    name: o.name ?? 'temporal',
    command: path.join(TOOLS, 'bin', 'temporal'),
    args: [
      ...['server', 'start-dev', ...(o.ui ? [] : ['--headless']), '--ip', '127.0.0.1', '--port', String(o.port)],
      ...opt('--http-port', o.httpPort),
      ...opt('--metrics-port', o.metricsPort),
      ...(o.ui ? ['--ui-ip', '127.0.0.1', '--ui-port', String(o.ui.port)] : []),
      ...['--db-filename', o.dbFile, '--log-level', 'error'],
      ...(o.pragmas ?? TEMPORAL_DEFAULT_PRAGMAS).flatMap((p) => ['--sqlite-pragma', p]),
      ...SEARCH_ATTRIBUTE_KEYS.flatMap((k) => ['--search-attribute', `${k.name}=${searchAttributeTypeName(k.type)}`]),
      // The CLI forces a search attribute cache refresh on every read by default, so that attributes added while it
      // runs are seen at once. This stack's are registered above, before it serves; with SQL visibility (SQLite here)
      // an attribute lives in the namespace's record anyway, which that cache does not hold. Forced, every start,
      // signal and visibility write reads the cluster's metadata from the store again.
      ...['--dynamic-config-value', 'system.forceSearchAttributesCacheRefreshOnRead=false'],
      // The UI asks the codec server to decrypt payloads for the operator's browser.
      ...(o.ui ? ['--ui-codec-endpoint', o.ui.codec] : []),
      ...(o.args ?? []),
    ],
    env: o.env,
    ready: temporalProbe(`127.0.0.1:${o.port}`),
  });
}

/** The exam-service sandbox (src/sandbox/main.ts). */
export function sandbox(port: number, env: Env = {}): PartSpec {
  return part({
    name: 'sandbox',
    ...tsx('src/sandbox/main.ts'),
    env: { SANDBOX_LOG_LEVEL: 'warn', ...env, SANDBOX_PORT: String(port) },
    ready: httpProbe(`${local(port)}/_sandbox/health`),
    readyTimeoutMs: 60_000,
  });
}

/** The codec server (src/codec/main.ts): decodes payloads for the Web UI. */
export function codec(port: number, env: Env = {}): PartSpec {
  return part({
    name: 'codec',
    ...tsx('src/codec/main.ts'),
    env: { ...env, CODEC_PORT: String(port) },
    ready: portProbe(port),
  });
}

/** A worker (src/worker.ts); with `waitPolling`, ready once it says it polls its task queue. */
export function worker(env: Env, o: { name?: string; nodeArgs?: string[]; waitPolling?: boolean } = {}): PartSpec {
  return part({
    name: o.name ?? 'worker',
    ...tsx('src/worker.ts', [], o.nodeArgs),
    env,
    ...(o.waitPolling ? { ready: outputProbe('worker polling task queue') } : {}),
  });
}

/**
 * The workers' version: the commit and a hash of the changes to src/ (build-id.ts), so a restart with other workflow
 * code is a new version of the deployment; none with WORKER_VERSIONING=off (unversioned).
 */
export function workerVersion(env: Env = process.env): Record<string, string> {
  if (env.WORKER_VERSIONING?.trim().toLowerCase() === 'off') return {};
  return { WORKER_BUILD_ID: stackBuildId(ROOT, env), WORKER_BOOTSTRAP_CURRENT: 'false' };
}

/** The workers' version becomes the deployment's current one: new journeys and every running one's next task go to it. */
export async function makeVersionCurrent(
  address: string,
  buildId: string,
  o: { env?: Env; apiKey?: string; log: (line: string) => void },
): Promise<void> {
  const deploymentName = o.env?.WORKER_DEPLOYMENT_NAME?.trim() || DEFAULT_DEPLOYMENT_NAME;
  const connection = await Connection.connect({ address, ...(o.apiKey ? { apiKey: o.apiKey, tls: false } : {}) });
  try {
    const { changed } = await makeCurrentVersion(connection.workflowService, 'default', { deploymentName, buildId });
    o.log(`worker deployment ${deploymentName}: version ${buildId} ${changed ? 'made current' : 'is current'}`);
  } finally {
    await connection.close();
  }
}

/** The clinic API (src/api/server.ts) with its node flags; ready once `probe` (default /healthz) answers 200. */
export function api(
  port: number,
  env: Env,
  o: { name?: string; nodeArgs?: string[]; probe?: '/healthz' | '/readyz' } = {},
): PartSpec {
  return part({
    name: o.name ?? 'api',
    ...tsx('src/api/server.ts', [], [...API_NODE_FLAGS, ...(o.nodeArgs ?? [])]),
    env: { ...env, API_PORT: String(port) },
    ready: httpProbe(`${local(port)}${o.probe ?? '/healthz'}`),
  });
}

/**
 * The Temporal Web UI server (the production stack's; the dev server has its own), configured in <dir>/config: the
 * frontend at `temporal`, payloads decoded by the codec server in the operator's browser, and with `auth` the sign-in
 * through the identity provider (auth code flow, confidential client temporal-ui).
 */
export function temporalUi(o: {
  dir: string;
  port: number;
  temporal: string;
  codec: string;
  auth?: { issuer: string; secrets: IdentitySecrets };
}): PartSpec {
  mkdirSync(path.join(o.dir, 'config'), { recursive: true });
  const url = local(o.port);
  const yaml = [
    `temporalGrpcAddress: ${o.temporal}`,
    'host: 127.0.0.1',
    `port: ${o.port}`,
    'enableUi: true',
    'defaultNamespace: default',
    'notifyOnNewVersion: false',
    'refreshInterval: 1m',
    'cors:',
    '  allowOrigins:',
    `    - ${url}`,
    `    - http://localhost:${o.port}`,
    // The operator's browser asks the codec server to decrypt payloads; they never pass through the UI server.
    // With the identity provider, it sends the signed-in person's access token (header), which the codec server
    // checks for a decode role; without it, nothing is decoded (no token ever goes into a URL).
    'codec:',
    `  endpoint: ${o.codec}`,
    ...(o.auth ? ['  passAccessToken: true'] : []),
    ...(o.auth
      ? [
          'auth:',
          '  enabled: true',
          '  providers:',
          '    - label: Clinic sign-in',
          '      type: oidc',
          `      providerUrl: ${o.auth.issuer}`,
          `      issuerUrl: ${o.auth.issuer}`,
          `      clientId: ${CLIENTS.ui}`,
          `      clientSecret: ${o.auth.secrets.uiClientSecret}`,
          '      scopes:',
          '        - openid',
          '        - profile',
          '        - email',
          `      callbackUrl: ${url}/auth/sso/callback`,
          '      options: {}',
        ]
      : []),
    '',
  ].join('\n');
  writeFileSync(path.join(o.dir, 'config', 'production.yaml'), yaml, { mode: 0o600 });
  const command = path.join(TOOLS, 'temporal-ui', 'bin', 'temporal-ui-server');
  return part({
    name: 'temporal-ui',
    command,
    args: ['-r', o.dir, '-e', 'production', 'start'],
    ready: portProbe(o.port),
  });
}

/** HAProxy in front of the API replicas (configured in <dir>/haproxy.cfg); ready once it answers /healthz. */
export function loadBalancer(dir: string, port: number, replicas: number[]): PartSpec {
  mkdirSync(dir, { recursive: true });
  const cfg = [
    'global',
    '  maxconn 4096',
    'defaults',
    '  mode http',
    '  timeout connect 2s',
    '  timeout client 60s',
    '  timeout server 60s',
    // A request that could not be sent (the replica is gone) goes to another one; nothing sent is sent twice.
    '  retries 2',
    '  option redispatch',
    // X-Forwarded-For holds the one address HAProxy saw: the API trusts it to name who calls (API_TRUSTED_PROXIES).
    '  option forwardfor',
    'frontend api',
    `  bind 127.0.0.1:${port}`,
    '  http-request del-header X-Forwarded-For',
    '  default_backend replicas',
    'backend replicas',
    '  balance roundrobin',
    // Liveness, not readiness: a replica takes callbacks into the inbox while Temporal is away.
    '  option httpchk GET /healthz',
    '  http-check expect status 200',
    '  default-server inter 1s fall 2 rise 1',
    ...replicas.map((p, i) => `  server api-${i + 1} 127.0.0.1:${p} check`),
    '',
  ].join('\n');
  const file = path.join(dir, 'haproxy.cfg');
  writeFileSync(file, cfg);
  return part({
    name: 'load-balancer',
    command: haproxyBin(),
    args: ['-db', '-f', file],
    ready: httpProbe(`${local(port)}/healthz`),
  });
}

export function haproxyBin(): string {
  if (process.env.HAPROXY_BIN) return process.env.HAPROXY_BIN;
  for (const p of ['/usr/sbin/haproxy', '/usr/local/sbin/haproxy', '/usr/bin/haproxy']) if (existsSync(p)) return p;
  throw new Error('HAProxy is missing: run `bash scripts/install-production.sh` (Debian package haproxy)');
}

/** Keycloak (scripts/lib/keycloak.ts) on the stack's PostgreSQL; ready once the realm answers discovery. */
export function keycloak(o: Parameters<typeof keycloakCommand>[0] & { issuer: string }): PartSpec {
  const kc = keycloakCommand(o);
  return part({
    name: 'keycloak',
    ...kc,
    ready: httpProbe(`${o.issuer}/.well-known/openid-configuration`),
    readyTimeoutMs: 180_000,
  });
}
