// The front the local stack puts before the Temporal dev server's Web UI: a request naming another host gets 421 and
// never reaches the UI; one naming the stack's address passes through as it came (method, path, body, headers,
// cookies), and so does a WebSocket upgrade.
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { loopbackHosts } from '../../src/codec/host-check';
import { freeLoopbackPort, startHostFront } from '../../scripts/lib/host-front';
import { freePort } from '../support/dev-server-process';
import { hostRequest } from '../support/host-request';

interface Seen {
  method: string;
  url: string;
  host: string | undefined;
  body: string;
  headers: http.IncomingHttpHeaders;
}

let behind: http.Server;
let front: http.Server;
let port: number;
const seen: Seen[] = [];
const refused: string[] = [];

beforeAll(async () => {
  behind = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, host: req.headers.host, body, headers: req.headers });
      res.writeHead(201, { 'content-type': 'application/json', 'set-cookie': ['_csrf=abc; Path=/', 'b=2; Path=/'] });
      res.end(JSON.stringify({ echo: body }));
    });
  });
  // A WebSocket-like upgrade: 101, then whatever comes is sent back upper-cased.
  behind.on('upgrade', (req: http.IncomingMessage, socket: net.Socket, head: Buffer) => {
    seen.push({ method: req.method!, url: req.url!, host: req.headers.host, body: '', headers: req.headers });
    socket.write('HTTP/1.1 101 Switching Protocols\r\nupgrade: echo\r\nconnection: Upgrade\r\n\r\n');
    if (head.length > 0) socket.write(head.toString().toUpperCase());
    socket.on('data', (c: Buffer) => socket.write(c.toString().toUpperCase()));
    socket.on('end', () => socket.destroy());
  });
  const behindPort = await freeLoopbackPort();
  await new Promise<void>((resolve) => behind.listen(behindPort, '127.0.0.1', resolve));
  port = await freePort();
  front = await startHostFront({
    listen: { host: '127.0.0.1', port },
    target: { host: '127.0.0.1', port: (behind.address() as AddressInfo).port },
    allowedHosts: loopbackHosts('127.0.0.1', port),
    refused: (host) => refused.push(host),
  });
});
afterAll(async () => {
  await new Promise((r) => front.close(r));
  behind.closeAllConnections();
  await new Promise((r) => behind.close(r));
});

/** An upgrade request with this Host; the first bytes that come back, and what comes back after sending `send`. */
function upgrade(host: string, send: string): Promise<{ head: string; echoed: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () =>
      socket.write(`GET /socket HTTP/1.1\r\nhost: ${host}\r\nconnection: Upgrade\r\nupgrade: echo\r\n\r\n`),
    );
    let text = '';
    let sent = false;
    socket.on('data', (c: Buffer) => {
      text += c.toString();
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return;
      if (text.startsWith('HTTP/1.1 101') && !sent) {
        sent = true;
        socket.write(send);
      }
      const rest = text.slice(end + 4);
      if (!text.startsWith('HTTP/1.1 101') || rest.length >= send.length) {
        socket.destroy();
        resolve({ head: text.slice(0, end), echoed: text.startsWith('HTTP/1.1 101') ? rest : '' });
      }
    });
    socket.on('error', reject);
    socket.on('end', () => resolve({ head: text.split('\r\n\r\n')[0]!, echoed: '' }));
  });
}

it('passes a request naming the stack address through as it came', async () => {
  seen.length = 0;
  for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]) {
    const res = await hostRequest(port, {
      host,
      method: 'POST',
      path: '/api/v1/namespaces/default/workflows?query=x',
      headers: { 'content-type': 'application/json', 'x-csrf-token': 't', cookie: '_csrf=t' },
      body: '{"a":1}',
    });
    expect([host, res.status, res.body]).toEqual([host, 201, JSON.stringify({ echo: '{"a":1}' })]);
    expect(res.headers['set-cookie']).toEqual(['_csrf=abc; Path=/', 'b=2; Path=/']);
  }
  expect(seen.map((s) => [s.method, s.url, s.host, s.body])).toEqual(
    [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`].map((h) => [
      'POST',
      '/api/v1/namespaces/default/workflows?query=x',
      h,
      '{"a":1}',
    ]),
  );
  expect(seen[0]!.headers).toMatchObject({ 'x-csrf-token': 't', cookie: '_csrf=t' });
});

it('refuses any other Host with 421, and the request never reaches the UI', async () => {
  seen.length = 0;
  for (const host of ['attacker.example', `attacker.example:${port}`, `127.0.0.1:${port + 1}`, `localhost`]) {
    const res = await hostRequest(port, { host, method: 'POST', path: '/api/v1/namespaces', body: '{}' });
    expect([host, res.status]).toEqual([host, 421]);
    expect(res.body).toContain('answers to its own address only');
  }
  expect(seen).toEqual([]);
  expect(refused).toEqual(['attacker.example', `attacker.example:${port}`, `127.0.0.1:${port + 1}`, 'localhost']);
  // Each name is said once.
  await hostRequest(port, { host: 'attacker.example' });
  expect(refused).toHaveLength(4);
});

it('passes an upgrade naming the stack address both ways, and refuses one naming another host', async () => {
  seen.length = 0;
  const ok = await upgrade(`127.0.0.1:${port}`, 'hello');
  expect(ok.head).toMatch(/^HTTP\/1\.1 101/);
  expect(ok.echoed).toBe('HELLO');
  const foreign = await upgrade('attacker.example', 'hello');
  expect(foreign.head).toMatch(/^HTTP\/1\.1 421/);
  expect(foreign.echoed).toBe('');
  expect(seen.map((s) => [s.url, s.host])).toEqual([['/socket', `127.0.0.1:${port}`]]);
});

it('answers 502 while nothing listens behind it', async () => {
  const nothing = await freeLoopbackPort();
  const p = await freePort();
  const lone = await startHostFront({
    listen: { host: '127.0.0.1', port: p },
    target: { host: '127.0.0.1', port: nothing },
    allowedHosts: loopbackHosts('127.0.0.1', p),
  });
  try {
    expect((await hostRequest(p, { host: `127.0.0.1:${p}` })).status).toBe(502);
    expect((await hostRequest(p, { host: 'attacker.example' })).status).toBe(421);
  } finally {
    await new Promise((r) => lone.close(r));
  }
});

it('picks the port behind it below the ephemeral range, free, and none of the stack ports', async () => {
  const [low] = (await import('node:fs')).readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').split(/\s+/);
  const picked = await freeLoopbackPort([port]);
  expect(picked).toBeGreaterThanOrEqual(10_000);
  expect(picked).toBeLessThan(Number(low));
  expect(picked).not.toBe(port);
});
