// Who is calling: an OpenID Connect access token (a JWT) checked against the issuer's keys. The signature by a key of
// the issuer's JWKS (found by `kid`, fetched again when an unknown one appears: key rotation), the issuer, the
// audience, the expiry and not-before with a bounded clock skew, and an algorithm of the allowed list (never `none`).
// What a refusal says names the reason, never the token.
import { createRemoteJWKSet, customFetch, errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';

export interface TokenVerifierOptions {
  /** The issuer URL exactly as the tokens' `iss` claim says it. */
  issuer: string;
  /** The audience the tokens must name (`aud`), one of them. */
  audience: string | readonly string[];
  /** The issuer's key set; by default the `jwks_uri` of its discovery document. */
  jwksUrl?: string;
  /** Where the roles are, a dotted path into the claims (Keycloak: `realm_access.roles`). */
  roleClaim?: string;
  /** Seconds of clock difference tolerated on `exp` and `nbf` (default 30). */
  clockSkewSeconds?: number;
  /** How soon an unknown `kid` may make it fetch the key set again (default 30 s: a rotation is found then). */
  jwksCooldownMs?: number;
  /** Signature algorithms accepted (default the asymmetric ones an identity provider uses). */
  algorithms?: readonly string[];
  /** For tests: the key set itself instead of fetching it. */
  keys?: JWTVerifyGetKey;
  fetch?: typeof globalThis.fetch;
}

export interface Caller {
  /** The token's subject: the person or service account, never a typed name. */
  subject: string;
  /** A readable name when the token carries one (`preferred_username`, `email`), for audit lines only. */
  name?: string;
  roles: string[];
  expiresAt: Date;
}

export type RefusalReason =
  | 'missing'
  | 'malformed'
  | 'algorithm not allowed'
  | 'unknown key'
  | 'bad signature'
  | 'expired'
  | 'not yet valid'
  | 'wrong issuer'
  | 'wrong audience'
  | 'no subject'
  | 'issuer unreachable';

/** A token refused, with why (safe to log: it never holds the token). */
export class TokenRefused extends Error {
  override name = 'TokenRefused';
  constructor(readonly reason: RefusalReason) {
    super(`token refused: ${reason}`);
  }
}

export const DEFAULT_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'EdDSA'];

export type TokenVerifier = (token: string | undefined) => Promise<Caller>;

/** A verifier of the issuer's access tokens; the key set is fetched on first use and cached. */
export function tokenVerifier(o: TokenVerifierOptions): TokenVerifier {
  const fetchImpl = o.fetch ?? globalThis.fetch;
  let keys: JWTVerifyGetKey | undefined = o.keys;
  let discovering: Promise<JWTVerifyGetKey> | undefined;
  const keySet = async (): Promise<JWTVerifyGetKey> => {
    if (keys) return keys;
    discovering ??= (async () => {
      const url = o.jwksUrl ?? (await jwksUriOf(o.issuer, fetchImpl));
      // A kid it does not know makes it fetch the set again (at most once per cooldown): a rotated key is found.
      keys = createRemoteJWKSet(new URL(url), {
        cooldownDuration: o.jwksCooldownMs ?? 30_000,
        cacheMaxAge: 10 * 60_000,
        [customFetch]: fetchImpl,
      });
      return keys;
    })().catch((err: unknown) => {
      discovering = undefined;
      throw err;
    });
    return discovering;
  };
  const audience = typeof o.audience === 'string' ? o.audience : [...o.audience];
  return async (token) => {
    if (!token) throw new TokenRefused('missing');
    // A JWS compact token is three base64url parts; `alg: none` has an empty signature and is refused below too.
    if (!/^[\w-]+\.[\w-]+\.[\w-]*$/.test(token)) throw new TokenRefused('malformed');
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, await keySet(), {
        issuer: o.issuer,
        audience,
        algorithms: [...(o.algorithms ?? DEFAULT_ALGORITHMS)],
        clockTolerance: o.clockSkewSeconds ?? 30,
        requiredClaims: ['exp'],
      }));
    } catch (err) {
      throw new TokenRefused(reasonOf(err));
    }
    if (!payload.sub) throw new TokenRefused('no subject');
    const name = [payload.preferred_username, payload.email].find((v): v is string => typeof v === 'string');
    return {
      subject: payload.sub,
      ...(name ? { name } : {}),
      roles: rolesAt(payload, o.roleClaim ?? 'realm_access.roles'),
      expiresAt: new Date((payload.exp ?? 0) * 1000),
    };
  };
}

/** The roles at a dotted path of the claims: a list of strings, or one string (space or comma separated). */
export function rolesAt(claims: Record<string, unknown>, dottedPath: string): string[] {
  let v: unknown = claims;
  for (const key of dottedPath.split('.'))
    v = v && typeof v === 'object' ? (v as Record<string, unknown>)[key] : undefined;
  if (Array.isArray(v)) return v.filter((r): r is string => typeof r === 'string');
  if (typeof v === 'string') return v.split(/[\s,]+/).filter(Boolean);
  return [];
}

async function jwksUriOf(issuer: string, fetchImpl: typeof globalThis.fetch): Promise<string> {
  const url = `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
  const res = await fetchImpl(url, { signal: AbortSignal.timeout(5_000) });
  if (!res.ok) throw new Error(`the issuer's discovery document answered ${res.status} (${url})`);
  const doc = (await res.json()) as { jwks_uri?: unknown; issuer?: unknown };
  if (doc.issuer !== issuer) throw new Error(`the discovery document at ${url} names another issuer`);
  if (typeof doc.jwks_uri !== 'string') throw new Error(`the discovery document at ${url} has no jwks_uri`);
  return doc.jwks_uri;
}

function reasonOf(err: unknown): RefusalReason {
  if (err instanceof errors.JWTExpired) return 'expired';
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === 'iss') return 'wrong issuer';
    if (err.claim === 'aud') return 'wrong audience';
    if (err.claim === 'nbf') return 'not yet valid';
    if (err.claim === 'exp') return 'expired';
    return 'malformed';
  }
  if (err instanceof errors.JOSEAlgNotAllowed || err instanceof errors.JOSENotSupported) return 'algorithm not allowed';
  if (err instanceof errors.JWKSNoMatchingKey || err instanceof errors.JWKSMultipleMatchingKeys) return 'unknown key';
  if (err instanceof errors.JWSSignatureVerificationFailed) return 'bad signature';
  if (err instanceof errors.JWKSTimeout || err instanceof errors.JWKSInvalid) return 'issuer unreachable';
  if (err instanceof errors.JOSEError) return 'malformed';
  // The key set could not be fetched (the issuer down, discovery refused).
  return 'issuer unreachable';
}
