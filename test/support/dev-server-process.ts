/**
 * The Temporal dev server (`temporal server start-dev`) as a child process with a file-backed store, so a test can
 * stop it (an outage) and start it again on the same port and file: workflows survive, clients reconnect.
 * Needs the project-installed CLI in .tools/bin (scripts/install-temporal-tools.sh).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import type { SearchAttributeType } from '@temporalio/common';
import type { SearchAttributeKey } from '@temporalio/common/lib/search-attributes';
import { installedTool } from './temporal-env';

const CLI_TYPE: Record<string, string> = {
  TEXT: 'Text',
  KEYWORD: 'Keyword',
  INT: 'Int',
  DOUBLE: 'Double',
  BOOL: 'Bool',
  DATETIME: 'Datetime',
  KEYWORD_LIST: 'KeywordList',
};

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export class DevServerProcess {
  #child: ChildProcess | undefined;
  #exited: Promise<void> = Promise.resolve();
  readonly #dir: string;
  readonly dbFile: string;

  private constructor(
    readonly port: number,
    private readonly args: string[],
  ) {
    this.#dir = mkdtempSync(path.join(os.tmpdir(), 'temporal-dev-'));
    this.dbFile = path.join(this.#dir, 'temporal.db');
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.#child !== undefined;
  }

  static async start(
    searchAttributes: SearchAttributeKey<SearchAttributeType>[] = [],
    options: { port?: number } = {},
  ): Promise<DevServerProcess> {
    const port = options.port ?? (await freePort());
    const args = searchAttributes.flatMap((k) => ['--search-attribute', `${k.name}=${CLI_TYPE[k.type] ?? 'Keyword'}`]);
    const server = new DevServerProcess(port, args);
    await server.startAgain();
    return server;
  }

  /** Starts the server (again) on the same port and database file; resolves when it answers. */
  async startAgain(readyTimeoutMs = 60_000): Promise<void> {
    if (this.#child) return;
    const cli = installedTool('temporal');
    if (!cli) throw new Error('the Temporal CLI is not installed in .tools/bin (run npm run tools)');
    const child = spawn(
      cli,
      [
        'server',
        'start-dev',
        '--headless',
        '--ip',
        '127.0.0.1',
        '--port',
        String(this.port),
        '--db-filename',
        this.dbFile,
        '--log-level',
        'error',
        '--dynamic-config-value',
        'frontend.enableUpdateWorkflowExecution=true',
        ...this.args,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
    this.#child = child;
    this.#exited = new Promise((resolve) => child.once('exit', () => resolve()));
    const until = Date.now() + readyTimeoutMs;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`temporal dev server exited: ${stderr}`);
      try {
        const conn = await Connection.connect({ address: this.address, connectTimeout: 1_000 });
        try {
          await conn.withDeadline(Date.now() + 2_000, () => conn.workflowService.getSystemInfo({}));
          return;
        } finally {
          await conn.close();
        }
      } catch {
        if (Date.now() > until) throw new Error(`temporal dev server not ready on ${this.address}: ${stderr}`);
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  }

  /** Stops the server the hard way (an outage, not a maintenance window). */
  async stop(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const child = this.#child;
    if (!child) return;
    child.kill(signal);
    await this.#exited;
    this.#child = undefined;
  }

  /** Stops the server and removes its database. */
  async teardown(): Promise<void> {
    await this.stop('SIGTERM');
    rmSync(this.#dir, { recursive: true, force: true });
  }
}
