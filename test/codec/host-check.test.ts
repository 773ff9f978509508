// The codec server answers to its own address only: a request naming another host (a page whose name was made to
// resolve to 127.0.0.1, DNS rebinding) gets 421 before anything else, preflight and /healthz included. Over real HTTP,
// with the settings the codec's process takes from its environment.
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { codecAllowedHosts, hostChecker, loopbackHosts } from '../../src/codec/host-check';
import { buildCodecServer } from '../../src/codec/server';
import { loadCodecConfig } from '../../src/config';
import { freePort } from '../support/dev-server-process';
import { hostRequest } from '../support/host-request';

const keys = `k:${randomBytes(32).toString('base64')}`;
const same = <T>(p: T) => Promise.resolve(p);
const identity = { encode: same, decode: same };

describe('which Host the codec server answers to', () => {
  it('on loopback: its own address and the loopback names on its port, by default', () => {
    const { codec } = loadCodecConfig({ PAYLOAD_ENCRYPTION_KEYS: keys, CODEC_PORT: '18888' });
    expect(codecAllowedHosts(codec)).toEqual(['127.0.0.1:18888', 'localhost:18888', '[::1]:18888']);
    const v6 = loadCodecConfig({ PAYLOAD_ENCRYPTION_KEYS: keys, CODEC_HOST: '::1', CODEC_PORT: '80' }).codec;
    expect(codecAllowedHosts(v6)).toEqual([
      '[::1]:80',
      '[::1]',
      '127.0.0.1:80',
      '127.0.0.1',
      'localhost:80',
      'localhost',
    ]);
  });

  it('beyond loopback: any name unless CODEC_ALLOWED_HOSTS names them (a token is required there)', () => {
    const token = randomBytes(24).toString('base64url');
    const wide = { PAYLOAD_ENCRYPTION_KEYS: keys, CODEC_HOST: '0.0.0.0', CODEC_SERVER_TOKEN: token };
    expect(codecAllowedHosts(loadCodecConfig(wide).codec)).toBeUndefined();
    const listed = loadCodecConfig({ ...wide, CODEC_ALLOWED_HOSTS: ' Codec:8888, localhost ,' }).codec;
    expect(listed.allowedHosts).toEqual(['codec:8888', 'localhost']);
    expect(codecAllowedHosts(listed)).toEqual(['codec:8888', 'localhost']);
  });

  it('matches a name with its port, or on any port when the entry has none; never a request without Host', () => {
    const allowed = hostChecker([...loopbackHosts('127.0.0.1', 8888), 'ops.internal', '[fd00::1]', 'fd00::2']);
    for (const host of [
      '127.0.0.1:8888',
      'LOCALHOST:8888',
      '[::1]:8888',
      'ops.internal',
      'ops.internal:9',
      '[fd00::1]:1',
    ]) {
      expect([host, allowed(host)]).toEqual([host, true]);
    }
    expect(allowed('[fd00::2]:443')).toBe(true);
    for (const host of [
      undefined,
      '',
      'attacker.example:8888',
      '127.0.0.1',
      '127.0.0.1:8889',
      'localhost',
      'localhost.:8888',
      '127.0.0.1:8888.attacker.example',
      'ops.internal.attacker.example',
    ]) {
      expect([host, allowed(host)]).toEqual([host, false]);
    }
  });
});

describe('the codec server on loopback, over HTTP', () => {
  let server: ReturnType<typeof buildCodecServer>;
  let port: number;
  const warnings: Record<string, unknown>[] = [];

  beforeAll(async () => {
    port = await freePort();
    // The settings the codec's process derives for its own address; no token, as on the local stack.
    const { codec } = loadCodecConfig({ PAYLOAD_ENCRYPTION_KEYS: keys, CODEC_PORT: String(port) });
    server = buildCodecServer({
      codec: identity,
      corsOrigins: ['http://127.0.0.1:8233'],
      allowedHosts: codecAllowedHosts(codec)!,
      warn: (msg, meta) => warnings.push({ msg, ...meta }),
    });
    await server.listen({ host: codec.serverHost, port });
  });
  afterAll(() => server.close());

  const decode = (host: string) =>
    hostRequest(port, {
      host,
      method: 'POST',
      path: '/decode',
      headers: { 'content-type': 'application/json', origin: 'http://127.0.0.1:8233' },
      body: JSON.stringify({ payloads: [{ metadata: {}, data: Buffer.from('"patient"').toString('base64') }] }),
    });

  it('decodes for a request naming its own address', async () => {
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`]) {
      const res = await decode(host);
      expect([host, res.status]).toEqual([host, 200]);
      expect(res.body).toContain(Buffer.from('"patient"').toString('base64'));
    }
    expect((await hostRequest(port, { host: `127.0.0.1:${port}`, path: '/healthz' })).status).toBe(200);
  });

  it('refuses any other Host with 421 before CORS, the token, the body or /healthz', async () => {
    for (const host of ['attacker.example', `attacker.example:${port}`, `127.0.0.1:${port + 1}`]) {
      const res = await decode(host);
      expect([host, res.status]).toEqual([host, 421]);
      expect(res.body).not.toContain('payloads');
      expect(res.headers['access-control-allow-origin']).toBeUndefined();
      const preflight = await hostRequest(port, {
        host,
        method: 'OPTIONS',
        path: '/decode',
        headers: { origin: 'http://127.0.0.1:8233', 'access-control-request-method': 'POST' },
      });
      expect([host, preflight.status, preflight.headers['access-control-allow-origin']]).toEqual([
        host,
        421,
        undefined,
      ]);
      expect((await hostRequest(port, { host, path: '/healthz' })).status).toBe(421);
    }
    // Said once per name, in the log.
    const refused = warnings.filter((w) => w.msg === 'codec: refused a request for another host');
    expect(refused.map((w) => w.host)).toEqual([
      'attacker.example',
      `attacker.example:${port}`,
      `127.0.0.1:${port + 1}`,
    ]);
  });

  it('answers the names CODEC_ALLOWED_HOSTS gives instead, when set', async () => {
    const listed = buildCodecServer({ codec: identity, corsOrigins: [], allowedHosts: ['codec.internal'] });
    await listed.listen({ host: '127.0.0.1', port: 0 });
    try {
      const p = (listed.server.address() as AddressInfo).port;
      expect((await hostRequest(p, { host: `codec.internal:${p}`, path: '/healthz' })).status).toBe(200);
      expect((await hostRequest(p, { host: `127.0.0.1:${p}`, path: '/healthz' })).status).toBe(421);
    } finally {
      await listed.close();
    }
  });
});
