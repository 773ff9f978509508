// Both stacks as npm runs them (npm → sh -c → node): SIGTERM to npm's own process (as a supervisor or a script stops
// what it started), SIGKILL to npm (which passes nothing on), and SIGKILL to the process that ran npm each stop the
// stack in order, leaving no process of it running (npm and its shell included) and every port free within 15 s.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ProductionPorts } from '../../scripts/lib/production-stack';
import { pickProductionPorts } from '../faults/harness/production';
import { freePort } from '../support/dev-server-process';
import { localStackPorts } from '../support/local-stack-ports';
import { killGroup, runCommand, stopAndCheck, untilUp, type Stack } from '../support/stack-processes';

jest.setTimeout(600_000);

/** A parent that runs its arguments as a child, passing its output on, and then waits for ever. */
const PARENT = `require('node:child_process').spawn(process.argv[1], process.argv.slice(2), { stdio: 'inherit' });
setInterval(() => undefined, 1 << 30);`;

type Case = 'SIGTERM to npm' | 'SIGKILL to npm' | 'SIGKILL to the process that ran npm';

/**
 * Runs `npm <args>` (in its own process group, as a shell starts a job), or under a parent of its own, until the stack
 * is up; sends the case's signal; expects every process that was under the one signalled gone and every port free.
 */
async function startedByNpm(
  how: Case,
  npmArgs: string[],
  env: Record<string, string>,
  ports: number[],
  up: { banner: string; url: string },
) {
  const underParent = how === 'SIGKILL to the process that ran npm';
  const proc: Stack = underParent
    ? runCommand(process.execPath, ['-e', PARENT, 'npm', ...npmArgs], env)
    : runCommand('npm', npmArgs, env);
  try {
    await untilUp(proc, up.banner, up.url);
    const signal = how === 'SIGTERM to npm' ? 'SIGTERM' : 'SIGKILL';
    const result = await stopAndCheck(proc, ports, () => process.kill(proc.pid, signal));
    expect(result).toMatchObject({ left: [], taken: [] });
    // Stopped in order by the stack itself, not killed by the parts' parent-death signal.
    expect(proc.output()).toContain('which the stack was started under, is gone: stopping');
    return proc;
  } finally {
    killGroup(proc.pid);
  }
}

const CASES: Case[] = ['SIGTERM to npm', 'SIGKILL to npm', 'SIGKILL to the process that ran npm'];

describe('the local stack (npm start)', () => {
  let dataDir: string;
  let env: Record<string, string>;
  let ports: number[];
  let api: string;

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'stack-starter-'));
    const local = await localStackPorts(21_600);
    ports = Object.values(local.ports);
    api = `http://127.0.0.1:${local.ports.API_PORT}`;
    env = { ...local.env, DATA_DIR: dataDir };
  });
  afterAll(() => {
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it.each(CASES)('%s: the stack stops whole, every port free', async (how) => {
    const stack = await startedByNpm(how, ['start'], env, ports, {
      banner: 'Ctrl-C stops everything.',
      url: `${api}/readyz`,
    });
    expect(stack.output()).toContain('temporal stopped');
  });
});

describe('the production stack (npm run start:production)', () => {
  let dataDir: string;
  let env: Record<string, string>;
  let ports: number[];
  let api: string;

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'production-starter-'));
    const p: ProductionPorts = await pickProductionPorts(20_600);
    const workerMetrics = [await freePort(), await freePort()];
    env = {
      DATA_DIR: dataDir,
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
      WORKER_METRICS_PORTS: workerMetrics.join(','),
      IDENTITY: 'off',
    };
    ports = [
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
    api = `http://127.0.0.1:${p.api}`;
  });
  afterAll(() => {
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it.each(['SIGTERM to npm', 'SIGKILL to the process that ran npm'] as const)(
    '%s: the stack stops whole, every port free',
    async (how) => {
      const stack = await startedByNpm(how, ['run', 'start:production'], env, ports, {
        banner: 'the production-shaped stack is up',
        url: `${api}/healthz`,
      });
      expect(stack.output()).toContain('stopped');
    },
  );
});
