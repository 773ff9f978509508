// The codec server: decrypted payloads for the Temporal Web UI, on loopback unless it has a token; the token may be
// the first path segment, as the Web UI sends no header of its own (docs/design-notes.md#the-codec-servers-token).
import Fastify, { type FastifyInstance } from 'fastify';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { timingSafeEqual } from 'node:crypto';

interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}

export interface CodecServerOptions {
  codec: PayloadCodec;
  /** Origins allowed to call from a browser, e.g. the Temporal UI's. */
  corsOrigins: string[];
  /** When set, requests need `Authorization: Bearer <token>` or the token as their first path segment. */
  token?: string;
}

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
  const app = Fastify({ logger: false, bodyLimit: 32 * 1024 * 1024 });
  const allowed = new Set(options.corsOrigins);
  const expected = options.token ? Buffer.from(`Bearer ${options.token}`) : undefined;
  const expectedPath = options.token ? Buffer.from(options.token) : undefined;
  const same = (given: Buffer, want: Buffer) => given.length === want.length && timingSafeEqual(given, want);
  /** The token of a `/<token>/encode|decode` URL, decoded; undefined for the bare routes. */
  const pathToken = (url: string): Buffer | undefined => {
    const m = /^\/([^/?]+)\/(?:encode|decode)(?:\?|$)/.exec(url);
    if (!m) return undefined;
    try {
      return Buffer.from(decodeURIComponent(m[1]!));
    } catch {
      return Buffer.alloc(0);
    }
  };

  app.addHook('onRequest', async (request, reply) => {
    const origin = request.headers.origin;
    if (origin && allowed.has(origin)) {
      reply.header('access-control-allow-origin', origin);
      reply.header('access-control-allow-credentials', 'true');
      reply.header('vary', 'origin');
    }
    if (request.method === 'OPTIONS') {
      reply.header('access-control-allow-methods', 'POST, OPTIONS');
      reply.header('access-control-allow-headers', 'content-type, x-namespace, authorization');
      reply.header('access-control-max-age', '600');
      return reply.code(204).send();
    }
    // Liveness says nothing about any payload: open to health checks without the token.
    if (request.method === 'GET' && request.url === '/healthz') return;
    if (expected && expectedPath) {
      const inPath = pathToken(request.url);
      const ok = inPath ? same(inPath, expectedPath) : same(Buffer.from(request.headers.authorization ?? ''), expected);
      if (!ok) return reply.code(401).send({ error: 'a valid token is required' });
    } else if (pathToken(request.url)) {
      return reply.code(404).send({ error: 'not found' });
    }
  });
  app.options('/*', () => undefined);

  for (const op of ['encode', 'decode'] as const) {
    for (const url of [`/${op}`, `/:token/${op}`]) {
      app.post<{ Body: { payloads?: JsonPayload[] } }>(
        url,
        { schema: { body: PayloadsBody } },
        async (request, reply) => {
          try {
            const out = await options.codec[op]((request.body.payloads ?? []).map(fromJson));
            return { payloads: out.map(toJson) };
          } catch (err) {
            // The codec's messages name key ids and shapes, never payload content.
            return reply.code(400).send({ error: err instanceof Error ? err.message : `cannot ${op}` });
          }
        },
      );
    }
  }
  app.get('/healthz', () => ({ ok: true }));
  return app;
}
