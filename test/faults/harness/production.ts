// The fault suite on the production topology (scripts/lib/production-stack.ts): PostgreSQL, the Temporal server on it,
// MinIO for attachments, the sandbox, two workers and two API replicas behind HAProxy, the API replicas keeping
// callbacks in the PostgreSQL inbox. Its faults, one at a time at seeded moments of the fault window: one worker
// SIGKILLed (the other keeps polling) and started again; one API replica SIGKILLed (HAProxy sends everything to the
// other; a callback cut off with it is retried by the sandbox) and started again; PostgreSQL stopped (a fast shutdown,
// then a crash) and started again on the same data dir and port (Temporal and the inbox reconnect by themselves); the
// Temporal server stopped (SIGTERM, then SIGKILL) and started again. Every process is started by this module or the
// stack, and stopped by its PID; nothing is looked up or killed by name.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { Pool } from 'pg';
import { freeProductionPorts, ProductionStack, type ProductionPorts } from '../../../scripts/lib/production-stack';
import { sha256, stackSecrets } from '../../../scripts/lib/stack-secrets';
import { loadConfig } from '../../../src/config';
import { DEMO_API_KEY } from '../../../src/sandbox/seed';
import { dataConverterOf } from '../../../src/temporal';
import type { PatientKeys } from '../../../src/patient-keys/patient-keys';
import type { InjectedProcessFault, ProcessFaultKind } from './faults';
import type { Rng } from './journeys';
import { waitForPoller } from './pollers';
import { ADMIN_TOKEN, CLINIC_ID, CLINIC_TOKEN } from './stack';
import type { FaultInjector, FaultTopology } from './topology';

export interface ProductionFaultPlan {
  /** One worker at a time, SIGKILL, the workers in turn. */
  workerKills: number;
  /** One API replica at a time, SIGKILL, the replicas in turn. */
  apiReplicaKills: number;
  /** Alternately a fast shutdown (SIGINT) and a crash (SIGKILL) of the postmaster. */
  postgresRestarts: number;
  /** Alternately SIGTERM and SIGKILL. */
  temporalRestarts: number;
  /** A worker kill comes at a random moment up to this long after a journey's start was answered. */
  workerKillAfterStartMs: number;
  /** The other outages start this long after a journey's start: when its callbacks are due. */
  callbacksDueAfterStartMs: [number, number];
  /** How long each part stays down before it is started again (ms, drawn between min and max). */
  workerDownMs: [number, number];
  apiDownMs: [number, number];
  postgresDownMs: [number, number];
  temporalDownMs: [number, number];
}

export interface ProductionSettings {
  /** Ports are taken from here upwards, free ones only, up to 21999. */
  portBase: number;
  faults: ProductionFaultPlan;
}

const PORT_MAX = 21_999;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

/**
 * Every port of the topology from `base` upwards (free ones only; the membership ports four in a row, five with the
 * identity provider, whose ports come too). Below the kernel's ephemeral range, so no outgoing connection takes one
 * between the pick and the part's start.
 */
export const pickProductionPorts = (base: number, o: { identity?: boolean } = {}): Promise<ProductionPorts> =>
  freeProductionPorts(base, PORT_MAX, o);

export class ProductionFaultStack implements FaultTopology {
  readonly kind = 'production';
  readonly stack: ProductionStack;
  readonly dataDir: string;
  readonly #exits: string[] = [];
  readonly #env: Record<string, string>;
  #temporalUp = false;
  #inbox: Pool | undefined;
  #client: Client | undefined;
  #keys: PatientKeys | undefined;

  private constructor(
    readonly ports: ProductionPorts,
    readonly o: {
      runDir: string;
      seed: number;
      sandboxEnv: Record<string, string>;
      plan: ProductionFaultPlan;
      log: (line: string) => void;
    },
  ) {
    this.dataDir = path.join(o.runDir, 'stack');
    mkdirSync(this.dataDir, { recursive: true });
    // The suite's clinic (its token and the admin token the judge uses), in place of the demo clinic.
    const clinicsFile = path.join(o.runDir, 'clinics.json');
    writeFileSync(
      clinicsFile,
      JSON.stringify([
        { clinicId: CLINIC_ID, examServiceApiKey: DEMO_API_KEY, apiTokenSha256: [sha256(CLINIC_TOKEN)] },
      ]),
      { mode: 0o600 },
    );
    this.#env = {
      CLINICS_FILE: clinicsFile,
      ADMIN_TOKEN_SHA256: sha256(ADMIN_TOKEN),
      // The suite polls its journeys through the API; the per-clinic limit is for real clinics.
      API_RATE_LIMIT_PER_MINUTE: '100000',
      // The forwarder's longest pause while Temporal or PostgreSQL is away.
      FORWARDER_MAX_BACKOFF_MS: '2000',
      // Drugs one per event 2 may be split by an outage (the sandbox retries for minutes): wait a minute for more.
      JOURNEY_MORE_DRUGS_GRACE_MS: '60000',
    };
    this.stack = new ProductionStack({
      dataDir: this.dataDir,
      ports,
      workers: 2,
      // The suite's own supervisor restarts a part that crashes, and counts it.
      supervise: false,
      sandboxEnv: { SANDBOX_HOST: '127.0.0.1', SANDBOX_SEED: String(o.seed), ...o.sandboxEnv },
      engineEnv: this.#env,
      log: (line) => o.log(`stack: ${line}`),
      onFatal: (why) => this.#exits.push(`${new Date().toISOString()} ${why}`),
    });
  }

  static async create(o: ProductionFaultStack['o'] & { portBase: number }): Promise<ProductionFaultStack> {
    return new ProductionFaultStack(await pickProductionPorts(o.portBase), o);
  }

  get apiUrl(): string {
    return this.stack.apiUrl;
  }
  get sandboxUrl(): string {
    return this.stack.sandboxUrl;
  }

  async start(): Promise<void> {
    await this.stack.start();
    this.#temporalUp = true;
    await Promise.all(this.stack.workers.map((_, i) => this.#workerPolling(i)));
    this.#inbox = new Pool({
      connectionString: this.stack.inboxDatabaseUrl,
      max: 1,
      connectionTimeoutMillis: 2_000,
      statement_timeout: 5_000,
    });
    // PostgreSQL restarts during the run: a broken idle connection is dropped, the next query reconnects.
    this.#inbox.on('error', () => undefined);
  }

  async stop(): Promise<void> {
    await this.#client?.connection.close().catch(() => undefined);
    this.#client = undefined;
    await this.#keys?.close().catch(() => undefined);
    this.#keys = undefined;
    await this.#inbox?.end().catch(() => undefined);
    this.#inbox = undefined;
    await this.stack.stop();
  }

  async operatorClient(): Promise<Client> {
    if (!this.#client) {
      const secrets = stackSecrets(this.dataDir);
      const config = loadConfig({
        DATA_DIR: path.join(this.dataDir, 'operator'),
        TEMPORAL_ADDRESS: this.stack.temporalAddress,
        CLINICS_FILE: this.#env.CLINICS_FILE,
        WEBHOOK_SECRET: secrets.webhookSecret,
        PAYLOAD_ENCRYPTION_KEYS: secrets.payloadEncryptionKeys,
      });
      // The journeys' payloads are sealed for their patients: the stack's key tables, read here.
      this.#keys = this.stack.patientKeysReader();
      await this.#keys.init();
      const dataConverter = dataConverterOf(config, this.#keys);
      this.#client = new Client({
        connection: await Connection.connect({ address: this.stack.temporalAddress }),
        ...(dataConverter ? { dataConverter } : {}),
      });
    }
    return this.#client;
  }

  /** Rows of the PostgreSQL inbox: callbacks acknowledged by a replica and not yet signalled (deleted once they are). */
  async inboxDepth(): Promise<number> {
    if (!this.#inbox) throw new Error('the stack is not started');
    const { rows } = await this.#inbox.query<{ n: number }>('SELECT count(*)::int AS n FROM callback_inbox');
    return rows[0]!.n;
  }

  unexpectedExits(): string[] {
    return this.#exits.map((e) => `an infrastructure part exited on its own: ${e}`);
  }

  async status(): Promise<string> {
    const depth = await this.inboxDepth().then(String, () => 'unreadable');
    const up = (running: boolean) => (running ? 'up' : 'down');
    return `inbox rows ${depth}; workers ${this.stack.workers.map((w) => up(w.running)).join('/')}, api replicas ${this.stack.apis
      .map((a) => up(a.running))
      .join('/')}, postgres ${up(this.stack.postgres?.pid !== undefined)}, temporal ${up(this.#temporalUp)}`;
  }

  faults(rng: Rng, t0: number, log: (line: string) => void): FaultInjector {
    return new ProductionFaults(this, this.o.plan, rng, t0, log);
  }

  // ---- the parts, one at a time ----

  async killWorker(i: number): Promise<void> {
    await this.stack.workers[i]!.kill();
  }
  async startWorker(i: number): Promise<void> {
    const w = this.stack.workers[i]!;
    w.start();
    await this.#workerPolling(i);
  }
  async killApi(i: number): Promise<void> {
    await this.stack.apis[i]!.kill();
  }
  async startApi(i: number): Promise<void> {
    const a = this.stack.apis[i]!;
    a.start();
    await this.#httpReady(`http://127.0.0.1:${this.ports.apiReplicas[i]}/healthz`, a.name, () => a.running);
  }
  async stopPostgres(signal: 'SIGINT' | 'SIGKILL'): Promise<void> {
    const pg = this.stack.postgres!;
    await (signal === 'SIGKILL' ? pg.kill() : pg.stop());
  }
  async startPostgres(): Promise<void> {
    await this.stack.postgres!.start();
  }
  async stopTemporal(signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
    this.#temporalUp = false;
    await (signal === 'SIGKILL' ? this.stack.temporal!.kill() : this.stack.temporal!.stop());
  }
  async startTemporal(): Promise<void> {
    await this.stack.temporal!.start();
    this.#temporalUp = true;
  }
  /** Whether the Temporal frontend answers (the server may also die on its own). */
  async temporalAnswers(): Promise<boolean> {
    try {
      const conn = await Connection.connect({ address: this.stack.temporalAddress, connectTimeout: 2_000 });
      try {
        await conn.withDeadline(Date.now() + 3_000, () => conn.workflowService.getSystemInfo({}));
        return true;
      } finally {
        await conn.close();
      }
    } catch {
      return false;
    }
  }

  /**
   * Waits until the worker polls: Temporal lists its pid among the task queue's pollers, or (earlier, when its log
   * level shows it) its log since its start says so.
   */
  async #workerPolling(i: number, timeoutMs = 180_000): Promise<void> {
    const w = this.stack.workers[i]!;
    let polling = false;
    const fromLog = (async () => {
      while (!polling && w.running) {
        if (w.output().includes('worker polling task queue')) return;
        await sleep(250);
      }
      throw new Error(`${w.name}: no polling line in its log`);
    })();
    try {
      await Promise.any([
        fromLog,
        waitForPoller({
          address: this.stack.temporalAddress,
          pid: () => w.pid,
          running: () => w.running && !polling,
          name: w.name,
          timeoutMs,
        }),
      ]);
    } catch (err) {
      throw new Error(`${w.name} did not start polling; see ${w.logFile}`, { cause: err });
    } finally {
      polling = true;
    }
  }

  async #httpReady(url: string, name: string, running: () => boolean, timeoutMs = 120_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      if (!running()) throw new Error(`${name} exited at start`);
      const ok = await fetch(url, { signal: AbortSignal.timeout(2_000) }).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) return;
      if (Date.now() > until) throw new Error(`${name} not ready at ${url}`);
      await sleep(200);
    }
  }
}

export class ProductionFaults implements FaultInjector {
  readonly injected: InjectedProcessFault[] = [];
  readonly crashes: { name: string; atMs: number }[] = [];
  maxInboxFiles = 0;
  /** Parts taken down on purpose right now (by name): the supervisor leaves them alone. */
  readonly #down = new Set<string>();
  #stopped = false;
  #startWaiters: (() => void)[] = [];

  constructor(
    private readonly stack: ProductionFaultStack,
    private readonly plan: ProductionFaultPlan,
    private readonly rng: Rng,
    private readonly t0: number,
    private readonly log: (line: string) => void,
  ) {}

  async run(windowMs: number): Promise<void> {
    const plan = this.plan;
    const kinds: ProcessFaultKind[] = this.rng.shuffle([
      ...Array<ProcessFaultKind>(plan.workerKills).fill('worker_sigkill'),
      ...Array<ProcessFaultKind>(plan.apiReplicaKills).fill('api_replica_sigkill'),
      ...Array<ProcessFaultKind>(plan.postgresRestarts).fill('postgres_restart'),
      ...Array<ProcessFaultKind>(plan.temporalRestarts).fill('temporal_restart'),
    ]);
    const slot = windowMs / Math.max(1, kinds.length);
    const n = { worker: 0, api: 0, postgres: 0, temporal: 0 };
    for (const [i, kind] of kinds.entries()) {
      const at = this.t0 + slot * i + this.rng.between(0.1, 0.9) * slot;
      await sleep(Math.max(0, at - Date.now()));
      if (this.#stopped) return;
      switch (kind) {
        case 'worker_sigkill': {
          // In the middle of a journey's activities (catalog, invite, uploads): shortly after the next start.
          await this.#nextJourneyStart(15_000);
          await sleep(this.rng.between(0, plan.workerKillAfterStartMs));
          const w = n.worker++ % this.stack.stack.workers.length;
          await this.#outage(
            kind,
            `worker-${w + 1}`,
            'SIGKILL',
            plan.workerDownMs,
            () => this.stack.killWorker(w),
            () => this.stack.startWorker(w),
          );
          break;
        }
        case 'api_replica_sigkill': {
          await this.#whileCallbacksAreDue();
          const a = n.api++ % this.stack.stack.apis.length;
          await this.#outage(
            kind,
            `api-${a + 1}`,
            'SIGKILL',
            plan.apiDownMs,
            () => this.stack.killApi(a),
            () => this.stack.startApi(a),
          );
          break;
        }
        case 'postgres_restart': {
          await this.#whileCallbacksAreDue();
          const signal = n.postgres++ % 2 === 0 ? 'SIGINT' : 'SIGKILL';
          await this.#outage(
            kind,
            'postgres',
            signal,
            plan.postgresDownMs,
            () => this.stack.stopPostgres(signal),
            () => this.stack.startPostgres(),
            signal === 'SIGINT' ? 'fast shutdown' : 'crash',
          );
          break;
        }
        case 'temporal_restart': {
          await this.#whileCallbacksAreDue();
          const signal = n.temporal++ % 2 === 0 ? 'SIGTERM' : 'SIGKILL';
          await this.#outage(
            kind,
            'temporal',
            signal,
            plan.temporalDownMs,
            () => this.stack.stopTemporal(signal),
            () => this.stack.startTemporal(),
          );
          break;
        }
        default:
          throw new Error(`not a fault of the production topology: ${kind}`);
      }
    }
  }

  stop(): void {
    this.#stopped = true;
    this.journeyStarted();
  }

  journeyStarted(): void {
    const waiters = this.#startWaiters;
    this.#startWaiters = [];
    for (const w of waiters) w();
  }

  async #whileCallbacksAreDue(): Promise<void> {
    await this.#nextJourneyStart(15_000);
    await sleep(this.rng.between(...this.plan.callbacksDueAfterStartMs));
  }

  #nextJourneyStart(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      this.#startWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  async #outage(
    kind: ProcessFaultKind,
    name: string,
    signal: NodeJS.Signals,
    [min, max]: [number, number],
    down: () => Promise<void>,
    up: () => Promise<void>,
    what?: string,
  ): Promise<void> {
    const started = Date.now();
    const waiting = await this.stack.inboxDepth().catch(() => 0);
    const note =
      [what, waiting > 0 ? `${waiting} callbacks waiting in the inbox` : undefined].filter(Boolean).join(', ') ||
      undefined;
    this.#down.add(name);
    try {
      this.log(`fault: ${kind} ${name} (${signal})${note ? ` ${note}` : ''}`);
      await down();
      await sleep(this.rng.between(min, max));
      await up();
    } finally {
      this.#down.delete(name);
    }
    const outageMs = Date.now() - started;
    this.injected.push({
      kind,
      signal,
      atMs: started - this.t0,
      outageMs,
      note: [name, note].filter(Boolean).join(', '),
    });
    this.log(`fault: ${kind} over, ${name} back after ${(outageMs / 1000).toFixed(1)} s`);
  }

  /**
   * Restarts a worker or API replica that exits without being told to, and the Temporal server when it stops
   * answering for 30 s outside a planned outage (what an orchestrator does); every such crash is reported.
   */
  async supervise(): Promise<void> {
    let temporalSilentSince: number | undefined;
    let lastTemporalProbe = 0;
    while (!this.#stopped) {
      await sleep(1_000);
      const depth = await this.stack.inboxDepth().catch(() => 0);
      this.maxInboxFiles = Math.max(this.maxInboxFiles, depth);
      const parts = [
        ...this.stack.stack.workers.map((p, i) => ({ p, restart: () => this.stack.startWorker(i) })),
        ...this.stack.stack.apis.map((p, i) => ({ p, restart: () => this.stack.startApi(i) })),
      ];
      for (const { p, restart } of parts) {
        if (this.#stopped || p.running || this.#down.has(p.name)) continue;
        await this.#restartCrashed(p.name, restart);
      }
      // Temporal: probed every 5 s; down on purpose (or PostgreSQL down, which it waits for) does not count.
      if (this.#down.has('temporal') || this.#down.has('postgres')) {
        temporalSilentSince = undefined;
      } else if (Date.now() - lastTemporalProbe >= 5_000) {
        lastTemporalProbe = Date.now();
        if (await this.stack.temporalAnswers()) temporalSilentSince = undefined;
        else temporalSilentSince ??= Date.now();
        if (temporalSilentSince !== undefined && Date.now() - temporalSilentSince > 30_000 && !this.#stopped) {
          temporalSilentSince = undefined;
          await this.#restartCrashed('temporal', async () => {
            await this.stack.stopTemporal('SIGKILL');
            await this.stack.startTemporal();
          });
        }
      }
    }
  }

  async #restartCrashed(name: string, restart: () => Promise<void>): Promise<void> {
    this.crashes.push({ name, atMs: Date.now() - this.t0 });
    this.log(`${name} exited or stopped answering on its own; restarting it`);
    this.#down.add(name);
    try {
      await restart();
    } catch (err) {
      this.log(`restarting ${name} failed: ${message(err)}`);
    } finally {
      this.#down.delete(name);
    }
  }
}
