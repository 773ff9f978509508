// The engine on the bench's ports, one child process per part, each started and stopped on its own: the Temporal
// dev server (stopped for the outage run, restarted with other SQLite pragmas), the sandbox, the worker (restarted
// with other sizes), a PostgreSQL for the API's PostgreSQL inbox (by default the production topology's: a primary
// with a synchronous standby under Patroni, reached through HAProxy, scripts/lib/stack/postgres-cluster.ts; or one
// server, scripts/lib/postgres-server.ts; either in the run's data folder) and the API, restarted with either callback inbox (files or postgres) or other settings.
// Configured like scripts/local-stack.ts, with the bench's own clinics and secrets.
import { createHash, randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { startPostgres } from '../../scripts/lib/postgres-server';
import { startPostgresCluster } from '../../scripts/lib/stack/postgres-cluster';
import { cpuSeconds, ManagedProcess, treeCpuSeconds, type ProcessOptions } from '../../scripts/lib/processes';
import { api, sandbox, temporalDevServer, worker, type PartSpec } from '../../scripts/lib/stack/parts';
import { apiFigures } from './api-metrics';
import { DEMO_API_KEY } from '../../src/sandbox/seed';

/** The API's callback inbox (INBOX_STORE). */
export type InboxStore = 'files' | 'postgres';
export const INBOX_STORES: InboxStore[] = ['files', 'postgres'];

export interface BenchPorts {
  temporal: number;
  temporalHttp: number;
  temporalMetrics: number;
  temporalUi: number;
  sandbox: number;
  api: number;
  bare: number;
  codec: number;
  /** The PostgreSQL of the API's PostgreSQL inbox. */
  postgres: number;
  /** The cold-start measurement's own local stack (scripts/local-stack.ts). */
  coldTemporal: number;
  coldUi: number;
  coldSandbox: number;
  coldApi: number;
  coldCodec: number;
}

/** Everything inside 22000-22999. */
export function benchPorts(base = 22_200): BenchPorts {
  return {
    temporal: base + 33,
    temporalHttp: base + 34,
    temporalMetrics: base + 35,
    temporalUi: base + 36,
    sandbox: base + 10,
    api: base + 0,
    bare: base + 1,
    codec: base + 88,
    postgres: base + 40,
    coldTemporal: base + 133,
    coldUi: base + 136,
    coldSandbox: base + 110,
    coldApi: base + 100,
    coldCodec: base + 188,
  };
}

/** The bench's clinics: one per phase, so visibility queries tell the phases apart (all on the sandbox's demo key). */
export const CLINICS = {
  hook: { clinicId: 'bench-hook', token: 'bench-hook-token' },
  throughput: { clinicId: 'bench-throughput', token: 'bench-throughput-token' },
  waiting: { clinicId: 'bench-waiting', token: 'bench-waiting-token' },
} as const;

/**
 * Where the postgres inbox commits: `synchronous`, the production topology's cluster (a commit returns once the
 * synchronous standby has flushed it); `single`, one server on its own (a commit waits for its own disk alone).
 */
export type DatabaseShape = 'synchronous' | 'single';
export const DATABASE_SHAPES: DatabaseShape[] = ['synchronous', 'single'];

/** The PostgreSQL of the postgres inbox, whichever its shape. */
export interface BenchDatabase {
  readonly shape: DatabaseShape;
  /** Superuser URL (the API alone makes a database of its own with it). Carries the password: never log it. */
  readonly url: string;
  /** CPU seconds so far of every process the database runs (cluster: both nodes, Patroni, etcd, HAProxy). */
  cpuSeconds(): Promise<number | undefined>;
  stop(): Promise<void>;
}

/** The server settings the bench gives its PostgreSQL, either shape. */
const BENCH_SETTINGS = (walSegments: number): Record<string, string> => ({
  min_wal_size: `${walSegments * 16 + 64}MB`,
  // On the record for the report's stall attribution: every autovacuum run (and the pages it truncated), and any
  // wait for a lock past 50 ms (an insert queued behind a truncation's exclusive lock).
  log_autovacuum_min_duration: '0',
  log_lock_waits: 'on',
  deadlock_timeout: '50ms',
});

/** Starts the bench's PostgreSQL in `dir` with the address `port` (the cluster's HAProxy, or the lone server). */
export async function startBenchDatabase(o: {
  shape: DatabaseShape;
  dir: string;
  port: number;
  database: string;
  log: (line: string) => void;
}): Promise<BenchDatabase> {
  const settings = BENCH_SETTINGS(WARM_WAL_SEGMENTS);
  if (o.shape === 'single') {
    const server = await startPostgres({ dataDir: o.dir, port: o.port, database: o.database, log: o.log, settings });
    return {
      shape: 'single',
      url: server.url,
      cpuSeconds: () => treeCpuSeconds(server.pid),
      stop: () => server.stop(),
    };
  }
  const cluster = await startPostgresCluster({
    dir: o.dir,
    portBase: o.port,
    database: o.database,
    log: o.log,
    settings,
  });
  return {
    shape: 'synchronous',
    url: cluster.url(),
    async cpuSeconds() {
      const { postmasters, others } = cluster.processes();
      let total: number | undefined;
      for (const [pid, tree] of [
        ...postmasters.map((p) => [p, true] as const),
        ...others.map((p) => [p, false] as const),
      ]) {
        const v = tree ? await treeCpuSeconds(pid) : await cpuSeconds(pid);
        if (v !== undefined) total = (total ?? 0) + v;
      }
      return total;
    },
    stop: () => cluster.stop(),
  };
}

export interface StackOptions {
  /** The postgres inbox's PostgreSQL (default synchronous). */
  database?: DatabaseShape;
  dataDir: string;
  /** Where the Temporal dev server's SQLite file goes (Options.temporalStore); default dataDir. */
  temporalStoreDir?: string;
  logDir: string;
  ports: BenchPorts;
  /** Test mode: invite -> event 1 (the throughput run). */
  providerDelayMs: number;
  /**
   * Niceness of the Temporal server, the worker and the sandbox (0: the same CPU weight as the API). A deployment
   * gives the webhook's process its own CPU (a container's CPU request is a cgroup weight); on one shared host the
   * closest equivalent is a lower weight for everything that is not on the acknowledgement path.
   */
  backgroundNice: number;
  /**
   * A cpu cgroup for the same processes (backgroundCpuGroup): they run on what the API, its store and the load
   * generator leave, the way a best-effort container runs beside one with a CPU request. Undefined: niceness alone.
   */
  backgroundGroup?: string;
  /** A memory cgroup the worker starts in (scripts/lib/processes.ts memoryLimitGroup): the memory limit a deployment gives it. */
  workerMemoryGroup?: string;
  log: (message: string) => void;
}

/** WAL files a new cluster is given ahead (16 MB each), enough for the longest sustained rate's writes. */
const WARM_WAL_SEGMENTS = 24;

/**
 * A server that has run a while reuses its WAL files; a new cluster zero-fills a new 16 MB file, with the commit
 * that filled the last one waiting for it (seen as a webhook answer of about 100 ms here). Switching through files,
 * then a checkpoint, leaves them recycled, ready ahead, as on a server in service.
 */
async function warmWal(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('CREATE TABLE IF NOT EXISTS bench_wal_warm (n int)');
    for (let i = 0; i < WARM_WAL_SEGMENTS; i++) {
      await client.query('INSERT INTO bench_wal_warm VALUES ($1)', [i]);
      await client.query('SELECT pg_switch_wal()');
    }
    await client.query('DROP TABLE bench_wal_warm');
    await client.query('CHECKPOINT');
  } finally {
    await client.end();
  }
}

export class BenchStack {
  readonly env: Record<string, string>;
  temporal: ManagedProcess | undefined;
  sandbox: ManagedProcess | undefined;
  worker: ManagedProcess | undefined;
  api: ManagedProcess | undefined;
  postgres: BenchDatabase | undefined;
  /** The inbox the running API uses. */
  apiStore: InboxStore = 'files';
  /** Settings of the running API beyond the stack's (the last startApi's). */
  apiEnv: Record<string, string> = {};
  /** Settings and node flags of every API start (development: BENCH_API_ENV, BENCH_API_NODE_ARGS). */
  apiDevEnv: Record<string, string> = {};
  apiNodeArgs: string[] = [];
  #temporalStarts = 0;
  #apiStarts = 0;
  readonly #retired = { accepted: 0, forwarded: 0 };

  constructor(readonly o: StackOptions) {
    this.env = {};
  }

  get apiUrl(): string {
    return `http://127.0.0.1:${this.o.ports.api}`;
  }

  get sandboxUrl(): string {
    return `http://127.0.0.1:${this.o.ports.sandbox}`;
  }

  get temporalAddress(): string {
    return `127.0.0.1:${this.o.ports.temporal}`;
  }

  /** Secrets and clinics for this run (fresh each run: the data folder is new). */
  async configure(): Promise<void> {
    const clinicsFile = path.join(this.o.dataDir, 'clinics.json');
    const notificationSecret = `whsec_${randomBytes(24).toString('base64')}`;
    await writeFile(
      clinicsFile,
      JSON.stringify(
        Object.values(CLINICS).map((c) => ({
          clinicId: c.clinicId,
          name: `Bench ${c.clinicId}`,
          examServiceApiKey: DEMO_API_KEY,
          apiTokenSha256: [createHash('sha256').update(c.token).digest('hex')],
          notificationSecret,
        })),
        null,
        2,
      ),
      { mode: 0o600 },
    );
    Object.assign(this.env, {
      DATA_DIR: this.o.dataDir,
      TEMPORAL_ADDRESS: this.temporalAddress,
      EXAM_SERVICE_BASE_URL: this.sandboxUrl,
      CLINICS_FILE: clinicsFile,
      WEBHOOK_SECRET: randomBytes(32).toString('base64url'),
      PAYLOAD_ENCRYPTION_KEYS: `bench-1:${randomBytes(32).toString('base64')}`,
      API_PORT: String(this.o.ports.api),
      PUBLIC_BASE_URL: this.apiUrl,
      // The throughput run starts hundreds of journeys a minute for one clinic; the default limit is 600/min.
      API_RATE_LIMIT_PER_MINUTE: '1000000',
      // The parked journeys take every level's callbacks, hundreds each: a deployment's journey asks for a person past
      // 100 (an exam sends a handful) and the forwarder keeps the rest as dead letters.
      JOURNEY_CALLBACK_FLOOD_LIMIT: '5000',
      LOG_LEVEL: 'warn',
    });
  }

  /** A part of the bench's stack, started, once ready; `background`: at the lower CPU weight (StackOptions). */
  #up(spec: PartSpec, background = true, o: Partial<ProcessOptions> = {}): Promise<ManagedProcess> {
    const weight = background ? { nice: this.o.backgroundNice, cpuGroup: this.o.backgroundGroup } : {};
    return new ManagedProcess({ ...spec, logDir: this.o.logDir, ...weight, ...o }).up();
  }

  async startTemporal(pragmas?: string[]): Promise<number> {
    const t0 = performance.now();
    const p = this.o.ports;
    this.temporal = await this.startDevServer(
      `temporal-${++this.#temporalStarts}`,
      { grpc: p.temporal, http: p.temporalHttp, metrics: p.temporalMetrics },
      path.join(this.o.temporalStoreDir ?? this.o.dataDir, 'temporal.db'),
      pragmas,
    );
    return performance.now() - t0;
  }

  /** A Temporal dev server (headless) with the journeys' search attributes; resolves once it answers. */
  startDevServer(
    name: string,
    ports: { grpc: number; http: number; metrics: number },
    dbFile: string,
    pragmas?: string[],
  ): Promise<ManagedProcess> {
    const { grpc: port, http: httpPort, metrics: metricsPort } = ports;
    return this.#up(temporalDevServer({ name, port, httpPort, metricsPort, dbFile, pragmas }));
  }

  async stopTemporal(): Promise<void> {
    await this.temporal?.stop(20_000);
    this.temporal = undefined;
  }

  async startSandbox(): Promise<void> {
    const delay = { SANDBOX_PROVIDER_DELAY_MS: String(this.o.providerDelayMs) };
    this.sandbox = await this.#up(sandbox(this.o.ports.sandbox, { ...this.env, ...delay }));
  }

  /** Settings every worker start of this run gets (development: BENCH_WORKER_ENV). */
  workerEnv: Record<string, string> = {};

  /** Starts the worker and resolves once it polls (its start-up line). */
  async startWorker(extraEnv: Record<string, string> = {}, name = 'worker', nodeArgs: string[] = []) {
    const env = { ...this.env, ...this.workerEnv, ...extraEnv };
    const spec = worker(env, { name, nodeArgs, waitPolling: true });
    this.worker = await this.#up(spec, true, { memoryGroup: this.o.workerMemoryGroup });
    return this.worker;
  }

  async stopWorker(): Promise<void> {
    await this.worker?.stop(30_000);
    this.worker = undefined;
  }

  /**
   * Starts the API with the given inbox and settings; resolves once it answers /readyz (or /healthz when
   * `temporalDown`: /readyz is 503 while Temporal is away, and the API still takes callbacks into its inbox).
   */
  async startApi(
    extraEnv: Record<string, string> = {},
    nodeArgs: string[] = this.apiNodeArgs,
    o: { store?: InboxStore; temporalDown?: boolean } = {},
  ): Promise<ManagedProcess> {
    const store = o.store ?? this.apiStore;
    if (store === 'postgres' && !this.postgres) throw new Error('the API on the postgres inbox needs startPostgres()');
    const inboxEnv: Record<string, string> =
      store === 'postgres'
        ? { INBOX_STORE: 'postgres', INBOX_DATABASE_URL: this.postgres!.url }
        : { INBOX_STORE: 'files' };
    const env = { ...this.env, ...inboxEnv, ...this.apiDevEnv, ...extraEnv };
    // One log file per start: the bench reads nothing from it, a person reads the one that went wrong. The flags the
    // API runs with everywhere (src/api/node-flags.ts), then the development ones.
    const name = `api-${++this.#apiStarts}-${store}`;
    const probe = o.temporalDown ? '/healthz' : '/readyz';
    this.api = await this.#up(api(this.o.ports.api, env, { name, nodeArgs, probe }), false);
    this.apiStore = store;
    this.apiEnv = extraEnv;
    return this.api;
  }

  /** Stops the API and starts it again: on another inbox, with other settings (none: the stack's own). */
  async restartApi(
    store: InboxStore = this.apiStore,
    extraEnv: Record<string, string> = {},
    o: { temporalDown?: boolean } = {},
  ): Promise<ManagedProcess> {
    await this.stopApi();
    return this.startApi(extraEnv, this.apiNodeArgs, { store, ...o });
  }

  /** The PostgreSQL of the postgres inbox, in its shape (StackOptions.database), under the data folder, on the bench's port. */
  async startPostgres(): Promise<number> {
    const t0 = performance.now();
    const server = await startBenchDatabase({
      shape: this.o.database ?? 'synchronous',
      dir: path.join(this.o.dataDir, 'postgres'),
      port: this.o.ports.postgres,
      database: 'journeys_bench',
      log: (line) => this.o.log(line),
    });
    this.postgres = server;
    await warmWal(server.url);
    return performance.now() - t0;
  }

  async stopPostgres(): Promise<void> {
    const server = this.postgres;
    this.postgres = undefined;
    if (!server) return;
    await server.stop();
  }

  async stopApi(): Promise<void> {
    if (this.api?.running) {
      // Its counters go with it: keep what it accepted and forwarded for the run's totals.
      const f = await apiFigures(this.apiUrl).catch(() => undefined);
      if (f) {
        this.#retired.accepted += f.accepted;
        this.#retired.forwarded += f.forwarded;
      }
    }
    await this.api?.stop(30_000);
    this.api = undefined;
  }

  /** Callbacks accepted and signals forwarded by every API process of this run (the running one included). */
  async apiTotals(): Promise<{ accepted: number; forwarded: number }> {
    const f = this.api?.running ? await apiFigures(this.apiUrl).catch(() => undefined) : undefined;
    return {
      accepted: this.#retired.accepted + (f?.accepted ?? 0),
      forwarded: this.#retired.forwarded + (f?.forwarded ?? 0),
    };
  }

  /** CPU seconds used so far by each running part. */
  async cpu(): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const [name, child] of [
      ['temporal', this.temporal],
      ['worker', this.worker],
      ['api', this.api],
      ['sandbox', this.sandbox],
    ] as const) {
      const v = await cpuSeconds(child?.pid);
      if (v !== undefined) out[name] = v;
    }
    const v = await this.postgres?.cpuSeconds();
    if (v !== undefined) out.postgres = v;
    return out;
  }

  async stopAll(): Promise<void> {
    // Each part in order; one that takes long to go is named (a busy worker finishing its tasks, say).
    const timed = async (what: string, fn: () => Promise<void>) => {
      const t0 = performance.now();
      await fn().catch((err: unknown) => this.o.log(`stopping ${what} failed: ${String(err)}`));
      const s = (performance.now() - t0) / 1000;
      if (s > 5) this.o.log(`stopping ${what} took ${s.toFixed(0)} s`);
    };
    await timed('the API', () => this.stopApi());
    await timed('the worker', () => this.stopWorker());
    await timed('the sandbox', async () => {
      await this.sandbox?.stop();
      this.sandbox = undefined;
    });
    await timed('the Temporal dev server', () => this.stopTemporal());
    await timed('PostgreSQL', () => this.stopPostgres());
  }
}
