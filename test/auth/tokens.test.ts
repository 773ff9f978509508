// Access tokens checked as the codec server checks them: against an issuer served over real HTTP (its discovery
// document and JWKS), each kind of bad token refused with its reason, a rotated key found by its kid.
import { rolesAt, TokenRefused, tokenVerifier, type TokenVerifier } from '../../src/auth/tokens';
import { AUDIENCE, signingKey, startIssuer, token, type Issuer } from '../support/oidc-issuer';

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

async function refusal(verify: TokenVerifier, t: string | undefined): Promise<string> {
  try {
    await verify(t);
    return 'accepted';
  } catch (err) {
    if (err instanceof TokenRefused) {
      // The message names the reason and never holds the token.
      const payload = t?.split('.')[1];
      if (payload) expect(err.message).not.toContain(payload);
      return err.reason;
    }
    throw err;
  }
}

describe('access tokens', () => {
  let issuer: Issuer;
  let verify: TokenVerifier;

  beforeAll(async () => {
    issuer = await startIssuer();
    verify = tokenVerifier({ issuer: issuer.url, audience: AUDIENCE, clockSkewSeconds: 30 });
  });
  afterAll(() => issuer.close());

  it("accept the issuer's token: its subject, name and roles, found through the discovery document", async () => {
    const caller = await verify(await token(issuer.keys[0]!, { iss: issuer.url, roles: ['journey-operator', 'x'] }));
    expect(caller).toMatchObject({
      subject: 'f3b1c7d2-operator',
      name: 'olivia.operator',
      roles: ['journey-operator', 'x'],
    });
    expect(caller.expiresAt.getTime()).toBeGreaterThan(Date.now());
  });

  it('refuse each bad token with its reason, never the token', async () => {
    const key = issuer.keys[0]!;
    const other = await signingKey('key-1');
    const now = Math.floor(Date.now() / 1000);
    const claims = { iss: issuer.url, aud: AUDIENCE, sub: 'someone', exp: now + 300 };
    const cases: [string, string | undefined][] = [
      ['missing', undefined],
      ['malformed', 'not-a-jwt'],
      // alg none: no signature at all.
      ['algorithm not allowed', `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`],
      // HS256 with the public key as the secret (the classic confusion): not an allowed algorithm.
      ['algorithm not allowed', `${b64({ alg: 'HS256', kid: 'key-1' })}.${b64(claims)}.c2lnbmF0dXJl`],
      ['expired', await token(key, { iss: issuer.url, expSec: -120 })],
      ['not yet valid', await token(key, { iss: issuer.url, nbfSec: 600 })],
      ['wrong issuer', await token(key, { iss: 'https://elsewhere.example/realms/clinic' })],
      ['wrong audience', await token(key, { iss: issuer.url, aud: 'another-client' })],
      // Same kid, another key: the signature does not verify.
      ['bad signature', await token(other, { iss: issuer.url })],
      ['unknown key', await token(await signingKey('key-unknown'), { iss: issuer.url })],
      ['no subject', await token(key, { iss: issuer.url, sub: '' })],
    ];
    const got = [];
    for (const [, t] of cases) got.push(await refusal(verify, t));
    expect(got).toEqual(cases.map(([reason]) => reason));
  });

  it('tolerate a bounded clock skew, no more', async () => {
    const key = issuer.keys[0]!;
    expect(await refusal(verify, await token(key, { iss: issuer.url, expSec: -10 }))).toBe('accepted');
    expect(await refusal(verify, await token(key, { iss: issuer.url, expSec: -40 }))).toBe('expired');
  });

  it('follow a key rotation: a token signed by a new key is checked against the set fetched again', async () => {
    const fresh = tokenVerifier({ issuer: issuer.url, audience: AUDIENCE, jwksCooldownMs: 0 });
    await fresh(await token(issuer.keys[0]!, { iss: issuer.url }));
    const before = issuer.jwksFetches;
    const rotated = await signingKey('key-2');
    issuer.keys.push(rotated);
    expect(await refusal(fresh, await token(rotated, { iss: issuer.url }))).toBe('accepted');
    expect(issuer.jwksFetches).toBe(before + 1);
  });

  it('say when the issuer cannot be reached', async () => {
    const unreachable = tokenVerifier({ issuer: 'http://127.0.0.1:9/realms/none', audience: AUDIENCE });
    expect(await refusal(unreachable, await token(issuer.keys[0]!, { iss: 'http://127.0.0.1:9/realms/none' }))).toBe(
      'issuer unreachable',
    );
  });
});

describe('roles in the claims', () => {
  it('are read at a dotted path, as a list or a string', () => {
    const claims = {
      realm_access: { roles: ['journey-viewer', 7] },
      resource_access: { 'temporal-ui': { roles: ['journey-admin'] } },
      groups: 'a b,c',
    };
    expect(rolesAt(claims, 'realm_access.roles')).toEqual(['journey-viewer']);
    expect(rolesAt(claims, 'resource_access.temporal-ui.roles')).toEqual(['journey-admin']);
    expect(rolesAt(claims, 'groups')).toEqual(['a', 'b', 'c']);
    expect(rolesAt(claims, 'permissions')).toEqual([]);
  });
});
