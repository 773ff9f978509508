// What keeps a stack's parts from outliving it, and a second stack from starting on top of the first: each part is
// started under `setpriv --pdeathsig` (the kernel signals it when the stack's process dies, even by SIGKILL), a
// guardian stops what still runs once the stack's process is gone (stack-guardian.ts: the postmasters Patroni starts in
// sessions of their own, an archive push), and a start first stops what a previous run on its data folder left, then
// checks its ports and data folder, naming whoever holds them and how to stop it.
import { execFileSync, spawn } from 'node:child_process';
import {
  closeSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { reapPreviousRun, startRun } from './stack-guardian';

const ROOT = path.resolve(__dirname, '../..');
const STACK_SCRIPTS = ['scripts/local-stack.ts', 'scripts/production-stack.ts'];

let setprivPath: string | null | undefined;

/** util-linux `setpriv` where there is one (Linux); parts then stop with the stack. */
function setpriv(): string | null {
  if (setprivPath === undefined) {
    try {
      setprivPath = execFileSync('sh', ['-c', 'command -v setpriv'], { encoding: 'utf8' }).trim() || null;
    } catch {
      setprivPath = null;
    }
  }
  return setprivPath;
}

/**
 * A part's command line, wrapped so that the part gets `signal` when the stack's process dies without stopping it
 * (setpriv sets the parent-death signal, then execs the part: its pid is the part's own).
 */
export function partCommand(
  command: string,
  args: string[],
  signal: 'TERM' | 'INT' = 'TERM',
): { command: string; args: string[] } {
  const wrapper = setpriv();
  return wrapper ? { command: wrapper, args: ['--pdeathsig', signal, '--', command, ...args] } : { command, args };
}

export interface StackPort {
  /** What needs it, e.g. `Temporal frontend`. */
  part: string;
  port: number;
  /** The variable that moves it, e.g. `TEMPORAL_PORT`. */
  variable: string;
}

/** Why this stack cannot start here, or undefined: a live stack on the same data folder, or a port taken. */
export async function startBlocker(dataDir: string, ports: StackPort[]): Promise<string | undefined> {
  const owner = stackOnDataFolder(dataDir);
  if (owner !== undefined) {
    return (
      `a stack is already running on the data folder ${dataDir} (pid ${owner}). ` +
      `Stop it with \`kill ${owner}\` (it stops every part in order), or give this one another DATA_DIR.`
    );
  }
  for (const p of ports) {
    if (await portFree(p.port)) continue;
    return `port ${p.port} (${p.part}) is taken: ${holderOf(p.port)}. Or start this stack with another ${p.variable}.`;
  }
  return undefined;
}

/**
 * Before a stack starts anything: with no stack running on its data folder, stops what a previous run on it left
 * running (stack-guardian.ts); then refuses (exit 1, saying who holds what) when its data folder or a port is taken;
 * then marks the data folder as this stack's until the process exits and starts the run's guardian, which stops every
 * part of it should this process die without stopping them.
 */
export async function claimStack(
  dataDir: string,
  ports: StackPort[],
  say: (message: string, level: 'info' | 'error') => void,
): Promise<void> {
  if (stackOnDataFolder(dataDir) === undefined) await reapPreviousRun(dataDir, (line) => say(line, 'info'));
  const blocked = await startBlocker(dataDir, ports);
  if (blocked) {
    say(`cannot start: ${blocked}`, 'error');
    process.exit(1);
  }
  mkdirSync(dataDir, { recursive: true });
  process.on('exit', claimDataFolder(dataDir));
  startRun(dataDir, spawnGuardian);
}

/** The guardian (stack-guardian.ts), run by node itself in a session of its own, its output appended to `log`. */
function spawnGuardian(args: string[], log: string): number | undefined {
  const fd = openSync(log, 'a');
  try {
    const child = spawn(process.execPath, ['--no-warnings', path.join(__dirname, 'stack-guardian.ts'), ...args], {
      cwd: '/',
      stdio: ['ignore', fd, fd],
      detached: true,
    });
    child.unref();
    return child.pid;
  } finally {
    closeSync(fd);
  }
}

/** Marks the data folder as this stack's while it runs; the returned function unmarks it. */
export function claimDataFolder(dataDir: string): () => void {
  const file = path.join(dataDir, 'stack.pid');
  writeFileSync(file, `${process.pid}\n`);
  return () => {
    if (readPid(file) === process.pid) rmSync(file, { force: true });
  };
}

function stackOnDataFolder(dataDir: string): number | undefined {
  const pid = readPid(path.join(dataDir, 'stack.pid'));
  return pid !== undefined && pid !== process.pid && isStack(pid) ? pid : undefined;
}

function readPid(file: string): number | undefined {
  try {
    const pid = Number(readFileSync(file, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a server could listen on 127.0.0.1:port now. */
export function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** Who listens on a port, as far as /proc tells: a part of a running stack, a part left by a gone one, or a program. */
function holderOf(port: number): string {
  const pid = listenerPid(port);
  if (pid === undefined) return 'another program listens on it';
  const stack = ancestors(pid).find(isStack);
  if (stack !== undefined) {
    return (
      `a stack is still running (pid ${stack}, data folder ${dataFolderOf(stack)}). ` +
      `Stop it with \`kill ${stack}\` (it stops every part in order)`
    );
  }
  const command = commandLine(pid);
  const ours = command.includes(ROOT) || /\b(src\/(worker|api\/server|codec\/main|sandbox\/main)\.ts)\b/.test(command);
  return ours
    ? `pid ${pid} (${shorten(command)}) holds it, a part left by a stack that is gone. Stop it with \`kill ${pid}\``
    : `pid ${pid} (${shorten(command)}) listens on it`;
}

/** The pid whose socket listens on 127.0.0.1 or any address at `port` (/proc/net/tcp and tcp6). */
export function listenerPid(port: number): number | undefined {
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      // local_address is HEXIP:HEXPORT; state 0A is LISTEN; column 9 is the socket's inode.
      if (cols.length > 9 && cols[3] === '0A' && parseInt(cols[1]!.split(':')[1]!, 16) === port) inodes.add(cols[9]!);
    }
  }
  if (inodes.size === 0) return undefined;
  for (const entry of safeReaddir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    for (const fd of safeReaddir(`/proc/${entry}/fd`)) {
      let link = '';
      try {
        link = readlinkSync(`/proc/${entry}/fd/${fd}`);
      } catch {
        continue;
      }
      const inode = /^socket:\[(\d+)\]$/.exec(link)?.[1];
      if (inode && inodes.has(inode)) return Number(entry);
    }
  }
  return undefined;
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** The pid and its parents up to init. */
function ancestors(pid: number): number[] {
  const chain: number[] = [];
  for (let p: number | undefined = pid; p !== undefined && p > 1 && chain.length < 64; p = parentOf(p)) chain.push(p);
  return chain;
}

export function parentOf(pid: number): number | undefined {
  try {
    // pid (comm) state ppid ...: comm may hold spaces and parentheses, so read after the last ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    return Number.isInteger(ppid) ? ppid : undefined;
  } catch {
    return undefined;
  }
}

function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
  } catch {
    return '';
  }
}

function isStack(pid: number): boolean {
  const command = commandLine(pid);
  return STACK_SCRIPTS.some((script) => command.includes(script));
}

/** The stack's data folder: its DATA_DIR, else its default under the folder it runs in. */
function dataFolderOf(stack: number): string {
  try {
    const env = readFileSync(`/proc/${stack}/environ`, 'utf8').split('\0');
    const given = env.find((e) => e.startsWith('DATA_DIR='))?.slice('DATA_DIR='.length);
    const cwd = readlinkSync(`/proc/${stack}/cwd`);
    if (given) return path.resolve(cwd, given);
    const production = commandLine(stack).includes('production-stack');
    return path.join(cwd, '.data', ...(production ? ['production'] : []));
  } catch {
    return 'unknown';
  }
}

function shorten(command: string): string {
  const text = command.split(`${ROOT}/`).join('');
  return text.length > 100 ? `${text.slice(0, 97)}...` : text;
}

/**
 * A drill's stack, guarded as one run from the command line: its data folder claimed and a guardian started that
 * stops every part should this process die without stopping them (Patroni runs in a session of its own); Ctrl-C, a
 * kill or a closed terminal stop the stack first, then exit (130).
 */
export async function guardDrillStack(o: {
  dataDir: string;
  ports: StackPort[];
  stop: () => Promise<void>;
  say: (line: string) => void;
}): Promise<void> {
  await claimStack(o.dataDir, o.ports, (m) => o.say(m));
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
    process.once(signal, () => {
      o.say(`${signal}: stopping the stack (the run folder is kept: ${o.dataDir})`);
      void o.stop().finally(() => process.exit(130));
    });
}
