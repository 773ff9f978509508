// `npm start` (scripts/local-stack.ts): its Temporal Web UI and its codec server answer to the stack's own address
// only. A request naming another host (a page whose name was made to resolve to 127.0.0.1: DNS rebinding) gets 421 on
// both; one naming 127.0.0.1 or localhost gets the UI, and the codec decodes for it, with no token: whoever can reach
// the codec's port on this host decodes, as docs/local-stack.md says.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { listenerPid } from '../../scripts/lib/stack-guard';
import { hostRequest } from '../support/host-request';
import { localStackPorts } from '../support/local-stack-ports';
import { until } from '../support/until';

jest.setTimeout(600_000);

const root = path.resolve(__dirname, '../..');
const FOREIGN = ['attacker.example', 'attacker.example:PORT', 'rebind.127.0.0.1.nip.io:PORT', '127.0.0.1:OTHER'];

let stack: ChildProcess;
let output = '';
let dataDir: string;
let ui: number;
let codec: number;
const foreign = (port: number) =>
  FOREIGN.map((h) => h.replace('OTHER', String(port + 1)).replace('PORT', String(port)));

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), 'stack-host-'));
  const local = await localStackPorts(21_900);
  ui = local.ports.TEMPORAL_UI_PORT;
  codec = local.ports.CODEC_PORT;
  stack = spawn(process.execPath, ['--import', 'tsx', 'scripts/local-stack.ts'], {
    cwd: root,
    env: { ...process.env, ...local.env, DATA_DIR: dataDir },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  stack.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  stack.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  await until(
    'the stack to be up',
    () => Promise.resolve(output.includes('Ctrl-C stops everything.') ? true : undefined),
    420_000,
  );
  // The UI comes up behind its front a little after the frontend.
  await until(
    'the Web UI',
    async () => ((await hostRequest(ui, { host: `127.0.0.1:${ui}` })).status === 200 ? true : undefined),
    60_000,
  );
});
afterAll(async () => {
  if (stack?.pid) {
    const exited = new Promise((r) => stack.once('exit', r));
    if (stack.exitCode === null) process.kill(stack.pid, 'SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 30_000))]);
    try {
      process.kill(-stack.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('the Temporal Web UI', () => {
  it("is the stack's own front on the published port, the dev server's UI behind it", () => {
    expect(listenerPid(ui)).toBe(stack.pid);
  });

  it('serves the UI and its API to a request naming the stack address', async () => {
    for (const host of [`127.0.0.1:${ui}`, `localhost:${ui}`]) {
      const page = await hostRequest(ui, { host });
      expect([host, page.status]).toEqual([host, 200]);
      expect(page.body).toContain('<!doctype html>');
      const settings = await hostRequest(ui, { host, path: '/api/v1/settings' });
      expect([host, settings.status]).toEqual([host, 200]);
      expect(JSON.parse(settings.body)).toMatchObject({ Codec: { Endpoint: `http://127.0.0.1:${codec}` } });
      const namespaces = await hostRequest(ui, { host, path: '/api/v1/namespaces' });
      expect([host, namespaces.status]).toEqual([host, 200]);
      expect(namespaces.body).toContain('"default"');
    }
  });

  it('refuses any other Host with 421', async () => {
    for (const host of foreign(ui)) {
      for (const p of ['/', '/api/v1/settings', '/api/v1/namespaces']) {
        const res = await hostRequest(ui, { host, path: p });
        expect([host, p, res.status]).toEqual([host, p, 421]);
        expect(res.body).not.toContain('Codec');
      }
    }
    expect(output).toContain(`Temporal UI: refused a request for Host attacker.example:${ui}`);
  });
});

describe('the codec server', () => {
  const sealed = async (host: string) => {
    // The codec's own encoding of a payload, asked of it by its own address.
    const encoded = await hostRequest(codec, {
      host: `127.0.0.1:${codec}`,
      method: 'POST',
      path: '/encode',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ payloads: [{ metadata: {}, data: Buffer.from('"Jane Patient"').toString('base64') }] }),
    });
    expect(encoded.status).toBe(200);
    return hostRequest(codec, {
      host,
      method: 'POST',
      path: '/decode',
      headers: { 'content-type': 'application/json', origin: `http://127.0.0.1:${ui}` },
      body: encoded.body,
    });
  };

  it('decodes, without a token, for a request naming its own address (anyone on this host)', async () => {
    for (const host of [`127.0.0.1:${codec}`, `localhost:${codec}`]) {
      const res = await sealed(host);
      expect([host, res.status]).toEqual([host, 200]);
      expect(res.body).toContain(Buffer.from('"Jane Patient"').toString('base64'));
    }
  });

  it('refuses any other Host with 421: the decode, the preflight and /healthz', async () => {
    for (const host of foreign(codec)) {
      const res = await sealed(host);
      expect([host, res.status]).toEqual([host, 421]);
      expect(res.body).not.toContain(Buffer.from('"Jane Patient"').toString('base64'));
      const preflight = await hostRequest(codec, {
        host,
        method: 'OPTIONS',
        path: '/decode',
        headers: { origin: `http://127.0.0.1:${ui}`, 'access-control-request-method': 'POST' },
      });
      expect([host, preflight.status]).toEqual([host, 421]);
      expect((await hostRequest(codec, { host, path: '/healthz' })).status).toBe(421);
    }
    expect(output).toContain('codec: refused a request for another host');
  });
});
