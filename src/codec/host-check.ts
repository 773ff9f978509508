// The `Host` a request names, checked against the names a server answers to. A browser page from another origin that
// has its own name resolve to 127.0.0.1 (DNS rebinding) reaches a loopback server as the same origin as itself, with
// its own name in `Host`; refusing every name but the server's own stops it before anything is read or answered.
// It stops browsers only: any local user or process sends whatever `Host` it likes.
import { isLoopbackHost } from '../config';

/** The status of a refused `Host`: the request named a server that is not this one. */
export const MISDIRECTED = 421;

/** A listen address as a `Host` names it: IPv6 in brackets, lower case. */
const asHostName = (host: string) => {
  const h = host.trim().toLowerCase();
  return h.includes(':') && !h.startsWith('[') ? `[${h}]` : h;
};

/**
 * The names a server on loopback answers to: its own listen address and the loopback names, each with its port (and
 * without, on the scheme's default port, where clients leave the port out).
 */
export function loopbackHosts(listenHost: string, port: number, scheme: 'http' | 'https' = 'http'): string[] {
  const names = [...new Set([asHostName(listenHost), '127.0.0.1', 'localhost', '[::1]'])];
  const defaultPort = scheme === 'https' ? 443 : 80;
  return names.flatMap((n) => (port === defaultPort ? [`${n}:${port}`, n] : [`${n}:${port}`]));
}

/**
 * The `Host` names a codec server answers to: the ones configured (CODEC_ALLOWED_HOSTS), else on loopback its own
 * address and the loopback names on its port. Undefined (any `Host`) beyond loopback without a list: there a token or
 * an identity provider is required, which a rebinding page has not got.
 */
export function codecAllowedHosts(codec: {
  serverHost: string;
  serverPort: number;
  allowedHosts?: string[] | undefined;
  tls?: unknown;
}): string[] | undefined {
  if (codec.allowedHosts && codec.allowedHosts.length > 0) return codec.allowedHosts;
  if (!isLoopbackHost(codec.serverHost)) return undefined;
  return loopbackHosts(codec.serverHost, codec.serverPort, codec.tls ? 'https' : 'http');
}

/**
 * A check of the `Host` header against a list: an entry with a port matches that name on that port, one without a
 * port matches that name on any port. Names compare without case; a request without `Host` is refused.
 */
export function hostChecker(allowed: readonly string[]): (host: string | undefined) => boolean {
  const exact = new Set<string>();
  const anyPort = new Set<string>();
  for (const entry of allowed) {
    const e = entry.trim().toLowerCase();
    if (!e) continue;
    // A port after a bracketed IPv6 address or after a name; a bare IPv6 address (many colons) has none.
    const withPort = e.startsWith('[') ? /\]:\d+$/.test(e) : /^[^:]+:\d+$/.test(e);
    if (withPort) exact.add(e);
    else anyPort.add(asHostName(e));
  }
  return (host) => {
    const h = host?.trim().toLowerCase();
    if (!h) return false;
    if (exact.has(h) || anyPort.has(h)) return true;
    const name = /^(.*):\d+$/.exec(h)?.[1];
    return name !== undefined && anyPort.has(name);
  };
}

/** A `Host` as it may go into a log line: bounded, printable. */
export const loggableHost = (host: string | undefined) =>
  host === undefined ? '(none)' : JSON.stringify(host.slice(0, 200)).slice(1, -1);
