// Stacks driven as whole processes in tests: started as a terminal starts them (a process group of their own), their
// processes and ports followed through /proc, and a stop checked to leave no process running and every port free.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { listenerPid } from '../../scripts/lib/stack-guard';
import { until } from './until';
import { pickProductionPorts } from '../faults/harness/production';
import type { ProductionPorts } from '../../scripts/lib/production-stack';
import { freePort } from './dev-server-process';
import { localStackPorts } from './local-stack-ports';

const root = path.resolve(__dirname, '../..');
const GONE_WITHIN_MS = 15_000;

export interface Stack {
  proc: ChildProcess;
  pid: number;
  output: () => string;
  exited: Promise<number | null>;
}

/** A stack's script run as `npm start` runs it (node with tsx's loader), in a process group of its own. */
export function runStack(script: string, env: Record<string, string>): Stack {
  return runCommand(process.execPath, ['--import', 'tsx', script], env);
}

/**
 * A command run in a process group of its own, as a shell starts a job (the group's id is its pid), its output
 * (stdout and stderr) kept.
 */
export function runCommand(command: string, args: string[], env: Record<string, string>): Stack {
  let output = '';
  const proc = spawn(command, args, {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  proc.stdout.on('data', (c: Buffer) => (output += c.toString()));
  proc.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return { proc, pid: proc.pid!, output: () => output, exited };
}

/** Clock ticks since boot (the unit of a process's start time in /proc/<pid>/stat). */
const ticksNow = () => Math.floor(Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]) * 100);

/**
 * Whether a process that was running when the stack was told to stop still listens on the port. Another test may
 * listen on a freed port later: a process started after the signal is not the stack's.
 */
function heldSince(port: number, ticks: number): boolean {
  const pid = listenerPid(port);
  const s = pid === undefined ? undefined : stat(pid);
  return s !== undefined && Number(s.start) <= ticks;
}

/** A process as /proc shows it: its parent, its start time (with the pid, its identity) and its state. */
export function stat(pid: number): { ppid: number; start: string; state: string } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0]!, ppid: Number(fields[1]), start: fields[19]! };
  } catch {
    return undefined;
  }
}

/** Every process under `pid` (children, theirs, ...), each with its start time. */
export function descendants(pid: number): { pid: number; start: string; command: string }[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const s = stat(Number(entry));
    if (s) children.set(s.ppid, [...(children.get(s.ppid) ?? []), Number(entry)]);
  }
  const found: { pid: number; start: string; command: string }[] = [];
  const queue = [...(children.get(pid) ?? [])];
  while (queue.length > 0) {
    const p = queue.shift()!;
    const s = stat(p);
    if (!s) continue;
    let command = '';
    try {
      command = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0').join(' ').trim();
    } catch {
      // gone meanwhile
    }
    found.push({ pid: p, start: s.start, command });
    queue.push(...(children.get(p) ?? []));
  }
  return found;
}

/** A process's state and what it waits in, for a failure's message. */
function condition(pid: number): string {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (name: string) => new RegExp(`^${name}:\\s*(.*)$`, 'm').exec(status)?.[1] ?? '?';
    const wchan = readFileSync(`/proc/${pid}/wchan`, 'utf8');
    const threads = readdirSync(`/proc/${pid}/task`).map((t) => {
      try {
        return `${readFileSync(`/proc/${pid}/task/${t}/comm`, 'utf8').trim()}:${readFileSync(`/proc/${pid}/task/${t}/wchan`, 'utf8')}`;
      } catch {
        return t;
      }
    });
    return `state ${field('State')}, waits in ${wchan}, signals pending ${field('ShdPnd')}, caught ${field('SigCgt')}, ignored ${field('SigIgn')}, threads ${threads.join(' ')}`;
  } catch {
    return 'gone';
  }
}

export const running = (p: { pid: number; start: string }) => {
  const s = stat(p.pid);
  return s !== undefined && s.start === p.start && s.state !== 'Z';
};

/** Kills what is left of a stack's process group after a failed test, so it holds no port for the next one. */
export function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** Waits for the line a stack prints once it is up, then for its API to answer `url`. */
export async function untilUp(stack: Stack, banner: string, url: string): Promise<Stack> {
  await until('the stack to be up', () => Promise.resolve(stack.output().includes(banner) ? true : undefined), 420_000);
  expect((await fetch(url)).ok).toBe(true);
  return stack;
}

/** Starts a stack's script and waits until it is up. */
export function startUntilUp(script: string, env: Record<string, string>, banner: string, url: string) {
  return untilUp(runStack(script, env), banner, url);
}

/**
 * Sends the signal, then waits (at most 15 s) until no process of the stack runs and every port is free; gives what
 * was still there when the time was up, and how long the rest took.
 */
export async function stopAndCheck(stack: Stack, ports: number[], send: () => void) {
  const parts = descendants(stack.pid);
  expect(parts.length).toBeGreaterThanOrEqual(4);
  const everyone = [{ pid: stack.pid, start: stat(stack.pid)!.start, command: 'the stack' }, ...parts];
  const t0 = Date.now();
  const ticks = ticksNow();
  send();
  let left: string[] = [];
  let taken: number[] = [];
  while (Date.now() - t0 < GONE_WITHIN_MS) {
    left = everyone.filter(running).map((p) => `${p.pid} ${p.command} (${condition(p.pid)})`);
    taken = ports.filter((port) => heldSince(port, ticks));
    if (left.length === 0 && taken.length === 0) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  // What outlived the stack is named in the failure, then killed, so one failure does not hold the next test's ports.
  for (const p of everyone.filter(running)) process.kill(p.pid, 'SIGKILL');
  return { left, taken, ms: Date.now() - t0, parts: parts.length };
}

/** A stack's environment for a test file: its data folder, variables, every port it listens on, its API's address. */
export interface StackFixture {
  dataDir: string;
  env: Record<string, string>;
  ports: number[];
  api: string;
}

/**
 * The environment of a stack a describe block starts: the local stack (`npm start`) or the production-shaped one
 * (without the identity provider: stopping is what the stack tests check; test/production/sign-in.test.ts stops its
 * parts), on free ports picked upwards from `base`, in a data folder of its own removed after the block.
 */
export function stackFixture(kind: 'local' | 'production', base: number): StackFixture {
  const f: StackFixture = { dataDir: '', env: {}, ports: [], api: '' };
  beforeAll(async () => {
    f.dataDir = mkdtempSync(path.join(tmpdir(), `${kind}-stack-`));
    Object.assign(f, kind === 'local' ? await localEnv(base, f.dataDir) : await productionEnv(base, f.dataDir));
  });
  afterAll(() => {
    if (f.dataDir) rmSync(f.dataDir, { recursive: true, force: true });
  });
  return f;
}

async function localEnv(base: number, dataDir: string) {
  const local = await localStackPorts(base);
  return {
    env: { ...local.env, DATA_DIR: dataDir },
    ports: Object.values(local.ports),
    api: `http://127.0.0.1:${local.ports.API_PORT}`,
  };
}

/** The settings that put the production stack's parts on `p`'s ports (those every shape has). */
export function productionPortsEnv(p: ProductionPorts): Record<string, string> {
  return {
    API_PORT: String(p.api),
    API_REPLICA_PORTS: p.apiReplicas.join(','),
    TEMPORAL_PORT: String(p.temporal),
    TEMPORAL_HTTP_PORT: String(p.temporalHttp),
    TEMPORAL_HISTORY_PORT: String(p.temporalHistory),
    TEMPORAL_MATCHING_PORT: String(p.temporalMatching),
    TEMPORAL_WORKER_PORT: String(p.temporalWorker),
    TEMPORAL_MEMBERSHIP_PORT: String(p.temporalMembership),
    TEMPORAL_METRICS_PORT: String(p.temporalMetrics),
    TEMPORAL_UI_PORT: String(p.ui),
    CODEC_PORT: String(p.codec),
    SANDBOX_PORT: String(p.sandbox),
    POSTGRES_PORT: String(p.postgres),
    OBJECT_STORE_PORT: String(p.objectStore),
    OBJECT_STORE_CONSOLE_PORT: String(p.objectStoreConsole),
  };
}

async function productionEnv(base: number, dataDir: string) {
  const p = await pickProductionPorts(base);
  const workerMetrics = [await freePort(), await freePort()];
  const env = {
    DATA_DIR: dataDir,
    ...productionPortsEnv(p),
    WORKER_METRICS_PORTS: workerMetrics.join(','),
    IDENTITY: 'off',
    // One PostgreSQL server: these tests hold the stack's start and stop (every part gone within 15 s). The cluster
    // (the default) stops its primary gracefully, archiving included, in longer than that; its own tests are
    // test/postgres/* and test/production/failover.test.ts.
    POSTGRES_HA: 'off',
  };
  const ports = [
    p.api,
    ...p.apiReplicas,
    p.temporal,
    p.temporalHistory,
    p.temporalMatching,
    p.temporalMetrics,
    p.ui,
    p.codec,
    p.sandbox,
    p.postgres,
    p.objectStore,
    ...workerMetrics,
  ];
  return { env, ports, api: `http://127.0.0.1:${p.api}` };
}
