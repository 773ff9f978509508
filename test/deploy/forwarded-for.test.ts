// A forged X-Forwarded-For changes nobody's count, through the real HAProxy with the configurations the project ships:
// docker-compose.yml's (deploy/haproxy/haproxy.cfg, its HTTP and HTTPS frontends) and the one `npm run
// start:production` writes (scripts/lib/stack/parts.ts), in front of the API. Callers are told apart by their own
// loopback addresses (127.0.x.y); the balancer reaches the API from 127.0.0.1. Wrong tokens sent with a header naming a
// clinic's address A are counted against the sender, so the clinic at A is not locked out, and a sender naming a new
// address with each request is throttled all the same. Skipped when HAProxy is not installed.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadBalancer } from '../../scripts/lib/stack/parts';
import { auth, TOKENS } from '../api/support';
import { ROOT, read } from '../compose/compose-file';
import { useApiHarness } from '../support/api-harness';
import { freePort } from '../support/dev-server-process';
import { until } from '../support/until';

const HAPROXY = ['/usr/sbin/haproxy', '/usr/local/sbin/haproxy', '/usr/bin/haproxy'].find((p) => existsSync(p));
/** The default limit of refused sign-ins per address and minute. */
const LIMIT = 60;

/** The configurations shipped: compose's two frontends, the production stack's. */
const BALANCERS = ['compose, HTTP', 'compose, HTTPS', 'production stack'] as const;

interface Balancer {
  name: (typeof BALANCERS)[number];
  port: number;
  tls: boolean;
}

/** One request through a balancer, sent from the loopback address `from`; resolves with the answer's status. */
function call(b: Balancer, pem: string, from: string, headers: OutgoingHttpHeaders, url = '/v1/catalog/exams') {
  return new Promise<number>((resolve, reject) => {
    const options = { host: '127.0.0.1', port: b.port, path: url, localAddress: from, agent: false, headers };
    const done = (res: IncomingMessage) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    };
    const req = b.tls
      ? httpsRequest({ ...options, servername: 'localhost', ca: readFileSync(pem) }, done)
      : httpRequest(options, done);
    req.on('error', reject);
    req.end();
  });
}

const describeHaproxy = HAPROXY ? describe : describe.skip;

describeHaproxy.each([
  // What the project ships: the API trusts exactly the balancer in front.
  ['the API trusting the balancer alone', '127.0.0.1'],
  // The balancer keeps nothing a caller sent, so even trust wider than the balancer (every address its callers come
  // from, as the private ranges once were) names no one a caller chose.
  ['the API trusting every address its callers come from', '127.0.0.0/8'],
])('X-Forwarded-For through the shipped HAProxy configurations, %s', (_name, trusted) => {
  const stack = useApiHarness({
    temporal: 'unreachable',
    listen: true,
    env: { API_TRUSTED_PROXIES: trusted },
    app: { startForwarder: false },
  });
  const balancers: Balancer[] = [];
  const processes: ChildProcess[] = [];
  let work: string;
  let pem: string;

  beforeAll(async () => {
    work = mkdtempSync(path.join(tmpdir(), 'forwarded-for-'));
    execFileSync('sh', [
      path.join(ROOT, 'deploy/init-secrets.sh'),
      path.join(work, 'secrets'),
      path.join(work, '.env'),
    ]);
    pem = path.join(work, 'secrets', 'api_tls.pem');
    const api = new URL(stack.url);

    // Compose's file, its addresses this machine's: the ports, the replicas (the API here), the certificate.
    const [plain, tls, native] = [await freePort(), await freePort(), await freePort()];
    let cfg = read('deploy/haproxy/haproxy.cfg');
    for (const [from, to] of [
      ['  bind :3000\n', `  bind 127.0.0.1:${plain}\n`],
      ['  bind :3443 ssl crt /run/secrets/api_tls ', `  bind 127.0.0.1:${tls} ssl crt ${pem} `],
      ['server api-1 api-1:3000 check', `server api-1 127.0.0.1:${api.port} check`],
      ['server api-2 api-2:3000 check', `server api-2 127.0.0.1:${api.port} check`],
    ] as const) {
      expect([from, cfg.includes(from)]).toEqual([from, true]);
      cfg = cfg.replace(from, to);
    }
    writeFileSync(path.join(work, 'compose-haproxy.cfg'), cfg);
    processes.push(spawn(HAPROXY!, ['-db', '-f', path.join(work, 'compose-haproxy.cfg')], { stdio: 'ignore' }));
    balancers.push(
      { name: 'compose, HTTP', port: plain, tls: false },
      { name: 'compose, HTTPS', port: tls, tls: true },
    );

    // The production stack's, as it writes it for its replicas.
    const spec = loadBalancer(path.join(work, 'native'), native, [Number(api.port)]);
    processes.push(spawn(spec.command, spec.args ?? [], { stdio: 'ignore' }));
    balancers.push({ name: 'production stack', port: native, tls: false });

    for (const b of balancers) {
      await until(
        b.name,
        async () => ((await call(b, pem, '127.0.0.1', {}, '/healthz')) === 200 ? true : undefined),
        15_000,
      );
    }
  }, 60_000);

  afterAll(() => {
    for (const p of processes) p.kill();
    rmSync(work, { recursive: true, force: true });
  });

  test.each(BALANCERS.map((name, i) => [name, i] as const))(
    '%s: wrong tokens naming a clinic count against their sender, not the clinic',
    async (name, i) => {
      const b = balancers.find((x) => x.name === name)!;
      // Addresses of this balancer's callers only: the counts of one case do not reach the next.
      const clinic = `127.0.${10 + i}.10`;
      const sender = `127.0.${10 + i}.66`;
      const answers: number[] = [];
      for (let n = 0; n < LIMIT + 5; n++) {
        // The clinic's address alone, ahead of the balancer's own, or in two header lines.
        const forged = [clinic, `${clinic}, 127.0.0.1`, [clinic, clinic]][n % 3]!;
        answers.push(await call(b, pem, sender, { ...auth(`wrong-${n}`), 'x-forwarded-for': forged }));
      }
      expect(answers.slice(0, LIMIT)).toEqual(Array(LIMIT).fill(401));
      expect(answers.slice(LIMIT)).toEqual(Array(5).fill(429));

      // The clinic at A has no refusals counted: a mistyped token is a 401, not a 429, and its own token is served.
      expect(await call(b, pem, clinic, auth('mistyped'))).toBe(401);
      expect(await call(b, pem, clinic, auth(TOKENS.a))).toBe(200);
    },
  );

  test.each(BALANCERS.map((name, i) => [name, i] as const))(
    '%s: a sender naming a new address each time is throttled as itself',
    async (name, i) => {
      const b = balancers.find((x) => x.name === name)!;
      const sender = `127.0.${20 + i}.66`;
      const answers: number[] = [];
      for (let n = 0; n < LIMIT + 5; n++) {
        answers.push(await call(b, pem, sender, { ...auth(`wrong-${n}`), 'x-forwarded-for': `198.51.100.${n}` }));
      }
      expect(answers.slice(0, LIMIT)).toEqual(Array(LIMIT).fill(401));
      expect(answers.slice(LIMIT)).toEqual(Array(5).fill(429));
    },
  );
});
