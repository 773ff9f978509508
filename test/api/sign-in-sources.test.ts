// Who a refused sign-in counts against, with the API configured as docker-compose.yml runs it: only the load balancer
// names a caller in X-Forwarded-For, so another container naming a clinic's address counts against itself; and a valid
// token is never refused for its address's count, so wrong tokens sent from a clinic's address cannot lock it out.
import { TokenRefused } from '../../src/auth/tokens';
import { envOf, loadCompose, parseDotenv, read } from '../compose/compose-file';
import { useApiHarness } from '../support/api-harness';
import { auth, TOKENS } from './support';

const { compose } = loadCompose(read('docker-compose.yml'), {
  ...parseDotenv(read('deploy/.env.example')).values,
  POSTGRES_PASSWORD: 'a-test-password-only',
  SECRETS_GID: '1000',
});
const balancer = (compose.services['load-balancer']!.networks?.default as { ipv4_address?: string } | null)
  ?.ipv4_address;
/** Another container on the project's network (the sandbox, a worker): not the balancer. */
const neighbour = balancer?.replace(/\.\d+$/, '.7');
/** The default limit of refused sign-ins per address and minute. */
const LIMIT = 60;

describe('refused sign-ins, counted as compose runs the API', () => {
  const stack = useApiHarness({
    temporal: 'unreachable',
    env: { API_TRUSTED_PROXIES: envOf(compose.services['api-1']!).API_TRUSTED_PROXIES! },
    app: { startForwarder: false },
  });
  const send = (o: { peer: string; token?: string; forwardedFor?: string; url?: string }) =>
    stack.app.inject({
      method: 'GET',
      url: o.url ?? '/v1/catalog/exams',
      remoteAddress: o.peer,
      headers: {
        ...(o.token ? auth(o.token) : {}),
        ...(o.forwardedFor ? { 'x-forwarded-for': o.forwardedFor } : {}),
      },
    });

  it('trusts the load balancer alone, at its fixed address on the network', () => {
    expect(balancer).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    expect(stack.config.api.trustedProxies).toEqual([balancer]);
  });

  it('never refuses a valid token for its address count; wrong ones from there are still throttled', async () => {
    const clinic = '198.51.100.20';
    const answers = [];
    for (let i = 0; i < LIMIT + 10; i++) answers.push((await send({ peer: clinic, token: `wrong-${i}` })).statusCode);
    expect(answers.slice(0, LIMIT)).toEqual(Array(LIMIT).fill(401));
    expect(answers.slice(LIMIT)).toEqual(Array(10).fill(429));

    // The clinic and an operator at that address, with their tokens, are served.
    expect((await send({ peer: clinic, token: TOKENS.a })).statusCode).toBe(200);
    expect((await send({ peer: clinic, token: TOKENS.admin, url: '/admin/dead-letters' })).statusCode).toBe(200);
    // A guess is still answered 429 there, with no token or a wrong one, for the clinic routes and the operators'.
    expect((await send({ peer: clinic })).statusCode).toBe(429);
    expect((await send({ peer: clinic, token: 'wrong-again' })).statusCode).toBe(429);
    expect((await send({ peer: clinic, token: 'wrong-again', url: '/admin/dead-letters' })).statusCode).toBe(429);
  });

  it('counts a forged X-Forwarded-For from a peer other than the balancer against that peer', async () => {
    const clinic = '203.0.113.40';
    const forger = neighbour!;
    const answers = [];
    for (let i = 0; i < LIMIT + 10; i++) {
      answers.push((await send({ peer: forger, token: `wrong-${i}`, forwardedFor: clinic })).statusCode);
    }
    expect(answers.slice(LIMIT)).toEqual(Array(10).fill(429));
    // The clinic's address, through the balancer, has no refusals: a wrong token there is a 401, not a 429.
    expect((await send({ peer: balancer!, token: 'mistyped', forwardedFor: clinic })).statusCode).toBe(401);
    // The forger is throttled as itself, whatever address it names.
    expect((await send({ peer: forger, token: 'wrong', forwardedFor: '192.0.2.99' })).statusCode).toBe(429);
    expect((await send({ peer: forger, token: 'wrong' })).statusCode).toBe(429);
  });

  it('counts the callers the balancer names, each on its own; the balancer is nobody', async () => {
    const answers = [];
    for (let i = 0; i < LIMIT + 1; i++) {
      answers.push((await send({ peer: balancer!, token: `wrong-${i}`, forwardedFor: '192.0.2.50' })).statusCode);
    }
    expect(answers.at(-1)).toBe(429);
    expect((await send({ peer: balancer!, token: 'wrong', forwardedFor: '192.0.2.51' })).statusCode).toBe(401);
    expect((await send({ peer: balancer!, token: TOKENS.b, forwardedFor: '192.0.2.50' })).statusCode).toBe(200);
  });
});

describe("an operator's access token, from an address past its refused sign-ins", () => {
  const ACCESS_TOKEN = 'an-access-token-of-the-identity-provider';
  const stack = useApiHarness({
    temporal: 'unreachable',
    app: {
      startForwarder: false,
      verifyOperator: (token) =>
        token === ACCESS_TOKEN
          ? Promise.resolve({
              subject: 'operator-1',
              roles: ['journey-admin'],
              expiresAt: new Date(Date.now() + 600_000),
            })
          : Promise.reject(new TokenRefused('bad signature')),
    },
  });
  const send = (token: string) =>
    stack.app.inject({
      method: 'GET',
      url: '/admin/dead-letters',
      remoteAddress: '198.51.100.30',
      headers: auth(token),
    });

  it('is served, while a token the provider refuses is answered 429', async () => {
    const answers = [];
    for (let i = 0; i < LIMIT + 5; i++) answers.push((await send(`not-a-token-${i}`)).statusCode);
    expect(answers.slice(LIMIT)).toEqual(Array(5).fill(429));
    expect((await send(ACCESS_TOKEN)).statusCode).toBe(200);
    expect((await send('not-a-token-again')).statusCode).toBe(429);
  });
});
