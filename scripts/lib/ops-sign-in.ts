// `npm run ops` signed in as a person (the device authorization grant on a terminal) or as automation's service
// account (client credentials), against the identity provider the admin API trusts: sign-in, sign-out, whoami, and
// the bearer token of the other subcommands, kept between runs (src/auth/token-cache.ts). Prints who is signed in
// (subject, name, roles, expiry), never a token or a secret.
import { OidcClient, OidcError, identityOf, type DevicePrompt, type TokenSet } from '../../src/auth/oidc-client';
import { freshSignIn, TokenCache, type CachedSignIn, type Grant, type SignInSource } from '../../src/auth/token-cache';
import { table } from './cli';

/** The identity provider and client `npm run ops` signs in with. */
export interface OidcSettings {
  /** The issuer URL (the realm's, as its tokens name it). */
  issuer: string;
  clientId: string;
  /** Whether the client id was given (--client-id or OPS_OIDC_CLIENT_ID) rather than the default. */
  clientIdGiven: boolean;
  /** A confidential client's secret (OPS_OIDC_CLIENT_SECRET or --client-secret-file). Never printed. */
  clientSecret?: string;
  /** Where the secret came from (printed instead of it). */
  secretSource?: string;
  /** Where the sign-in is kept: $XDG_CACHE_HOME/journey-ops, else ~/.cache/journey-ops. */
  cacheDir: string;
}

export const SESSION_COMMANDS = ['sign-in', 'sign-out', 'whoami'] as const;
export type SessionCommand = (typeof SESSION_COMMANDS)[number];

export interface SessionOptions {
  command: SessionCommand;
  oidc: OidcSettings;
  /** sign-in as the client's service account (automation) instead of a person. */
  clientCredentials: boolean;
}

export interface SignInIo {
  out: (text: string) => void;
  err: (text: string) => void;
  /** A person at a terminal (stdin is one): a device sign-in may be started. */
  interactive?: boolean;
  /** Stops a device sign-in that is waiting (Ctrl-C). */
  stop?: AbortSignal;
  /** How the device sign-in waits between polls (tests). */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  now?: () => number;
}

export const JOURNEY_ROLES = ['journey-viewer', 'journey-operator', 'journey-admin'];

export function tokenCache(s: OidcSettings): TokenCache {
  return new TokenCache(s.cacheDir, s.issuer, s.clientId);
}

function clientOf(s: OidcSettings, io: SignInIo, withSecret: boolean): OidcClient {
  return new OidcClient({
    issuer: s.issuer,
    clientId: s.clientId,
    ...(withSecret && s.clientSecret !== undefined ? { clientSecret: s.clientSecret } : {}),
    ...(io.sleep ? { sleep: io.sleep } : {}),
    ...(io.now ? { now: io.now } : {}),
  });
}

const minutes = (ms: number) =>
  ms >= 120_000 ? `${Math.round(ms / 60_000)} min` : `${Math.max(0, Math.round(ms / 1000))} s`;
const time = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

function showPrompt(io: SignInIo, p: DevicePrompt, now: number) {
  const where = p.verificationUriComplete
    ? `open this address in a browser (on any device) and approve the code ${p.userCode}:\n  ${p.verificationUriComplete}\n`
    : `open this address in a browser (on any device) and enter the code ${p.userCode}:\n  ${p.verificationUri}\n`;
  io.err(
    `To sign in, ${where}Waiting for the approval (the code expires in ${minutes(p.expiresAt - now)}; Ctrl-C stops)...\n`,
  );
}

/** A new sign-in: the client's service account with its secret, or a person at this terminal (device grant). */
async function newSignIn(
  s: OidcSettings,
  io: SignInIo,
  clientCredentials: boolean,
): Promise<{ tokens: TokenSet; grant: Grant }> {
  if (clientCredentials) {
    if (s.clientSecret === undefined) {
      throw new OidcError(
        `the client credentials of ${s.clientId} need its secret (OPS_OIDC_CLIENT_SECRET or --client-secret-file)`,
      );
    }
    return { tokens: await clientOf(s, io, true).clientCredentials({ scope: 'openid' }), grant: 'client_credentials' };
  }
  const now = io.now ?? Date.now;
  const tokens = await clientOf(s, io, false).deviceSignIn({
    scope: 'openid',
    onPrompt: (p) => showPrompt(io, p, now()),
    ...(io.stop ? { signal: io.stop } : {}),
  });
  return { tokens, grant: 'device_code' };
}

/** Who is signed in, as lines of a table: never the tokens. */
export function describeSignIn(c: CachedSignIn, file: string, now: number): string {
  const who = identityOf(c.accessToken);
  const roles = who.roles.filter((r) => JOURNEY_ROLES.includes(r));
  const refreshable = c.refreshToken !== undefined && (c.refreshExpiresAt === undefined || c.refreshExpiresAt > now);
  const access =
    c.expiresAt > now
      ? `valid until ${time(c.expiresAt)} (${minutes(c.expiresAt - now)} left)`
      : `expired at ${time(c.expiresAt)}`;
  const refresh = !c.refreshToken
    ? c.grant === 'client_credentials'
      ? 'none (a new client credentials sign-in when the access token expires, with the secret at hand)'
      : 'none (sign in again when the access token expires)'
    : refreshable
      ? `refreshed at need${c.refreshExpiresAt ? ` until ${time(c.refreshExpiresAt)}` : ''}`
      : `ended at ${time(c.refreshExpiresAt!)}`;
  return `${table([
    ['signed in as', who.subject ?? '(the access token names no subject)'],
    ...(who.name ? [['name', who.name]] : []),
    [
      'roles',
      roles.length > 0
        ? roles.join(', ')
        : `none of ${JOURNEY_ROLES.join(', ')}: the admin API will refuse every request`,
    ],
    ['issuer', c.issuer],
    ['client', `${c.clientId} (${c.grant === 'device_code' ? 'a person, device sign-in' : 'client credentials'})`],
    ['access token', access],
    ['refresh', refresh],
    ['kept in', file],
  ])}\n`;
}

/** `sign-in`, `sign-out`, `whoami`; returns the exit status. */
export async function runSession(o: SessionOptions, io: SignInIo): Promise<number> {
  const s = o.oidc;
  const cache = tokenCache(s);
  const now = io.now ?? Date.now;
  if (o.command === 'whoami') {
    const kept = cache.read();
    if (!kept) {
      io.err(`ops: not signed in to ${s.issuer} as client ${s.clientId}: run npm run ops -- sign-in\n`);
      return 1;
    }
    io.out(describeSignIn(kept, cache.file, now()));
    const usable =
      kept.expiresAt > now() || (kept.refreshToken !== undefined && (kept.refreshExpiresAt ?? Infinity) > now());
    // A service account's token that expired is renewed by the next command when it has the secret.
    return usable || (kept.grant === 'client_credentials' && s.clientSecret !== undefined) ? 0 : 1;
  }
  if (o.command === 'sign-out') {
    const kept = cache.read();
    const removed = cache.remove();
    if (!removed) {
      io.out(`Not signed in to ${s.issuer} as client ${s.clientId} (nothing kept in ${cache.file}).\n`);
      return 0;
    }
    io.out(`Signed out: removed ${cache.file}.\n`);
    // The provider ends the session too when it can (best effort: the local copy is gone either way).
    if (kept?.refreshToken) {
      try {
        await clientOf(s, io, kept.grant === 'client_credentials').revoke(kept.refreshToken, 'refresh_token');
      } catch (err) {
        if (!(err instanceof OidcError)) throw err;
        io.err(`ops: the provider did not end the session (${err.message}); it ends when it expires\n`);
      }
    }
    return 0;
  }
  if (!o.clientCredentials && !io.interactive) {
    throw new OidcError(
      'sign-in without --client-credentials is for a person at a terminal (stdin is not one); automation signs in ' +
        'with --client-credentials',
    );
  }
  const { tokens, grant } = await newSignIn(s, io, o.clientCredentials);
  const signIn: CachedSignIn = { issuer: s.issuer, clientId: s.clientId, grant, savedAt: now(), ...tokens };
  cache.write(signIn);
  io.out(`Signed in.\n${describeSignIn(signIn, cache.file, now())}`);
  return 0;
}

/** The bearer token of the admin API: the kept one, refreshed or renewed when it is about to expire. */
export interface OperatorSession {
  /** A valid access token (refreshed when it is within 30 s of its expiry). */
  token: () => Promise<string>;
  subject: string;
  name?: string;
  roles: string[];
  source: SignInSource;
}

/**
 * The signed-in operator for a journey action: the kept sign-in, else a refresh, else a new sign-in (client
 * credentials with the secret at hand; a device sign-in on a terminal); else SignInRequired.
 */
export async function operatorSession(s: OidcSettings, io: SignInIo): Promise<OperatorSession> {
  const cache = tokenCache(s);
  const withSecret = s.clientSecret !== undefined;
  const client = clientOf(s, io, withSecret);
  const notice = (m: string) => io.err(`ops: ${m}\n`);
  const first = await freshSignIn({
    cache,
    client,
    notice,
    ...(io.now ? { now: io.now } : {}),
    ...(withSecret || io.interactive ? { signIn: () => newSignIn(s, io, withSecret) } : {}),
  });
  let current = first.signIn;
  let renewing: Promise<CachedSignIn> | undefined;
  const now = io.now ?? Date.now;
  const who = identityOf(current.accessToken);
  if (!who.subject) throw new OidcError(`the access token from ${s.issuer} names no subject: the API would refuse it`);
  return {
    subject: who.subject,
    ...(who.name ? { name: who.name } : {}),
    roles: who.roles.filter((r) => JOURNEY_ROLES.includes(r)),
    source: first.source,
    // During a long run: refreshed (or the service account's token renewed); never a device sign-in mid-run.
    token: async () => {
      if (current.expiresAt - 30_000 > now()) return current.accessToken;
      renewing ??= freshSignIn({
        cache,
        client,
        notice,
        ...(io.now ? { now: io.now } : {}),
        ...(withSecret ? { signIn: () => newSignIn(s, io, true) } : {}),
      })
        .then((r) => (current = r.signIn))
        .finally(() => (renewing = undefined));
      return (await renewing).accessToken;
    },
  };
}
