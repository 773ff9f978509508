import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { EncryptionCodec, METADATA_KEY_ID } from '../../src/codec/encryption-codec';
import { parseEncryptionKeys } from '../../src/encryption-keys';
import { buildCodecServer } from '../../src/codec/server';
import { loadCodecConfig, loadConfig } from '../../src/config';
import { dataConverterOf } from '../../src/temporal';

const key = (id: string) => ({ id, key: randomBytes(32) });
const PHI = { firstName: 'Maria', lastName: 'Gonzalez', email: 'maria@example.test', dob: '1979-03-02' };
const payload = (): Payload => defaultPayloadConverter.toPayload(PHI);
const str = (b?: Uint8Array | null) => Buffer.from(b ?? []).toString('utf8');

describe('EncryptionCodec', () => {
  it('encrypts with AES-256-GCM, names the key, and hides the content', async () => {
    const codec = new EncryptionCodec([key('k1')]);
    const [sealed] = await codec.encode([payload()]);
    expect(str(sealed!.metadata!.encoding)).toBe('binary/encrypted');
    expect(str(sealed!.metadata![METADATA_KEY_ID])).toBe('k1');
    expect(str(sealed!.data)).not.toContain('Maria');
    expect(str(sealed!.data)).not.toContain('1979-03-02');
    const [opened] = await codec.decode([sealed!]);
    expect(defaultPayloadConverter.fromPayload(opened!)).toEqual(PHI);
  });

  it('uses a fresh nonce each time', async () => {
    const codec = new EncryptionCodec([key('k1')]);
    const [a, b] = await codec.encode([payload(), payload()]);
    expect(Buffer.from(a!.data!).equals(Buffer.from(b!.data!))).toBe(false);
  });

  it('decrypts payloads of an older key after a rotation, and encrypts with the new one', async () => {
    const old = key('2026-05');
    const [sealedOld] = await new EncryptionCodec([old]).encode([payload()]);
    const rotated = new EncryptionCodec([key('2026-11'), old]);
    expect(defaultPayloadConverter.fromPayload((await rotated.decode([sealedOld!]))[0]!)).toEqual(PHI);
    expect(str((await rotated.encode([payload()]))[0]!.metadata![METADATA_KEY_ID])).toBe('2026-11');
  });

  it('refuses a payload of an unknown key, naming the key id only', async () => {
    const [sealed] = await new EncryptionCodec([key('gone')]).encode([payload()]);
    await expect(new EncryptionCodec([key('k2')]).decode([sealed!])).rejects.toThrow('unknown key id "gone"');
  });

  it('detects tampering', async () => {
    const codec = new EncryptionCodec([key('k1')]);
    const [sealed] = await codec.encode([payload()]);
    const data = Buffer.from(sealed!.data!);
    data[20] = data[20]! ^ 0xff;
    await expect(codec.decode([{ ...sealed!, data }])).rejects.toThrow();
  });

  it('passes payloads that were never encrypted through', async () => {
    const codec = new EncryptionCodec([key('k1')]);
    const plain = payload();
    expect(await codec.decode([plain])).toEqual([plain]);
  });

  it('parses keys from configuration and rejects bad ones', () => {
    const k = randomBytes(32).toString('base64');
    expect(parseEncryptionKeys(`a:${k}, b:${k}`).map((x) => x.id)).toEqual(['a', 'b']);
    expect(() => parseEncryptionKeys('a:c2hvcnQ=')).toThrow('32 bytes');
    expect(() => parseEncryptionKeys('nokey')).toThrow('id:base64key');
  });
});

describe('codec server', () => {
  const codec = new EncryptionCodec([key('k1')]);
  const app = buildCodecServer({ codec, corsOrigins: ['http://127.0.0.1:8233'], token: 'operator-token' });
  afterAll(() => app.close());
  const asJson = (p: Payload) => ({
    metadata: Object.fromEntries(Object.entries(p.metadata!).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
    data: Buffer.from(p.data!).toString('base64'),
  });

  it('decodes for the UI with CORS and a token', async () => {
    const [sealed] = await codec.encode([payload()]);
    const res = await app.inject({
      method: 'POST',
      url: '/decode',
      headers: { origin: 'http://127.0.0.1:8233', authorization: 'Bearer operator-token', 'x-namespace': 'default' },
      payload: { payloads: [asJson(sealed!)] },
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe('http://127.0.0.1:8233');
    const decoded = res.json<{ payloads: { data: string }[] }>().payloads[0]!;
    expect(JSON.parse(Buffer.from(decoded.data, 'base64').toString('utf8'))).toEqual(PHI);
  });

  it('takes a body without payloads as an empty list, as proto JSON writes it', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/encode',
      headers: { authorization: 'Bearer operator-token' },
      payload: {},
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ payloads: [] });
  });

  it('answers the browser preflight', async () => {
    const res = await app.inject({
      method: 'OPTIONS',
      url: '/decode',
      headers: { origin: 'http://127.0.0.1:8233', 'access-control-request-method': 'POST' },
    });
    expect(res.statusCode).toBe(204);
    expect(res.headers['access-control-allow-headers']).toContain('x-namespace');
  });

  it('refuses callers without the token and origins it does not know', async () => {
    const res = await app.inject({ method: 'POST', url: '/decode', payload: { payloads: [] } });
    expect(res.statusCode).toBe(401);
    const foreign = await app.inject({
      method: 'POST',
      url: '/decode',
      headers: { origin: 'http://evil.example', authorization: 'Bearer operator-token' },
      payload: { payloads: [] },
    });
    expect(foreign.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('takes the token in the Authorization header only, never in a URL', async () => {
    const [sealed] = await codec.encode([payload()]);
    // A token in the path (where proxies and browser histories keep it) opens nothing.
    for (const url of ['/operator-token/decode', '/operator-token/encode']) {
      const inPath = await app.inject({ method: 'POST', url, payload: { payloads: [asJson(sealed!)] } });
      expect(inPath.statusCode).toBe(401);
      expect(inPath.body).not.toContain('payloads');
      const alsoHeader = await app.inject({
        method: 'POST',
        url,
        headers: { authorization: 'Bearer operator-token' },
        payload: { payloads: [asJson(sealed!)] },
      });
      expect(alsoHeader.statusCode).toBe(404);
    }
    // Health checks need no token.
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    // Without a token configured there is no such route either.
    const open = buildCodecServer({ codec, corsOrigins: [] });
    expect((await open.inject({ method: 'POST', url: '/guess/decode', payload: { payloads: [] } })).statusCode).toBe(
      404,
    );
    await open.close();
  });

  it('refuses to listen beyond loopback without a token, telling to send the token in a header, never a URL', () => {
    const keys = `k:${randomBytes(32).toString('base64')}`;
    for (const host of ['0.0.0.0', '::', '10.1.2.3', 'codec.internal']) {
      expect(() => loadCodecConfig({ PAYLOAD_ENCRYPTION_KEYS: keys, CODEC_HOST: host })).toThrow(
        /CODEC_HOST: .* reachable from other hosts.*CODEC_SERVER_TOKEN.*"Authorization: Bearer <token>" \(never in a URL\)/,
      );
      expect(() => loadCodecConfig({ PAYLOAD_ENCRYPTION_KEYS: keys, CODEC_HOST: host })).not.toThrow(
        /<codec>\/<token>/,
      );
    }
    for (const host of ['127.0.0.1', 'localhost', '::1', '127.0.0.2']) {
      expect(loadCodecConfig({ PAYLOAD_ENCRYPTION_KEYS: keys, CODEC_HOST: host }).codec.serverHost).toBe(host);
    }
    const token = randomBytes(24).toString('base64url');
    expect(
      loadCodecConfig({ PAYLOAD_ENCRYPTION_KEYS: keys, CODEC_HOST: '0.0.0.0', CODEC_SERVER_TOKEN: token }).codec
        .serverToken,
    ).toBe(token);
  });

  it('answers 400 with the reason for a payload it cannot decrypt', async () => {
    const [other] = await new EncryptionCodec([key('other')]).encode([payload()]);
    const res = await app.inject({
      method: 'POST',
      url: '/decode',
      headers: { authorization: 'Bearer operator-token' },
      payload: { payloads: [asJson(other!)] },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json<{ error: string }>().error).toContain('unknown key id "other"');
  });
});

describe('payload encryption in configuration', () => {
  const base = { WEBHOOK_SECRET: 'webhook-secret-0123456789' };

  it('gives every client and the worker the encrypting converter', () => {
    const config = loadConfig({ ...base, PAYLOAD_ENCRYPTION_KEYS: `new:${randomBytes(32).toString('base64')}` });
    const converter = dataConverterOf(config)!;
    expect(converter.payloadCodecs).toHaveLength(1);
    expect((converter.payloadCodecs![0] as EncryptionCodec).activeKeyId).toBe('new');
    expect(converter.failureConverterPath).toMatch(/failure-converter/);
  });

  it('refuses to run without keys unless encryption is switched off on purpose', () => {
    expect(() => dataConverterOf(loadConfig(base))).toThrow('PAYLOAD_ENCRYPTION_KEYS: required');
    expect(dataConverterOf(loadConfig({ ...base, PAYLOAD_ENCRYPTION_DISABLED: 'true' }))).toBeUndefined();
  });

  it('names a malformed key without echoing it', () => {
    expect(() => loadConfig({ ...base, PAYLOAD_ENCRYPTION_KEYS: 'k1:c2VjcmV0LXZhbHVl' })).toThrow(
      /PAYLOAD_ENCRYPTION_KEYS: encryption key k1: must decode to 32 bytes/,
    );
    try {
      loadConfig({ ...base, PAYLOAD_ENCRYPTION_KEYS: 'k1:c2VjcmV0LXZhbHVl' });
    } catch (err) {
      expect(String(err)).not.toContain('c2VjcmV0LXZhbHVl');
    }
  });
});
