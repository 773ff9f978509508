// A stand-in OpenID provider for the command-line sign-in, over real HTTP on loopback (a port of a given range): its
// discovery document, its keys, the device authorization endpoint, the token endpoint (device code, client
// credentials, refresh token) and revocation, shaped like Keycloak's realm `journeys`. Access tokens are JWTs signed
// with a real RSA key pair, carrying the realm roles in realm_access.roles and the audience journey-engine. The answers
// to a device code's polls follow a script (by default: pending twice, then slow_down, then the tokens). Every request
// is recorded (without its secrets) for the tests to count.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { SignJWT } from 'jose';
import { signingKey } from './oidc-issuer';

export const PROVIDER_AUDIENCE = 'journey-engine';

/** What a poll of the device code answers: an RFC 8628 error, or `ok` (the person approved: the tokens). */
export type PollAnswer = 'authorization_pending' | 'slow_down' | 'access_denied' | 'expired_token' | 'ok';

export interface ProviderClient {
  /** A confidential client's secret (it authenticates with HTTP Basic); none for a public client. */
  secret?: string;
  /** Whether the client may use the device authorization grant. */
  device?: boolean;
  /** The service account a client credentials grant signs in as. */
  serviceAccount?: { subject: string; name: string; roles: string[] };
}

export interface Person {
  subject: string;
  name: string;
  roles: string[];
}

export interface ProviderRequest {
  endpoint: 'discovery' | 'jwks' | 'device' | 'token' | 'revoke' | 'other';
  grant?: string;
  clientId?: string;
  /** How the client authenticated: HTTP Basic, client_id in the body, or not at all. */
  auth: 'basic' | 'client_id' | 'none';
  /** The HTTP status answered. */
  status: number;
  /** The token endpoint's `error`, when it answered one. */
  error?: string;
  at: number;
}

export interface DeviceProvider {
  issuer: string;
  port: number;
  requests: ProviderRequest[];
  /** The script of the next device codes' polls; the last answer repeats. */
  devicePolls: PollAnswer[];
  /** The device grant's `interval` (seconds) and `expires_in`. */
  interval: number;
  deviceExpiresIn: number;
  /** Lifetime of the access tokens it issues (seconds). */
  accessTokenSeconds: number;
  /** Whether the device grant gives a refresh token, and its lifetime (seconds; 0: none said). */
  refreshTokens: boolean;
  refreshExpiresIn: number;
  /** Who approves the device sign-ins. */
  person: Person;
  clients: Record<string, ProviderClient>;
  /** Ends every refresh token issued so far (a session ended at the provider). */
  endSessions(): void;
  /** The refresh tokens revoked at /revoke. */
  revocations: number;
  /** The user code of every device sign-in. */
  userCode: string;
  close(): Promise<void>;
}

/** Listens on the first free port of [from, to] on loopback. */
export async function listenInRange(server: Server, from: number, to: number): Promise<number> {
  for (let port = from; port <= to; port++) {
    const bound = await new Promise<boolean>((resolve) => {
      const onError = () => resolve(false);
      server.once('error', onError);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', onError);
        resolve(true);
      });
    });
    if (bound) return port;
  }
  throw new Error(`no free port from ${from} to ${to}`);
}

/** A port of [from, to] free at this moment (for a server that binds it itself, such as Temporal's). */
export async function freePortInRange(from: number, to: number, skip: readonly number[] = []): Promise<number> {
  for (let port = from; port <= to; port++) {
    if (skip.includes(port)) continue;
    const probe = createServer();
    const free = await new Promise<boolean>((resolve) => {
      probe.once('error', () => resolve(false));
      probe.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (free) {
      await new Promise((resolve) => probe.close(resolve));
      return port;
    }
  }
  throw new Error(`no free port from ${from} to ${to}`);
}

async function form(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

/** The client of a request: HTTP Basic (form-encoded id and secret, RFC 6749 section 2.3.1) or client_id. */
function clientOf(req: IncomingMessage, body: URLSearchParams) {
  const header = req.headers.authorization;
  if (header?.startsWith('Basic ')) {
    const decoded = Buffer.from(header.slice(6), 'base64').toString('utf8');
    const i = decoded.indexOf(':');
    const dec = (s: string) => decodeURIComponent(s.replace(/\+/g, ' '));
    return { auth: 'basic' as const, id: dec(decoded.slice(0, i)), secret: dec(decoded.slice(i + 1)) };
  }
  const id = body.get('client_id');
  if (id) return { auth: 'client_id' as const, id, secret: body.get('client_secret') ?? undefined };
  return { auth: 'none' as const, id: undefined, secret: undefined };
}

export async function startDeviceProvider(o: { ports: [number, number] }): Promise<DeviceProvider> {
  const key = await signingKey('device-key-1');
  const devices = new Map<string, { clientId: string; polls: PollAnswer[] }>();
  const refreshes = new Map<string, { clientId: string; who: Person }>();
  const server = createServer();
  const port = await listenInRange(server, o.ports[0], o.ports[1]);
  const issuer = `http://127.0.0.1:${port}/realms/journeys`;
  const oidc = `${issuer}/protocol/openid-connect`;

  const provider: DeviceProvider = {
    issuer,
    port,
    requests: [],
    devicePolls: ['authorization_pending', 'authorization_pending', 'slow_down', 'ok'],
    interval: 1,
    deviceExpiresIn: 600,
    accessTokenSeconds: 300,
    refreshTokens: true,
    refreshExpiresIn: 1800,
    person: { subject: '5d1c0f7e-olivia', name: 'olivia.operator', roles: ['journey-operator', 'offline_access'] },
    clients: {
      'journey-ops': { device: true },
      'journey-automation': {
        secret: 'automation-secret-0123456789',
        serviceAccount: {
          subject: '9a8b7c6d-automation',
          name: 'service-account-journey-automation',
          roles: ['journey-admin'],
        },
      },
    },
    endSessions: () => refreshes.clear(),
    revocations: 0,
    userCode: 'WDJB-MJHT',
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };

  const accessToken = (who: Person, clientId: string) => {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ realm_access: { roles: who.roles }, preferred_username: who.name, azp: clientId })
      .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'JWT' })
      .setIssuer(issuer)
      .setSubject(who.subject)
      .setAudience(PROVIDER_AUDIENCE)
      .setIssuedAt(now)
      .setJti(randomBytes(8).toString('hex'))
      .setExpirationTime(now + provider.accessTokenSeconds)
      .sign(key.privateKey);
  };
  const tokens = async (who: Person, clientId: string, refresh: boolean) => {
    const answer: Record<string, unknown> = {
      access_token: await accessToken(who, clientId),
      token_type: 'Bearer',
      expires_in: provider.accessTokenSeconds,
      scope: 'openid profile email',
    };
    if (refresh) {
      const rt = `rt-${randomBytes(16).toString('hex')}`;
      refreshes.set(rt, { clientId, who });
      answer.refresh_token = rt;
      answer.refresh_expires_in = provider.refreshExpiresIn;
    }
    return answer;
  };

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      const url = new URL(req.url ?? '/', `http://127.0.0.1:${port}`);
      const record: ProviderRequest = { endpoint: 'other', auth: 'none', status: 200, at: Date.now() };
      provider.requests.push(record);
      const send = (status: number, body: unknown) => {
        record.status = status;
        if (status >= 400 && body && typeof body === 'object' && 'error' in body) record.error = String(body.error);
        res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
        res.end(JSON.stringify(body));
      };
      const path = url.pathname;
      if (req.method === 'GET' && path === '/realms/journeys/.well-known/openid-configuration') {
        record.endpoint = 'discovery';
        return send(200, {
          issuer,
          authorization_endpoint: `${oidc}/auth`,
          token_endpoint: `${oidc}/token`,
          device_authorization_endpoint: `${oidc}/auth/device`,
          revocation_endpoint: `${oidc}/revoke`,
          jwks_uri: `${oidc}/certs`,
          grant_types_supported: [
            'authorization_code',
            'refresh_token',
            'client_credentials',
            'urn:ietf:params:oauth:grant-type:device_code',
          ],
        });
      }
      if (req.method === 'GET' && path === '/realms/journeys/protocol/openid-connect/certs') {
        record.endpoint = 'jwks';
        return send(200, { keys: [key.jwk] });
      }
      if (req.method !== 'POST') return send(404, { error: 'not_found' });
      const body = await form(req);
      const caller = clientOf(req, body);
      record.auth = caller.auth;
      if (caller.id) record.clientId = caller.id;
      const client = caller.id ? provider.clients[caller.id] : undefined;
      const authenticated = client !== undefined && (client.secret === undefined || client.secret === caller.secret);
      if (!authenticated) {
        return send(401, {
          error: 'invalid_client',
          error_description: 'Invalid client or Invalid client credentials',
        });
      }

      if (path === '/realms/journeys/protocol/openid-connect/auth/device') {
        record.endpoint = 'device';
        if (!client.device) {
          return send(400, {
            error: 'unauthorized_client',
            error_description: 'Client is not allowed to initiate OAuth 2.0 Device Authorization Grant.',
          });
        }
        const deviceCode = `dc-${randomBytes(16).toString('hex')}`;
        devices.set(deviceCode, { clientId: caller.id!, polls: [...provider.devicePolls] });
        return send(200, {
          device_code: deviceCode,
          user_code: provider.userCode,
          verification_uri: `${issuer}/device`,
          verification_uri_complete: `${issuer}/device?user_code=${provider.userCode}`,
          expires_in: provider.deviceExpiresIn,
          interval: provider.interval,
        });
      }
      if (path === '/realms/journeys/protocol/openid-connect/revoke') {
        record.endpoint = 'revoke';
        const t = body.get('token') ?? '';
        if (refreshes.get(t)?.clientId === caller.id) {
          refreshes.delete(t);
          provider.revocations++;
        }
        return send(200, {});
      }
      if (path !== '/realms/journeys/protocol/openid-connect/token') return send(404, { error: 'not_found' });
      record.endpoint = 'token';
      const grant = body.get('grant_type') ?? '';
      record.grant = grant;
      if (grant === 'urn:ietf:params:oauth:grant-type:device_code') {
        const device = devices.get(body.get('device_code') ?? '');
        if (!device || device.clientId !== caller.id) {
          return send(400, { error: 'invalid_grant', error_description: 'Device code not valid' });
        }
        const answer = device.polls.length > 1 ? device.polls.shift()! : device.polls[0]!;
        if (answer !== 'ok') {
          const descriptions: Record<string, string> = {
            authorization_pending: 'The authorization request is still pending',
            slow_down: 'Slow down',
            access_denied: 'The end user denied the authorization request',
            expired_token: 'Device code is expired',
          };
          return send(400, { error: answer, error_description: descriptions[answer] });
        }
        devices.delete(body.get('device_code')!);
        return send(200, await tokens(provider.person, caller.id, provider.refreshTokens));
      }
      if (grant === 'client_credentials') {
        if (!client.secret || !client.serviceAccount) {
          return send(400, {
            error: 'unauthorized_client',
            error_description: 'Client not enabled to retrieve service account',
          });
        }
        if (caller.auth !== 'basic')
          return send(401, { error: 'invalid_client', error_description: 'Basic auth expected' });
        return send(200, await tokens(client.serviceAccount, caller.id, false));
      }
      if (grant === 'refresh_token') {
        const rt = body.get('refresh_token') ?? '';
        const session = refreshes.get(rt);
        if (!session || session.clientId !== caller.id) {
          return send(400, { error: 'invalid_grant', error_description: 'Session not active' });
        }
        refreshes.delete(rt);
        return send(200, await tokens(session.who, caller.id, true));
      }
      return send(400, { error: 'unsupported_grant_type', error_description: `Unsupported grant_type` });
    })().catch((err: unknown) => {
      res.writeHead(500);
      res.end(String(err));
    });
  });
  return provider;
}
