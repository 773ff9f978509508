// `npm run start:production` on its PostgreSQL cluster (Patroni, etcd, the WAL archived by pgBackRest into a backup
// store of its own), stopped three ways, each followed by a start that must work on the same data folder and ports:
// SIGHUP to its process group with SIGKILL to the group 5 s on (a closed terminal, a supervisor's stop with a short
// grace: the stack's process dies mid-stop), SIGKILL to the stack's process alone (the out-of-memory killer), and
// SIGTERM to its group (a stop in order, the cluster before the backup store it archives to). Each time, within 60 s,
// no process of the run is left (whatever was under the stack, in a part's session or naming its data folder: Patroni,
// its postmasters in sessions of their own, an archive push) and every port of the stack is free. Outcomes only: the
// times are logged, the machine is shared.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freeProductionPorts, productionStackPorts } from '../../scripts/lib/production-stack';
import { listenerPid } from '../../scripts/lib/stack-guard';
import { freePort } from '../support/dev-server-process';
import {
  descendants,
  killGroup,
  productionPortsEnv,
  runStack,
  stat,
  type Stack,
  untilUp,
} from '../support/stack-processes';

jest.setTimeout(900_000);

const GONE_WITHIN_MS = 60_000;
const BANNER = 'the production-shaped stack is up';

let dataDir = '';
let env: Record<string, string> = {};
let ports: number[] = [];
let api = '';

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), 'production-stop-'));
  // Below the ephemeral range, the cluster's 34 ports in a row.
  const p = await freeProductionPorts(23_400, 31_000, { cluster: true });
  const workerMetrics = [await freePort(), await freePort()];
  env = {
    DATA_DIR: dataDir,
    ...productionPortsEnv(p),
    BACKUP_STORE_PORT: String(p.backupStore),
    BACKUP_STORE_CONSOLE_PORT: String(p.backupStoreConsole),
    WORKER_METRICS_PORTS: workerMetrics.join(','),
    // Stopping is what this checks; test/production/sign-in.test.ts runs Keycloak.
    IDENTITY: 'off',
    POSTGRES_HA: 'on',
  };
  ports = productionStackPorts({ ...p, workerMetrics }, 2, false, true).map((x) => x.port);
  api = `http://127.0.0.1:${p.api}`;
});

afterAll(() => {
  if (dataDir && process.env.KEEP_RUN !== '1') rmSync(dataDir, { recursive: true, force: true });
});

const ticksNow = () => Math.floor(Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]) * 100);

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return '';
  }
}

/** The session id of a process (field 6 of /proc/<pid>/stat), or undefined when it is gone. */
function sessionOf(pid: number): number | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(text.slice(text.lastIndexOf(')') + 2).split(' ')[3]);
  } catch {
    return undefined;
  }
}

interface Seen {
  pid: number;
  start: string;
  command: string;
}

/**
 * Every process of the run alive now: those seen under the stack when it was signalled, every process in one of their
 * sessions, and every process naming its data folder, started since the run began.
 */
function runLeft(seen: Seen[], since: number): Seen[] {
  const sessions = new Set(seen.map((p) => p.pid));
  const out: Seen[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    const s = stat(pid);
    if (!s || s.state === 'Z' || pid === process.pid) continue;
    const mine =
      seen.some((p) => p.pid === pid && p.start === s.start) ||
      (Number(s.start) >= since && (sessions.has(sessionOf(pid) ?? -1) || cmdline(pid).includes(dataDir)));
    if (mine) out.push({ pid, start: s.start, command: cmdline(pid).slice(0, 160) });
  }
  return out;
}

/** Ports held by a process that was running when the stack was signalled (another test may take a freed one). */
function taken(since: number): number[] {
  return ports.filter((port) => {
    const pid = listenerPid(port);
    const s = pid === undefined ? undefined : stat(pid);
    return s !== undefined && Number(s.start) <= since;
  });
}

/** Starts the stack and waits for its banner and its API; a start that does not come up fails the test. */
async function start(): Promise<{ stack: Stack; since: number }> {
  const since = ticksNow();
  const stack = runStack('scripts/production-stack.ts', env);
  try {
    await untilUp(stack, BANNER, `${api}/healthz`);
  } catch (err) {
    killGroup(stack.pid);
    throw new Error(`${String(err)}; its output's end:\n${stack.output().split('\n').slice(-30).join('\n')}`);
  }
  return { stack, since };
}

/**
 * Sends the signals; waits (at most 60 s) until nothing of the run runs and every port is free. Gives what was left at
 * the end and how long it took; kills whatever is left, so one failure does not hold the next start's ports.
 */
async function stopAndCheck(run: { stack: Stack; since: number }, send: () => void) {
  const { stack, since } = run;
  const seen: Seen[] = [
    { pid: stack.pid, start: stat(stack.pid)!.start, command: 'the stack' },
    ...descendants(stack.pid),
  ];
  // Patroni, both postmasters, etcd and the rest are there.
  expect(seen.some((p) => p.command.includes('patroni'))).toBe(true);
  const t0 = Date.now();
  const signalled = ticksNow();
  send();
  let left: Seen[] = [];
  let held: number[] = [];
  while (Date.now() - t0 < GONE_WITHIN_MS) {
    left = runLeft(seen, since);
    held = taken(signalled);
    if (left.length === 0 && held.length === 0) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  const ms = Date.now() - t0;
  for (const p of runLeft(seen, since)) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
  console.log(`stopped in ${ms} ms; left: ${left.length}, ports held: ${held.length}`);
  return { left: left.map((p) => `${p.pid} ${p.command}`), taken: held, ms };
}

/** The stack's own lines (JSON or pretty) in the order they came. */
const position = (output: string, text: string) => output.indexOf(text);

describe('the production stack on its PostgreSQL cluster, stopped however it is stopped', () => {
  it('SIGHUP to its process group, SIGKILL to the group 5 s on: nothing of it left, every port free', async () => {
    const run = await start();
    let timer: NodeJS.Timeout | undefined;
    try {
      const result = await stopAndCheck(run, () => {
        process.kill(-run.stack.pid, 'SIGHUP');
        timer = setTimeout(() => killGroup(run.stack.pid), 5_000);
      });
      expect(result).toMatchObject({ left: [], taken: [] });
    } finally {
      clearTimeout(timer);
      killGroup(run.stack.pid);
    }
  });

  it('starts again on the same data folder and ports; SIGKILL to its process alone: nothing left, ports free', async () => {
    const run = await start();
    try {
      const result = await stopAndCheck(run, () => process.kill(run.stack.pid, 'SIGKILL'));
      expect(result).toMatchObject({ left: [], taken: [] });
      expect(await run.stack.exited).toBeNull();
    } finally {
      killGroup(run.stack.pid);
    }
  });

  it('starts again; SIGTERM to its group stops it in order, the cluster before its backup store', async () => {
    const run = await start();
    try {
      const result = await stopAndCheck(run, () => process.kill(-run.stack.pid, 'SIGTERM'));
      expect(result).toMatchObject({ left: [], taken: [] });
      expect(await run.stack.exited).toBe(0);
      const out = run.stack.output();
      const order = [
        'workers and API replicas stopped',
        'temporal stopped',
        'postgres cluster stopped',
        'backup store stopped',
      ].map((line) => position(out, line));
      expect(order.every((p) => p >= 0)).toBe(true);
      expect([...order].sort((a, b) => a - b)).toEqual(order);
    } finally {
      killGroup(run.stack.pid);
    }
  });
});
