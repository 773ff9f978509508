// --start-stack: the local stack (scripts/local-stack.ts) as a child of the demo, its output in a log file, echoed
// until the journeys start; stopped in order at the end.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import path from 'node:path';
import { sleep } from '../lib/http';
import type { ApiClient } from './api';
import { dim } from './report';

const root = path.resolve(__dirname, '../..');

export class LocalStack {
  private readonly proc: ChildProcess;
  private readonly log: WriteStream;
  private echo = true;
  private readonly tail: string[] = [];
  readonly exited: Promise<number | string>;
  running = true;
  private stopping = false;
  /** Set when the stack exited without being asked to. */
  exitedEarly: string | undefined;

  constructor(
    readonly logPath: string,
    apiPort: number,
  ) {
    this.log = createWriteStream(logPath);
    // As `npm start` runs it. Its own process group: a Ctrl-C reaches the demo alone, which then stops the stack in
    // order. Its lines as the demo's own terminal wants them (pretty on a terminal, else JSON).
    this.proc = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'scripts/local-stack.ts')], {
      cwd: root,
      env: {
        ...process.env,
        API_PORT: String(apiPort),
        LOG_FORMAT: process.env.LOG_FORMAT ?? (process.stdout.isTTY ? 'pretty' : 'json'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const onData = (chunk: Buffer) => {
      this.log.write(chunk);
      const text = chunk.toString();
      for (const l of text.split('\n')) if (l.trim() !== '') this.tail.push(l);
      this.tail.splice(0, Math.max(0, this.tail.length - 40));
      if (this.echo) process.stdout.write(dim(text.endsWith('\n') ? text : `${text}\n`));
    };
    this.proc.stdout?.on('data', onData);
    this.proc.stderr?.on('data', onData);
    this.exited = new Promise((resolve) => {
      this.proc.once('exit', (code, signal) => {
        this.running = false;
        if (!this.stopping) this.exitedEarly = `the stack exited (${signal ?? code}) while the journeys ran`;
        resolve(signal ?? code ?? 'unknown');
      });
      this.proc.once('error', (err) => {
        this.running = false;
        this.tail.push(err.message);
        resolve(err.message);
      });
    });
  }

  get pid() {
    return this.proc.pid;
  }

  quiet(quiet: boolean) {
    this.echo = !quiet;
  }

  lastLines(n = 15): string {
    return this.tail.slice(-n).join('\n');
  }

  /** Waits until the API's /readyz says ready; throws when the stack exits first or the time runs out. */
  async waitReady(client: ApiClient, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let exitCode: number | string | undefined;
    void this.exited.then((c) => (exitCode = c));
    while (Date.now() < deadline) {
      if (exitCode !== undefined) throw new Error(`the stack exited (${exitCode}) before it was ready`);
      try {
        await client.ready(5_000);
        return;
      } catch {
        // not yet
      }
      await sleep(500);
    }
    throw new Error(`the stack was not ready within ${timeoutMs / 1000} s`);
  }

  /** SIGTERM, then wait for the stack to stop its parts in order and exit. */
  async stop(): Promise<number | string> {
    this.echo = true;
    this.stopping = true;
    if (this.running && this.proc.pid !== undefined) {
      this.proc.kill('SIGTERM');
      const timer = setTimeout(() => {
        console.error('[demo] the stack did not stop within 90 s; killing it');
        this.proc.kill('SIGKILL');
      }, 90_000);
      const code = await this.exited;
      clearTimeout(timer);
      await new Promise<void>((resolve) => this.log.end(resolve));
      return code;
    }
    await new Promise<void>((resolve) => this.log.end(resolve));
    return this.exited;
  }

  /** Last resort when the demo exits without stop(): the stack still stops itself in order. */
  killOnExit() {
    if (this.running) this.proc.kill('SIGTERM');
  }
}
