// The codec server with an identity provider: over real HTTP, a decode with no token answers 401, with a viewer's token
// 200 with `[redacted for this role]` in place of each payload (encode 403), with an operator's token 200 (decrypted), and the audit trail holds all three, hash-chained, without a payload.
// A token in the URL is not accepted; the static token stays possible for automation, in the header only.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { verifyAuditChain } from '../../src/audit/chain';
import { FileAuditLog } from '../../src/audit/file';
import type { AuditEvent, AuditRecord } from '../../src/audit/types';
import { tokenVerifier } from '../../src/auth/tokens';
import { EncryptionCodec } from '../../src/codec/encryption-codec';
import { buildCodecServer } from '../../src/codec/server';
import { parseEncryptionKeys } from '../../src/encryption-keys';
import { startIssuer, token, type Issuer } from '../support/oidc-issuer';

const STATIC = randomBytes(24).toString('base64url');

describe('the codec server, callers known by their access token', () => {
  let issuer: Issuer;
  let app: FastifyInstance;
  let base: string;
  let dir: string;
  let audit: FileAuditLog;
  let sealed: { metadata: Record<string, string>; data: string }[];
  const warnings: { message: string; meta: Record<string, unknown> }[] = [];

  beforeAll(async () => {
    issuer = await startIssuer();
    dir = mkdtempSync(path.join(os.tmpdir(), 'codec-oidc-'));
    audit = new FileAuditLog(path.join(dir, 'audit.jsonl'));
    const codec = new EncryptionCodec(parseEncryptionKeys(`k1:${randomBytes(32).toString('base64')}`));
    const [payload] = await codec.encode([
      { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from('{"firstName":"Ada"}') },
    ]);
    sealed = [
      {
        metadata: Object.fromEntries(
          Object.entries(payload!.metadata!).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
        ),
        data: Buffer.from(payload!.data!).toString('base64'),
      },
    ];
    app = buildCodecServer({
      codec,
      corsOrigins: ['http://127.0.0.1:8233'],
      token: STATIC,
      oidc: {
        verify: tokenVerifier({ issuer: issuer.url, audience: 'temporal-ui' }),
        decodeRoles: ['journey-operator', 'journey-admin'],
      },
      audit: (event) => audit.append(event),
      warn: (message, meta) => warnings.push({ message, meta }),
    });
    base = await app.listen({ host: '127.0.0.1', port: 0 });
  });

  afterAll(async () => {
    await app.close();
    await issuer.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const decode = (headers: Record<string, string> = {}, route = '/decode') =>
    fetch(`${base}${route}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-namespace': 'default', ...headers },
      body: JSON.stringify({ payloads: sealed }),
    });
  const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

  it('answers 401 without a token, a redaction marker to a viewer (encode 403), 200 to an operator; all on the trail', async () => {
    const none = await decode();
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    expect(await none.json()).toEqual({ error: 'a valid access token is required (missing)' });

    const viewer = await token(issuer.keys[0]!, { iss: issuer.url, sub: 'viewer-1', roles: ['journey-viewer'] });
    const redacted = await decode(bearer(viewer));
    expect(redacted.status).toBe(200);
    const marker = (await redacted.json()) as { payloads: { metadata: Record<string, string>; data: string }[] };
    expect(marker.payloads).toHaveLength(1);
    expect(Buffer.from(marker.payloads[0]!.data, 'base64').toString()).toBe('"[redacted for this role]"');
    expect(Buffer.from(marker.payloads[0]!.metadata.encoding!, 'base64').toString()).toBe('json/plain');
    expect((await decode(bearer(viewer), '/encode')).status).toBe(403);

    const operator = await token(issuer.keys[0]!, { iss: issuer.url, sub: 'operator-1', roles: ['journey-operator'] });
    const ok = await decode(bearer(operator));
    expect(ok.status).toBe(200);
    const body = (await ok.json()) as { payloads: { data: string }[] };
    expect(Buffer.from(body.payloads[0]!.data, 'base64').toString()).toBe('{"firstName":"Ada"}');

    await audit.flush();
    const lines = readFileSync(audit.file, 'utf8').trim().split('\n');
    const records = lines.map((l) => JSON.parse(l) as AuditRecord);
    expect(records.map((r) => [r.action, r.subject, r.roles, r.outcome, r.details])).toEqual([
      ['codec.decode', 'anonymous', [], 'refused: missing', { namespace: 'default' }],
      [
        'codec.decode',
        'viewer-1',
        ['journey-viewer'],
        'redacted for this role',
        { namespace: 'default', payloads: 1, name: 'olivia.operator' },
      ],
      ['codec.encode', 'viewer-1', ['journey-viewer'], 'forbidden', { namespace: 'default', name: 'olivia.operator' }],
      [
        'codec.decode',
        'operator-1',
        ['journey-operator'],
        'ok',
        { namespace: 'default', payloads: 1, name: 'olivia.operator' },
      ],
    ]);
    expect(verifyAuditChain(lines)).toEqual({ ok: true, records: 4 });
    // No payload and no token in the trail.
    const trail = readFileSync(audit.file, 'utf8');
    for (const secret of ['Ada', sealed[0]!.data, operator.split('.')[2]!]) expect(trail).not.toContain(secret);
  });

  it('refuses each bad token with a log line naming the reason, never the token', async () => {
    warnings.length = 0;
    const expired = await token(issuer.keys[0]!, { iss: issuer.url, expSec: -600 });
    const foreign = await token(issuer.keys[0]!, { iss: 'https://elsewhere.example/realms/x' });
    for (const t of [expired, foreign, 'garbage']) expect((await decode(bearer(t))).status).toBe(401);
    expect(warnings.map((w) => w.message)).toEqual([
      'codec decode: refused: expired',
      'codec decode: refused: wrong issuer',
      'codec decode: refused: malformed',
    ]);
    expect(JSON.stringify(warnings)).not.toContain(expired.split('.')[2]);
  });

  it('takes no token in a URL, and the static token in the header only (automation)', async () => {
    // A token in the path identifies nobody (401), and there is no such route for whoever is identified (404).
    expect((await decode({}, `/${STATIC}/decode`)).status).toBe(401);
    expect((await decode(bearer(STATIC), `/${STATIC}/decode`)).status).toBe(404);
    expect((await decode(bearer(STATIC))).status).toBe(200);
    await audit.flush();
    const last = readFileSync(audit.file, 'utf8').trim().split('\n').pop()!;
    expect(JSON.parse(last)).toMatchObject({ subject: 'machine:automation', roles: ['automation'], outcome: 'ok' });
  });

  it('answers health checks without a token', async () => {
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  });
});

describe('the codec server without an identity provider', () => {
  it('still puts every decode on the record: the static token, or loopback without one', async () => {
    const codec = new EncryptionCodec(parseEncryptionKeys(`k1:${randomBytes(32).toString('base64')}`));
    const events: AuditEvent[] = [];
    for (const token of [STATIC, undefined]) {
      const app = buildCodecServer({
        codec,
        corsOrigins: [],
        ...(token ? { token } : {}),
        audit: (e) => events.push(e),
      });
      const res = await app.inject({
        method: 'POST',
        url: '/decode',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        payload: { payloads: [] },
      });
      expect(res.statusCode).toBe(200);
      await app.close();
    }
    expect(events.map((e) => [e.subject, e.outcome, e.details?.payloads])).toEqual([
      ['machine:automation', 'ok', 0],
      ['loopback', 'ok', 0],
    ]);
  });
});
