// A child process a stack starts, stops in order, kills on purpose (fault drills) and starts again with the same
// command and environment. Its output (JSON lines) goes to a log file, and, when asked, to the stack's log.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { connect } from 'node:net';
import path from 'node:path';
import { partCommand } from './stack-guard';
import { partEnv, type StackLog } from './stack-log';

export interface ManagedProcessOptions {
  name: string;
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  /** Output is appended to <logDir>/<name>.log. */
  logDir: string;
  /** Also print each line through the stack's log (pretty on a terminal, JSON elsewhere). */
  echo?: StackLog;
  /** Called when the process exits without having been asked to (a crash, or a kill from outside). */
  onUnexpectedExit?: (code: number | null, signal: NodeJS.Signals | null) => void;
  /** SIGTERM grace before SIGKILL. Default 15 s. */
  stopGraceMs?: number;
}

export class ManagedProcess {
  readonly name: string;
  readonly logFile: string;
  #child: ChildProcess | undefined;
  #exited: Promise<void> = Promise.resolve();
  #expectExit = false;
  #log: WriteStream | undefined;

  constructor(private readonly o: ManagedProcessOptions) {
    this.name = o.name;
    mkdirSync(o.logDir, { recursive: true });
    this.logFile = path.join(o.logDir, `${o.name}.log`);
  }

  get running(): boolean {
    return this.#child !== undefined && this.#child.exitCode === null && this.#child.signalCode === null;
  }

  get pid(): number | undefined {
    return this.running ? this.#child?.pid : undefined;
  }

  start(): void {
    if (this.running) return;
    this.#expectExit = false;
    this.#log ??= createWriteStream(this.logFile, { flags: 'a' });
    // The parent-death signal stops the part if the stack's process dies without stopping it.
    const part = partCommand(this.o.command, this.o.args);
    const child = spawn(part.command, part.args, {
      cwd: this.o.cwd,
      env: { ...process.env, ...this.o.env, ...partEnv() },
      stdio: ['ignore', 'pipe', 'pipe'],
      // Own process group: a Ctrl-C at the terminal reaches the stack alone, which stops the parts in order.
      detached: true,
    });
    this.#child = child;
    const write = (chunk: Buffer) => this.#log?.write(chunk);
    child.stdout.on('data', write);
    child.stderr.on('data', write);
    this.o.echo?.follow(this.name, child.stdout, 'stdout');
    this.o.echo?.follow(this.name, child.stderr, 'stderr');
    this.#exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        if (!this.#expectExit) this.o.onUnexpectedExit?.(code, signal);
        resolve();
      }),
    );
  }

  /** SIGTERM, then SIGKILL after the grace period; resolves once the process is gone. */
  async stop(): Promise<void> {
    const child = this.#child;
    if (!child || !this.running) return;
    this.#expectExit = true;
    const timer = setTimeout(() => signalGroup(child, 'SIGKILL'), this.o.stopGraceMs ?? 15_000);
    child.kill('SIGTERM');
    await this.#exited;
    clearTimeout(timer);
  }

  /** SIGKILL: a crash on purpose. Resolves once the process is gone. */
  async kill(): Promise<void> {
    const child = this.#child;
    if (!child || !this.running) return;
    this.#expectExit = true;
    // The whole process group: nothing the part started lives on without it.
    signalGroup(child, 'SIGKILL');
    await this.#exited;
  }

  /** Last resort when the stack's own process exits: no waiting. */
  killNow(): void {
    if (this.running && this.#child) signalGroup(this.#child, 'SIGKILL');
  }

  async close(): Promise<void> {
    await this.stop();
    await new Promise<void>((resolve) => (this.#log ? this.#log.end(resolve) : resolve()));
    this.#log = undefined;
  }
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals) {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, signal);
  } catch {
    child.kill(signal);
  }
}

/** Resolves once something listens on 127.0.0.1:port; rejects at the deadline or when `gaveUp()` says so. */
export function waitForPort(
  port: number,
  name: string,
  o: { timeoutMs?: number; gaveUp?: () => string | undefined } = {},
): Promise<void> {
  const deadline = Date.now() + (o.timeoutMs ?? 120_000);
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve();
      });
      socket.once('error', () => {
        socket.destroy();
        const why = o.gaveUp?.();
        if (why) return reject(new Error(`${name}: ${why}`));
        if (Date.now() > deadline) return reject(new Error(`${name} did not listen on port ${port}`));
        setTimeout(attempt, 200);
      });
    };
    attempt();
  });
}

/** Resolves once GET url answers 200; rejects at the deadline or when `gaveUp()` says so. */
export async function waitForHttp(
  url: string,
  name: string,
  o: { timeoutMs?: number; gaveUp?: () => string | undefined } = {},
): Promise<void> {
  const deadline = Date.now() + (o.timeoutMs ?? 120_000);
  for (;;) {
    const ok = await fetch(url, { signal: AbortSignal.timeout(2_000) }).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return;
    const why = o.gaveUp?.();
    if (why) throw new Error(`${name}: ${why}`);
    if (Date.now() > deadline) throw new Error(`${name} did not answer ${new URL(url).pathname} with 200`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
