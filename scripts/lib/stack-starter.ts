// Who started a stack, so the stack stops whole when they go. `npm start` runs the stack as npm → sh -c → node, and
// SIGTERM to npm reaches the stack only by chance: npm 11 passes it to the shell, and Debian's sh (dash) dies of it
// without passing it on, leaving the stack orphaned; SIGKILL to npm, or to whatever ran npm, reaches nobody. So the
// stack notes, as it starts, the processes it runs under (its parent; under npm, the shell, npm, and whoever ran
// npm) and polls them: once one has gone, it stops every part in order, as on Ctrl-C.
import { readFileSync } from 'node:fs';
import path from 'node:path';

export interface Starter {
  pid: number;
  /** The process's start time (clock ticks since boot, /proc/<pid>/stat): with the pid, its identity. */
  start: string | undefined;
  command: string;
}

/** A process as /proc shows it, or undefined once it is gone (or where there is no /proc). */
function procStat(pid: number): { ppid: number; start: string; state: string } | undefined {
  try {
    // pid (comm) state ppid ...: comm may hold spaces and parentheses, so read after the last ')'.
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0]!, ppid: Number(fields[1]), start: fields[19]! };
  } catch {
    return undefined;
  }
}

function argvOf(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return [];
  }
}

const commandOf = (pid: number) => argvOf(pid).join(' ').trim();

/** npm itself: its process title is `npm <command>` (else it shows as the node running npm-cli.js). */
function isNpm(pid: number): boolean {
  const [first = '', ...rest] = commandOf(pid).split(/\s+/);
  if (path.basename(first) === 'npm') return true;
  return path.basename(first) === 'node' && rest.some((arg) => /(^|\/)npm(-cli\.js)?$/.test(arg));
}

/** The shell npm runs a script in: `sh -c <script>`. */
function isScriptShell(pid: number): boolean {
  const [shell = '', flag] = argvOf(pid);
  return /^(sh|bash|dash|zsh|ksh)$/.test(path.basename(shell)) && flag === '-c';
}

/**
 * The processes a stack runs under, nearest first: its parent; when npm ran it (npm → sh -c → node, or npm → node),
 * the shell, npm and npm's own parent, whoever ran `npm start`. Never init (pid 1): a stack started under it
 * (`setsid -f`, a container's entry) watches nothing there.
 */
export function startersOf(): Starter[] {
  const parentOf = (pid: number) => procStat(pid)?.ppid;
  const parent = process.ppid;
  if (parent <= 1) return [];
  const chain = [parent];
  const npm = isNpm(parent) ? parent : isScriptShell(parent) ? parentOf(parent) : undefined;
  if (npm !== undefined && npm > 1 && isNpm(npm)) {
    if (npm !== parent) chain.push(npm);
    const ranNpm = parentOf(npm);
    if (ranNpm !== undefined && ranNpm > 1) chain.push(ranNpm);
  }
  return chain.map((pid) => ({ pid, start: procStat(pid)?.start, command: commandOf(pid) }));
}

/** Whether the process is still the one noted (same pid, same start time) and not a zombie waiting to be reaped. */
export function stillThere(starter: Starter): boolean {
  // No /proc (not Linux): only the parent is checked, by whether this process has been handed to another.
  if (starter.start === undefined) return true;
  const s = procStat(starter.pid);
  return s !== undefined && s.start === starter.start && s.state !== 'Z' && s.state !== 'X';
}

/** The processes this one ran under when it started (noted once, as the module loads). */
const atStart = startersOf();

/**
 * Calls `onGone` once one of the processes the stack started under has gone (SIGTERM to npm, npm or its parent
 * killed, the supervisor gone), or this process has been handed to another parent. Polls every `everyMs`; the timer
 * keeps nothing alive. Returns a function that stops the watch.
 */
export function stopWhenStarterGone(
  onGone: (starter: Starter) => void,
  o: { starters?: Starter[]; everyMs?: number } = {},
): () => void {
  const starters = o.starters ?? atStart;
  const parent = starters[0]?.pid;
  if (parent === undefined) return () => undefined;
  const timer = setInterval(() => {
    const gone = process.ppid !== parent ? starters[0] : starters.find((s) => !stillThere(s));
    if (!gone) return;
    clearInterval(timer);
    onGone(gone);
  }, o.everyMs ?? 500);
  timer.unref();
  return () => clearInterval(timer);
}

/** A starter as a stack names it, e.g. `pid 41870 (npm start)`. */
export function describeStarter(starter: Starter): string {
  const command = starter.command.length > 60 ? `${starter.command.slice(0, 57)}...` : starter.command;
  return `pid ${starter.pid}${command ? ` (${command})` : ''}`;
}
