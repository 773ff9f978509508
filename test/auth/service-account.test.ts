// A service account's tokens for the Temporal connection (client credentials over real HTTP): fetched with the
// client's secret in HTTP Basic, kept, fetched again before they expire and handed to the connections; a refusal names
// the account, the endpoint and the provider's error, never the secret; the settings name what is missing.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ServiceAccountTokens } from '../../src/auth/service-account';
import { ConfigError, loadTemporalConfig } from '../../src/config';

const SECRET = 'worker-secret-0f8e7d';

describe('service account tokens (client credentials)', () => {
  let server: Server;
  let tokenUrl: string;
  const seen: { auth: string | undefined; body: string }[] = [];
  let answer: { status: number; body: unknown } = { status: 200, body: {} };
  let issued = 0;

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ auth: req.headers.authorization, body });
        const out =
          answer.status === 200
            ? { access_token: `token-${++issued}`, expires_in: 2, token_type: 'Bearer' }
            : answer.body;
        res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(out));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    tokenUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  beforeEach(() => {
    seen.length = 0;
    answer = { status: 200, body: {} };
  });

  it('asks with the secret in HTTP Basic, keeps the token, and fetches the next one before it expires', async () => {
    const tokens = new ServiceAccountTokens({ clientId: 'journey-worker', clientSecret: SECRET, tokenUrl });
    const handed: string[] = [];
    tokens.onToken((t) => void handed.push(t));
    try {
      const first = await tokens.token();
      expect(await tokens.token()).toBe(first);
      expect(seen).toHaveLength(1);
      expect(seen[0]!.auth).toBe(`Basic ${Buffer.from(`journey-worker:${SECRET}`).toString('base64')}`);
      expect(seen[0]!.body).toBe('grant_type=client_credentials');
      // A 2 s token is fetched again at three quarters of its life: a connection never holds an expired one.
      await new Promise((r) => setTimeout(r, 1_900));
      expect(seen).toHaveLength(2);
      expect(tokens.current()).not.toBe(first);
      expect(handed).toEqual([first, tokens.current()]);
    } finally {
      tokens.stop();
    }
  });

  it('names the account, the endpoint and the provider’s error when refused, never the secret', async () => {
    answer = { status: 401, body: { error: 'unauthorized_client', error_description: 'Invalid client secret' } };
    const tokens = new ServiceAccountTokens({ clientId: 'journey-api', clientSecret: SECRET, tokenUrl });
    const err = await tokens.token().then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.message).toBe(
      `service account journey-api: the token endpoint ${tokenUrl} answered 401 (unauthorized_client: Invalid client secret)`,
    );
    expect(err?.message).not.toContain(SECRET);
    const down = new ServiceAccountTokens({
      clientId: 'journey-api',
      clientSecret: SECRET,
      tokenUrl: 'http://127.0.0.1:9/t',
    });
    await expect(down.token()).rejects.toThrow(
      /journey-api: the token endpoint http:\/\/127.0.0.1:9\/t did not answer/,
    );
  });

  it('takes its settings from TEMPORAL_OAUTH_*, naming what is missing', () => {
    const base = { TEMPORAL_ADDRESS: '127.0.0.1:7233', TEMPORAL_CONFIG_FILE: undefined, HOME: '/nonexistent' };
    expect(loadTemporalConfig({ ...base }).temporal.oauth).toBeUndefined();
    const ok = loadTemporalConfig({
      ...base,
      TEMPORAL_OAUTH_CLIENT_ID: 'journey-worker',
      TEMPORAL_OAUTH_CLIENT_SECRET: SECRET,
      TEMPORAL_OAUTH_TOKEN_URL: tokenUrl,
    });
    expect(ok.temporal.oauth).toEqual({ clientId: 'journey-worker', clientSecret: SECRET, tokenUrl });
    const missing = () => loadTemporalConfig({ ...base, TEMPORAL_OAUTH_CLIENT_ID: 'journey-worker' });
    expect(missing).toThrow(ConfigError);
    expect(missing).toThrow(/TEMPORAL_OAUTH_CLIENT_SECRET \(or TEMPORAL_OAUTH_CLIENT_SECRET_FILE\): required/);
    expect(missing).toThrow(/TEMPORAL_OAUTH_TOKEN_URL: the token endpoint, a URL/);
    expect(() =>
      loadTemporalConfig({
        ...base,
        TEMPORAL_API_KEY: 'k',
        TEMPORAL_OAUTH_CLIENT_ID: 'journey-worker',
        TEMPORAL_OAUTH_CLIENT_SECRET: SECRET,
        TEMPORAL_OAUTH_TOKEN_URL: tokenUrl,
      }),
    ).toThrow(/one or the other/);
  });
});
