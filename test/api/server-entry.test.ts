// `npm run api` as a process: it serves on API_PORT, takes callbacks, and on SIGTERM stops accepting, finishes and
// exits 0.
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { SEARCH_ATTRIBUTE_KEYS } from '../../src/contract/definitions';
import { DevServerProcess, freePort } from '../support/dev-server-process';
import { event1, eventually, tempDataDir, TOKENS, WEBHOOK_SECRET, webhookPath } from './support';
import { createHash, randomBytes } from 'node:crypto';

describe('API server process', () => {
  let server: DevServerProcess;
  const dirs = tempDataDir();

  beforeAll(async () => {
    server = await DevServerProcess.start(SEARCH_ATTRIBUTE_KEYS);
  }, 60_000);
  afterAll(async () => {
    await server?.teardown();
    dirs.cleanup();
  });

  it('serves on API_PORT and shuts down cleanly on SIGTERM', async () => {
    const port = await freePort();
    const child = spawn(
      process.execPath,
      [require.resolve('tsx/cli'), path.resolve(__dirname, '../../src/api/server.ts')],
      {
        env: {
          ...process.env,
          API_PORT: String(port),
          TEMPORAL_ADDRESS: server.address,
          DATA_DIR: dirs.dataDir,
          WEBHOOK_SECRET,
          PAYLOAD_ENCRYPTION_KEYS: `test:${randomBytes(32).toString('base64')}`,
          LOG_LEVEL: 'silent',
          CLINICS_JSON: JSON.stringify([
            {
              clinicId: 'clinic-a',
              examServiceApiKey: 'k',
              apiTokenSha256: [createHash('sha256').update(TOKENS.a).digest('hex')],
            },
          ]),
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const base = `http://127.0.0.1:${port}`;
    try {
      await eventually(
        () =>
          fetch(`${base}/healthz`).then(
            (r) => r.status,
            () => 0,
          ),
        (s) => s === 200,
        { timeoutMs: 30_000, intervalMs: 200 },
      );
      expect((await fetch(`${base}/readyz`)).status).toBe(200);
      const list = await fetch(`${base}/v1/journeys`, { headers: { authorization: `Bearer ${TOKENS.a}` } });
      expect(list.status).toBe(200);
      // A callback for a journey that does not exist: acknowledged and kept on disk.
      const cb = await fetch(`${base}${webhookPath('jnotstarted')}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(event1(5)),
      });
      expect(cb.status).toBe(200);
      // The forwarder finds no such journey: the callback becomes a dead letter on disk.
      await eventually(
        () => Promise.resolve(readdirSync(path.join(dirs.dataDir, 'dead-letters')).length),
        (n) => n === 1,
        { timeoutMs: 15_000, intervalMs: 100 },
      );
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    expect(stderr).toBe('');
    await expect(fetch(`${base}/healthz`)).rejects.toThrow();
  }, 60_000);
});
