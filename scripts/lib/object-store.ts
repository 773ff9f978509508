// MinIO (an S3-compatible object server) as a child process, for the production-shaped stack and its tests.
// Installed by scripts/install-object-store.sh into .tools/minio. The root credentials go by environment.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { partCommand } from './stack-guard';

const ROOT = path.resolve(__dirname, '../..');
const MINIO = path.join(process.env.TEMPORAL_TOOLS_DIR ?? path.join(ROOT, '.tools'), 'minio', 'bin', 'minio');

export interface ObjectStoreServer {
  readonly endpoint: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  stop(): Promise<void>;
  /** SIGKILL without waiting: the last resort of a process that is exiting. */
  killNow(): void;
}

export function objectStoreInstalled(): boolean {
  return existsSync(MINIO);
}

export async function startObjectStore(o: {
  dataDir: string;
  port: number;
  consolePort: number;
  accessKeyId: string;
  secretAccessKey: string;
}): Promise<ObjectStoreServer> {
  if (!objectStoreInstalled()) throw new Error('MinIO is not installed: run `bash scripts/install-object-store.sh`');
  mkdirSync(o.dataDir, { recursive: true });
  const log = createWriteStream(path.join(path.dirname(o.dataDir), 'minio.log'), { flags: 'a' });
  // Own process group (a terminal's signals reach the stack alone); the parent-death signal stops it if this process
  // dies without stopping it.
  const part = partCommand(MINIO, [
    'server',
    o.dataDir,
    '--address',
    `127.0.0.1:${o.port}`,
    '--console-address',
    `127.0.0.1:${o.consolePort}`,
  ]);
  const child: ChildProcess = spawn(part.command, part.args, {
    detached: true,
    env: {
      ...process.env,
      MINIO_ROOT_USER: o.accessKeyId,
      MINIO_ROOT_PASSWORD: o.secretAccessKey,
      MINIO_BROWSER: 'off',
      MINIO_UPDATE: 'off',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const endpoint = `http://127.0.0.1:${o.port}`;
  const until = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`MinIO exited at start (${child.exitCode})`);
    const ready = await fetch(`${endpoint}/minio/health/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) break;
    if (Date.now() > until) {
      child.kill('SIGKILL');
      throw new Error('MinIO did not become ready within 30 s');
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    endpoint,
    accessKeyId: o.accessKeyId,
    secretAccessKey: o.secretAccessKey,
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
    killNow() {
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}
