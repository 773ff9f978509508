// Bearer tokens: clinics' from configuration, stored as SHA-256 hashes. The operator routes take the access token of
// the identity provider (OIDC_ISSUER: each operator as themselves, with their roles), and the one admin token for
// automation, which acts as an admin.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { decodeJwt } from 'jose';
import type { AuditEvent } from '../audit/types';
import { TokenRefused, type Caller, type TokenVerifier } from '../auth/tokens';
import type { ClinicConfig, Config } from '../config';
import { ruleParams } from '../contract/request-rules';
import { Actor } from './operation-schemas';
import { ApiProblem } from './problem';
import type { SourceGuard } from './source-guard';

/** The roles of the operator routes: read journeys; act on them and read patient data; dead letters, resets. */
export const ROLES = { viewer: 'journey-viewer', operator: 'journey-operator', admin: 'journey-admin' } as const;

/** Who calls an operator route. */
export interface Operator {
  /** The token's subject; `admin-token` for the static admin token. */
  subject: string;
  roles: readonly string[];
  /** The static admin token: no identity of its own, so the request names its actor. */
  staticToken: boolean;
  /** With the static admin token: who acts, from the request's `X-Actor` header (checked like a journey's actor). */
  actor?: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The clinic the bearer token acts as (set by the clinic routes' auth hook). */
    clinic: ClinicConfig | null;
    /** The operator the bearer token identifies (set by the operator routes' auth hook). */
    operator: Operator | null;
  }
}

export const sha256Hex = (token: string) => createHash('sha256').update(token).digest('hex');

function bearer(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  const m = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  return m?.[1];
}

// A refusal closes the connection: a body the caller is still sending is not read.
const unauthorized = (detail: string) =>
  new ApiProblem(401, 'unauthorized', detail, {
    headers: { 'www-authenticate': 'Bearer realm="patient-journeys"', connection: 'close' },
  });

/**
 * onRequest hook of the clinic routes: the token's hash picks the clinic. With a guard, a request without a valid
 * token is answered 429 while its source is past its refused sign-ins, and else counts for its source; a valid token
 * is never refused for its source's count (a clinic's address is shared by whoever else sends from behind it).
 */
export function clinicAuth(config: Pick<Config, 'clinics'>, guard?: SourceGuard) {
  const byHash = new Map<string, ClinicConfig>();
  for (const clinic of config.clinics) for (const h of clinic.apiTokenSha256) byHash.set(h, clinic);
  return async (request: FastifyRequest, _reply: FastifyReply) => {
    const token = bearer(request);
    const clinic = token ? byHash.get(sha256Hex(token)) : undefined;
    if (!clinic) {
      guard?.refused(request.ip);
      throw unauthorized(
        token ? 'the bearer token is not valid' : 'send the clinic API token as "Authorization: Bearer <token>"',
      );
    }
    request.clinic = clinic;
  };
}

/**
 * onRequest hook of the operator routes: the identity provider's access token, or the static admin token. They answer
 * 404 when neither is configured. A refusal is audited and logged with its reason, never the token; with a guard, a
 * refusal from a source past its refused sign-ins is answered 429 instead, and its refusals past the first few are
 * audited in aggregate. A valid token is never refused for its source's count.
 */
export function adminAuth(
  config: Pick<Config, 'api'>,
  o: { verify?: TokenVerifier; audit?: AuditFn; guard?: SourceGuard } = {},
) {
  const expected = config.api.adminTokenSha256 ? Buffer.from(config.api.adminTokenSha256, 'hex') : undefined;
  return async (request: FastifyRequest, _reply: FastifyReply) => {
    if (!expected && !o.verify) throw new ApiProblem(404, 'not-found', 'there is nothing at this address');
    const token = bearer(request);
    const refuse = async (reason: string) => {
      const alone = o.guard?.refused(request.ip) ?? true;
      if (!alone) return unauthorized(refusalDetail(Boolean(o.verify), reason));
      request.log.warn({ reason, route: request.routeOptions.url }, 'operator request refused');
      // A refusal the trail cannot take is a 503, as every record that fails is, not an unhandled 500.
      await recordFirst(o.audit, {
        action: 'admin.sign-in',
        subject: 'anonymous',
        roles: [],
        outcome: `refused: ${reason}`,
        details: { route: request.routeOptions.url ?? 'unmatched' },
      });
      return unauthorized(refusalDetail(Boolean(o.verify), reason));
    };
    if (!token) throw await refuse('missing');
    const given = Buffer.from(sha256Hex(token), 'hex');
    if (expected && timingSafeEqual(given, expected)) {
      const named = request.headers['x-actor'];
      const actor = typeof named === 'string' ? Actor.safeParse(named) : undefined;
      if (actor && !actor.success) {
        throw new ApiProblem(400, 'validation', `X-Actor: ${actor.error.issues[0]?.message ?? 'invalid'}`, {
          errors: [{ field: 'X-Actor', message: actor.error.issues[0]?.message ?? 'invalid' }],
        });
      }
      request.operator = {
        subject: 'admin-token',
        roles: [ROLES.admin],
        staticToken: true,
        ...(actor?.success ? { actor: actor.data } : {}),
      };
      return;
    }
    if (!o.verify) throw await refuse('not the admin token');
    try {
      const caller = await o.verify(token);
      request.operator = { subject: caller.subject, roles: caller.roles, staticToken: false };
    } catch (err) {
      if (err instanceof TokenRefused) throw await refuse(err.reason);
      throw err;
    }
  };
}

const refusalDetail = (withProvider: boolean, reason: string) =>
  withProvider
    ? `send your access token (or the admin token) as "Authorization: Bearer <token>": ${reason}`
    : reason === 'missing'
      ? 'send the admin token as "Authorization: Bearer <token>"'
      : 'the bearer token is not valid';

const actorProblem = (message: string) =>
  new ApiProblem(400, 'validation', `actor: ${message}`, {
    errors: [{ field: 'actor', message, ...ruleParams('actor-named') }],
  });

export type AuditFn = (event: AuditEvent) => unknown;

/**
 * On the record first: an access to patient data before the body is sent, an action before it takes effect. When the
 * trail cannot be written the request fails with a 503 and nothing is served or done.
 */
export async function recordFirst(audit: AuditFn | undefined, event: AuditEvent): Promise<void> {
  if (!audit) return;
  try {
    await audit(event);
  } catch {
    throw new ApiProblem(
      503,
      'audit-unavailable',
      'the audit trail could not record this request, so nothing was served or done; try again',
      { headers: { 'retry-after': '5' } },
    );
  }
}

/** How an action recorded first ended (best effort: it has happened; a trail that fails now is logged, not answered). */
export async function recordOutcome(
  audit: AuditFn | undefined,
  event: AuditEvent,
  log: { warn(obj: object, msg: string): void },
): Promise<void> {
  try {
    await audit?.(event);
  } catch (err) {
    log.warn({ err, action: event.action, outcome: event.outcome }, 'the outcome of an action could not be recorded');
  }
}

/** How many sign-ins a process remembers (the tokens seen lately); the oldest is forgotten first. */
const SIGN_IN_MEMORY = 10_000;

/**
 * Every sign-in to the admin API on the record: the verifier, wrapped so that an access token this process has not
 * seen yet appends `admin.sign-in` (the subject, the roles, the token's `iat`, `exp`, `jti` and readable name) once
 * it is verified. Later requests with the same token add nothing. A token is known by its `jti`, or else by its
 * SHA-256: the token itself is never kept. The memory is bounded (the most recently used tokens, each until it
 * expires). An append that fails fails the request (the sign-in is tried again with the next one): no unrecorded
 * sign-in.
 */
export function auditSignIns(
  verify: TokenVerifier,
  audit: AuditFn,
  o: { max?: number; now?: () => number } = {},
): TokenVerifier {
  const max = o.max ?? SIGN_IN_MEMORY;
  const now = o.now ?? Date.now;
  /** key -> the token's expiry (ms) and the sign-in's append (shared by requests that arrive together). */
  const seen = new Map<string, { expiresAt: number; recorded: Promise<unknown> }>();
  const forgetExpired = () => {
    const t = now();
    for (const [key, entry] of seen) {
      if (entry.expiresAt > t) break; // the oldest first: stop at the first one still valid
      seen.delete(key);
    }
  };
  return async (token) => {
    const caller: Caller = await verify(token);
    const claims = claimsOf(token!);
    const key = claims.jti ? `jti:${claims.jti}` : `sha256:${sha256Hex(token!)}`;
    const known = seen.get(key);
    if (known) {
      // Most recently used last: the oldest is forgotten first.
      seen.delete(key);
      seen.set(key, known);
      await known.recorded;
      return caller;
    }
    forgetExpired();
    while (seen.size >= max) seen.delete(seen.keys().next().value!);
    const recorded = Promise.resolve(
      audit({
        action: 'admin.sign-in',
        subject: caller.subject,
        roles: caller.roles,
        outcome: 'ok',
        details: {
          ...(claims.iat !== undefined ? { iat: new Date(claims.iat * 1000).toISOString() } : {}),
          exp: caller.expiresAt.toISOString(),
          ...(claims.jti ? { jti: claims.jti.slice(0, 200) } : {}),
          // The readable name beside the subject, as the codec server records it.
          ...(caller.name ? { name: caller.name } : {}),
        },
      }),
    );
    seen.set(key, { expiresAt: caller.expiresAt.getTime(), recorded });
    try {
      await recorded;
    } catch (err) {
      seen.delete(key);
      throw err;
    }
    return caller;
  };
}

/** The claims of a token already verified: `jti` and `iat` when they are there. */
function claimsOf(token: string): { jti?: string; iat?: number } {
  try {
    const payload = decodeJwt(token);
    return {
      ...(typeof payload.jti === 'string' && payload.jti !== '' ? { jti: payload.jti } : {}),
      ...(typeof payload.iat === 'number' ? { iat: payload.iat } : {}),
    };
  } catch {
    return {};
  }
}

/** preHandler of a route for these roles only: 403 (audited) for an operator without one of them. */
export function requireRole(audit: AuditFn | undefined, ...roles: string[]) {
  return async (request: FastifyRequest) => {
    const operator = request.operator;
    if (operator && operator.roles.some((r) => roles.includes(r))) return;
    await recordFirst(audit, {
      action: 'admin.access',
      subject: operator?.subject ?? 'anonymous',
      roles: operator?.roles ?? [],
      outcome: 'forbidden',
      details: { route: request.routeOptions.url ?? 'unmatched', method: request.method },
    });
    throw new ApiProblem(403, 'forbidden', `this needs the role ${roles.join(' or ')}`);
  };
}

/**
 * Who the journey records as acting: the signed-in operator's subject, never a typed name. The static admin token
 * has no identity, so its requests name their actor.
 */
export function actorOf(request: FastifyRequest, typed: string | undefined): string {
  const operator = request.operator;
  if (!operator || operator.staticToken) {
    const actor = typed ?? operator?.actor;
    if (!actor) throw actorProblem('who acts is required with the admin token');
    return actor;
  }
  if (typed !== undefined && typed !== operator.subject) {
    throw actorProblem(`the actor is who signed in (${operator.subject}); leave it out, or send that`);
  }
  return operator.subject;
}

/**
 * Who reads patient data or the record, for its audit record: a signed-in person is their subject (nothing to add);
 * the static admin token, which names nobody, must say who reads in `X-Actor` (400 without it).
 */
export function readerOf(request: FastifyRequest): { actor?: string } {
  const operator = request.operator;
  if (!operator?.staticToken) return {};
  if (!operator.actor) {
    throw new ApiProblem(
      400,
      'validation',
      'X-Actor: who reads is required with the admin token (an operator name or a ticket; never patient data)',
      { errors: [{ field: 'X-Actor', message: 'required with the admin token' }] },
    );
  }
  return { actor: operator.actor };
}

export function requireClinic(request: FastifyRequest): ClinicConfig {
  if (!request.clinic) throw unauthorized('no clinic');
  return request.clinic;
}
