// The command line's own OpenID Connect client against a provider over real HTTP (test/support/oidc-device-provider:
// Keycloak's endpoints, tokens signed with a real key pair): the device authorization grant with its polling (the
// interval, 5 s more after slow_down, a clear end on access_denied and expired_token), client credentials in HTTP
// Basic, refresh, the discovery document's issuer; and the sign-in kept between runs (src/auth/token-cache.ts,
// scripts/lib/ops-sign-in.ts): a file of mode 0600 in a folder of mode 0700, reused without a request, refreshed when
// it expires, a new sign-in when the refresh is refused, gone after sign-out. No output holds a token or a secret.
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { checkIssuerUrl, identityOf, OidcClient, OidcError } from '../../src/auth/oidc-client';
import { cacheDirOf, freshSignIn, SignInRequired, TokenCache } from '../../src/auth/token-cache';
import {
  operatorSession,
  runSession,
  type OidcSettings,
  type SessionOptions,
  type SignInIo,
} from '../../scripts/lib/ops-sign-in';
import { listenInRange, startDeviceProvider, type DeviceProvider } from '../support/oidc-device-provider';

const PORTS: [number, number] = [23100, 23119];
const DEFAULT_POLLS = ['authorization_pending', 'authorization_pending', 'slow_down', 'ok'] as const;
const AUTOMATION_SECRET = 'automation-secret-0123456789';

describe('signing in from the command line', () => {
  let provider: DeviceProvider;
  let home: string;
  let waits: number[];
  const sleep = (ms: number) => {
    waits.push(ms);
    return Promise.resolve();
  };

  beforeAll(async () => {
    provider = await startDeviceProvider({ ports: PORTS });
  });
  afterAll(() => provider.close());
  beforeEach(() => {
    home = mkdtempSync(path.join(os.tmpdir(), 'ops-sign-in-'));
    waits = [];
    provider.requests.length = 0;
    provider.devicePolls = [...DEFAULT_POLLS];
    provider.interval = 1;
    provider.deviceExpiresIn = 600;
  });
  afterEach(() => rmSync(home, { recursive: true, force: true }));

  const tokenRequests = () => provider.requests.filter((r) => r.endpoint === 'token');
  const settings = (o: Partial<OidcSettings> = {}): OidcSettings => ({
    issuer: provider.issuer,
    clientId: 'journey-ops',
    clientIdGiven: false,
    cacheDir: cacheDirOf({ XDG_CACHE_HOME: home }, 'journey-ops'),
    ...o,
  });
  function io(o: Partial<SignInIo> = {}): SignInIo & { text: () => string } {
    let text = '';
    return {
      out: (t) => (text += t),
      err: (t) => (text += t),
      interactive: true,
      sleep,
      text: () => text,
      ...o,
    };
  }
  /** Nothing printed holds a token, a code the provider uses as a credential, or a secret. */
  function expectNoSecrets(text: string, cache?: TokenCache) {
    expect(text).not.toContain(AUTOMATION_SECRET);
    expect(text).not.toMatch(/eyJ[\w-]+\.[\w-]+/);
    expect(text).not.toMatch(/\brt-[0-9a-f]{8}/);
    expect(text).not.toMatch(/\bdc-[0-9a-f]{8}/);
    const kept = cache?.read();
    if (kept) {
      expect(text).not.toContain(kept.accessToken);
      if (kept.refreshToken) expect(text).not.toContain(kept.refreshToken);
    }
  }

  describe('the device authorization grant', () => {
    it('shows where to approve, polls at the interval, 5 s slower after slow_down, and gets the tokens', async () => {
      const client = new OidcClient({ issuer: provider.issuer, clientId: 'journey-ops', sleep });
      const prompts: unknown[] = [];
      const before = Date.now();
      const tokens = await client.deviceSignIn({ onPrompt: (p) => prompts.push(p) });
      expect(prompts).toEqual([
        {
          userCode: 'WDJB-MJHT',
          verificationUri: `${provider.issuer}/device`,
          verificationUriComplete: `${provider.issuer}/device?user_code=WDJB-MJHT`,
          expiresAt: expect.any(Number),
        },
      ]);
      // interval 1 s: pending, pending, slow_down (then 6 s), the tokens.
      expect(waits).toEqual([1000, 1000, 1000, 6000]);
      const polls = tokenRequests();
      expect(polls.map((r) => r.error ?? 'ok')).toEqual([...DEFAULT_POLLS]);
      expect(polls.every((r) => r.grant === 'urn:ietf:params:oauth:grant-type:device_code')).toBe(true);
      // A public client names itself; no secret.
      expect(provider.requests.filter((r) => r.endpoint === 'device')).toEqual([
        expect.objectContaining({ auth: 'client_id', clientId: 'journey-ops', status: 200 }),
      ]);
      expect(identityOf(tokens.accessToken)).toMatchObject({
        subject: '5d1c0f7e-olivia',
        name: 'olivia.operator',
        roles: ['journey-operator', 'offline_access'],
      });
      expect(tokens.refreshToken).toMatch(/^rt-/);
      expect(tokens.expiresAt).toBeGreaterThanOrEqual(before + 299_000);
      expect(tokens.expiresAt).toBeLessThanOrEqual(Date.now() + 300_000);
    });

    it('ends with a clear message when the person declines, or the code expires (said by the provider or not)', async () => {
      const client = new OidcClient({ issuer: provider.issuer, clientId: 'journey-ops', sleep });
      const failure = (p: Promise<unknown>) => p.then(() => undefined).catch((err: unknown) => err as OidcError);

      provider.devicePolls = ['authorization_pending', 'access_denied'];
      const denied = await failure(client.deviceSignIn({ onPrompt: () => {} }));
      expect(denied).toBeInstanceOf(OidcError);
      expect(denied).toMatchObject({ code: 'access_denied' });
      expect(denied!.message).toBe(
        'the sign-in was declined at the provider (access_denied): nobody is signed in; sign in again to retry',
      );

      provider.devicePolls = ['authorization_pending', 'expired_token'];
      const expired = await failure(client.deviceSignIn({ onPrompt: () => {} }));
      expect(expired).toMatchObject({ code: 'expired_token' });
      expect(expired!.message).toBe(
        'the sign-in code expired before anyone approved it (expired_token; it lasted 10 min): sign in again, and ' +
          'approve in the browser sooner',
      );

      // The provider never says so, but the code's lifetime is over: the client stops by itself.
      provider.devicePolls = ['authorization_pending'];
      provider.deviceExpiresIn = 3;
      let clock = Date.now();
      const slow = new OidcClient({
        issuer: provider.issuer,
        clientId: 'journey-ops',
        now: () => clock,
        sleep: (ms) => {
          clock += ms;
          return Promise.resolve();
        },
      });
      provider.requests.length = 0;
      const lapsed = await failure(slow.deviceSignIn({ onPrompt: () => {} }));
      expect(lapsed).toMatchObject({ code: 'expired_token' });
      expect(tokenRequests()).toHaveLength(2);
    });

    it('stops when interrupted, and names a client the provider will not sign in this way', async () => {
      const stop = new AbortController();
      provider.devicePolls = ['authorization_pending'];
      const client = new OidcClient({
        issuer: provider.issuer,
        clientId: 'journey-ops',
        sleep: (ms) => {
          if (waits.push(ms) === 3) stop.abort();
          return Promise.resolve();
        },
      });
      await expect(client.deviceSignIn({ onPrompt: () => {}, signal: stop.signal })).rejects.toMatchObject({
        code: 'interrupted',
        message: 'the sign-in was interrupted before it was approved',
      });
      const automation = new OidcClient({
        issuer: provider.issuer,
        clientId: 'journey-automation',
        clientSecret: AUTOMATION_SECRET,
      });
      const refused = automation.deviceSignIn({ onPrompt: () => {} });
      await expect(refused).rejects.toThrow(
        'the provider refused to start a sign-in for client journey-automation (unauthorized_client: Client is not ' +
          'allowed to initiate OAuth 2.0 Device Authorization Grant.); is the device authorization grant enabled for ' +
          'this client?',
      );
    });
  });

  describe('client credentials, refresh and discovery', () => {
    it('sends the client and its secret in HTTP Basic, never in the body nor in a message', async () => {
      const client = new OidcClient({
        issuer: provider.issuer,
        clientId: 'journey-automation',
        clientSecret: AUTOMATION_SECRET,
      });
      const tokens = await client.clientCredentials();
      expect(identityOf(tokens.accessToken)).toMatchObject({
        subject: '9a8b7c6d-automation',
        name: 'service-account-journey-automation',
        roles: ['journey-admin'],
      });
      expect(tokens.refreshToken).toBeUndefined();
      expect(tokenRequests()).toEqual([
        expect.objectContaining({ grant: 'client_credentials', auth: 'basic', clientId: 'journey-automation' }),
      ]);

      const wrong = new OidcClient({
        issuer: provider.issuer,
        clientId: 'journey-automation',
        clientSecret: 'not-the-secret-42',
      });
      const err = (await wrong.clientCredentials().then(
        () => undefined,
        (e: unknown) => e,
      )) as OidcError;
      expect(err).toMatchObject({ code: 'invalid_client' });
      expect(err.message).toBe(
        "the provider refused client journey-automation's credentials (invalid_client: Invalid client or Invalid " +
          'client credentials); check the client id and its secret',
      );
      expect(err.message).not.toContain('not-the-secret-42');
      await expect(new OidcClient({ issuer: provider.issuer, clientId: 'x' }).clientCredentials()).rejects.toThrow(
        "the client credentials grant needs client x's secret",
      );
    });

    it('refreshes with the refresh token, and names the refusal of one that ended', async () => {
      const client = new OidcClient({ issuer: provider.issuer, clientId: 'journey-ops', sleep });
      const first = await client.deviceSignIn({ onPrompt: () => {} });
      const next = await client.refresh(first.refreshToken!);
      expect(next.accessToken).not.toBe(first.accessToken);
      expect(next.refreshToken).toMatch(/^rt-/);
      expect(tokenRequests().at(-1)).toMatchObject({ grant: 'refresh_token', auth: 'client_id' });
      // The provider rotated it: the first one is spent.
      const spent = client.refresh(first.refreshToken!);
      await expect(spent).rejects.toMatchObject({
        code: 'invalid_grant',
        message: 'the provider refused to refresh the sign-in (invalid_grant: Session not active)',
      });
    });

    it('checks the issuer the discovery document names, and says when nothing answers', async () => {
      const other = provider.issuer.replace('127.0.0.1', 'localhost');
      await expect(new OidcClient({ issuer: other, clientId: 'journey-ops' }).metadata()).rejects.toThrow(
        `the discovery document ${other}/.well-known/openid-configuration names another issuer (${provider.issuer}); ` +
          'give the issuer exactly as the provider names it',
      );
      const wrongRealm = provider.issuer.replace('/journeys', '/clinic');
      await expect(new OidcClient({ issuer: wrongRealm, clientId: 'journey-ops' }).metadata()).rejects.toThrow(
        /answered 404: is the issuer right\?$/,
      );
      const meta = await new OidcClient({ issuer: `${provider.issuer}/`, clientId: 'journey-ops' }).metadata();
      expect(meta.device_authorization_endpoint).toBe(`${provider.issuer}/protocol/openid-connect/auth/device`);

      const spare = createServer();
      const port = await listenInRange(spare, PORTS[0], PORTS[1]);
      await new Promise((resolve) => spare.close(resolve));
      const gone = new OidcClient({ issuer: `http://127.0.0.1:${port}/realms/journeys`, clientId: 'journey-ops' });
      await expect(gone.metadata()).rejects.toMatchObject({ code: 'unreachable', message: /did not answer/ });

      expect(() => checkIssuerUrl('http://id.example/realms/journeys')).toThrow(
        'the issuer must be an https URL (http only on loopback)',
      );
      expect(checkIssuerUrl('https://id.example/realms/journeys/')).toBe('https://id.example/realms/journeys');
    });
  });

  describe('the kept sign-in', () => {
    const signIn = (o: Partial<SessionOptions> = {}, i = io()) =>
      runSession({ command: 'sign-in', oidc: settings(), clientCredentials: false, ...o }, i);

    it('is a file only the user can read, in a folder only the user can open, and is reused without a request', async () => {
      const out = io();
      expect(await signIn({}, out)).toBe(0);
      const cache = new TokenCache(settings().cacheDir, provider.issuer, 'journey-ops');
      expect(path.dirname(cache.file)).toBe(path.join(home, 'journey-ops'));
      expect(readdirSync(cache.dir)).toEqual([path.basename(cache.file)]);
      expect(statSync(cache.file).mode & 0o777).toBe(0o600);
      expect(statSync(cache.dir).mode & 0o777).toBe(0o700);
      expect(out.text()).toContain(`To sign in, open this address in a browser (on any device) and approve the code`);
      expect(out.text()).toContain(`${provider.issuer}/device?user_code=WDJB-MJHT`);
      expect(out.text()).toMatch(/signed in as\s+5d1c0f7e-olivia\nname\s+olivia\.operator\nroles\s+journey-operator\n/);
      expect(out.text()).toMatch(/access token\s+valid until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(5 min left\)/);
      expectNoSecrets(out.text(), cache);

      const requests = provider.requests.length;
      const again = await freshSignIn({
        cache,
        client: new OidcClient({ issuer: provider.issuer, clientId: 'journey-ops' }),
      });
      expect(again.source).toBe('cached');
      expect(provider.requests).toHaveLength(requests);

      // Made readable by others (by hand): back to the user alone when read.
      chmodSync(cache.file, 0o644);
      expect(cache.read()).toBeDefined();
      expect(statSync(cache.file).mode & 0o777).toBe(0o600);
    });

    it('is refreshed when the access token expires, and signed in again when the refresh is refused', async () => {
      expect(await signIn()).toBe(0);
      const cache = new TokenCache(settings().cacheDir, provider.issuer, 'journey-ops');
      const client = new OidcClient({ issuer: provider.issuer, clientId: 'journey-ops', sleep });
      const kept = cache.read()!;

      // 20 s before it expires (within the 30 s margin): refreshed.
      const soon = () => kept.expiresAt - 20_000;
      provider.requests.length = 0;
      const refreshed = await freshSignIn({ cache, client, now: soon });
      expect(refreshed.source).toBe('refreshed');
      expect(tokenRequests().map((r) => r.grant)).toEqual(['refresh_token']);
      expect(cache.read()!.accessToken).toBe(refreshed.signIn.accessToken);
      expect(cache.read()!.refreshToken).not.toBe(kept.refreshToken);

      // The provider ended the session: the refresh is refused, a new sign-in follows where one can be made.
      provider.endSessions();
      const later = () => refreshed.signIn.expiresAt + 1_000;
      const notices: string[] = [];
      provider.requests.length = 0;
      const renewed = await freshSignIn({
        cache,
        client,
        now: later,
        notice: (m) => notices.push(m),
        signIn: async () => ({
          tokens: await client.deviceSignIn({ onPrompt: () => {} }),
          grant: 'device_code',
        }),
      });
      expect(renewed.source).toBe('signed-in');
      expect(notices).toEqual([
        'the sign-in has expired and could not be refreshed: the provider refused to refresh the sign-in ' +
          '(invalid_grant: Session not active)',
      ]);
      expect(tokenRequests().map((r) => r.grant)).toEqual([
        'refresh_token',
        ...DEFAULT_POLLS.map(() => 'urn:ietf:params:oauth:grant-type:device_code'),
      ]);

      // Where none can be made (no terminal, no secret): SignInRequired, and the ended sign-in is forgotten.
      provider.endSessions();
      const err = await freshSignIn({ cache, client, now: () => renewed.signIn.expiresAt + 1_000 }).catch(
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(SignInRequired);
      expect((err as SignInRequired).reason).toMatch(/^the sign-in has expired and could not be refreshed/);
      expect(existsSync(cache.file)).toBe(false);
    });

    it('is removed by sign-out (the provider ends the session too), after which whoami says nobody is signed in', async () => {
      expect(await signIn()).toBe(0);
      const s = settings();
      const cache = new TokenCache(s.cacheDir, s.issuer, s.clientId);
      const who = io();
      expect(await runSession({ command: 'whoami', oidc: s, clientCredentials: false }, who)).toBe(0);
      expect(who.text()).toMatch(/^signed in as\s+5d1c0f7e-olivia\n/);
      expect(who.text()).toMatch(/refresh\s+refreshed at need until /);
      expect(who.text()).toMatch(new RegExp(`\nkept in +${cache.file.replace(/[.]/g, '\\.')}\n$`));
      expectNoSecrets(who.text(), cache);

      const out = io();
      expect(await runSession({ command: 'sign-out', oidc: s, clientCredentials: false }, out)).toBe(0);
      expect(out.text()).toBe(`Signed out: removed ${cache.file}.\n`);
      expect(existsSync(cache.file)).toBe(false);
      expect(provider.revocations).toBeGreaterThanOrEqual(1);

      const after = io();
      expect(await runSession({ command: 'whoami', oidc: s, clientCredentials: false }, after)).toBe(1);
      expect(after.text()).toBe(
        `ops: not signed in to ${provider.issuer} as client journey-ops: run npm run ops -- sign-in\n`,
      );
      const twice = io();
      expect(await runSession({ command: 'sign-out', oidc: s, clientCredentials: false }, twice)).toBe(0);
      expect(twice.text()).toMatch(/^Not signed in/);
    });

    it('keeps a service account signed in by client credentials; a person signs in on a terminal only', async () => {
      const s = settings({ clientId: 'journey-automation', clientIdGiven: true, clientSecret: AUTOMATION_SECRET });
      const out = io({ interactive: false });
      expect(await runSession({ command: 'sign-in', oidc: s, clientCredentials: true }, out)).toBe(0);
      expect(out.text()).toMatch(/signed in as\s+9a8b7c6d-automation\n/);
      expect(out.text()).toMatch(/roles\s+journey-admin\n/);
      expect(out.text()).toMatch(/client\s+journey-automation \(client credentials\)/);
      const cache = new TokenCache(s.cacheDir, s.issuer, s.clientId);
      expect(statSync(cache.file).mode & 0o777).toBe(0o600);
      expectNoSecrets(out.text(), cache);

      await expect(signIn({}, io({ interactive: false }))).rejects.toThrow(
        /^sign-in without --client-credentials is for a person at a terminal/,
      );
    });

    it('is refreshed during a long run (once for requests at the same time), never by a new device sign-in', async () => {
      expect(await signIn()).toBe(0);
      let clock = Date.now();
      const session = await operatorSession(settings(), io({ interactive: false, now: () => clock }));
      expect(session).toMatchObject({ subject: '5d1c0f7e-olivia', roles: ['journey-operator'], source: 'cached' });
      const first = await session.token();
      provider.requests.length = 0;
      expect(await session.token()).toBe(first);
      expect(provider.requests).toHaveLength(0);

      clock = new TokenCache(settings().cacheDir, provider.issuer, 'journey-ops').read()!.expiresAt - 10_000;
      const [a, b] = await Promise.all([session.token(), session.token()]);
      expect(a).toBe(b);
      expect(a).not.toBe(first);
      expect(tokenRequests().map((r) => r.grant)).toEqual(['refresh_token']);

      // The session ended at the provider: the run stops asking (no device sign-in in the middle of a run).
      provider.endSessions();
      clock += 600_000;
      await expect(session.token()).rejects.toBeInstanceOf(SignInRequired);
      expect(provider.requests.filter((r) => r.endpoint === 'device')).toHaveLength(0);
    });

    it('lives under $XDG_CACHE_HOME when it is an absolute path, else under ~/.cache', () => {
      expect(cacheDirOf({ XDG_CACHE_HOME: '/var/cache/u', HOME: '/home/u' }, 'journey-ops')).toBe(
        '/var/cache/u/journey-ops',
      );
      expect(cacheDirOf({ XDG_CACHE_HOME: 'relative', HOME: '/home/u' }, 'journey-ops')).toBe(
        '/home/u/.cache/journey-ops',
      );
      expect(cacheDirOf({ HOME: '/home/u' }, 'journey-ops')).toBe('/home/u/.cache/journey-ops');
    });
  });
});
