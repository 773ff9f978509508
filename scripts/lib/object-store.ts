// MinIO (an S3-compatible object server) as a child process, for the production-shaped stack and its tests.
// Installed by scripts/install-object-store.sh into .tools/minio. The root credentials go by environment, or as files
// (`credentialFiles`: MINIO_ROOT_USER_FILE, MINIO_ROOT_PASSWORD_FILE) that hold them.
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { httpProbe, ManagedProcess, portProbe } from './processes';

const ROOT = path.resolve(__dirname, '../..');
const MINIO = path.join(process.env.TEMPORAL_TOOLS_DIR ?? path.join(ROOT, '.tools'), 'minio', 'bin', 'minio');

export interface ObjectStoreServer {
  readonly name: string;
  readonly endpoint: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  /** Starts it again after a stop (the same data folder, port and credentials); resolves once it is ready. */
  start(): Promise<void>;
  stop(): Promise<void>;
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
  /** Files that hold the two credentials (written by the caller, mode 0600): MinIO reads them, not its environment. */
  credentialFiles?: { user: string; password: string };
  /** A folder with `public.crt` and `private.key`: MinIO serves HTTPS with them (pgBackRest speaks S3 over TLS only). */
  certsDir?: string;
}): Promise<ObjectStoreServer> {
  if (!objectStoreInstalled()) throw new Error('MinIO is not installed: run `bash scripts/install-object-store.sh`');
  // MinIO takes a missing file for no setting (and would start with its default credentials): refuse that first.
  for (const file of Object.values(o.credentialFiles ?? {}))
    if (!existsSync(file)) throw new Error(`the object store's credentials file ${file} is missing`);
  mkdirSync(o.dataDir, { recursive: true });
  const endpoint = `${o.certsDir ? 'https' : 'http'}://127.0.0.1:${o.port}`;
  const proc = await new ManagedProcess({
    name: 'minio',
    command: MINIO,
    args: [
      ...['server', o.dataDir, '--address', `127.0.0.1:${o.port}`, '--console-address', `127.0.0.1:${o.consolePort}`],
      ...(o.certsDir ? ['--certs-dir', o.certsDir] : []),
    ],
    env: {
      ...(o.credentialFiles
        ? { MINIO_ROOT_USER_FILE: o.credentialFiles.user, MINIO_ROOT_PASSWORD_FILE: o.credentialFiles.password }
        : { MINIO_ROOT_USER: o.accessKeyId, MINIO_ROOT_PASSWORD: o.secretAccessKey }),
      MINIO_BROWSER: 'off',
      MINIO_UPDATE: 'off',
    },
    logDir: path.dirname(o.dataDir),
    // Over HTTPS its certificate is the caller's to trust: ready once the port is open.
    ready: o.certsDir ? portProbe(o.port) : httpProbe(`${endpoint}/minio/health/ready`),
    readyTimeoutMs: 30_000,
    stopGraceMs: 10_000,
  }).up();
  return {
    name: 'object store',
    endpoint,
    accessKeyId: o.accessKeyId,
    secretAccessKey: o.secretAccessKey,
    start: async () => {
      await proc.up();
    },
    stop: () => proc.stop(),
  };
}
