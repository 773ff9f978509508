// Both stacks as npm runs them (npm → sh -c → node): SIGTERM to npm's own process (as a supervisor or a script stops
// what it started), SIGKILL to npm (which passes nothing on), and SIGKILL to the process that ran npm each stop the
// stack in order, leaving no process of it running (npm and its shell included) and every port free within 15 s.
import { killGroup, runCommand, stopAndCheck, untilUp, type Stack, stackFixture } from '../support/stack-processes';

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
  const setup = stackFixture('local', 21_600);

  it.each(CASES)('%s: the stack stops whole, every port free', async (how) => {
    const stack = await startedByNpm(how, ['start'], setup.env, setup.ports, {
      banner: 'Ctrl-C stops everything.',
      url: `${setup.api}/readyz`,
    });
    expect(stack.output()).toContain('temporal stopped');
  });
});

describe('the production stack (npm run start:production)', () => {
  const setup = stackFixture('production', 20_600);

  it.each(['SIGTERM to npm', 'SIGKILL to the process that ran npm'] as const)(
    '%s: the stack stops whole, every port free',
    async (how) => {
      const stack = await startedByNpm(how, ['run', 'start:production'], setup.env, setup.ports, {
        banner: 'the production-shaped stack is up',
        url: `${setup.api}/healthz`,
      });
      expect(stack.output()).toContain('stopped');
    },
  );
});
