// The Temporal server itself on PostgreSQL, natively: schema set up and updated with temporal-sql-tool from the
// module's versioned files, the server started from deploy/temporal/production.yaml, the namespace registered and the
// project's search attributes added. Installed by scripts/install-temporal-server.sh into .tools/temporal-server.
// Callers must call stop(); the database password goes to the server in its configuration, deploy/temporal/
// production.yaml copied with the password written in to a folder only the stack's user reads (mode 0600), never by
// environment or argument; to the short-lived schema tool by environment. The production-shaped stack runs the schema tool and the
// server as Temporal's own role, which owns the two databases (scripts/lib/database-roles.ts), not the superuser.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { Client as PgClient } from 'pg';
import { httpProbe, ManagedProcess, portProbe } from './processes';
import { haproxyBin, temporalProbe } from './stack/parts';

const ROOT = path.resolve(__dirname, '../..');
export const TEMPORAL_SERVER_DIR = path.join(
  process.env.TEMPORAL_TOOLS_DIR ?? path.join(ROOT, '.tools'),
  'temporal-server',
);
const SERVER_BIN = path.join(TEMPORAL_SERVER_DIR, 'bin', 'temporal-server');
const SQL_TOOL = path.join(TEMPORAL_SERVER_DIR, 'bin', 'temporal-sql-tool');
const SCHEMA_DIR = path.join(TEMPORAL_SERVER_DIR, 'schema', 'postgresql', 'v12');

export interface PostgresAccess {
  host: string;
  port: number;
  user: string;
  password: string;
}

export interface TemporalServerPorts {
  /** The frontend (gRPC): what clients, workers and the UI use. */
  frontend: number;
  http: number;
  history: number;
  matching: number;
  worker: number;
  /** Four membership ports from here (frontend, history, matching, worker; a fifth for the internal frontend with
   * auth): below 32768 (stored as smallint). */
  membershipBase: number;
  /** Prometheus metrics of the server. */
  metrics: number;
  /** With `auth`: the internal frontend (gRPC, then HTTP) for the server's own system worker; loopback only. */
  internalFrontend?: number;
  internalFrontendHttp?: number;
}

/**
 * Temporal's services as separate processes, the shape a cluster deploys: frontends behind a balancer (HAProxy,
 * HTTP/2, so calls rather than connections are spread), history and matching nodes, and the internal worker, each
 * with its own membership port. The balancer listens on the server's `frontend` and `http` ports.
 */
export interface TemporalSplitPorts {
  /** Each frontend's own gRPC and HTTP ports. */
  frontends: { grpc: number; http: number }[];
  /** Each history node's gRPC port. */
  history: number[];
  /** Each matching node's gRPC port. */
  matching: number[];
  /** One membership port per process, in a row from here (below 32768). */
  membershipBase: number;
  /** One metrics port per process, in a row from here. */
  metricsBase: number;
}

/** How many processes a split server runs (the internal frontend's with the authorizer): the ports it needs. */
export function splitProcessCount(split: TemporalSplitPorts, auth: boolean): number {
  return split.frontends.length + split.history.length + split.matching.length + 1 + (auth ? 1 : 0);
}

/** The JWT authorizer: every call needs an access token signed by a key of `jwksUrl`, for `audience`. */
export interface TemporalServerAuth {
  jwksUrl: string;
  audience: string;
}

export interface TemporalServerOptions {
  postgres: PostgresAccess;
  ports: TemporalServerPorts;
  /** Logs of the server go to <logDir>/temporal-server.log. */
  logDir: string;
  /**
   * A folder of the caller's own: the server's configuration is written there (mode 0700, the file 0600) with the
   * database password in it.
   */
  configDir: string;
  historyShards?: number;
  /** The dynamic configuration file; deploy/temporal/dynamicconfig/production.yaml by default. */
  dynamicConfigFile?: string;
  /** The default JWT claim mapper and authorizer on (the `permissions` claim), with an internal frontend. */
  auth?: TemporalServerAuth;
  /** Each service a process of its own (a cluster's shape); one process running them all without. */
  split?: TemporalSplitPorts;
  log?: (line: string) => void;
}

/** One process of the server: every service, or (split) one service's node. */
export interface TemporalNode {
  /** temporal-server, or temporal-history-2 and the like. */
  readonly name: string;
  /** all, or the one service it runs: frontend, history, matching, worker, internal-frontend. */
  readonly service: string;
  readonly metricsUrl: string;
  readonly running: boolean;
  /** The process's pid while it runs. */
  readonly pid: number | undefined;
  /** Started (again) and ready. */
  start(): Promise<void>;
  stop(): Promise<void>;
  /** SIGKILL: a crash. */
  kill(): Promise<void>;
}

export interface TemporalServer {
  /** Where clients connect: the frontend, or (split) the balancer in front of the frontends. */
  readonly address: string;
  readonly metricsUrl: string;
  readonly logFile: string;
  /** Its processes: one, or (split) one per service node. */
  readonly nodes: readonly TemporalNode[];
  /** The history shards (chosen at the cluster's first start, for good). */
  readonly historyShards: number;
  start(): Promise<void>;
  /** SIGTERM, then waits for every process to exit (SIGKILL after a grace period). */
  stop(): Promise<void>;
  /** SIGKILL: a crash. */
  kill(): Promise<void>;
}

/** The production server's dynamic configuration (a drill may start from it and change a few settings). */
export const PRODUCTION_DYNAMIC_CONFIG = path.join(ROOT, 'deploy', 'temporal', 'dynamicconfig', 'production.yaml');

/**
 * The Temporal server's version as the reports name it (`1.30.8`): the installed one's stamp, else the version
 * scripts/install-temporal-server.sh installs.
 */
export function temporalServerVersion(): string {
  const stamp = path.join(TEMPORAL_SERVER_DIR, '.version');
  const text = existsSync(stamp)
    ? readFileSync(stamp, 'utf8')
    : (/^version="([^"]+)"$/m.exec(
        readFileSync(path.join(ROOT, 'scripts', 'install-temporal-server.sh'), 'utf8'),
      )?.[1] ?? '');
  return text.trim().replace(/^v/, '');
}

export function temporalServerInstalled(): boolean {
  return existsSync(SERVER_BIN) && existsSync(SQL_TOOL) && existsSync(SCHEMA_DIR);
}

function sqlTool(pg: PostgresAccess, database: string, args: string[]): void {
  const r = spawnSync(
    SQL_TOOL,
    ['--plugin', 'postgres12', '--ep', pg.host, '-p', String(pg.port), '-u', pg.user, '--db', database, ...args],
    { encoding: 'utf8', env: { ...process.env, SQL_PASSWORD: pg.password } },
  );
  if (r.status !== 0) {
    const tail = `${r.stdout}\n${r.stderr}`.trim().split('\n').slice(-5).join('\n');
    throw new Error(`temporal-sql-tool ${args[0]} on ${database} failed:\n${tail}`);
  }
}

/**
 * Creates the two databases when missing, sets their schemas up when fresh and updates them to the newest version of
 * the installed server (a no-op when current). Safe to run at every start.
 */
export async function setupTemporalSchema(pg: PostgresAccess, log: (line: string) => void = () => undefined) {
  if (!temporalServerInstalled()) {
    throw new Error('the Temporal server is not installed: run `bash scripts/install-temporal-server.sh`');
  }
  const admin = new PgClient({
    host: pg.host,
    port: pg.port,
    user: pg.user,
    password: pg.password,
    database: 'postgres',
  });
  await admin.connect();
  try {
    for (const [database, schema] of [
      ['temporal', 'temporal'],
      ['temporal_visibility', 'visibility'],
    ] as const) {
      const exists = (await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database])).rowCount === 1;
      if (!exists) sqlTool(pg, database, ['create-database']);
      const db = new PgClient({ host: pg.host, port: pg.port, user: pg.user, password: pg.password, database });
      await db.connect();
      const fresh = (await db.query<{ fresh: boolean }>(`SELECT to_regclass('schema_version') IS NULL AS fresh`))
        .rows[0]!.fresh;
      await db.end();
      if (fresh) sqlTool(pg, database, ['setup-schema', '-v', '0.0']);
      sqlTool(pg, database, ['update-schema', '-d', path.join(SCHEMA_DIR, schema, 'versioned')]);
      log(`temporal schema ${database}: ${fresh ? 'set up' : 'checked'}`);
    }
  } finally {
    await admin.end();
  }
}

/** The template's settings for the authorizer (deploy/temporal/production.yaml); a fifth membership port. */
function authEnv(o: TemporalServerOptions): Record<string, string> {
  const { internalFrontend, internalFrontendHttp } = o.ports;
  if (!internalFrontend || !internalFrontendHttp) {
    throw new Error('the Temporal server with auth needs ports.internalFrontend and ports.internalFrontendHttp');
  }
  return {
    TEMPORAL_AUTH_JWKS_URL: o.auth!.jwksUrl,
    TEMPORAL_AUTH_AUDIENCE: o.auth!.audience,
    TEMPORAL_INTERNAL_FRONTEND_PORT: String(internalFrontend),
    TEMPORAL_INTERNAL_FRONTEND_HTTP_PORT: String(internalFrontendHttp),
    TEMPORAL_INTERNAL_FRONTEND_MEMBERSHIP_PORT: String(o.ports.membershipBase + 4),
  };
}

/**
 * deploy/temporal/production.yaml with the database password written in (the template's other settings still come
 * from the environment), into `<configDir>/temporal/production.yaml`; returns the root the server is given (`-r`).
 */
export function writeServerConfig(configDir: string, password: string): string {
  if (/[{}"\\\n]/.test(password))
    throw new Error('the Temporal database password has a character the configuration cannot hold');
  const template = readFileSync(path.join(ROOT, 'deploy', 'temporal', 'production.yaml'), 'utf8');
  const placeholder = '"{{ env "POSTGRES_PASSWORD" }}"';
  if (!template.includes(placeholder)) throw new Error(`deploy/temporal/production.yaml has no ${placeholder}`);
  const dir = path.join(configDir, 'temporal');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(configDir, 0o700);
  chmodSync(dir, 0o700);
  const file = path.join(dir, 'production.yaml');
  writeFileSync(file, template.replaceAll(placeholder, `"${password}"`), { mode: 0o600 });
  chmodSync(file, 0o600);
  return configDir;
}

export function startTemporalServer(o: TemporalServerOptions): TemporalServer {
  const address = `127.0.0.1:${o.ports.frontend}`;
  const configRoot = writeServerConfig(o.configDir, o.postgres.password);
  const env: Record<string, string> = {
    POSTGRES_HOST: o.postgres.host,
    POSTGRES_PORT: String(o.postgres.port),
    POSTGRES_USER: o.postgres.user,
    TEMPORAL_HISTORY_SHARDS: String(o.historyShards ?? 4),
    TEMPORAL_PORT: String(o.ports.frontend),
    TEMPORAL_HTTP_PORT: String(o.ports.http),
    TEMPORAL_HISTORY_PORT: String(o.ports.history),
    TEMPORAL_MATCHING_PORT: String(o.ports.matching),
    TEMPORAL_WORKER_PORT: String(o.ports.worker),
    TEMPORAL_FRONTEND_MEMBERSHIP_PORT: String(o.ports.membershipBase),
    TEMPORAL_HISTORY_MEMBERSHIP_PORT: String(o.ports.membershipBase + 1),
    TEMPORAL_MATCHING_MEMBERSHIP_PORT: String(o.ports.membershipBase + 2),
    TEMPORAL_WORKER_MEMBERSHIP_PORT: String(o.ports.membershipBase + 3),
    TEMPORAL_METRICS_PORT: String(o.ports.metrics),
    // Where the cluster's services reach its frontend (the balancer when split): the same in every process.
    TEMPORAL_CLUSTER_ADDRESS: address,
    TEMPORAL_DYNAMIC_CONFIG: o.dynamicConfigFile ?? PRODUCTION_DYNAMIC_CONFIG,
    ...(o.auth ? authEnv(o) : {}),
  };
  if (o.split) return startSplitServer(o, configRoot, env);
  if (o.ports.membershipBase + (o.auth ? 4 : 3) >= 32768) {
    throw new Error('Temporal membership ports must stay below 32768');
  }
  // The internal frontend is a service of its own, started only with the authorizer (the system worker uses it).
  const services = o.auth
    ? ['frontend', 'internal-frontend', 'history', 'matching', 'worker'].flatMap((s) => ['--service', s])
    : [];

  const proc = new ManagedProcess({
    name: 'temporal-server',
    command: SERVER_BIN,
    args: ['-r', configRoot, '-c', 'temporal', '-e', 'production', 'start', ...services],
    env,
    logDir: o.logDir,
    ready: temporalProbe(address),
    readyTimeoutMs: 60_000,
  });
  const node = nodeOf(proc, 'all', `http://127.0.0.1:${o.ports.metrics}/metrics`, o.log);
  return {
    address,
    metricsUrl: node.metricsUrl,
    logFile: proc.logFile!,
    nodes: [node],
    historyShards: o.historyShards ?? 4,
    async start() {
      await proc.up();
      o.log?.(`temporal server ready at ${address}`);
    },
    stop: () => proc.stop(),
    kill: () => proc.kill(),
  };
}

function nodeOf(proc: ManagedProcess, service: string, metricsUrl: string, log?: (line: string) => void): TemporalNode {
  return {
    name: proc.name,
    service,
    metricsUrl,
    get running() {
      return proc.running;
    },
    get pid() {
      return proc.pid;
    },
    async start() {
      await proc.up();
      log?.(`${proc.name} ready`);
    },
    stop: () => proc.stop(),
    kill: () => proc.kill(),
  };
}

/**
 * The split server: a process per service node, each with its own ports (its service's gRPC and HTTP, membership and
 * metrics) over the same configuration, and HAProxy in front of the frontends.
 */
function startSplitServer(o: TemporalServerOptions, configRoot: string, base: Record<string, string>): TemporalServer {
  const split = o.split!;
  const count = splitProcessCount(split, o.auth !== undefined);
  if (split.membershipBase + count - 1 >= 32768) throw new Error('Temporal membership ports must stay below 32768');
  if (split.frontends.length === 0 || split.history.length === 0 || split.matching.length === 0) {
    throw new Error('a split Temporal server needs at least one frontend, history and matching node');
  }
  const plan: { name: string; service: string; env: Record<string, string>; ready: ReturnType<typeof portProbe> }[] =
    [];
  const add = (service: string, index: number, env: Record<string, string>, ready: ReturnType<typeof portProbe>) => {
    const i = plan.length;
    plan.push({
      name: `temporal-${service}-${index + 1}`,
      service,
      env: {
        ...base,
        ...env,
        TEMPORAL_METRICS_PORT: String(split.metricsBase + i),
        [`TEMPORAL_${service.toUpperCase().replace('-', '_')}_MEMBERSHIP_PORT`]: String(split.membershipBase + i),
      },
      ready,
    });
  };
  split.frontends.forEach((f, i) =>
    add(
      'frontend',
      i,
      { TEMPORAL_PORT: String(f.grpc), TEMPORAL_HTTP_PORT: String(f.http) },
      temporalProbe(`127.0.0.1:${f.grpc}`),
    ),
  );
  split.history.forEach((p, i) => add('history', i, { TEMPORAL_HISTORY_PORT: String(p) }, portProbe(p)));
  split.matching.forEach((p, i) => add('matching', i, { TEMPORAL_MATCHING_PORT: String(p) }, portProbe(p)));
  if (o.auth) add('internal-frontend', 0, {}, portProbe(o.ports.internalFrontend!));
  // The internal worker serves no gRPC of its own: ready once its metrics page answers.
  add('worker', 0, {}, httpProbe(`http://127.0.0.1:${split.metricsBase + plan.length}/metrics`));

  const procs = plan.map(
    (p) =>
      new ManagedProcess({
        name: p.name,
        command: SERVER_BIN,
        args: ['-r', configRoot, '-c', 'temporal', '-e', 'production', 'start', '--service', p.service],
        env: p.env,
        logDir: o.logDir,
        ready: p.ready,
        readyTimeoutMs: 90_000,
      }),
  );
  const nodes = procs.map((proc, i) =>
    nodeOf(proc, plan[i]!.service, `http://127.0.0.1:${plan[i]!.env.TEMPORAL_METRICS_PORT}/metrics`, o.log),
  );
  const balancer = new ManagedProcess({
    name: 'temporal-balancer',
    command: haproxyBin(),
    args: ['-db', '-f', writeBalancerConfig(o.configDir, o.ports, split)],
    logDir: o.logDir,
    ready: temporalProbe(`127.0.0.1:${o.ports.frontend}`),
    readyTimeoutMs: 90_000,
  });
  const address = `127.0.0.1:${o.ports.frontend}`;
  return {
    address,
    metricsUrl: nodes[0]!.metricsUrl,
    logFile: procs[0]!.logFile!,
    nodes,
    historyShards: o.historyShards ?? 4,
    async start() {
      // The first node alone, since on a fresh database it writes the cluster's metadata (two nodes doing it at once:
      // one of them exits on the duplicate); then the others at once, each joining the membership in the database.
      await procs[0]!.up();
      await Promise.all(procs.slice(1).map((p) => p.up()));
      await balancer.up();
      o.log?.(`temporal server ready at ${address} (${procs.map((p) => p.name).join(', ')}, behind HAProxy)`);
    },
    async stop() {
      // The frontends first (no new calls), then the nodes they call, the balancer last.
      const of = (service: string) => procs.filter((_, i) => plan[i]!.service === service);
      await Promise.all(of('frontend').map((p) => p.stop()));
      await Promise.all([...of('worker'), ...of('internal-frontend')].map((p) => p.stop()));
      await Promise.all([...of('matching'), ...of('history')].map((p) => p.stop()));
      await balancer.stop();
    },
    async kill() {
      await Promise.all([...procs, balancer].map((p) => p.kill()));
    },
  };
}

/** HAProxy in front of the frontends: gRPC over HTTP/2 (each call balanced), and the HTTP API. */
function writeBalancerConfig(configDir: string, ports: TemporalServerPorts, split: TemporalSplitPorts): string {
  const cfg = [
    'global',
    '  maxconn 4096',
    'defaults',
    '  mode http',
    '  timeout connect 2s',
    // Long polls (a worker's task poll) last about a minute; a watch on a workflow longer.
    '  timeout client 10m',
    '  timeout server 10m',
    // A call that could not reach a frontend (it is gone) goes to another; nothing sent is sent twice.
    '  retries 2',
    '  option redispatch',
    '  default-server inter 1s fall 2 rise 1',
    'frontend grpc',
    `  bind 127.0.0.1:${ports.frontend} proto h2`,
    '  default_backend frontends',
    'backend frontends',
    '  balance roundrobin',
    ...split.frontends.map((f, i) => `  server frontend-${i + 1} 127.0.0.1:${f.grpc} proto h2 check`),
    'frontend http',
    `  bind 127.0.0.1:${ports.http}`,
    '  default_backend frontends-http',
    'backend frontends-http',
    '  balance roundrobin',
    ...split.frontends.map((f, i) => `  server frontend-${i + 1} 127.0.0.1:${f.http} check`),
    '',
  ].join('\n');
  const file = path.join(configDir, 'temporal', 'balancer.cfg');
  writeFileSync(file, cfg, { mode: 0o600 });
  return file;
}

const INDEXED: Record<string, temporal.api.enums.v1.IndexedValueType> = {
  TEXT: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_TEXT,
  KEYWORD: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  INT: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_INT,
  DOUBLE: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_DOUBLE,
  BOOL: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
  DATETIME: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
  KEYWORD_LIST: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
};

/** How many visibility queries in a row must know every search attribute before the namespace is ready. */
const SEEN_IN_A_ROW = 4;

/** A condition on one search attribute that its type accepts (a query naming an unknown attribute is refused). */
function attributeProbe(k: { name: string; type: string }): string {
  switch (k.type) {
    case 'INT':
    case 'DOUBLE':
      return `${k.name} = 0`;
    case 'BOOL':
      return `${k.name} = true`;
    case 'DATETIME':
      return `${k.name} = '2000-01-01T00:00:00Z'`;
    default:
      return `${k.name} = 'x'`;
  }
}

/**
 * Registers the namespace when missing and adds the search attributes it lacks, then waits until visibility queries
 * on all of them answer (the frontend's namespace cache takes a few seconds to see a new namespace or attribute).
 */
export async function prepareNamespace(
  address: string,
  namespace: string,
  searchAttributes: readonly { name: string; type: string }[],
  retentionDays = 30,
  /** A bearer token (an automation service account's) for a server with the authorizer on. */
  token?: string,
): Promise<void> {
  const connection = await Connection.connect({ address, ...(token ? { apiKey: token, tls: false } : {}) });
  try {
    try {
      await connection.workflowService.registerNamespace({
        namespace,
        workflowExecutionRetentionPeriod: msToTs(retentionDays * 86_400_000),
      });
    } catch (err) {
      if (!/already exists/i.test(err instanceof Error ? err.message : '')) throw err;
    }
    const until = Date.now() + 60_000;
    for (;;) {
      try {
        const have = await connection.operatorService.listSearchAttributes({ namespace });
        const missing = searchAttributes.filter((k) => !(k.name in (have.customAttributes ?? {})));
        if (missing.length > 0) {
          await connection.operatorService.addSearchAttributes({
            namespace,
            searchAttributes: Object.fromEntries(missing.map((k) => [k.name, INDEXED[k.type] ?? INDEXED.KEYWORD!])),
          });
        }
        // Every attribute, in one query, answered several times in a row: each frontend (a balancer spreads the calls
        // over them) and each history node re-reads the namespace's record on its own, every 10 s.
        const client = new Client({ connection, namespace });
        const query = searchAttributes.map(attributeProbe).join(' OR ');
        for (let seen = 0; query && seen < SEEN_IN_A_ROW; seen += 1) await client.workflow.count(query);
        return;
      } catch (err) {
        if (Date.now() > until) throw err;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  } finally {
    await connection.close();
  }
}
