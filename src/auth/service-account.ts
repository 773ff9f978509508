// A service account's access token (OAuth 2.0 client credentials, RFC 6749 section 4.4), kept fresh: the workers and
// the API present it to the Temporal server, whose JWT authorizer reads its `permissions` claim. The token is fetched
// once before the first use, then again at three quarters of its lifetime, so a connection never carries an expired
// one; a failed refresh is tried again (the current token stays in use until it expires). Never logged.
import { request } from 'undici';

export interface ServiceAccount {
  clientId: string;
  /** A secret: never logged. */
  clientSecret: string;
  /** The identity provider's token endpoint, as this process reaches it. */
  tokenUrl: string;
  /** Optional scope to ask for (space-separated). */
  scope?: string;
}

interface Token {
  value: string;
  fetchedAt: number;
  expiresAt: number;
}

export class ServiceAccountError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ServiceAccountError';
  }
}

export interface ServiceAccountOptions {
  now?: () => number;
  /** Progress and failures, without the token or the secret. */
  log?: (level: 'info' | 'warn', message: string) => void;
  /** The shortest wait before a refresh is tried again after a failure. Default 1 s (doubling up to 30 s). */
  retryMs?: number;
}

/** One service account's tokens for this process. */
export class ServiceAccountTokens {
  #token: Token | undefined;
  #inflight: Promise<Token> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #listeners = new Set<(token: string) => void | Promise<void>>();
  #failures = 0;
  #stopped = false;
  readonly #now: () => number;

  constructor(
    readonly account: ServiceAccount,
    private readonly o: ServiceAccountOptions = {},
  ) {
    this.#now = o.now ?? Date.now;
  }

  /** The current token, fetched (or fetched again when expired) first; the refresh schedule starts with it. */
  async token(): Promise<string> {
    const t = this.#token;
    // Good while more than 5 s (or a quarter of a short token's life) are left.
    if (t && this.#now() < t.expiresAt - Math.min(5_000, (t.expiresAt - t.fetchedAt) / 4)) return t.value;
    return (await this.#fetch()).value;
  }

  /** The token in hand, or undefined before the first fetch (a call made then is refused by the server). */
  current(): string | undefined {
    return this.#token?.value;
  }

  /** Called with each new token (a native connection's setApiKey). Returns the function that stops it. */
  onToken(listener: (token: string) => void | Promise<void>): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Stops the refresh schedule (the process is ending). */
  stop(): void {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
  }

  #fetch(): Promise<Token> {
    this.#inflight ??= this.#request().finally(() => (this.#inflight = undefined));
    return this.#inflight;
  }

  async #request(): Promise<Token> {
    const { clientId, clientSecret, tokenUrl, scope } = this.account;
    const form = new URLSearchParams({ grant_type: 'client_credentials' });
    if (scope) form.set('scope', scope);
    const basic = Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString('base64');
    let res;
    try {
      res = await request(tokenUrl, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${basic}`,
          accept: 'application/json',
        },
        body: form.toString(),
        headersTimeout: 10_000,
        bodyTimeout: 10_000,
      });
    } catch (err) {
      throw new ServiceAccountError(
        `service account ${clientId}: the token endpoint ${tokenUrl} did not answer (${(err as Error).message})`,
      );
    }
    const text = await res.body.text();
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      // named below by the status
    }
    if (res.statusCode !== 200 || typeof body.access_token !== 'string') {
      const why = typeof body.error === 'string' ? `${body.error}${describe(body.error_description)}` : 'no token';
      throw new ServiceAccountError(
        `service account ${clientId}: the token endpoint ${tokenUrl} answered ${res.statusCode} (${why})`,
      );
    }
    const lifetimeS = typeof body.expires_in === 'number' && body.expires_in > 0 ? body.expires_in : 300;
    const fetchedAt = this.#now();
    const token = { value: body.access_token, fetchedAt, expiresAt: fetchedAt + lifetimeS * 1_000 };
    this.#token = token;
    this.#failures = 0;
    this.#schedule(lifetimeS * 750);
    for (const l of this.#listeners) {
      await Promise.resolve(l(token.value)).catch((err: unknown) =>
        this.o.log?.('warn', `service account ${clientId}: a connection did not take the new token: ${String(err)}`),
      );
    }
    return token;
  }

  #schedule(ms: number) {
    if (this.#stopped) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#fetch().catch((err: unknown) => {
        this.#failures += 1;
        const wait = Math.min(30_000, (this.o.retryMs ?? 1_000) * 2 ** (this.#failures - 1));
        this.o.log?.('warn', `${(err as Error).message}; trying again in ${Math.round(wait / 1000)} s`);
        this.#schedule(wait);
      });
    }, ms);
    this.#timer.unref();
  }
}

function describe(v: unknown): string {
  return typeof v === 'string' && v ? `: ${v.slice(0, 200)}` : '';
}
