// What stops a stack's parts when the stack's own process is gone without stopping them (SIGKILL, the out-of-memory
// killer, a crash): a guardian, a small process of its own session (a signal to the stack's process group or its
// terminal does not reach it), started by the stack, that polls the stack's pid and, once it is gone, stops every
// process of the run: an immediate shutdown of each PostgreSQL postmaster (no archiving, no checkpoint: crash
// recovery at the next start), SIGTERM to the rest, SIGKILL to whatever is left 10 s later.
//
// A process is the run's when the run recorded it (<dataDir>/run/parts: pid, start time, name; every part is started
// in a session of its own), when it runs in the session of a recorded part that still runs (what a part started: an
// archive push and its shell), when it is a postmaster on a data folder of the run (Patroni starts it in a session of
// its own) or in its session, when it was under the stack's process at the guardian's last look (every 2 s), or when
// it is under any of these. Each is named by its pid and its start time, so a pid used again by another program is
// never signalled. The next start on the same data folder reaps the same way
// what a previous run left (reapPreviousRun), after its guardian is done.
//
// Run by node itself (no loader): `node scripts/lib/stack-guardian.ts --guard <dataDir> <stackPid>`; node: imports
// only, and only type annotations that node strips.
import { appendFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync, type Dirent } from 'node:fs';
import path from 'node:path';

interface Proc {
  pid: number;
  ppid: number;
  sid: number;
  /** Clock ticks after boot: with the pid, the process's identity. */
  start: number;
  state: string;
}

const runDir = (dataDir: string) => path.join(dataDir, 'run');
const partsFile = (dataDir: string) => path.join(runDir(dataDir), 'parts');
const stackFile = (dataDir: string) => path.join(runDir(dataDir), 'stack');
const guardianFile = (dataDir: string) => path.join(runDir(dataDir), 'guardian');
export const guardianLog = (dataDir: string) => path.join(runDir(dataDir), 'guardian.log');

/** The file a run records its parts in (processes.ts appends to it), set by startRun. */
let recording: string | undefined;

function procStat(pid: number | string): Proc | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // pid (comm) state ppid pgrp session ... starttime (22nd field): comm may hold spaces, read after the last ')'.
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { pid: Number(pid), ppid: Number(f[1]), sid: Number(f[3]), start: Number(f[19]), state: f[0] ?? '' };
  } catch {
    return undefined;
  }
}

/** The process's start time (clock ticks after boot), or undefined when it is gone. */
export function startTicks(pid: number): number | undefined {
  return procStat(pid)?.start;
}

function allProcs(): Proc[] {
  const out: Proc[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const p = procStat(entry);
    if (p && p.state !== 'Z' && p.state !== 'X') out.push(p);
  }
  return out;
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return '';
  }
}

const alive = (pid: number, start: number) => {
  const p = procStat(pid);
  return p !== undefined && p.start === start && p.state !== 'Z' && p.state !== 'X';
};

/** pid and start time pairs, one a line (`pid start ...`), as recorded. */
function readPairs(file: string): { pid: number; start: number; name: string }[] {
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .map((line) => line.trim().split(' '))
    .filter((f) => f.length >= 2 && /^\d+$/.test(f[0]!) && /^\d+$/.test(f[1]!))
    .map((f) => ({ pid: Number(f[0]), start: Number(f[1]), name: f.slice(2).join(' ') }));
}

/** Notes a process of the run (a part, a server started by other means), when a run records (see startRun). */
export function recordPart(pid: number | undefined, name: string): void {
  if (!recording || pid === undefined) return;
  const start = startTicks(pid);
  if (start === undefined) return;
  try {
    appendFileSync(recording, `${pid} ${start} ${name}\n`);
  } catch {
    // the data folder is gone: nothing left to guard
  }
}

/** Every postmaster.pid under the data folder (a few levels down: postgres/, postgres-cluster/<node>/data/). */
function postmasterFiles(dataDir: string, depth = 4): string[] {
  const out: string[] = [];
  let entries: Dirent[] = [];
  try {
    entries = readdirSync(dataDir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    if (e.isFile() && e.name === 'postmaster.pid') out.push(path.join(dataDir, e.name));
    // A PostgreSQL data folder's own subfolders hold no other server's.
    else if (e.isDirectory() && depth > 0 && !['base', 'pg_wal', 'global', 'logs', 'processes'].includes(e.name)) {
      out.push(...postmasterFiles(path.join(dataDir, e.name), depth - 1));
    }
  }
  return out;
}

/**
 * Every process of the run still alive (see the head of this file): `since` is when the run started (clock ticks),
 * `under` the processes seen under the stack's process (pid and start time).
 */
export function runProcesses(
  dataDir: string,
  since: number,
  under: { pid: number; start: number }[] = [],
): { pid: number; start: number; postmaster: boolean; name: string }[] {
  const procs = allProcs();
  const byPid = new Map(procs.map((p) => [p.pid, p]));
  const children = new Map<number, Proc[]>();
  for (const p of procs) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p]);
  const names = new Map<number, string>();
  const seeds = new Set<number>();
  const sessions = new Set<number>();
  const postmasters = new Set<number>();
  const add = (pid: number, start: number, name: string) => {
    const p = byPid.get(pid);
    if (p && p.start === start) {
      seeds.add(pid);
      if (!names.has(pid)) names.set(pid, name);
    }
  };
  for (const r of readPairs(partsFile(dataDir))) {
    if (r.start < since) continue;
    add(r.pid, r.start, r.name);
    // A session's id is its leader's pid: while that leader runs (the same start time), the session is the part's.
    if (byPid.get(r.pid)?.start === r.start) sessions.add(r.pid);
  }
  for (const u of under) add(u.pid, u.start, 'under the stack');
  for (const file of postmasterFiles(dataDir)) {
    let pid = NaN;
    try {
      pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
    } catch {
      continue;
    }
    const p = byPid.get(pid);
    // The postmaster of that data folder (its command line names it), started during the run.
    if (!p || p.start < since || !cmdline(pid).includes(path.dirname(file))) continue;
    add(pid, p.start, `postmaster of ${path.relative(dataDir, path.dirname(file))}`);
    postmasters.add(pid);
    sessions.add(pid);
  }
  for (const p of procs) {
    if (sessions.has(p.sid) && p.start >= since) {
      seeds.add(p.pid);
      if (!names.has(p.pid)) names.set(p.pid, `in the session of ${names.get(p.sid) ?? p.sid}`);
    }
  }
  // And everything under them.
  const found = new Set<number>();
  const queue = [...seeds];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    if (found.has(pid)) continue;
    found.add(pid);
    for (const c of children.get(pid) ?? []) if (c.start >= since) queue.push(c.pid);
  }
  found.delete(process.pid);
  return [...found].map((pid) => ({
    pid,
    start: byPid.get(pid)!.start,
    postmaster: postmasters.has(pid),
    name: names.get(pid) ?? `under ${byPid.get(pid)!.ppid}`,
  }));
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // gone already
  }
}

/**
 * Stops these processes: SIGQUIT to each postmaster (PostgreSQL's immediate shutdown), SIGTERM to the others, SIGKILL
 * to whatever is left after `graceMs`. Resolves once none runs (or 10 s after the SIGKILL); says what it did.
 */
export async function reap(
  procs: { pid: number; start: number; postmaster: boolean; name: string }[],
  say: (line: string) => void,
  graceMs = 10_000,
): Promise<void> {
  if (procs.length === 0) return;
  say(`stopping ${procs.length} process(es) of the run: ${procs.map((p) => `${p.pid} (${p.name})`).join(', ')}`);
  const t0 = Date.now();
  for (const p of procs) if (alive(p.pid, p.start)) signal(p.pid, p.postmaster ? 'SIGQUIT' : 'SIGTERM');
  let left = procs;
  let killed = false;
  while ((left = left.filter((p) => alive(p.pid, p.start))).length > 0) {
    if (!killed && Date.now() - t0 > graceMs) {
      killed = true;
      say(`still running after ${graceMs / 1000} s, killed: ${left.map((p) => `${p.pid} (${p.name})`).join(', ')}`);
      for (const p of left) signal(p.pid, 'SIGKILL');
    }
    if (Date.now() - t0 > graceMs + 10_000) break;
    await sleep(100);
  }
  say(
    left.length === 0 ? `all stopped in ${Date.now() - t0} ms` : `left running: ${left.map((p) => p.pid).join(', ')}`,
  );
}

/** The run recorded in this data folder: its stack's pid and start time. */
function readRun(dataDir: string): { pid: number; start: number } | undefined {
  return readPairs(stackFile(dataDir))[0];
}

/**
 * Before a stack starts on this data folder (no stack running on it): waits for the previous run's guardian to be
 * done (60 s at most), then stops whatever of that run is still running. Says what it found.
 */
export async function reapPreviousRun(dataDir: string, say: (line: string) => void): Promise<void> {
  const guardian = readPairs(guardianFile(dataDir))[0];
  if (guardian && alive(guardian.pid, guardian.start) && cmdline(guardian.pid).includes('stack-guardian')) {
    say(`waiting for the previous run's guardian (pid ${guardian.pid}) to stop what that run left`);
    const until = Date.now() + 60_000;
    while (alive(guardian.pid, guardian.start) && Date.now() < until) await sleep(200);
    if (alive(guardian.pid, guardian.start)) signal(guardian.pid, 'SIGKILL');
  }
  const run = readRun(dataDir);
  if (!run) return;
  const left = runProcesses(dataDir, run.start);
  if (left.length > 0) {
    say(`the previous run on this data folder (pid ${run.pid}) left processes running`);
    await reap(left, say);
  }
  rmSync(partsFile(dataDir), { force: true });
}

/**
 * A new run on this data folder (after reapPreviousRun): records this process as its stack, records every part from
 * now on (recordPart), and starts the guardian (spawnGuardian runs node with these arguments, its output to `log`,
 * and gives its pid).
 */
export function startRun(dataDir: string, spawnGuardian: (args: string[], log: string) => number | undefined): void {
  mkdirSync(runDir(dataDir), { recursive: true });
  writeFileSync(stackFile(dataDir), `${process.pid} ${startTicks(process.pid)}\n`);
  writeFileSync(partsFile(dataDir), '');
  recording = partsFile(dataDir);
  const pid = spawnGuardian(['--guard', dataDir, String(process.pid)], guardianLog(dataDir));
  if (pid !== undefined) writeFileSync(guardianFile(dataDir), `${pid} ${startTicks(pid) ?? 0}\n`);
}

/** The guardian itself: polls the stack's process every 250 ms; once it is gone, stops what is left of the run. */
async function guard(dataDir: string, stackPid: number): Promise<void> {
  const say = (line: string) => {
    try {
      appendFileSync(guardianLog(dataDir), `${new Date().toISOString()} ${line}\n`);
    } catch {
      // the data folder is gone
    }
  };
  const start = startTicks(stackPid);
  if (start === undefined) return;
  say(`guarding the stack ${stackPid}`);
  // What runs under the stack's process (pgBackRest's backups, a tool it runs), looked at every 2 s: orphaned when
  // the stack dies, it is no longer under it then.
  let under: { pid: number; start: number }[] = [];
  let looked = 0;
  while (alive(stackPid, start)) {
    if (Date.now() - looked > 2_000) {
      looked = Date.now();
      under = descendantsOf(stackPid).filter((p) => p.pid !== process.pid);
    }
    await sleep(250);
  }
  const left = runProcesses(dataDir, start, under);
  if (left.length === 0) {
    say('the stack is gone, nothing of it left running');
  } else {
    say(`the stack (pid ${stackPid}) is gone without stopping its parts`);
    await reap(left, say);
  }
  // Only this run's records: a next run writes its own.
  if (readRun(dataDir)?.pid === stackPid) rmSync(partsFile(dataDir), { force: true });
}

function descendantsOf(pid: number): { pid: number; start: number }[] {
  const procs = allProcs();
  const children = new Map<number, Proc[]>();
  for (const p of procs) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p]);
  const out: { pid: number; start: number }[] = [];
  const queue = [...(children.get(pid) ?? [])];
  while (queue.length > 0) {
    const p = queue.shift()!;
    out.push({ pid: p.pid, start: p.start });
    queue.push(...(children.get(p.pid) ?? []));
  }
  return out;
}

if (process.argv[2] === '--guard' && process.argv[1]?.endsWith('stack-guardian.ts')) {
  const [dataDir, pid] = [process.argv[3]!, Number(process.argv[4])];
  // A signal to the stack's group or its terminal does not reach this session; should one come all the same (a Ctrl-C
  // to a session's every group), the guardian stays until the stack is gone.
  for (const s of ['SIGHUP', 'SIGINT'] as const) process.on(s, () => undefined);
  void guard(dataDir, pid).then(
    () => process.exit(0),
    (err: unknown) => {
      try {
        appendFileSync(guardianLog(dataDir), `${new Date().toISOString()} failed: ${String(err)}\n`);
      } catch {
        // nowhere to say it
      }
      process.exit(1);
    },
  );
}
