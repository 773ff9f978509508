// Whom the API trusts to name a caller in X-Forwarded-For, as shipped: docker-compose.yml's load balancer at its fixed
// address and nothing else; the chart's ingress controller only, which the chart cannot know, so nobody until it is
// set. Whoever else were trusted could name any source and have wrong tokens counted against a clinic's address.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { loadConfig } from '../../src/config';
import { envOf, loadCompose, parseDotenv, read, ROOT } from '../compose/compose-file';

const HELM = path.join(process.env.TEMPORAL_TOOLS_DIR ?? path.join(ROOT, '.tools'), 'helm', 'bin', 'helm');
const CHART = path.join(ROOT, 'deploy/helm/patient-journey-engine');

/** An IPv4 address as a number, and whether it is inside a CIDR range. */
const ipv4 = (a: string) => a.split('.').reduce((n, part) => n * 256 + Number(part), 0);
const inRange = (address: string, cidr: string) => {
  const [base, bits] = cidr.split('/');
  const size = 2 ** (32 - Number(bits));
  return Math.floor(ipv4(address) / size) === Math.floor(ipv4(base!) / size);
};

/** The proxies the API's configuration trusts with this API_TRUSTED_PROXIES. */
const trustedBy = (value: string | undefined) =>
  loadConfig({ WEBHOOK_SECRET: 'w'.repeat(32), API_TRUSTED_PROXIES: value }).api.trustedProxies;

interface Network {
  ipam?: { config?: { subnet?: string; ip_range?: string }[] };
}

function composeAs(env: Record<string, string> = {}) {
  const { compose } = loadCompose(read('docker-compose.yml'), {
    ...parseDotenv(read('deploy/.env.example')).values,
    POSTGRES_PASSWORD: 'a-test-password-only',
    SECRETS_GID: '1000',
    ...env,
  });
  const networks = (compose as unknown as { networks?: Record<string, Network> }).networks ?? {};
  const lbNetwork = compose.services['load-balancer']!.networks?.default as { ipv4_address?: string } | null;
  return { compose, network: networks.default?.ipam?.config?.[0], balancer: lbNetwork?.ipv4_address };
}

describe('docker-compose.yml', () => {
  test('the API replicas trust the load balancer alone, at an address Docker gives no other container', () => {
    const { compose, network, balancer } = composeAs();
    expect(balancer).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    for (const name of ['api-1', 'api-2']) {
      expect([name, envOf(compose.services[name]!).API_TRUSTED_PROXIES]).toEqual([name, balancer]);
    }
    // In the network's range, outside the part Docker hands out to the other containers.
    expect(network?.subnet).toBeDefined();
    expect(network?.ip_range).toBeDefined();
    expect(inRange(balancer!, network!.subnet!)).toBe(true);
    expect(inRange(balancer!, network!.ip_range!)).toBe(false);
    expect(inRange(network!.ip_range!.split('/')[0]!, network!.subnet!)).toBe(true);
    // The configuration the replicas load from it names that one address.
    expect(trustedBy(balancer)).toEqual([balancer]);
    // No other service sets the variable: nothing else takes a caller's word for its address.
    for (const [name, s] of Object.entries(compose.services)) {
      if (name === 'api-1' || name === 'api-2') continue;
      expect([name, envOf(s).API_TRUSTED_PROXIES]).toEqual([name, undefined]);
    }
  });

  test('NETWORK_PREFIX moves the network, the load balancer and the trust together', () => {
    const { compose, network, balancer } = composeAs({ NETWORK_PREFIX: '10.213.7' });
    expect(network).toMatchObject({ subnet: '10.213.7.0/24' });
    expect(balancer).toBe('10.213.7.254');
    expect(envOf(compose.services['api-1']!).API_TRUSTED_PROXIES).toBe('10.213.7.254');
    expect(parseDotenv(read('deploy/.env.example')).documented.has('NETWORK_PREFIX')).toBe(true);
  });

  test('the load balancer drops the X-Forwarded-For a caller sends, in each frontend, and adds what it saw', () => {
    const cfg = read('deploy/haproxy/haproxy.cfg');
    const frontends = cfg.split(/^(?=frontend |backend )/m).filter((s) => s.startsWith('frontend '));
    expect(frontends.length).toBe(2);
    for (const f of frontends) {
      const name = f.split('\n')[0];
      expect([name, /^\s*http-request del-header X-Forwarded-For$/m.test(f)]).toEqual([name, true]);
    }
    expect(cfg).toMatch(/^\s*option forwardfor$/m);
    // test/deploy/forwarded-for.test.ts sends forged headers through it.
  });
});

interface Rendered {
  kind: string;
  metadata: { labels?: Record<string, string> };
  spec?: { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } };
}

const describeHelm = existsSync(HELM) ? describe : describe.skip;

describeHelm('deploy/helm/patient-journey-engine', () => {
  const apiEnv = (set: string[] = []): Record<string, string | undefined> => {
    const out = execFileSync(HELM, ['template', 'r', CHART, ...set], { encoding: 'utf8' });
    const api = YAML.parseAllDocuments(out)
      .map((d) => d.toJS() as Rendered | null)
      .find((o) => o?.kind === 'Deployment' && o.metadata.labels?.['app.kubernetes.io/component'] === 'api');
    const container = api!.spec!.template.spec.containers[0]!;
    return Object.fromEntries(container.env.map((e) => [e.name, e.value]));
  };

  test('trusts no proxy by default: the ingress controller is named by the deployer, nothing wider is assumed', () => {
    const env = apiEnv();
    expect(env).toHaveProperty('API_TRUSTED_PROXIES', '');
    expect(trustedBy(env.API_TRUSTED_PROXIES)).toEqual([]);
  });

  test("trusts exactly the controller's addresses once they are set, and refuses what is not an address", () => {
    expect(apiEnv(['--set-string', 'api.trustedProxies=10.42.7.0/26']).API_TRUSTED_PROXIES).toBe('10.42.7.0/26');
    expect(apiEnv(['--set-json', 'api.trustedProxies="10.42.7.5,10.42.9.8"']).API_TRUSTED_PROXIES).toBe(
      '10.42.7.5,10.42.9.8',
    );
    expect(() =>
      execFileSync(HELM, ['template', 'r', CHART, '--set-string', 'api.trustedProxies=ingress-nginx'], {
        stdio: 'pipe',
      }),
    ).toThrow(/trustedProxies/);
  });
});
