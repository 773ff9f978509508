// `npm run demo -- --api <url>` as a user runs it (node with tsx, the repository's script): its exit code and the end
// of its output. The production suites run it against their stacks, often while a part of the stack is being killed.
import { spawn } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

export function runDemo(api: string, timeoutSeconds: number): Promise<{ code: number | null; tail: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [require.resolve('tsx/cli'), 'scripts/demo.ts', '--api', api, '--timeout', String(timeoutSeconds)],
      { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', CI: '1' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.on('exit', (code) => resolve({ code, tail: out.split('\n').slice(-15).join('\n') }));
  });
}
