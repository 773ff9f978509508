// The codec server: decrypted payloads for the Temporal Web UI. With an identity provider, every request carries the
// signed-in person's access token (the UI's `passAccessToken`), checked on each request, and only the decode roles
// decode; every decode is on the audit trail. Without one, on loopback unless it has a static token, sent in the
// Authorization header only (docs/design-notes.md#the-codec-servers-token). On loopback it answers to its own address
// only (`Host`), so a browser page cannot reach it under another name (DNS rebinding).
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { timingSafeEqual } from 'node:crypto';
import { RefusalCounter } from '../audit/refusals';
import { boundedLabel, type AuditEvent } from '../audit/types';
import { TokenRefused, type Caller, type TokenVerifier } from '../auth/tokens';
import { hostChecker, loggableHost, MISDIRECTED } from './host-check';
import { redactedMarker } from './patient-codec';

interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}

export interface CodecServerOptions {
  /**
   * Serve HTTPS with this certificate and key (PEM). The Web UI sends the signed-in person's access token only to
   * an https:// codec endpoint.
   */
  https?: { cert: Buffer | string; key: Buffer | string };
  codec: PayloadCodec;
  /** Origins allowed to call from a browser, e.g. the Temporal UI's. */
  corsOrigins: string[];
  /**
   * The `Host` names it answers to (`name:port`, or `name` for any port); any other gets 421 before anything else is
   * read or answered, a preflight and /healthz included: a page whose name was made to resolve to this address (DNS
   * rebinding) is refused. Unset: any `Host`.
   */
  allowedHosts?: readonly string[];
  /**
   * A fixed token. Alone: requests need `Authorization: Bearer <token>` (never in a URL, where proxies and browser
   * histories keep it).
   * With `oidc`: accepted in the header only, for automation that has no identity of its own (an explicit setting).
   */
  token?: string;
  /** Callers identified by their access token on every request; `decodeRoles` may encode and decode. */
  oidc?: { verify: TokenVerifier; decodeRoles: readonly string[] };
  /** Each encode and decode, allowed or refused (never a payload). */
  audit?: (event: AuditEvent) => unknown;
  /** Why a request was refused (never the token). */
  warn?: (message: string, meta: Record<string, unknown>) => void;
  /** Refused requests a source address may make in a minute before it is answered 429 (60). */
  refusalsPerMinute?: number;
  /** The machine the static token stands for, on the record as `machine:<name>` (CODEC_SERVER_TOKEN_NAME). */
  tokenName?: string;
}

/**
 * The caller the static token stands for in the audit trail: a machine, never a person (people decode with their own
 * access token), under the name the deployment gives it (CODEC_SERVER_TOKEN_NAME).
 */
export function staticTokenCaller(name = 'automation'): Caller {
  return { subject: `machine:${name}`, roles: ['automation'], expiresAt: new Date(8.64e15) };
}

/** The caller without any token: only on loopback, where whoever can reach it runs on this host. */
export const LOOPBACK_CALLER: Caller = { subject: 'loopback', roles: [], expiresAt: new Date(8.64e15) };

const bearerOf = (header: string | undefined) => /^Bearer\s+(\S+)$/i.exec(header ?? '')?.[1];

const fromJson = (p: JsonPayload): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
  data: Buffer.from(p.data ?? '', 'base64'),
});
const toJson = (p: Payload): JsonPayload => ({
  metadata: Object.fromEntries(
    Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
  ),
  data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
});

// Proto JSON leaves out an empty list, so `{}` is a request with no payloads (the CLI sends it for a query).
const PayloadsBody = {
  type: 'object',
  properties: {
    payloads: {
      type: 'array',
      maxItems: 10_000,
      items: {
        type: 'object',
        properties: {
          metadata: { type: 'object', additionalProperties: { type: 'string' } },
          data: { type: 'string' },
        },
      },
    },
  },
} as const;

export function buildCodecServer(options: CodecServerOptions): FastifyInstance {
  // The HTTPS server's type differs from the plain one's in Fastify's generics only; the routes are the same.
  const app = Fastify({
    logger: false,
    bodyLimit: 32 * 1024 * 1024,
    ...(options.https ? { https: options.https } : {}),
  }) as unknown as FastifyInstance;
  const allowed = new Set(options.corsOrigins);
  const expected = options.token ? Buffer.from(`Bearer ${options.token}`) : undefined;
  const tokenCaller = staticTokenCaller(options.tokenName);
  const same = (given: Buffer, want: Buffer) => given.length === want.length && timingSafeEqual(given, want);
  const hostAllowed = options.allowedHosts ? hostChecker(options.allowedHosts) : undefined;
  // Each refused name is said once (up to 100): a page retrying does not flood the log.
  const refusedHosts = new Set<string>();

  app.addHook('onRequest', async (request, reply) => {
    if (hostAllowed && !hostAllowed(request.headers.host)) {
      const host = loggableHost(request.headers.host);
      if (refusedHosts.size < 100 && !refusedHosts.has(host)) {
        refusedHosts.add(host);
        options.warn?.('codec: refused a request for another host', { host, status: MISDIRECTED });
      }
      return reply
        .code(MISDIRECTED)
        .header('connection', 'close')
        .send({ error: 'this server answers to its own address only (Host)' });
    }
    const origin = request.headers.origin;
    if (origin && allowed.has(origin)) {
      reply.header('access-control-allow-origin', origin);
      reply.header('access-control-allow-credentials', 'true');
      reply.header('vary', 'origin');
    }
    if (request.method === 'OPTIONS') {
      reply.header('access-control-allow-methods', 'POST, OPTIONS');
      // The Web UI sends the person's ID token beside the access token (Authorization-Extras); it is not read here.
      reply.header('access-control-allow-headers', 'content-type, x-namespace, authorization, authorization-extras');
      reply.header('access-control-max-age', '600');
      return reply.code(204).send();
    }
    // Liveness says nothing about any payload: open to health checks without the token.
    if (request.method === 'GET' && request.url === '/healthz') return;
    if (options.oidc) return identify(request, reply);
    if (expected) {
      if (throttle(request, reply)) return reply;
      if (!same(Buffer.from(request.headers.authorization ?? ''), expected)) {
        if (refusals.failed(request.ip)) {
          await options.audit?.({
            action: `codec.${operationOf(request)}`,
            subject: 'anonymous',
            roles: [],
            outcome: 'refused: not the static token',
            details: { namespace: namespaceOf(request) },
          });
        }
        return reply.code(401).send({ error: 'a valid token is required' });
      }
      callers.set(request, tokenCaller);
    } else {
      // No identity at all: whoever reaches the loopback address (a local stack); still on the record.
      callers.set(request, LOOPBACK_CALLER);
    }
  });

  const callers = new WeakMap<FastifyRequest, Caller>();
  // What goes on the record from a request is bounded and cleaned: a caller cannot write into the trail at will.
  const namespaceOf = (request: FastifyRequest) => boundedLabel(request.headers['x-namespace']) || 'unknown';
  // The operation the matched route serves, never read from the raw URL (`/decode?x=/encode` is a decode).
  const operationOf = (request: FastifyRequest) => {
    const route = request.routeOptions.url;
    return route === '/encode' ? 'encode' : route === '/decode' ? 'decode' : 'unmatched';
  };
  // Refusals counted per source address: the first few of a minute on the record one by one, the rest in one record;
  // past the limit the source is answered 429 before its token is looked at.
  const refusals = new RefusalCounter({
    bulkAction: 'codec.refused-in-bulk',
    maxFailures: options.refusalsPerMinute ?? 60,
    windowMs: 60_000,
    auditEach: 10,
    ...(options.audit ? { audit: options.audit } : {}),
  });
  app.addHook('onClose', () => refusals.close());
  /** 429 while the source is past its refusals; true when answered. */
  const throttle = (request: FastifyRequest, reply: FastifyReply): boolean => {
    const retryAfter = refusals.throttled(request.ip);
    if (retryAfter === undefined) return false;
    void reply
      .code(429)
      .header('retry-after', String(retryAfter))
      .header('connection', 'close')
      .send({ error: `too many refused requests from this address; retry in ${retryAfter} s` });
    return true;
  };

  /** The caller by their access token: 401 without a valid one, 403 without a decode role; both audited. */
  async function identify(request: FastifyRequest, reply: FastifyReply) {
    if (throttle(request, reply)) return reply;
    const oidc = options.oidc!;
    const token = bearerOf(request.headers.authorization);
    const refuse = async (status: 401 | 403, outcome: string, caller?: Caller) => {
      // An anonymous refusal counts against its source (recorded alone up to ten a minute, then in one record); a
      // signed-in person without a decode role is named, and recorded each time.
      if (status === 403 || refusals.failed(request.ip)) {
        options.warn?.(`codec ${operationOf(request)}: ${outcome}`, {
          status,
          subject: caller?.subject,
          namespace: namespaceOf(request),
        });
        await options.audit?.({
          action: `codec.${operationOf(request)}`,
          subject: caller?.subject ?? 'anonymous',
          roles: caller?.roles ?? [],
          outcome,
          details: { namespace: namespaceOf(request), ...(caller?.name ? { name: boundedLabel(caller.name) } : {}) },
        });
      }
      if (status === 401) reply.header('www-authenticate', 'Bearer');
      return reply.code(status).send({
        error:
          status === 401
            ? `a valid access token is required (${outcome.replace('refused: ', '')})`
            : 'this role may not decode patient data',
      });
    };
    let caller: Caller;
    if (token && expected && same(Buffer.from(`Bearer ${token}`), expected)) {
      caller = tokenCaller;
    } else {
      try {
        caller = await oidc.verify(token);
      } catch (err) {
        if (err instanceof TokenRefused) return refuse(401, `refused: ${err.reason}`);
        throw err;
      }
      if (!caller.roles.some((r) => oidc.decodeRoles.includes(r))) {
        // A signed-in person without a decode role reads what a payload is, not what it says: each one answered as
        // the clear marker `[redacted for this role]` (on the record), where the UI would show the ciphertext under
        // an error. Encoding stays refused.
        if (operationOf(request) !== 'decode') return refuse(403, 'forbidden', caller);
        redacted.add(request);
      }
    }
    callers.set(request, caller);
  }
  /** Decodes answered with the role's marker in place of each payload. */
  const redacted = new WeakSet<FastifyRequest>();

  /** The audit record of a codec operation that ran. */
  const audited = async (request: FastifyRequest, outcome: string, payloads: number) => {
    const caller = callers.get(request);
    if (!caller || !options.audit) return;
    await options.audit({
      action: `codec.${operationOf(request)}`,
      subject: caller.subject,
      roles: caller.roles,
      outcome,
      // The readable name beside the subject, for the person reading the trail.
      details: {
        namespace: namespaceOf(request),
        payloads,
        ...(caller.name ? { name: boundedLabel(caller.name) } : {}),
      },
    });
  };
  app.options('/*', () => undefined);

  for (const op of ['encode', 'decode'] as const) {
    app.post<{ Body: { payloads?: JsonPayload[] } }>(
      `/${op}`,
      { schema: { body: PayloadsBody } },
      async (request, reply) => {
        const payloads = request.body.payloads ?? [];
        if (redacted.has(request)) {
          try {
            await audited(request, 'redacted for this role', payloads.length);
          } catch {
            return reply
              .code(503)
              .header('retry-after', '5')
              .send({ error: 'the audit trail could not record this decode' });
          }
          return { payloads: payloads.map(() => toJson(redactedMarker())) };
        }
        let out: Payload[];
        try {
          out = await options.codec[op](payloads.map(fromJson));
        } catch (err) {
          await audited(request, 'failed', payloads.length).catch(() => undefined);
          // The codec's messages name key ids and shapes, never payload content.
          return reply.code(400).send({ error: err instanceof Error ? err.message : `cannot ${op}` });
        }
        // On the record before anything decoded leaves: a trail that cannot be written serves nothing.
        try {
          await audited(request, 'ok', payloads.length);
        } catch {
          options.warn?.(`codec ${op}: the audit trail could not record it; nothing was served`, { status: 503 });
          return reply
            .code(503)
            .header('retry-after', '5')
            .send({ error: `the audit trail could not record this ${op}; nothing was served (try again)` });
        }
        return { payloads: out.map(toJson) };
      },
    );
  }
  app.get('/healthz', () => ({ ok: true }));
  return app;
}
