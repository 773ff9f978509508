// A command-line tool's sign-in, kept between runs: the tokens of one client at one issuer in a file only the user can
// read (mode 0600, in a folder of mode 0700) under the user's cache folder ($XDG_CACHE_HOME, else ~/.cache). A kept
// access token is used until 30 s before it expires; then the refresh token (when the provider gave one, and while it
// lasts) gets new ones; failing that, a new sign-in, when the caller can do one here.
import { createHash, randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { OidcError, type OidcClient, type TokenSet } from './oidc-client';

/** How the tokens were obtained: a person at the device grant, or a service account's client credentials. */
export type Grant = 'device_code' | 'client_credentials';

/** What the cache file holds. */
export interface CachedSignIn extends TokenSet {
  issuer: string;
  clientId: string;
  grant: Grant;
  /** When these tokens were obtained (ms since the epoch). */
  savedAt: number;
}

/** `$XDG_CACHE_HOME/<app>` (an absolute XDG_CACHE_HOME only, as the XDG spec says), else `~/.cache/<app>`. */
export function cacheDirOf(env: NodeJS.ProcessEnv, app: string): string {
  const xdg = env.XDG_CACHE_HOME;
  const base = xdg && path.isAbsolute(xdg) ? xdg : path.join(env.HOME || os.homedir(), '.cache');
  return path.join(base, app);
}

const isCached = (v: unknown): v is CachedSignIn => {
  const c = v as Partial<CachedSignIn> | null;
  return (
    c !== null &&
    typeof c === 'object' &&
    typeof c.issuer === 'string' &&
    typeof c.clientId === 'string' &&
    typeof c.accessToken === 'string' &&
    typeof c.expiresAt === 'number' &&
    (c.grant === 'device_code' || c.grant === 'client_credentials') &&
    (c.refreshToken === undefined || typeof c.refreshToken === 'string')
  );
};

/** The kept sign-in of one client at one issuer: one file in `dir`. */
export class TokenCache {
  readonly file: string;

  constructor(
    readonly dir: string,
    readonly issuer: string,
    readonly clientId: string,
  ) {
    const key = createHash('sha256').update(`${issuer}\n${clientId}`).digest('hex').slice(0, 32);
    this.file = path.join(dir, `${key}.json`);
  }

  /** The kept tokens; undefined when there are none, or the file is not one of ours (then it is as if signed out). */
  read(): CachedSignIn | undefined {
    let text: string;
    try {
      const st = lstatSync(this.file);
      if (!st.isFile()) return undefined;
      // Readable by others (changed by hand, copied): back to the user alone.
      if ((st.mode & 0o077) !== 0) chmodSync(this.file, 0o600);
      text = readFileSync(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new OidcError(`cannot read the sign-in kept in ${this.file} (${(err as NodeJS.ErrnoException).code})`);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return undefined;
    }
    return isCached(parsed) && parsed.issuer === this.issuer && parsed.clientId === this.clientId ? parsed : undefined;
  }

  /** Keeps the tokens: written to a new file of mode 0600, then renamed over the old one (never half written). */
  write(signIn: CachedSignIn): void {
    this.#folder();
    const tmp = `${this.file}.${randomBytes(6).toString('hex')}.tmp`;
    const fd = openSync(tmp, 'wx', 0o600);
    try {
      writeSync(fd, `${JSON.stringify(signIn)}\n`);
    } finally {
      closeSync(fd);
    }
    try {
      chmodSync(tmp, 0o600);
      renameSync(tmp, this.file);
    } catch (err) {
      rmSync(tmp, { force: true });
      throw err;
    }
  }

  /** Forgets the sign-in; true when there was one. */
  remove(): boolean {
    try {
      lstatSync(this.file);
    } catch {
      return false;
    }
    rmSync(this.file, { force: true });
    return true;
  }

  /** The folder, made mode 0700 (and made so again when it was wider); a symbolic link there is refused. */
  #folder() {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const st = lstatSync(this.dir);
    if (!st.isDirectory()) throw new OidcError(`${this.dir} is not a folder: the sign-in cannot be kept there`);
    if ((st.mode & 0o777) !== 0o700) chmodSync(this.dir, 0o700);
  }
}

/** Nobody is signed in (or the sign-in ended) and no new sign-in can be made here. */
export class SignInRequired extends OidcError {
  override name = 'SignInRequired';
  constructor(readonly reason: string) {
    super(reason, 'sign_in_required');
  }
}

export interface FreshSignInOptions {
  cache: TokenCache;
  client: OidcClient;
  /** A new sign-in, when neither the kept tokens nor a refresh give one; without it, SignInRequired. */
  signIn?: () => Promise<{ tokens: TokenSet; grant: Grant }>;
  /** A kept access token is used until this long before it expires (default 30 s). */
  marginMs?: number;
  now?: () => number;
  /** Told what happens (a refresh that failed), without tokens. */
  notice?: (message: string) => void;
}

export type SignInSource = 'cached' | 'refreshed' | 'signed-in';

/**
 * A valid sign-in: the kept one while its access token lasts (no request at all), else refreshed, else a new one.
 * Whatever is obtained is kept.
 */
export async function freshSignIn(o: FreshSignInOptions): Promise<{ signIn: CachedSignIn; source: SignInSource }> {
  const now = o.now ?? Date.now;
  const margin = o.marginMs ?? 30_000;
  const keep = (tokens: TokenSet, grant: Grant): CachedSignIn => {
    const signIn: CachedSignIn = {
      issuer: o.cache.issuer,
      clientId: o.cache.clientId,
      grant,
      savedAt: now(),
      ...tokens,
    };
    o.cache.write(signIn);
    return signIn;
  };
  const cached = o.cache.read();
  if (cached && cached.expiresAt - margin > now()) return { signIn: cached, source: 'cached' };

  let reason = cached ? 'the sign-in has expired' : 'not signed in';
  if (cached?.refreshToken) {
    if (cached.refreshExpiresAt !== undefined && cached.refreshExpiresAt - margin <= now()) {
      reason = 'the sign-in has expired, and so has its refresh token';
      o.cache.remove();
    } else {
      try {
        return { signIn: keep(await o.client.refresh(cached.refreshToken), cached.grant), source: 'refreshed' };
      } catch (err) {
        if (!(err instanceof OidcError)) throw err;
        reason = `the sign-in has expired and could not be refreshed: ${err.message}`;
        o.notice?.(reason);
        // Refused (revoked, ended session): forget it. Not answering: it may work next time.
        if (err.code !== 'unreachable') o.cache.remove();
      }
    }
  }
  if (!o.signIn) throw new SignInRequired(reason);
  const { tokens, grant } = await o.signIn();
  return { signIn: keep(tokens, grant), source: 'signed-in' };
}
