// The child processes of the stacks, the bench and the drills, all run one way. Each is spawned so that its pid is
// the process that does the work (node with tsx's loader, not tsx's CLI; `setpriv`, `nice` and a cgroup's shell each
// exec it): RSS and CPU are read from it, signals reach it. Its output is appended to <logDir>/<name>.log and, when
// asked, printed through the stack's log. It is stopped by SIGTERM (SIGKILL to its process group after a grace
// period), killed on purpose and started again with the same command and environment, and, supervised, started again
// after it dies on its own. Each is started under `setpriv --pdeathsig` (the kernel stops it if this process dies
// without stopping it) in a process group of its own (a Ctrl-C at the terminal reaches its starter alone, which stops
// the processes in order). Every process is remembered until it has exited; whatever is still alive when this process
// exits is killed by its pid.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  appendFileSync,
  closeSync,
  createWriteStream,
  existsSync,
  fstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  rmdirSync,
  writeFileSync,
} from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import path from 'node:path';
import { partCommand } from './stack-guard';
import { recordPart } from './stack-guardian';
import type { StackLog } from './stack-log';

export const ROOT = path.resolve(__dirname, '..', '..');

export type Env = Record<string, string | undefined>;
export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}
/** What says a process is ready, polled until it answers true; throwing Fatal stops the wait at once. */
export type Probe = (p: ManagedProcess) => Promise<boolean> | boolean;

export interface ProcessOptions {
  name: string;
  command: string;
  args: string[];
  env?: Env;
  /** Default: the repository. */
  cwd?: string;
  /** Output is appended to <logDir>/<name>.log; without one it goes to `echo` only. */
  logDir?: string;
  /** Also print each line through the stack's log (pretty on a terminal, JSON elsewhere). */
  echo?: StackLog;
  /** Where `up()` and `ready()` wait; default 120 s. */
  ready?: Probe;
  readyTimeoutMs?: number;
  /** SIGTERM grace before SIGKILL; default 15 s. */
  stopGraceMs?: number;
  /**
   * Every stop signals its whole process group, not the process alone: for a command whose own exit does not end what
   * it started (npm exits on SIGTERM and leaves jest, its workers and the servers they run).
   */
  stopsAsGroup?: boolean;
  /** Called when the process exits without having been asked to (a crash, a kill from outside). */
  onUnexpectedExit?: (why: string) => void;
  /** Supervised: started again this long after it exits on its own, as an orchestrator would. */
  restartAfterMs?: number;
  /** Where it says that it is being killed after the grace period. */
  log?: (line: string) => void;
  /**
   * CPU niceness (0-19) from the first instruction on: the command runs under `nice`, which execs it, so every thread
   * it starts inherits the weight. Where the kernel groups each session for scheduling (autogroup), a process's
   * niceness only counts within its session: the session's own niceness is set as well.
   */
  nice?: number;
  /** A cpu cgroup (backgroundCpuGroup) the process is moved into at once, with every thread it has and starts. */
  cpuGroup?: string;
  /**
   * A memory cgroup (memoryLimitGroup) the command starts in: a shell joins it, then execs the command, so Node.js
   * sizes its heap to the group's limit from its first instruction, as in a container with a memory limit.
   */
  memoryGroup?: string;
}

/** A TypeScript entry point of this repository, run by node with tsx's loader (one process, no tsx wrapper). */
export const tsx = (entry: string, args: readonly string[] = [], nodeArgs: readonly string[] = []) => ({
  command: process.execPath,
  args: [...nodeArgs, '--import', 'tsx', entry, ...args],
});

/** Thrown inside waitFor's probe: stop waiting at once (the process being waited for has exited). */
export class Fatal extends Error {
  override name = 'Fatal';
}

const live = new Set<ManagedProcess>();
/** Processes not spawned here (the PostgreSQL postmaster) and cgroups: what to do at once when this process exits. */
const exitHooks = new Set<() => void>();
let exitHookInstalled = false;

export class ManagedProcess {
  readonly name: string;
  readonly logFile: string | undefined;
  /** How many times it was started. */
  starts = 0;
  /** Each exit nobody asked for (a crash, a kill from outside): when, and its code or signal. */
  readonly unexpectedExits: string[] = [];
  #child: ChildProcess | undefined;
  #exited: Promise<Exit> = Promise.resolve({ code: null, signal: null });
  /** Asked to run: an exit now is unexpected. */
  #wanted = false;
  /** Where this start's part of the log begins. */
  #logOffset = 0;

  constructor(readonly o: ProcessOptions) {
    this.name = o.name;
    if (o.logDir) mkdirSync(o.logDir, { recursive: true });
    this.logFile = o.logDir ? path.join(o.logDir, `${o.name}.log`) : undefined;
  }

  get running(): boolean {
    return this.#child !== undefined;
  }

  /** The pid while it runs. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** Resolves when the last start's process has exited (never rejects). */
  get exited(): Promise<Exit> {
    return this.#exited;
  }

  /** Spawns it (nothing when it runs); `ready()` waits for it. */
  start(): this {
    if (this.#child) return this;
    const o = this.o;
    this.#wanted = true;
    this.starts++;
    let [command, args] = o.memoryGroup ? inGroup(o.memoryGroup, o.command, o.args) : [o.command, o.args];
    if ((o.nice ?? 0) > 0) [command, args] = ['nice', ['-n', String(o.nice), command, ...args]];
    const part = partCommand(command, args);
    const fd = this.logFile ? openSync(this.logFile, 'a') : undefined;
    this.#logOffset = fd === undefined ? 0 : fstatSync(fd).size;
    // Straight into the file unless printed too: the output does not pass through this process.
    const out = o.echo ? 'pipe' : (fd ?? 'ignore');
    const child = spawn(part.command, part.args, {
      cwd: o.cwd ?? ROOT,
      env: { ...process.env, ...o.env },
      stdio: ['ignore', out, out],
      detached: true,
    });
    if (o.echo && child.stdout && child.stderr) {
      const file = fd === undefined ? undefined : createWriteStream('', { fd });
      for (const [stream, kind] of [
        [child.stdout, 'stdout'],
        [child.stderr, 'stderr'],
      ] as const) {
        if (file) stream.on('data', (chunk: Buffer) => file.write(chunk));
        o.echo.follow(this.name, stream, kind);
      }
      child.once('close', () => file?.end());
    } else if (fd !== undefined) closeSync(fd);
    this.#child = child;
    // A stack run from the command line notes it, for its guardian (stack-guardian.ts).
    recordPart(child.pid, this.name);
    live.add(this);
    killAtExit();
    // Each start and exit noted in the log, so a log that spans restarts reads as such.
    const note = (line: string) =>
      this.logFile && appendFileSync(this.logFile, `=== ${new Date().toISOString()} ${line}\n`);
    note(`start #${this.starts}, pid ${child.pid}`);
    if (child.pid !== undefined && (o.nice ?? 0) > 0) setAutogroupNice(child.pid, o.nice!);
    if (child.pid !== undefined && o.cpuGroup) writeFileSync(path.join(o.cpuGroup, 'cgroup.procs'), String(child.pid));
    this.#exited = new Promise((resolve) => {
      const exited = (code: number | null, signal: NodeJS.Signals | null) => {
        if (this.#child !== child) return;
        this.#child = undefined;
        live.delete(this);
        note(`exit of pid ${child.pid} (${signal ?? code})`);
        resolve({ code, signal });
        if (!this.#wanted) return;
        this.unexpectedExits.push(`${new Date().toISOString()} ${signal ?? code}`);
        o.onUnexpectedExit?.(`${this.name} exited (${signal ?? code})${this.logFile ? `; see ${this.logFile}` : ''}`);
        const after = o.restartAfterMs;
        if (after !== undefined) setTimeout(() => this.#wanted && this.start(), after);
      };
      child.once('exit', exited);
      child.once('error', () => exited(null, null));
    });
    return this;
  }

  /** Resolves once the `ready` probe answers; rejects when the process exits first (with its log's last lines). */
  async ready(): Promise<void> {
    const probe = this.o.ready;
    if (!probe) return;
    await waitFor(
      `${this.name} to be ready`,
      () => {
        if (!this.running) throw new Fatal(`${this.name} exited at start${this.#seeLog()}`);
        return probe(this);
      },
      this.o.readyTimeoutMs ?? 120_000,
    );
  }

  /** Starts it and waits until it is ready; one that is not is stopped. */
  async up(): Promise<this> {
    try {
      await this.start().ready();
    } catch (err) {
      await this.stop();
      throw err;
    }
    return this;
  }

  /**
   * `signal` (SIGTERM) to it (`group`: to its whole process group), then SIGKILL to its group after the grace period;
   * resolves once the process is gone.
   */
  async stop(graceMs = this.o.stopGraceMs ?? 15_000, signal: NodeJS.Signals = 'SIGTERM', group = false): Promise<void> {
    this.#wanted = false;
    const child = this.#child;
    if (!child) return;
    signalPid(child.pid, signal, group || this.o.stopsAsGroup === true);
    const timer = setTimeout(() => {
      this.o.log?.(`${this.name} did not stop in ${Math.round(graceMs / 1000)} s; killing it`);
      signalPid(child.pid, 'SIGKILL', true);
    }, graceMs);
    await this.#exited;
    clearTimeout(timer);
  }

  /** SIGKILL to its process group (nothing it started lives on): a crash on purpose. Resolves once it is gone. */
  async kill(): Promise<void> {
    this.#wanted = false;
    if (!this.#child) return;
    signalPid(this.#child.pid, 'SIGKILL', true);
    await this.#exited;
  }

  /** Last resort when this process exits: no waiting. */
  killNow(): void {
    this.#wanted = false;
    if (this.#child) signalPid(this.#child.pid, 'SIGKILL', true);
  }

  /** What it wrote since its last start (its log file). */
  output(): string {
    if (!this.logFile) return '';
    try {
      const fd = openSync(this.logFile, 'r');
      try {
        const size = fstatSync(fd).size - this.#logOffset;
        const buf = Buffer.alloc(Math.max(0, size));
        readSync(fd, buf, 0, buf.length, this.#logOffset);
        return buf.toString('utf8');
      } finally {
        closeSync(fd);
      }
    } catch {
      return '';
    }
  }

  /** "; see <log>; its last lines: ...": for a message about this process (its folder may be gone by then). */
  #seeLog(): string {
    const tail = this.output().trim().split('\n').slice(-8).join('\n');
    return this.logFile ? `; see ${this.logFile}${tail ? `; its last lines:\n${tail}` : ''}` : '';
  }
}

/** Starts a process and returns it (not waiting for it to be ready). */
export const startProcess = (o: ProcessOptions) => new ManagedProcess(o).start();

function signalPid(pid: number | undefined, signal: NodeJS.Signals, group = false): void {
  if (pid === undefined) return;
  try {
    process.kill(group ? -pid : pid, signal);
  } catch {
    try {
      if (group) process.kill(pid, signal);
    } catch {
      // gone already
    }
  }
}

/** Every process still alive, newest first. */
export function liveProcesses(): ManagedProcess[] {
  return [...live].reverse();
}

/** Registers a synchronous last-resort stop run when this process exits; returns its removal. */
export function onKillAll(fn: () => void): () => void {
  killAtExit();
  exitHooks.add(fn);
  return () => exitHooks.delete(fn);
}

function killAtExit(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', killAllNow);
}

/** Last resort (this process exits): SIGKILL every process still alive, by pid, then the registered stops. */
export function killAllNow(): void {
  for (const p of live) p.killNow();
  for (const fn of exitHooks) {
    try {
      fn();
    } catch {
      // gone already
    }
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls until fn() is truthy; throws with the message after the timeout (or at once on Fatal). */
export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs: number,
  everyMs = 200,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      if (err instanceof Fatal) throw err;
      lastErr = err;
    }
    if (Date.now() > until) {
      const why = lastErr instanceof Error ? ` (last error: ${lastErr.message})` : '';
      throw new Error(`timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${what}${why}`);
    }
    await sleep(everyMs);
  }
}

/** Whether something listens on 127.0.0.1:port. */
export function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/** Whether GET url answers 2xx. */
export async function httpOk(url: string, timeoutMs = 2_000): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    await res.arrayBuffer();
    return res.ok;
  } catch {
    return false;
  }
}

/** Ready once something listens on the port. */
export const portProbe =
  (port: number): Probe =>
  () =>
    portOpen(port);
/** Ready once GET url answers 2xx. */
export const httpProbe =
  (url: string): Probe =>
  () =>
    httpOk(url);
/** Ready once its output since this start holds the text. */
export const outputProbe =
  (text: string): Probe =>
  (p) =>
    p.output().includes(text);

// ---- cgroups -------------------------------------------------------------------------------------------------------

let backgroundGroup: string | null | undefined;

/**
 * A cpu cgroup of the lowest weight (cgroup v1 `cpu.shares` 2, v2 `cpu.weight` 1: what a best-effort container gets
 * beside one with a CPU request), made once per process and removed at its exit: its processes run on the CPU the
 * others leave, yet are never starved outright (the idle class, `cpu.idle`, was tried: a starved process holding a
 * file-system lock stalled the webhook's writes by up to 120 ms). Undefined where the kernel has no cpu controller
 * or this process may not make a group: then niceness is all there is.
 */
export function backgroundCpuGroup(): string | undefined {
  if (backgroundGroup !== undefined) return backgroundGroup ?? undefined;
  backgroundGroup = null;
  const v2 = '/sys/fs/cgroup';
  const candidates: [string, string, string][] = [
    ['/sys/fs/cgroup/cpu', 'cpu.shares', '2'], // cgroup v1, the cpu controller's hierarchy
    ...(existsSync(path.join(v2, 'cgroup.subtree_control')) &&
    readFileSync(path.join(v2, 'cgroup.subtree_control'), 'utf8').split(/\s+/).includes('cpu')
      ? [[v2, 'cpu.weight', '1'] as [string, string, string]]
      : []),
  ];
  for (const [base, knob, value] of candidates) {
    if (!existsSync(path.join(base, knob)) && !existsSync(path.join(base, 'cgroup.subtree_control'))) continue;
    const dir = path.join(base, `journey-bench-background-${process.pid}`);
    try {
      mkdirSync(dir);
      writeFileSync(path.join(dir, knob), value);
      backgroundGroup = dir;
      onKillAll(() => removeGroup(dir));
      break;
    } catch {
      removeGroup(dir);
    }
  }
  return backgroundGroup ?? undefined;
}

/** Removes a cgroup once empty (every process in it has exited); one still holding a process stays. */
function removeGroup(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // not made, or a process still in it: the kernel keeps the group until it is removed by hand
  }
}

/**
 * A memory cgroup with this limit (cgroup v1 `memory.limit_in_bytes` under this process's own memory group), made
 * once per name and removed at exit: a process started in it (ProcessOptions.memoryGroup) runs as in a container with
 * that memory limit (Node.js sizes its heap to it; past it the kernel reclaims, then kills). Undefined where none can
 * be made (cgroup v2, whose one group per process the cpu group already takes, or no rights).
 */
export function memoryLimitGroup(name: string, limitBytes: number): string | undefined {
  const line = readFileSync('/proc/self/cgroup', 'utf8')
    .split('\n')
    .find((l) => /^\d+:([^:]*,)?memory(,[^:]*)?:/.test(l));
  if (!line) return undefined;
  const own = line.slice(line.indexOf(':', line.indexOf(':') + 1) + 1);
  const dir = path.join('/sys/fs/cgroup/memory', own, `journey-bench-${name}-${process.pid}`);
  try {
    if (!existsSync(dir)) mkdirSync(dir);
    writeFileSync(path.join(dir, 'memory.limit_in_bytes'), String(limitBytes));
  } catch {
    return undefined;
  }
  onKillAll(() => removeGroup(dir));
  return dir;
}

/** A command that starts inside a cgroup: `sh -c SCRIPT GROUP COMMAND ARGS...` joins it, then execs (same pid). */
function inGroup(group: string, command: string, args: string[]): [string, string[]] {
  return ['sh', ['-c', 'echo $$ > "$0/cgroup.procs" && exec "$@"', group, command, ...args]];
}

/** The heap limit (bytes) Node.js sizes itself to when it starts in this memory cgroup (a process started in it). */
export function heapLimitIn(dir: string): number | undefined {
  const script = 'process.stdout.write(String(require("node:v8").getHeapStatistics().heap_size_limit))';
  const r = spawnSync(...inGroup(dir, process.execPath, ['-e', script]), { encoding: 'utf8' });
  const n = Number(r.stdout);
  return r.status === 0 && Number.isFinite(n) && n > 0 ? n : undefined;
}

/** What the kernel counted of a memory cgroup: its peak usage and how often it hit the limit (v1), if readable. */
export function memoryGroupStats(
  dir: string,
): { maxUsageBytes: number; limitHits: number; oomKills?: number } | undefined {
  try {
    const read = (f: string) => readFileSync(path.join(dir, f), 'utf8');
    const oom = /oom_kill (\d+)/.exec(read('memory.oom_control'));
    return {
      maxUsageBytes: Number(read('memory.max_usage_in_bytes')),
      limitHits: Number(read('memory.failcnt')),
      ...(oom ? { oomKills: Number(oom[1]) } : {}),
    };
  } catch {
    return undefined;
  }
}

/** The scheduling weight of a session's group (Linux autogroup); nothing where the kernel has none. */
function setAutogroupNice(pid: number, nice: number): void {
  try {
    writeFileSync(`/proc/${pid}/autogroup`, String(nice));
  } catch {
    // no autogroup scheduling here (or the process is gone): the process's own niceness is what counts
  }
}

// ---- what /proc says of a process ----------------------------------------------------------------------------------

/** The fields of /proc/<pid>/stat after the command name (state first), or undefined when it is gone. */
async function statFields(pid: number | string): Promise<string[] | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  return stat ? stat.slice(stat.lastIndexOf(')') + 2).split(' ') : undefined;
}

/** VmRSS of a process in bytes (from /proc), or undefined when it is gone. */
export async function rssBytes(pid: number | undefined): Promise<number | undefined> {
  const status = pid === undefined ? '' : await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
  return m ? Number(m[1]) * 1024 : undefined;
}

/** CPU time (user + system) of a process in seconds, from /proc/<pid>/stat. */
export async function cpuSeconds(pid: number | undefined): Promise<number | undefined> {
  // utime and stime are fields 14 and 15 of the whole line: 12 and 13 after the ") " split.
  const f = pid === undefined ? undefined : await statFields(pid);
  return f ? (Number(f[11]) + Number(f[12])) / 100 : undefined;
}

/**
 * CPU seconds of a process and its direct children (PostgreSQL: the postmaster and its backends), counting the
 * children that already exited and were reaped (cutime, cstime), from /proc.
 */
export async function treeCpuSeconds(pid: number | undefined): Promise<number | undefined> {
  const own = pid === undefined ? undefined : await statFields(pid);
  if (!own) return undefined;
  // utime, stime, cutime, cstime: fields 14-17 of the line, 11-14 after the ") " split.
  let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const entry of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry)) continue;
    const f = await statFields(entry);
    if (f && Number(f[1]) === pid) ticks += Number(f[11]) + Number(f[12]);
  }
  return ticks / 100;
}

/** CPU seconds per thread name (comm) of a process: the main thread, libuv's pool, V8's helpers... */
export async function threadCpuSeconds(pid: number | undefined): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  if (pid === undefined) return out;
  for (const tid of await readdir(`/proc/${pid}/task`).catch(() => [] as string[])) {
    const stat = await readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8').catch(() => '');
    if (!stat) continue;
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')).replace(/[0-9]+$/, '');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const name = tid === String(pid) ? 'main' : comm;
    out[name] = (out[name] ?? 0) + (Number(fields[11]) + Number(fields[12])) / 100;
  }
  return out;
}

/** Seconds the main thread of a process has spent runnable but waiting for a CPU (/proc/<pid>/schedstat). */
export async function runQueueWaitSeconds(pid: number | undefined): Promise<number | undefined> {
  const text = pid === undefined ? '' : await readFile(`/proc/${pid}/schedstat`, 'utf8').catch(() => '');
  const wait = text.trim().split(/\s+/)[1];
  return wait === undefined ? undefined : Number(wait) / 1e9;
}
