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
import { ManagedProcess } from './processes';
import { temporalProbe } from './stack/parts';

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
  log?: (line: string) => void;
}

export interface TemporalServer {
  readonly address: string;
  readonly metricsUrl: string;
  readonly logFile: string;
  start(): Promise<void>;
  /** SIGTERM, then waits for the process to exit (SIGKILL after a grace period). */
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
  const env = {
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
    TEMPORAL_DYNAMIC_CONFIG: o.dynamicConfigFile ?? PRODUCTION_DYNAMIC_CONFIG,
    ...(o.auth ? authEnv(o) : {}),
  };
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
  return {
    address,
    metricsUrl: `http://127.0.0.1:${o.ports.metrics}/metrics`,
    logFile: proc.logFile!,
    async start() {
      await proc.up();
      o.log?.(`temporal server ready at ${address}`);
    },
    stop: () => proc.stop(),
    kill: () => proc.kill(),
  };
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

/**
 * Registers the namespace when missing and adds the search attributes it lacks, then waits until a visibility query
 * on them answers (the frontend's namespace cache takes a few seconds to see a new namespace).
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
        const client = new Client({ connection, namespace });
        const names = searchAttributes.map((k) => k.name);
        if (names.length > 0) await client.workflow.count(`${names[0]} = 'x'`);
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
