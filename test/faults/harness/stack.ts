// The engine as separate processes, each of which the fault suite can kill and start again: the Temporal dev server
// (file-persisted, same port and database file after a restart), the exam-service sandbox, the worker and the API.
// Each part as the stacks start it (scripts/lib/stack/parts.ts), its process started and stopped by its pid
// (scripts/lib/processes.ts); nothing is looked up or killed by name.
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { ManagedProcess } from '../../../scripts/lib/processes';
import { api, sandbox, temporalDevServer, worker, type PartSpec } from '../../../scripts/lib/stack/parts';
import { loadConfig } from '../../../src/config';
import { DEMO_API_KEY } from '../../../src/sandbox/seed';
import { dataConverterOf } from '../../../src/temporal';
import { patientKeysFrom } from '../../../src/patient-keys/from-settings';
import type { PatientKeys } from '../../../src/patient-keys/patient-keys';
import { waitingInFolder } from '../../../src/inbox/files';
import { installedTool } from '../../support/temporal-env';
import { waitForPoller } from './pollers';
import { portFree } from '../../support/local-stack-ports';

export { ManagedProcess };
export const CLINIC_ID = 'faults-clinic';
export const CLINIC_TOKEN = 'faults-clinic-token';
export const ADMIN_TOKEN = 'faults-admin-token';

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/** Ports only from 20000-20999 (other stacks run on this machine): the preferred one when free, else a free one. */
export interface StackPorts {
  temporal: number;
  temporalHttp: number;
  temporalMetrics: number;
  sandbox: number;
  api: number;
}

export async function pickPorts(preferred: StackPorts): Promise<StackPorts> {
  const taken = new Set<number>();
  const pick = async (want: number) => {
    const candidates = [
      want,
      ...Array.from({ length: 1000 }, (_, i) => 20_000 + ((want - 20_000 + 97 * (i + 1)) % 1000)),
    ];
    for (const port of candidates) {
      if (port < 20_000 || port > 20_999 || taken.has(port)) continue;
      if (await portFree(port)) {
        taken.add(port);
        return port;
      }
    }
    throw new Error(`no free port in 20000-20999 (wanted ${want})`);
  };
  return {
    temporal: await pick(preferred.temporal),
    temporalHttp: await pick(preferred.temporalHttp),
    temporalMetrics: await pick(preferred.temporalMetrics),
    sandbox: await pick(preferred.sandbox),
    api: await pick(preferred.api),
  };
}

// ---- the stack ---------------------------------------------------------------------------------------------------

export interface StackOptions {
  runDir: string;
  ports: StackPorts;
  seed: number;
  /** SANDBOX_* settings (test provider delays, callback retries...). */
  sandboxEnv: Record<string, string>;
}

export class FaultStack {
  readonly temporal: ManagedProcess;
  readonly sandbox: ManagedProcess;
  readonly worker: ManagedProcess;
  readonly api: ManagedProcess;
  readonly env: Record<string, string>;
  readonly dataDir: string;
  readonly apiUrl: string;
  readonly sandboxUrl: string;
  readonly temporalAddress: string;
  #client: Client | undefined;
  #keys: PatientKeys | undefined;

  constructor(readonly options: StackOptions) {
    const { runDir, ports } = options;
    this.dataDir = path.join(runDir, 'data');
    mkdirSync(this.dataDir, { recursive: true });
    const logs = path.join(runDir, 'logs');
    mkdirSync(logs, { recursive: true });
    this.apiUrl = `http://127.0.0.1:${ports.api}`;
    this.sandboxUrl = `http://127.0.0.1:${ports.sandbox}`;
    this.temporalAddress = `127.0.0.1:${ports.temporal}`;

    const clinicsFile = path.join(runDir, 'clinics.json');
    writeFileSync(
      clinicsFile,
      JSON.stringify([
        { clinicId: CLINIC_ID, examServiceApiKey: DEMO_API_KEY, apiTokenSha256: [sha256(CLINIC_TOKEN)] },
      ]),
      { mode: 0o600 },
    );
    this.env = {
      DATA_DIR: this.dataDir,
      TEMPORAL_ADDRESS: this.temporalAddress,
      EXAM_SERVICE_BASE_URL: this.sandboxUrl,
      CLINICS_FILE: clinicsFile,
      WEBHOOK_SECRET: randomBytes(32).toString('base64url'),
      API_HOST: '127.0.0.1',
      API_PORT: String(ports.api),
      PUBLIC_BASE_URL: this.apiUrl,
      ADMIN_TOKEN_SHA256: sha256(ADMIN_TOKEN),
      PAYLOAD_ENCRYPTION_KEYS: `faults-1:${randomBytes(32).toString('base64')}`,
      // The suite polls its journeys through the API; the per-clinic limit is for real clinics.
      API_RATE_LIMIT_PER_MINUTE: '100000',
      // The forwarder's longest pause while Temporal is away (existing setting; default 30 s).
      SPOOL_MAX_BACKOFF_MS: '2000',
      // Drugs one per event 2 may be split by an outage (the sandbox retries for minutes): wait a minute for more.
      JOURNEY_MORE_DRUGS_GRACE_MS: '60000',
      LOG_LEVEL: 'warn',
    };

    if (!installedTool('temporal'))
      throw new Error('the Temporal CLI is not installed in .tools/bin (run npm run tools)');
    const part = (spec: PartSpec) => new ManagedProcess({ ...spec, logDir: logs, stopGraceMs: 20_000 });
    this.temporal = part(
      temporalDevServer({
        port: ports.temporal,
        httpPort: ports.temporalHttp,
        metricsPort: ports.temporalMetrics,
        dbFile: path.join(this.dataDir, 'temporal.db'),
        args: ['--dynamic-config-value', 'frontend.enableUpdateWorkflowExecution=true'],
      }),
    );
    this.sandbox = part(
      sandbox(ports.sandbox, { SANDBOX_HOST: '127.0.0.1', SANDBOX_SEED: String(options.seed), ...options.sandboxEnv }),
    );
    this.worker = part(worker(this.env, { waitPolling: true }));
    this.api = part(api(ports.api, this.env));
  }

  /** Starts everything and waits until each part answers. */
  async start(): Promise<void> {
    await Promise.all([this.temporal.up(), this.sandbox.up()]);
    await Promise.all([this.startWorker(), this.startApi()]);
  }

  async startWorker(): Promise<void> {
    this.worker.start();
    // Bundling the workflow code takes a few seconds on a small machine. Ready when its log says so (at a log level
    // that shows it) or when Temporal lists it among the task queue's pollers.
    const waiting = new AbortController();
    try {
      await Promise.any([
        this.worker.ready(),
        waitForPoller({
          address: this.temporalAddress,
          pid: () => this.worker.pid,
          running: () => this.worker.running && !waiting.signal.aborted,
          name: 'worker',
          timeoutMs: 120_000,
        }),
      ]);
    } catch (err) {
      throw new Error(`worker did not start polling: ${this.worker.output().slice(-4000)}`, { cause: err });
    } finally {
      waiting.abort();
    }
  }

  async startApi(): Promise<void> {
    await this.api.up();
  }

  async startTemporal(): Promise<void> {
    await this.temporal.up();
  }

  /** A Temporal client with the stack's payload codec: what an operator's CLI or UI does, for retry/abandon. */
  async operatorClient(): Promise<Client> {
    if (!this.#client) {
      const config = loadConfig(this.env);
      // The journeys' payloads are sealed for their patients: the key file the API writes, read here.
      this.#keys = patientKeysFrom(config.patientKeys, { ring: config.codec.keys, writer: false });
      await this.#keys?.init();
      const dataConverter = dataConverterOf(config, this.#keys);
      this.#client = new Client({
        connection: await Connection.connect({ address: this.temporalAddress }),
        ...(dataConverter ? { dataConverter } : {}),
      });
    }
    return this.#client;
  }

  /**
   * Inbox writes still holding callbacks acknowledged by the API and not yet signalled (batch files in the inbox
   * folder: each holds one or more callbacks, sealed; 0 when every acknowledged callback reached its journey).
   */
  /** Callbacks waiting in the API's inbox (read from its log: appended, not yet settled). */
  inboxFiles(): number {
    return waitingInFolder(path.join(this.dataDir, 'inbox'));
  }

  /** Stops everything in order (API and worker first), each by its PID. */
  async stop(): Promise<void> {
    await this.#client?.connection.close().catch(() => undefined);
    this.#client = undefined;
    await this.#keys?.close().catch(() => undefined);
    this.#keys = undefined;
    for (const p of [this.api, this.worker, this.sandbox, this.temporal]) await p.stop(10_000);
  }
}
