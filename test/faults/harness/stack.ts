// The engine as separate processes, each of which the fault suite can kill and start again: the Temporal dev server
// (file-persisted, same port and database file after a restart), the exam-service sandbox, the worker and the API.
// Every process is started by this module and stopped by its PID; nothing is looked up or killed by name.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync, writeFileSync, type WriteStream } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { API_NODE_FLAGS } from '../../../src/api/node-flags';
import { loadConfig } from '../../../src/config';
import { DEMO_API_KEY } from '../../../src/sandbox/seed';
import { dataConverterOf } from '../../../src/temporal';
import { waitingInFolder } from '../../../src/inbox/files';
import { SEARCH_ATTRIBUTE_KEYS } from '../../../src/workflows/definitions';
import { installedTool } from '../../support/temporal-env';
import { waitForPoller } from './pollers';
import { portFree } from '../../support/local-stack-ports';

const ROOT = path.resolve(__dirname, '../../..');
export const CLINIC_ID = 'faults-clinic';
export const CLINIC_TOKEN = 'faults-clinic-token';
export const ADMIN_TOKEN = 'faults-admin-token';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
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

// ---- one child process -------------------------------------------------------------------------------------------

const running = new Set<ChildProcess>();
let exitHookInstalled = false;
function installExitHook() {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Whatever happens to the suite, no child outlives it.
  process.on('exit', () => {
    for (const child of running) if (child.pid !== undefined) safeKill(child.pid, 'SIGKILL');
  });
}

function safeKill(pid: number, signal: NodeJS.Signals) {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

export interface ProcessSpec {
  command: string;
  args: string[];
  env: Record<string, string>;
}

export class ManagedProcess {
  #child: ChildProcess | undefined;
  #exited: Promise<void> = Promise.resolve();
  #expectExit = false;
  #tail = '';
  #log: WriteStream;
  #watchers: { pattern: RegExp; resolve: () => void }[] = [];
  /** Exits nobody asked for (a crash): counted and reported by the suite. */
  readonly unexpectedExits: string[] = [];
  starts = 0;

  constructor(
    readonly name: string,
    private readonly spec: ProcessSpec,
    logFile: string,
  ) {
    this.#log = createWriteStream(logFile, { flags: 'a' });
    installExitHook();
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  get running(): boolean {
    return this.#child !== undefined;
  }

  get tail(): string {
    return this.#tail;
  }

  start(): void {
    if (this.#child) return;
    this.#expectExit = false;
    this.starts++;
    const child = spawn(this.spec.command, this.spec.args, {
      cwd: ROOT,
      env: { ...process.env, ...this.spec.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.#child = child;
    running.add(child);
    this.#log.write(`\n=== ${new Date().toISOString()} start #${this.starts} pid ${child.pid}\n`);
    const onData = (chunk: Buffer) => {
      const text = chunk.toString();
      this.#log.write(text);
      this.#tail = (this.#tail + text).slice(-4000);
      for (const w of [...this.#watchers]) {
        if (w.pattern.test(this.#tail)) {
          this.#watchers.splice(this.#watchers.indexOf(w), 1);
          w.resolve();
        }
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    this.#exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        running.delete(child);
        if (this.#child === child) this.#child = undefined;
        this.#log.write(`=== ${new Date().toISOString()} exit pid ${child.pid} (${signal ?? code})\n`);
        if (!this.#expectExit) this.unexpectedExits.push(`${new Date().toISOString()} ${signal ?? code}`);
        resolve();
      }),
    );
  }

  /** Resolves when the output since the last start matches (e.g. a worker's "polling" line). */
  waitForOutput(pattern: RegExp, timeoutMs: number): Promise<void> {
    if (pattern.test(this.#tail)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#watchers = this.#watchers.filter((w) => w.resolve !== done);
        reject(new Error(`${this.name}: no ${String(pattern)} within ${timeoutMs} ms; output: ${this.#tail}`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      this.#watchers.push({ pattern, resolve: done });
    });
  }

  /** Sends a signal to this process (by its PID) and waits for its exit; SIGKILL after `graceMs`. */
  async stop(signal: NodeJS.Signals, graceMs = 20_000): Promise<void> {
    const child = this.#child;
    if (!child || child.pid === undefined) return;
    this.#expectExit = true;
    const exited = this.#exited;
    safeKill(child.pid, signal);
    const timer = setTimeout(() => child.pid !== undefined && safeKill(child.pid, 'SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
    this.#tail = '';
  }

  async close(): Promise<void> {
    await this.stop('SIGTERM', 10_000);
    await new Promise<void>((resolve) => this.#log.end(resolve));
  }
}

// ---- the stack ---------------------------------------------------------------------------------------------------

export interface StackOptions {
  runDir: string;
  ports: StackPorts;
  seed: number;
  /** SANDBOX_* settings (test provider delays, callback retries...). */
  sandboxEnv: Record<string, string>;
}

const CLI_TYPE: Record<string, string> = {
  TEXT: 'Text',
  KEYWORD: 'Keyword',
  INT: 'Int',
  DOUBLE: 'Double',
  BOOL: 'Bool',
  DATETIME: 'Datetime',
  KEYWORD_LIST: 'KeywordList',
};

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

    const cli = installedTool('temporal');
    if (!cli) throw new Error('the Temporal CLI is not installed in .tools/bin (run npm run tools)');
    const tsx = (entry: string) => ({ command: process.execPath, args: ['--import', 'tsx', entry] });
    this.temporal = new ManagedProcess(
      'temporal',
      {
        command: cli,
        args: [
          'server',
          'start-dev',
          '--headless',
          '--ip',
          '127.0.0.1',
          '--port',
          String(ports.temporal),
          '--http-port',
          String(ports.temporalHttp),
          '--metrics-port',
          String(ports.temporalMetrics),
          '--db-filename',
          path.join(this.dataDir, 'temporal.db'),
          '--log-level',
          'error',
          '--sqlite-pragma',
          'journal_mode=wal',
          '--sqlite-pragma',
          'synchronous=normal',
          '--dynamic-config-value',
          'frontend.enableUpdateWorkflowExecution=true',
          ...SEARCH_ATTRIBUTE_KEYS.flatMap((k) => ['--search-attribute', `${k.name}=${CLI_TYPE[k.type] ?? 'Keyword'}`]),
        ],
        env: {},
      },
      path.join(logs, 'temporal.log'),
    );
    this.sandbox = new ManagedProcess(
      'sandbox',
      {
        ...tsx('src/sandbox/main.ts'),
        env: {
          SANDBOX_HOST: '127.0.0.1',
          SANDBOX_PORT: String(ports.sandbox),
          SANDBOX_SEED: String(options.seed),
          SANDBOX_LOG_LEVEL: 'warn',
          ...options.sandboxEnv,
        },
      },
      path.join(logs, 'sandbox.log'),
    );
    this.worker = new ManagedProcess(
      'worker',
      { ...tsx('src/worker.ts'), env: this.env },
      path.join(logs, 'worker.log'),
    );
    const api = tsx('src/api/server.ts');
    this.api = new ManagedProcess(
      'api',
      { command: api.command, args: [...API_NODE_FLAGS, ...api.args], env: this.env },
      path.join(logs, 'api.log'),
    );
  }

  /** Starts everything and waits until each part answers. */
  async start(): Promise<void> {
    this.temporal.start();
    this.sandbox.start();
    await Promise.all([this.temporalReady(), this.httpReady(`${this.sandboxUrl}/_sandbox/health`, this.sandbox)]);
    await Promise.all([this.startWorker(), this.startApi()]);
  }

  async startWorker(): Promise<void> {
    this.worker.start();
    // Bundling the workflow code takes a few seconds on a small machine. Ready when its log says so (at a log level
    // that shows it) or when Temporal lists it among the task queue's pollers.
    const waiting = new AbortController();
    try {
      await Promise.any([
        this.worker.waitForOutput(/worker polling task queue/, 120_000),
        waitForPoller({
          address: this.temporalAddress,
          pid: () => this.worker.pid,
          running: () => this.worker.running && !waiting.signal.aborted,
          name: 'worker',
          timeoutMs: 120_000,
        }),
      ]);
    } catch (err) {
      throw new Error(`worker did not start polling: ${this.worker.tail}`, { cause: err });
    } finally {
      waiting.abort();
    }
  }

  async startApi(): Promise<void> {
    this.api.start();
    await this.httpReady(`${this.apiUrl}/healthz`, this.api);
  }

  async startTemporal(): Promise<void> {
    this.temporal.start();
    await this.temporalReady();
  }

  async temporalReady(timeoutMs = 90_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      if (!this.temporal.running) throw new Error(`temporal exited: ${this.temporal.tail}`);
      try {
        const conn = await Connection.connect({ address: this.temporalAddress, connectTimeout: 1_000 });
        try {
          await conn.withDeadline(Date.now() + 2_000, () => conn.workflowService.getSystemInfo({}));
          return;
        } finally {
          await conn.close();
        }
      } catch {
        if (Date.now() > until) throw new Error(`temporal not ready on ${this.temporalAddress}: ${this.temporal.tail}`);
        await sleep(250);
      }
    }
  }

  async httpReady(url: string, proc: ManagedProcess, timeoutMs = 60_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      if (!proc.running) throw new Error(`${proc.name} exited: ${proc.tail}`);
      try {
        const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
        if (res.ok) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > until) throw new Error(`${proc.name} not ready at ${url}: ${proc.tail}`);
      await sleep(200);
    }
  }

  /** A Temporal client with the stack's payload codec: what an operator's CLI or UI does, for retry/abandon. */
  async operatorClient(): Promise<Client> {
    if (!this.#client) {
      const config = loadConfig(this.env);
      const dataConverter = dataConverterOf(config);
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
    for (const p of [this.api, this.worker, this.sandbox, this.temporal]) await p.close();
  }
}
