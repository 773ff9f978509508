// Both stacks, started in a process group of their own as a terminal starts them: SIGHUP to the group (the terminal
// closed), SIGTERM and SIGKILL to the stack's process each leave no part running and every port free within 15 s, and a
// second start while the first runs fails saying which part needed the port and which stack holds it.
import { rmSync } from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { stackBuildId } from '../../scripts/lib/build-id';
import { DEFAULT_DEPLOYMENT_NAME } from '../../src/config';
import { currentDeploymentVersion } from '../../src/temporal';
import { freePort } from '../support/dev-server-process';
import { killGroup, runStack, startUntilUp, stopAndCheck, type Stack, stackFixture } from '../support/stack-processes';

jest.setTimeout(600_000);

const root = path.resolve(__dirname, '../..');

/** The current version of the engine's Worker Deployment on the Temporal server at that port. */
async function currentVersion(temporalPort: number): Promise<string | undefined> {
  const connection = await Connection.connect({ address: `127.0.0.1:${temporalPort}` });
  try {
    return await currentDeploymentVersion(connection.workflowService, 'default', DEFAULT_DEPLOYMENT_NAME);
  } finally {
    await connection.close();
  }
}

/** SIGTERM (a clean stop, exit 0) and SIGKILL to a stack's own process: no part left running, every port free. */
function signalledStackStops(start: () => Promise<Stack>, ports: () => number[]) {
  it.each([
    ['SIGTERM', 0],
    ['SIGKILL', null],
  ] as const)('%s to the stack process leaves no part running and every port free', async (signal, code) => {
    const stack = await start();
    const result = await stopAndCheck(stack, ports(), () => process.kill(stack.pid, signal));
    expect(result).toMatchObject({ left: [], taken: [] });
    expect(await stack.exited).toBe(code);
  });
}

describe('the local stack (npm start)', () => {
  const setup = stackFixture('local', 21_700);

  // The banner comes once every part is up and the worker's version is current.
  const startReady = () =>
    startUntilUp('scripts/local-stack.ts', setup.env, 'Ctrl-C stops everything.', `${setup.api}/readyz`);

  it('refuses a second start while the first runs, naming the part, the stack and how to stop it', async () => {
    const first = await startReady();
    try {
      const second = runStack('scripts/local-stack.ts', { ...setup.env, DATA_DIR: `${setup.dataDir}-other` });
      expect(await second.exited).toBe(1);
      const record = JSON.parse(second.output().trim().split('\n').pop()!) as { level: number; msg: string };
      expect(record.level).toBe(50);
      expect(record.msg).toContain(
        `(Temporal frontend) is taken: a stack is still running (pid ${first.pid}, data folder ${setup.dataDir})`,
      );
      expect(record.msg).toContain(`\`kill ${first.pid}\``);
      expect(record.msg).toContain('TEMPORAL_PORT');
      // The same data folder is refused even on other ports: two stacks would share one Temporal database.
      const same = runStack('scripts/local-stack.ts', {
        DATA_DIR: setup.dataDir,
        TEMPORAL_PORT: String(await freePort()),
      });
      expect(await same.exited).toBe(1);
      expect(same.output()).toContain(
        `a stack is already running on the data folder ${setup.dataDir} (pid ${first.pid})`,
      );
      // The first runs on, untouched.
      expect((await fetch(`${setup.api}/readyz`)).ok).toBe(true);
      // Its worker polls as the deployment's current version (the commit's build id).
      expect(await currentVersion(setup.ports[0] as number)).toBe(stackBuildId(root));
      expect(first.output()).toContain(`version ${stackBuildId(root)} made current`);
      // SIGHUP to the whole group: the terminal closed.
      const result = await stopAndCheck(first, setup.ports, () => process.kill(-first.pid, 'SIGHUP'));
      expect(result).toMatchObject({ left: [], taken: [] });
      expect(await first.exited).toBe(0);
      expect(first.output()).toContain('temporal stopped');
    } finally {
      killGroup(first.pid);
      rmSync(`${setup.dataDir}-other`, { recursive: true, force: true });
    }
  });

  signalledStackStops(startReady, () => setup.ports);
});

describe('the production stack (npm run start:production)', () => {
  const setup = stackFixture('production', 20_400);

  const startReady = () =>
    startUntilUp('scripts/production-stack.ts', setup.env, 'the production-shaped stack is up', `${setup.api}/healthz`);

  it('stops every part on SIGHUP to its group (the terminal closed), and refuses a second start meanwhile', async () => {
    const stack = await startReady();
    try {
      expect(await currentVersion(Number(setup.env.TEMPORAL_PORT))).toBe(stackBuildId(root));
      const second = runStack('scripts/production-stack.ts', { ...setup.env, DATA_DIR: `${setup.dataDir}-other` });
      expect(await second.exited).toBe(1);
      expect(second.output()).toContain(
        `is taken: a stack is still running (pid ${stack.pid}, data folder ${setup.dataDir})`,
      );
      const result = await stopAndCheck(stack, setup.ports, () => process.kill(-stack.pid, 'SIGHUP'));
      expect(result).toMatchObject({ left: [], taken: [] });
      expect(await stack.exited).toBe(0);
    } finally {
      killGroup(stack.pid);
      rmSync(`${setup.dataDir}-other`, { recursive: true, force: true });
    }
  });

  signalledStackStops(startReady, () => setup.ports);
});
