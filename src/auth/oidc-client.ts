// A small OpenID Connect client for command-line tools: the provider's discovery document (its `issuer` checked), the
// OAuth 2.0 device authorization grant for a person at a terminal (RFC 8628), the client credentials grant for
// automation (RFC 6749 section 4.4, the client authenticated with HTTP Basic), a refresh with the refresh token the
// provider gave, and a best-effort revocation at sign-out (RFC 7009). Every failure is an OidcError that names what
// went wrong, with the provider's `error` and `error_description`; no message ever holds a token or a secret.
import { decodeJwt } from 'jose';
import { rolesAt } from './tokens';

/** What went wrong, safe to print: the provider's error code (when it sent one) and a sentence without secrets. */
export class OidcError extends Error {
  override name = 'OidcError';
  constructor(
    message: string,
    /** The provider's `error` (`access_denied`, `invalid_grant`...), or ours: `unreachable`, `interrupted`. */
    readonly code?: string,
  ) {
    super(message);
  }
}

/** The parts of the provider's discovery document this client uses. */
export interface ProviderMetadata {
  issuer: string;
  token_endpoint: string;
  device_authorization_endpoint?: string;
  revocation_endpoint?: string;
  jwks_uri?: string;
}

/** What a token endpoint gave. Times in ms since the epoch. */
export interface TokenSet {
  accessToken: string;
  /** When the access token expires (its `expires_in`, or its `exp` claim when sooner). */
  expiresAt: number;
  refreshToken?: string;
  /** When the refresh token expires, when the provider said (Keycloak's `refresh_expires_in`). */
  refreshExpiresAt?: number;
  scope?: string;
}

/** What the person at the terminal is shown: where to go and the code to confirm there. */
export interface DevicePrompt {
  userCode: string;
  verificationUri: string;
  /** The address with the code in it, when the provider gives one: opening it is all there is to do. */
  verificationUriComplete?: string;
  /** When the code expires (ms since the epoch). */
  expiresAt: number;
}

export interface OidcClientOptions {
  /** The issuer URL, exactly as the provider's tokens and discovery document name it. */
  issuer: string;
  clientId: string;
  /** A confidential client's secret (client credentials; then also sent on refresh). Never printed. */
  clientSecret?: string;
  fetch?: typeof globalThis.fetch;
  now?: () => number;
  /** How the device grant waits between polls (tests record the waits instead). */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Each request's deadline (default 15 s). */
  timeoutMs?: number;
}

export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
/** How much longer the device grant waits after a `slow_down` (RFC 8628 section 3.5). */
export const SLOW_DOWN_STEP_S = 5;

type Json = Record<string, unknown>;

/** The provider's words, short and on one line (they are printed). */
function providerText(v: unknown): string {
  if (typeof v !== 'string') return '';
  const printable = [...v].map((c) => (c < ' ' || c === '\u007f' ? ' ' : c)).join('');
  return printable.replace(/\s+/g, ' ').trim().slice(0, 200);
}

/** `error: description` of an OAuth error answer, or its status when it has none. */
function errorOf(status: number, body: Json): string {
  const code = providerText(body.error);
  const description = providerText(body.error_description);
  if (!code) return `HTTP ${status}, no OAuth error in the answer`;
  return description ? `${code}: ${description}` : code;
}

/** RFC 6749 section 2.3.1: the client id and secret are form-encoded before they make up the Basic credentials. */
const formEncode = (s: string) => new URLSearchParams({ v: s }).toString().slice(2);

function defaultSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal?.aborted || ms <= 0) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

const isLoopback = (host: string) => ['127.0.0.1', 'localhost', '[::1]', '::1'].includes(host);

/**
 * The issuer URL as given, checked: http(s), and https unless on loopback (the tokens would travel in the clear).
 * Returns it without a trailing slash; throws an OidcError naming the fault.
 */
export function checkIssuerUrl(issuer: string): string {
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw new OidcError(`the issuer must be a URL such as https://id.example/realms/journeys, got "${issuer}"`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url.hostname))) {
    throw new OidcError(`the issuer must be an https URL (http only on loopback), got "${issuer}"`);
  }
  if (url.search || url.hash) throw new OidcError('the issuer URL takes no query or fragment');
  return issuer.replace(/\/+$/, '');
}

/** Who a token says it is, for printing instead of the token. */
export interface TokenIdentity {
  /** `sub`; undefined when the access token is not a JWT. */
  subject?: string;
  /** `preferred_username` or `email`. */
  name?: string;
  roles: string[];
  /** `exp` (ms since the epoch), when the token carries one. */
  expiresAt?: number;
}

/** The claims of an access token, read without checking its signature (the API checks it): for display only. */
export function identityOf(accessToken: string, roleClaim = 'realm_access.roles'): TokenIdentity {
  let claims: Json;
  try {
    claims = decodeJwt(accessToken);
  } catch {
    return { roles: [] };
  }
  const name = [claims.preferred_username, claims.email].find((v): v is string => typeof v === 'string');
  return {
    ...(typeof claims.sub === 'string' ? { subject: claims.sub } : {}),
    ...(name ? { name } : {}),
    roles: rolesAt(claims, roleClaim),
    ...(typeof claims.exp === 'number' ? { expiresAt: claims.exp * 1000 } : {}),
  };
}

/** One client of one provider. The discovery document is fetched once, on first use. */
export class OidcClient {
  readonly issuer: string;
  readonly clientId: string;
  readonly #secret: string | undefined;
  readonly #fetch: typeof globalThis.fetch;
  readonly #now: () => number;
  readonly #sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly #timeoutMs: number;
  #metadata: Promise<ProviderMetadata> | undefined;

  constructor(o: OidcClientOptions) {
    this.issuer = checkIssuerUrl(o.issuer);
    this.clientId = o.clientId;
    this.#secret = o.clientSecret;
    this.#fetch = o.fetch ?? globalThis.fetch;
    this.#now = o.now ?? Date.now;
    this.#sleep = o.sleep ?? defaultSleep;
    this.#timeoutMs = o.timeoutMs ?? 15_000;
  }

  /** Whether this client has a secret (a confidential client). */
  get confidential(): boolean {
    return this.#secret !== undefined;
  }

  /** The discovery document, `issuer` checked against the configured issuer. */
  metadata(): Promise<ProviderMetadata> {
    this.#metadata ??= this.#discover().catch((err: unknown) => {
      this.#metadata = undefined;
      throw err;
    });
    return this.#metadata;
  }

  async #discover(): Promise<ProviderMetadata> {
    const url = `${this.issuer}/.well-known/openid-configuration`;
    let res: Response;
    try {
      res = await this.#fetch(url, {
        headers: { accept: 'application/json' },
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (err) {
      throw new OidcError(
        `the identity provider's discovery document ${url} did not answer (${why(err)})`,
        'unreachable',
      );
    }
    let doc: Json;
    try {
      doc = (await res.json()) as Json;
    } catch {
      throw new OidcError(`the discovery document ${url} answered ${res.status}, not JSON: is the issuer right?`);
    }
    if (!res.ok || doc === null || typeof doc !== 'object') {
      throw new OidcError(`the discovery document ${url} answered ${res.status}: is the issuer right?`);
    }
    if (typeof doc.issuer !== 'string' || doc.issuer.replace(/\/+$/, '') !== this.issuer) {
      throw new OidcError(
        `the discovery document ${url} names another issuer (${providerText(doc.issuer) || 'none'}); ` +
          'give the issuer exactly as the provider names it',
      );
    }
    if (typeof doc.token_endpoint !== 'string') {
      throw new OidcError(`the discovery document ${url} has no token_endpoint`);
    }
    const endpoint = (k: string) => (typeof doc[k] === 'string' ? { [k]: doc[k] } : {});
    return {
      issuer: doc.issuer,
      token_endpoint: doc.token_endpoint,
      ...endpoint('device_authorization_endpoint'),
      ...endpoint('revocation_endpoint'),
      ...endpoint('jwks_uri'),
    };
  }

  /**
   * The device authorization grant: asks for a code, hands it to `onPrompt` (to show the person), then polls the token
   * endpoint at the provider's interval (5 s more after each `slow_down`) until the person approves, declines, or the
   * code expires. `signal` stops it (an OidcError with the code `interrupted`).
   */
  async deviceSignIn(o: {
    onPrompt: (prompt: DevicePrompt) => void;
    scope?: string;
    signal?: AbortSignal;
  }): Promise<TokenSet> {
    const meta = await this.metadata();
    if (!meta.device_authorization_endpoint) {
      throw new OidcError(
        `${this.issuer} does not offer the device authorization grant (no device_authorization_endpoint in its ` +
          'discovery document)',
      );
    }
    const started = this.#now();
    const auth = await this.#post(
      meta.device_authorization_endpoint,
      { scope: o.scope ?? 'openid' },
      'the device authorization request',
      { basic: this.#secret !== undefined },
    );
    if (auth.status !== 200 || auth.body.error !== undefined) {
      throw new OidcError(
        `the provider refused to start a sign-in for client ${this.clientId} (${errorOf(auth.status, auth.body)})` +
          (auth.body.error === 'unauthorized_client'
            ? '; is the device authorization grant enabled for this client?'
            : ''),
        providerText(auth.body.error) || undefined,
      );
    }
    const { device_code, user_code, verification_uri, verification_uri_complete, expires_in, interval } = auth.body;
    if (typeof device_code !== 'string' || typeof user_code !== 'string' || typeof verification_uri !== 'string') {
      throw new OidcError('the device authorization answer lacks device_code, user_code or verification_uri');
    }
    const lifetimeS = typeof expires_in === 'number' && expires_in > 0 ? expires_in : 300;
    const deadline = started + lifetimeS * 1000;
    let intervalS = typeof interval === 'number' && interval > 0 ? interval : 5;
    o.onPrompt({
      userCode: user_code,
      verificationUri: verification_uri,
      ...(typeof verification_uri_complete === 'string' ? { verificationUriComplete: verification_uri_complete } : {}),
      expiresAt: deadline,
    });
    const expired = () =>
      new OidcError(
        `the sign-in code expired before anyone approved it (expired_token; it lasted ${Math.round(lifetimeS / 60)} ` +
          'min): sign in again, and approve in the browser sooner',
        'expired_token',
      );
    for (;;) {
      await this.#sleep(intervalS * 1000, o.signal);
      if (o.signal?.aborted) throw new OidcError('the sign-in was interrupted before it was approved', 'interrupted');
      if (this.#now() >= deadline) throw expired();
      const sentAt = this.#now();
      let answer: { status: number; body: Json };
      try {
        answer = await this.#post(meta.token_endpoint, { grant_type: DEVICE_CODE_GRANT, device_code }, 'the sign-in', {
          basic: this.#secret !== undefined,
        });
      } catch (err) {
        // A provider that does not answer for a moment: wait longer (RFC 8628 section 3.5), until the code expires.
        if (err instanceof OidcError && err.code === 'unreachable') {
          intervalS = Math.min(intervalS * 2, 60);
          continue;
        }
        throw err;
      }
      const { status, body } = answer;
      if (status === 200 && body.error === undefined) return this.#tokens(body, sentAt, 'the sign-in');
      switch (body.error) {
        case 'authorization_pending':
          continue;
        case 'slow_down':
          intervalS += SLOW_DOWN_STEP_S;
          continue;
        case 'access_denied':
          throw new OidcError(
            'the sign-in was declined at the provider (access_denied): nobody is signed in; sign in again to retry',
            'access_denied',
          );
        case 'expired_token':
          throw expired();
        default:
          throw new OidcError(
            `the provider refused the sign-in (${errorOf(status, body)})`,
            providerText(body.error) || undefined,
          );
      }
    }
  }

  /** The client credentials grant: the client (with its secret) signs in as its service account. */
  async clientCredentials(o: { scope?: string } = {}): Promise<TokenSet> {
    if (this.#secret === undefined) {
      throw new OidcError(`the client credentials grant needs client ${this.clientId}'s secret`);
    }
    const meta = await this.metadata();
    const sentAt = this.#now();
    const { status, body } = await this.#post(
      meta.token_endpoint,
      { grant_type: 'client_credentials', ...(o.scope ? { scope: o.scope } : {}) },
      'the client credentials request',
      { basic: true },
    );
    if (status !== 200 || body.error !== undefined) {
      throw new OidcError(
        `the provider refused client ${this.clientId}'s credentials (${errorOf(status, body)})` +
          (body.error === 'invalid_client' ? '; check the client id and its secret' : ''),
        providerText(body.error) || undefined,
      );
    }
    return this.#tokens(body, sentAt, 'the client credentials answer');
  }

  /** New tokens for a refresh token; the refresh token is kept when the provider sends no new one. */
  async refresh(refreshToken: string): Promise<TokenSet> {
    const meta = await this.metadata();
    const sentAt = this.#now();
    const { status, body } = await this.#post(
      meta.token_endpoint,
      { grant_type: 'refresh_token', refresh_token: refreshToken },
      'the refresh',
      { basic: this.#secret !== undefined },
    );
    if (status !== 200 || body.error !== undefined) {
      throw new OidcError(
        `the provider refused to refresh the sign-in (${errorOf(status, body)})`,
        providerText(body.error) || undefined,
      );
    }
    const tokens = this.#tokens(body, sentAt, 'the refresh answer');
    return tokens.refreshToken ? tokens : { ...tokens, refreshToken };
  }

  /**
   * Revokes a token at the provider (RFC 7009) when it has a revocation endpoint: returns false when it has none.
   * Throws an OidcError when the provider refuses or does not answer.
   */
  async revoke(token: string, hint: 'refresh_token' | 'access_token'): Promise<boolean> {
    const meta = await this.metadata();
    if (!meta.revocation_endpoint) return false;
    const { status, body } = await this.#post(
      meta.revocation_endpoint,
      { token, token_type_hint: hint },
      'the revocation',
      { basic: this.#secret !== undefined },
    );
    if (status !== 200) throw new OidcError(`the provider refused the revocation (${errorOf(status, body)})`);
    return true;
  }

  /** A form POST; the client authenticated with HTTP Basic (a confidential client) or named by client_id. */
  async #post(
    url: string,
    form: Record<string, string>,
    what: string,
    o: { basic: boolean },
  ): Promise<{ status: number; body: Json }> {
    const headers: Record<string, string> = {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    };
    const params = new URLSearchParams(form);
    if (o.basic && this.#secret !== undefined) {
      const credentials = `${formEncode(this.clientId)}:${formEncode(this.#secret)}`;
      headers.authorization = `Basic ${Buffer.from(credentials).toString('base64')}`;
    } else {
      params.set('client_id', this.clientId);
    }
    let res: Response;
    try {
      res = await this.#fetch(url, {
        method: 'POST',
        headers,
        body: params.toString(),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (err) {
      throw new OidcError(`${what}: the identity provider at ${url} did not answer (${why(err)})`, 'unreachable');
    }
    const text = await res.text();
    let body: Json = {};
    try {
      const parsed: unknown = text === '' ? {} : JSON.parse(text);
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) body = parsed as Json;
    } catch {
      // Not JSON: named by its status (the text itself is never repeated: it might hold anything).
    }
    return { status: res.status, body };
  }

  #tokens(body: Json, sentAt: number, what: string): TokenSet {
    const { access_token, token_type, expires_in, refresh_token, refresh_expires_in, scope } = body;
    if (typeof access_token !== 'string' || access_token === '') {
      throw new OidcError(`${what} has no access_token`);
    }
    if (typeof token_type === 'string' && token_type.toLowerCase() !== 'bearer') {
      throw new OidcError(`${what} gave a token of type ${providerText(token_type)}, not Bearer`);
    }
    const claimed = identityOf(access_token).expiresAt;
    const stated = typeof expires_in === 'number' && expires_in > 0 ? sentAt + expires_in * 1000 : undefined;
    const expiresAt = Math.min(stated ?? Infinity, claimed ?? Infinity);
    return {
      accessToken: access_token,
      expiresAt: Number.isFinite(expiresAt) ? expiresAt : sentAt + 300_000,
      ...(typeof refresh_token === 'string' && refresh_token !== '' ? { refreshToken: refresh_token } : {}),
      // Keycloak: 0 for a refresh token without an expiry of its own (an offline token).
      ...(typeof refresh_expires_in === 'number' && refresh_expires_in > 0
        ? { refreshExpiresAt: sentAt + refresh_expires_in * 1000 }
        : {}),
      ...(typeof scope === 'string' ? { scope } : {}),
    };
  }
}

function why(err: unknown): string {
  if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')) return 'no answer in time';
  const cause = err instanceof Error ? (err.cause as { code?: string; message?: string } | undefined) : undefined;
  return cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
}
