/**
 * The one set-up of the suites that drive the clinic API (test/api, test/security, test/properties): a Temporal
 * server, a worker running the real journey workflow, the exam service (a fake or the sandbox) and the app that
 * buildApp makes on a fresh data folder, with testConfig's two clinics. `useApiHarness` starts it before the suite's
 * tests and tears it down after them, in the reverse order.
 */
import type { AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { JourneyActivities } from '../../src/contract/activity-contract';
import { buildApp, type ApiApp, type ApiDeps } from '../../src/api/app';
import type { ClinicConfig, Config } from '../../src/config';
import { ExamServiceClient, type ExamServiceApi } from '../../src/exam-service/client';
import { buildSandbox, type Sandbox, type SandboxOptions } from '../../src/sandbox';
import { createWorker } from '../../src/worker';
import { PatientKeysWhenReady } from '../../src/codec/patient-codec';
import { dataConverterOf } from '../../src/temporal';
import { SEARCH_ATTRIBUTE_KEYS } from '../../src/contract/definitions';
import { fakeExamService, tempDataDir, testConfig, unreachableTemporal, type TestDirs } from '../api/support';
import { DevServerProcess } from './dev-server-process';
import { startDevServer } from './temporal-env';

export interface ApiHarnessOptions {
  /**
   * The Temporal server: the SDK's dev server (default); a dev server in a child process that a test can stop and
   * start again (`harness.server`); or none (a client whose every call fails at once, for what the API refuses before
   * any workflow call).
   */
  temporal?: 'dev-server' | 'stoppable' | 'unreachable';
  /** The worker's task queue (TEMPORAL_TASK_QUEUE of the configuration). */
  taskQueue?: string;
  /**
   * Who runs the journeys: these activities in a worker of the real journey workflow; 'project' for the project's own
   * worker (createWorker: its real activities against the exam service, webhook URLs on the listening API); none
   * without the option.
   */
  worker?: JourneyActivities | 'project';
  /** The exam service the API reads: the fake catalog (default) or the sandbox over HTTP. */
  examService?: 'fake' | 'sandbox';
  /** Operations of the fake exam service answered otherwise (the fake's catalog and plausible data by default). */
  fakeExamService?: Partial<ExamServiceApi>;
  sandbox?: SandboxOptions;
  /** The api_key the API's sandbox client sends for a clinic (default: the clinic's own). */
  sandboxApiKey?: (clinic: ClinicConfig) => string;
  /** Variables over testConfig's. */
  env?: Record<string, string>;
  app?: Pick<ApiDeps, 'startForwarder' | 'forwarderMinBackoffMs' | 'verifyOperator'>;
  /** Listens on a free loopback port (`harness.url`); otherwise tests use inject. */
  listen?: boolean;
  /**
   * Per-patient keys as the API runs them (server.ts): the configuration's payload keys and key store, the API's
   * Temporal client sealing each journey's payloads for its patient once the app has opened the keys. Needs
   * PAYLOAD_ENCRYPTION_KEYS among `env`.
   */
  patientKeys?: boolean;
}

/** A part the harness did not start (or not yet: the harness starts in beforeAll). */
function present<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`the API harness has no ${what} (not started, or not asked for)`);
  return value;
}

export class ApiHarness {
  #env?: TestWorkflowEnvironment;
  #server?: DevServerProcess;
  #client?: Client;
  #workerConnection?: NativeConnection;
  #worker?: Worker;
  #workerRun?: Promise<unknown>;
  #closeWorker?: () => Promise<void>;
  #sandbox?: Sandbox;
  readonly #clients: ExamServiceClient[] = [];
  #dirs?: TestDirs;
  #config?: Config;
  #app?: ApiApp;
  #url?: string;

  constructor(readonly options: ApiHarnessOptions) {}

  get app(): ApiApp {
    return present(this.#app, 'app');
  }
  /** The Temporal client the API uses. */
  get client(): Client {
    return present(this.#client, 'Temporal client');
  }
  get config(): Config {
    return present(this.#config, 'configuration');
  }
  get dirs(): TestDirs {
    return present(this.#dirs, 'data folder');
  }
  get url(): string {
    return present(this.#url, 'listening API (listen: true)');
  }
  get sandbox(): Sandbox {
    return present(this.#sandbox, "sandbox (examService: 'sandbox')");
  }
  /** The Temporal server in a child process (temporal: 'stoppable'). */
  get server(): DevServerProcess {
    return present(this.#server, "stoppable server (temporal: 'stoppable')");
  }
  get worker(): Worker {
    return present(this.#worker, 'worker');
  }

  async start(): Promise<this> {
    const o = this.options;
    const temporal = o.temporal ?? 'dev-server';
    let nativeConnection: NativeConnection | undefined;
    if (temporal === 'dev-server') {
      this.#env = await startDevServer(SEARCH_ATTRIBUTE_KEYS);
      this.#client = this.#env.client;
      nativeConnection = this.#env.nativeConnection;
    } else if (temporal === 'stoppable') {
      this.#server = await DevServerProcess.start(SEARCH_ATTRIBUTE_KEYS);
      this.#client = new Client({ connection: await Connection.connect({ address: this.#server.address }) });
      this.#workerConnection = await NativeConnection.connect({ address: this.#server.address });
      nativeConnection = this.#workerConnection;
    } else {
      this.#client = await unreachableTemporal();
    }

    if (o.examService === 'sandbox') this.#sandbox = await buildSandbox(o.sandbox);
    this.#dirs = tempDataDir();
    this.#config = testConfig(this.#dirs.dataDir, {
      ...(o.taskQueue ? { TEMPORAL_TASK_QUEUE: o.taskQueue } : {}),
      ...(this.#sandbox ? { EXAM_SERVICE_BASE_URL: this.#sandbox.baseUrl } : {}),
      ...o.env,
    });
    const sandbox = this.#sandbox;
    let patientKeysReady: PatientKeysWhenReady | undefined;
    if (o.patientKeys) {
      if (this.#config.patientKeys.store === 'off') throw new Error('patientKeys needs PAYLOAD_ENCRYPTION_KEYS in env');
      patientKeysReady = new PatientKeysWhenReady();
      this.#client = new Client({
        connection: this.#client.connection,
        namespace: this.#config.temporal.namespace,
        dataConverter: dataConverterOf(this.#config, patientKeysReady, { erased: 'marker' })!,
      });
    }
    this.#app = await buildApp({
      config: this.#config,
      temporal: this.#client,
      ...(patientKeysReady ? { patientKeysReady } : {}),
      examServiceFor: sandbox
        ? (clinic) => {
            const apiKey = o.sandboxApiKey?.(clinic) ?? clinic.examServiceApiKey;
            const client = new ExamServiceClient({ baseUrl: sandbox.baseUrl, apiKey });
            this.#clients.push(client);
            return client;
          }
        : () => fakeExamService(o.fakeExamService),
      ...o.app,
    });
    if (o.listen) {
      await this.#app.listen({ host: '127.0.0.1', port: 0 });
      this.#url = `http://127.0.0.1:${(this.#app.server.address() as AddressInfo).port}`;
    } else {
      await this.#app.ready();
    }

    if (o.worker !== undefined) {
      const connection = present(nativeConnection, 'Temporal server for a worker (temporal: unreachable)');
      if (o.worker === 'project') {
        // The worker builds each journey's webhook URL on the API's public address.
        const base = this.#url
          ? { ...this.#config, api: { ...this.#config.api, publicBaseUrl: this.#url } }
          : this.#config;
        // A trail file of its own beside the API's (one writer per file), as the local stack gives each process.
        const { audit } = base;
        const config =
          audit.store === 'file' && audit.file
            ? { ...base, audit: { ...audit, file: audit.file.replace(/(\.jsonl)?$/, '-worker.jsonl') } }
            : base;
        const created = await createWorker(config, { connection });
        this.#worker = created.worker;
        this.#closeWorker = created.close;
      } else {
        this.#worker = await Worker.create({
          connection,
          taskQueue: this.#config.temporal.taskQueue,
          workflowsPath: require.resolve('../../src/workflows'),
          activities: o.worker,
        });
      }
      // A stoppable server's outage makes the worker's run fail; that is the test's business, not the harness's.
      const run = this.#worker.run();
      this.#workerRun = temporal === 'stoppable' ? run.catch((err: unknown) => err) : run;
    }
    return this;
  }

  /** Shuts the worker down and waits for it to finish (journeys then answer from their result or visibility). */
  async stopWorker(): Promise<void> {
    if (this.#worker?.getState() === 'RUNNING') this.#worker.shutdown();
    await this.#workerRun;
  }

  /** Stops what was started, the last first; parts that never started are skipped. */
  async close(): Promise<void> {
    await this.#app?.close();
    await this.stopWorker();
    await this.#closeWorker?.();
    await this.#workerConnection?.close();
    await Promise.all(this.#clients.map((c) => c.close()));
    await this.#sandbox?.close();
    if (this.#env) await this.#env.teardown();
    else await this.#client?.connection.close();
    await this.#server?.teardown();
    this.#dirs?.cleanup();
  }
}

/** A harness started before the suite's tests (beforeAll, with room for the servers) and closed after them. */
export function useApiHarness(options: ApiHarnessOptions): ApiHarness {
  const harness = new ApiHarness(options);
  beforeAll(() => harness.start(), 120_000);
  afterAll(() => harness.close());
  return harness;
}
