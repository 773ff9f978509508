// Child processes of the bench: each spawned directly (node with the tsx loader, or the Temporal binary) so its pid
// is the process that does the work (RSS is read from it, signals reach it), with its output in a log file. Every
// child is remembered until it has exited; whatever is still alive when the bench ends is killed by its pid.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export const ROOT = path.resolve(__dirname, '..', '..');

export interface Child {
  name: string;
  pid: number;
  proc: ChildProcess;
  logFile: string;
  /** Resolves when the process has exited (never rejects). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly alive: boolean;
}

const children = new Set<Child>();
/** Processes not spawned here (the PostgreSQL postmaster): how to end each at once when the bench exits. */
const exitHooks = new Set<() => void>();

/** Registers a synchronous last-resort stop (process exit); returns its removal. */
export function onKillAll(fn: () => void): () => void {
  exitHooks.add(fn);
  return () => exitHooks.delete(fn);
}

export interface SpawnOptions {
  env?: Record<string, string | undefined>;
  cwd?: string;
  logDir: string;
  /** Own process group (default true): a Ctrl-C of the bench does not reach it; the bench stops it in order. */
  detached?: boolean;
  /**
   * CPU niceness (0-19) from the first instruction on: the command runs under `nice`, which execs it, so the pid is
   * still the process that does the work and every thread it starts inherits the weight. Where the kernel groups
   * each session for scheduling (autogroup) and the child has its own session (`detached`), a process's niceness
   * only counts within its session: the session's own niceness is set as well.
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

export function spawnChild(name: string, command: string, args: string[], o: SpawnOptions): Child {
  const logFile = path.join(o.logDir, `${name}.log`);
  const fd = openSync(logFile, 'a');
  const niced = (o.nice ?? 0) > 0;
  const [cmd, argv] = o.memoryGroup ? inGroup(o.memoryGroup, command, args) : [command, args];
  const proc = spawn(niced ? 'nice' : cmd, niced ? ['-n', String(o.nice), cmd, ...argv] : argv, {
    cwd: o.cwd ?? ROOT,
    env: { ...process.env, ...o.env },
    stdio: ['ignore', fd, fd],
    detached: o.detached ?? true,
  });
  closeSync(fd);
  if (proc.pid === undefined) throw new Error(`${name}: could not spawn ${command}`);
  if (niced) setAutogroupNice(proc.pid, o.nice!);
  if (o.cpuGroup) writeFileSync(path.join(o.cpuGroup, 'cgroup.procs'), String(proc.pid));
  let alive = true;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    proc.once('exit', (code, signal) => {
      alive = false;
      children.delete(child);
      resolve({ code, signal });
    });
    proc.once('error', () => {
      alive = false;
      children.delete(child);
      resolve({ code: null, signal: null });
    });
  });
  const child: Child = {
    name,
    pid: proc.pid,
    proc,
    logFile,
    exited,
    get alive() {
      return alive;
    },
  };
  children.add(child);
  return child;
}

let backgroundGroup: string | null | undefined;

/**
 * A cpu cgroup of the lowest weight (cgroup v1 `cpu.shares` 2, v2 `cpu.weight` 1: what a best-effort container gets
 * beside one with a CPU request), made once per bench and removed at its exit: its processes run on the CPU the
 * others leave, yet are never starved outright (the idle class, `cpu.idle`, was tried: a starved process holding a
 * file-system lock stalled the webhook's writes by up to 120 ms). Undefined where the kernel has no cpu controller
 * or the bench may not make a group: then niceness is all there is.
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
      exitHooks.add(() => {
        try {
          rmdirSync(dir); // only once empty: every process in it has exited
        } catch {
          // a process still in it: the kernel keeps the group until it is removed by hand
        }
      });
      break;
    } catch {
      try {
        rmdirSync(dir);
      } catch {
        // not made
      }
    }
  }
  return backgroundGroup ?? undefined;
}

/**
 * A memory cgroup with this limit (cgroup v1 `memory.limit_in_bytes` under the bench's own memory group), made once
 * per name and removed at the bench's exit: a process started in it (SpawnOptions.memoryGroup) runs as in a container
 * with that memory limit (Node.js sizes its heap to it; past it the kernel reclaims, then kills). Undefined where the
 * bench may not make one (cgroup v2, whose one group per process the cpu group already takes, or no rights).
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
  exitHooks.add(() => {
    try {
      rmdirSync(dir);
    } catch {
      // a process still in it
    }
  });
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

/** A TypeScript entry point of this repository, run by node with the tsx loader (one process, no tsx wrapper). */
export function spawnTs(
  name: string,
  script: string,
  args: string[],
  o: SpawnOptions & { nodeArgs?: string[] },
): Child {
  return spawnChild(
    name,
    process.execPath,
    [...(o.nodeArgs ?? []), '--import', 'tsx', path.join(ROOT, script), ...args],
    o,
  );
}

/** Thrown inside waitFor's probe: stop waiting at once (the process being waited for has exited). */
export class Fatal extends Error {
  override name = 'Fatal';
}

/** SIGTERM (or the given signal), then SIGKILL after the grace period. Resolves once the process is gone. */
export async function stopChild(child: Child, graceMs = 15_000, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (!child.alive) return;
  try {
    process.kill(child.pid, signal);
  } catch {
    return;
  }
  const timer = setTimeout(() => {
    try {
      if (child.alive) process.kill(child.pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }, graceMs);
  await child.exited;
  clearTimeout(timer);
}

/** Every child still alive, newest first. */
export function liveChildren(): Child[] {
  return [...children].reverse();
}

/** Last resort (process exit): SIGKILL each child still alive, by pid (and the registered stops). */
export function killAllSync(): void {
  for (const fn of exitHooks) {
    try {
      fn();
    } catch {
      // gone already
    }
  }
  for (const child of children) {
    try {
      process.kill(child.pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls until fn() is truthy; throws with the message after the timeout. */
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

/** VmRSS of a process in bytes (from /proc), or undefined when it is gone. */
export async function rssBytes(pid: number): Promise<number | undefined> {
  const { readFile } = await import('node:fs/promises');
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** CPU time (user + system) of a process in seconds, from /proc/<pid>/stat. */
export async function cpuSeconds(pid: number): Promise<number | undefined> {
  const { readFile } = await import('node:fs/promises');
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of the whole line: 12 and 13 after the ") " split.
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return undefined;
  }
}

/**
 * CPU seconds of a process and its direct children (PostgreSQL: the postmaster and its backends), counting the
 * children that already exited and were reaped (cutime, cstime), from /proc.
 */
export async function treeCpuSeconds(pid: number): Promise<number | undefined> {
  const { readdir, readFile } = await import('node:fs/promises');
  const fieldsOf = async (p: string) => {
    const stat = await readFile(`/proc/${p}/stat`, 'utf8').catch(() => '');
    return stat ? stat.slice(stat.lastIndexOf(')') + 2).split(' ') : undefined;
  };
  const own = await fieldsOf(String(pid));
  if (!own) return undefined;
  // utime, stime, cutime, cstime: fields 14-17 of the line, 11-14 after the ") " split.
  let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const entry of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry)) continue;
    const f = await fieldsOf(entry);
    if (f && Number(f[1]) === pid) ticks += Number(f[11]) + Number(f[12]);
  }
  return ticks / 100;
}

/** CPU seconds per thread name (comm) of a process: the main thread, libuv's pool, V8's helpers... */
export async function threadCpuSeconds(pid: number): Promise<Record<string, number>> {
  const { readdir, readFile } = await import('node:fs/promises');
  const out: Record<string, number> = {};
  try {
    for (const tid of await readdir(`/proc/${pid}/task`)) {
      const stat = await readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8').catch(() => '');
      if (!stat) continue;
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')).replace(/[0-9]+$/, '');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const name = tid === String(pid) ? 'main' : comm;
      out[name] = (out[name] ?? 0) + (Number(fields[11]) + Number(fields[12])) / 100;
    }
  } catch {
    // gone
  }
  return out;
}

/** Seconds the main thread of a process has spent runnable but waiting for a CPU (/proc/<pid>/schedstat). */
export async function runQueueWaitSeconds(pid: number): Promise<number | undefined> {
  const { readFile } = await import('node:fs/promises');
  try {
    const [, wait] = (await readFile(`/proc/${pid}/schedstat`, 'utf8')).trim().split(/\s+/);
    return Number(wait) / 1e9;
  } catch {
    return undefined;
  }
}
