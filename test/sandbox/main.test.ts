/** `npm run sandbox` starts the standalone server from SANDBOX_* variables and stops cleanly on SIGTERM. */
import { type ChildProcess, spawn } from 'node:child_process';
import { callService } from './support';

function waitForLine(child: ChildProcess, pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(
      () => reject(new Error(`no ${String(pattern)} within ${timeoutMs} ms:\n${seen}`)),
      timeoutMs,
    );
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      const match = seen.match(pattern);
      if (match) {
        clearTimeout(timer);
        resolve(match);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code}:\n${seen}`));
    });
  });
}

it('npm run sandbox serves the service paths under its base URL', async () => {
  const child = spawn('npm', ['run', '--silent', 'sandbox'], {
    cwd: `${__dirname}/../..`,
    env: { ...process.env, SANDBOX_PORT: '0', SANDBOX_LOG_LEVEL: 'warn', SANDBOX_SEED: '5' },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    const [, baseUrl] = await waitForLine(child, /sandbox on (http:\/\/127\.0\.0\.1:\d+)/, 20_000);
    const res = await callService(baseUrl!, 'exam_list');
    expect(res.status).toBe(200);
    expect(res.body.exams.length).toBeGreaterThan(0);
    let output = '';
    child.stdout?.on('data', (c: Buffer) => (output += c.toString()));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    // The whole process group (npm, tsx, node) gets the signal, as from a terminal's Ctrl-C or a supervisor.
    process.kill(-child.pid!, 'SIGTERM');
    await exited;
    await new Promise((r) => setTimeout(r, 200));
    expect(output).toContain('SIGTERM: stopping the sandbox');
    await expect(callService(baseUrl!, 'exam_list')).rejects.toThrow();
  } finally {
    if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
  }
});
