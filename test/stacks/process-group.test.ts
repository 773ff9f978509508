// A managed process that stops as a group takes what it started with it: the bench's `npm test`, whose npm exits on
// SIGTERM and would leave jest, its workers and their servers running after an interrupted bench.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startProcess } from '../../scripts/lib/processes';

jest.setTimeout(30_000);

/** Running (a zombie left for its new parent to reap is not). */
const alive = (pid: number) => {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
};

async function grandchildOf(stopsAsGroup: boolean, logDir: string) {
  // The shell exits on SIGTERM; the sleep it started in the background does not get the signal from it.
  const proc = startProcess({
    name: `parent-${stopsAsGroup}`,
    command: 'sh',
    args: ['-c', 'sleep 60 & echo "child $!"; wait'],
    logDir,
    stopsAsGroup,
  });
  let pid: number | undefined;
  for (let i = 0; i < 100 && pid === undefined; i++) {
    const m = /^child (\d+)$/m.exec(proc.output());
    if (m) pid = Number(m[1]);
    else await new Promise((r) => setTimeout(r, 50));
  }
  if (pid === undefined) throw new Error('the shell did not start its child');
  await proc.stop(5_000);
  // A signal is delivered at once; give the child a moment to act on it.
  await new Promise((r) => setTimeout(r, 200));
  return pid;
}

describe('a managed process stopped', () => {
  let dir: string;
  const leftovers: number[] = [];
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'process-group-'));
  });
  afterAll(async () => {
    for (const pid of leftovers) if (alive(pid)) process.kill(pid, 'SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });

  it('as a group leaves nothing it started running', async () => {
    const pid = await grandchildOf(true, dir);
    leftovers.push(pid);
    expect(alive(pid)).toBe(false);
  });

  it('alone leaves its background child running (what stopsAsGroup is for)', async () => {
    const pid = await grandchildOf(false, dir);
    leftovers.push(pid);
    expect(alive(pid)).toBe(true);
  });
});
