// A front for a local HTTP server that checks `Host` and nothing else: the Temporal dev server's Web UI answers any
// `Host`, so the local stack binds it to a port of its own and publishes this front instead. A request naming another
// host (a page whose name was made to resolve to 127.0.0.1: DNS rebinding) gets 421; the rest pass through as they
// are, WebSocket upgrades included.
import { randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { hostChecker, loggableHost, MISDIRECTED } from '../../src/codec/host-check';

export interface HostFrontOptions {
  /** Where the front listens (the address browsers use). */
  listen: { host: string; port: number };
  /** The server behind it, on loopback. */
  target: { host: string; port: number };
  /** The `Host` names it passes on (`name:port`, or `name` for any port). */
  allowedHosts: readonly string[];
  /** A refused `Host`, said once per name (up to 100). */
  refused?: (host: string) => void;
}

const REFUSAL = 'this server answers to its own address only (Host)\n';

/** Headers of one hop only (RFC 9110 7.6.1): not passed on. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

function endToEnd(headers: http.IncomingHttpHeaders | http.OutgoingHttpHeaders): http.OutgoingHttpHeaders {
  const named = new Set(
    String(headers.connection ?? '')
      .split(',')
      .map((h) => h.trim().toLowerCase()),
  );
  return Object.fromEntries(
    Object.entries(headers).filter(([k, v]) => v !== undefined && !HOP_BY_HOP.has(k) && !named.has(k)),
  );
}

/** Starts the front; resolves once it listens. */
export async function startHostFront(options: HostFrontOptions): Promise<http.Server> {
  const allowed = hostChecker(options.allowedHosts);
  const said = new Set<string>();
  const refuse = (host: string | undefined) => {
    const name = loggableHost(host);
    if (said.size < 100 && !said.has(name)) {
      said.add(name);
      options.refused?.(name);
    }
  };
  const agent = new http.Agent({ keepAlive: true });

  const server = http.createServer((req, res) => {
    if (!allowed(req.headers.host)) {
      refuse(req.headers.host);
      res.writeHead(MISDIRECTED, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' });
      res.end(REFUSAL);
      return;
    }
    const upstream = http.request(
      {
        agent,
        host: options.target.host,
        port: options.target.port,
        method: req.method,
        path: req.url,
        headers: endToEnd(req.headers),
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.statusMessage, endToEnd(answer.headers));
        answer.pipe(res);
        answer.on('error', () => res.destroy());
      },
    );
    upstream.on('error', () => {
      if (!res.headersSent) {
        res.writeHead(502, { 'content-type': 'text/plain; charset=utf-8' });
        res.end('the server behind this address does not answer (yet)\n');
      } else {
        res.destroy();
      }
    });
    // The browser went away: so does the request behind it.
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
  });

  server.on('upgrade', (req: http.IncomingMessage, socket: net.Socket, head: Buffer) => {
    if (!allowed(req.headers.host)) {
      refuse(req.headers.host);
      socket.end(
        `HTTP/1.1 ${MISDIRECTED} Misdirected Request\r\ncontent-type: text/plain; charset=utf-8\r\n` +
          `content-length: ${Buffer.byteLength(REFUSAL)}\r\nconnection: close\r\n\r\n${REFUSAL}`,
      );
      return;
    }
    // The request as it came (its Connection and Upgrade headers belong to the upgrade), then both ways as bytes.
    const upstream = net.connect(options.target.port, options.target.host, () => {
      const lines = [`${req.method} ${req.url} HTTP/${req.httpVersion}`];
      for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
      upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (head.length > 0) upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    const close = () => {
      upstream.destroy();
      socket.destroy();
    };
    upstream.on('error', close);
    socket.on('error', close);
    upstream.on('close', close);
    socket.on('close', close);
    // The browser went away: so does the connection behind it (a server there may wait for the other half forever).
    socket.on('end', close);
  });

  server.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
    else socket.destroy();
  });
  server.on('close', () => agent.destroy());

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.listen.port, options.listen.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}

/**
 * A free port on 127.0.0.1, picked at random below the kernel's ephemeral range (an outgoing connection could take one
 * there before the server behind the front binds it), none of `besides`; the kernel's pick when none is found.
 */
export async function freeLoopbackPort(besides: readonly number[] = []): Promise<number> {
  let below = 32_768;
  try {
    below = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || below;
  } catch {
    // not Linux: the usual start of the range
  }
  const listen = (port: number) =>
    new Promise<number | undefined>((resolve) => {
      const probe = net.createServer();
      probe.once('error', () => resolve(undefined));
      probe.listen(port, '127.0.0.1', () => {
        const { port: bound } = probe.address() as net.AddressInfo;
        probe.close(() => resolve(bound));
      });
    });
  for (let tries = 0; tries < 50 && below > 10_001; tries++) {
    const port = 10_000 + randomInt(below - 10_000);
    if (besides.includes(port)) continue;
    const bound = await listen(port);
    if (bound !== undefined) return bound;
  }
  const bound = await listen(0);
  if (bound === undefined) throw new Error('no free port on 127.0.0.1');
  return bound;
}
