// deploy/compose.temporal-split.yml over docker-compose.yml, checked without a Docker engine: the override merged the
// way Compose merges it (`!override` replaces, `!reset` removes, mappings merge), then held to what the base file
// does for its services and its Temporal server: each of Temporal's services a container of its own, known by its own
// address, the balancer where every client already looks for Temporal, the same shard count. HAProxy's configuration
// runs here against two HTTP/2 stand-ins for the frontends when haproxy is installed.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Http2Server } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { freePort } from '../support/dev-server-process';
import { until } from '../support/until';
import {
  envOf,
  loadCompose,
  mounts,
  parseDotenv,
  publishedPorts,
  read,
  type ComposeFile,
  type Env,
  type Service,
} from './compose-file';

const OVERRIDE = 'deploy/compose.temporal-split.yml';
const userEnv: Env = {
  ...parseDotenv(read('deploy/.env.example')).values,
  POSTGRES_PASSWORD: 'a-test-password-only',
  SECRETS_GID: '1000',
};
const { compose: base } = loadCompose(read('docker-compose.yml'), userEnv);

// Compose's merge tags (`!override` replaces what the base file sets, `!reset` removes it): read as the plain value
// they tag; which setting of which service carries one, from the document.
const MERGE_TAGS: YAML.Tags = ['!override', '!reset'].flatMap((tag): YAML.CollectionTag[] => [
  { tag, collection: 'map', resolve: (map) => map },
  { tag, collection: 'seq', resolve: (seq) => seq },
]);
const overrideText = read(OVERRIDE);
const { compose: splitCompose, used: splitUses } = loadCompose(overrideText, userEnv);
const split = splitCompose as ComposeFile & { networks: Record<string, unknown> };
/** service -> setting -> its tag. */
const tags: Record<string, Record<string, string>> = {};
const services = YAML.parseDocument(overrideText, { merge: true, customTags: MERGE_TAGS }).get('services');
for (const { key, value } of (services as YAML.YAMLMap<YAML.Scalar<string>, YAML.YAMLMap>).items) {
  for (const pair of value?.items ?? []) {
    const tag = (pair.value as YAML.Node | null)?.tag;
    if (tag) (tags[key.value] ??= {})[String((pair.key as YAML.Scalar).value)] = tag;
  }
}

const isMap = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

// What Compose replaces rather than appends to when both files set it.
const REPLACED = new Set(['command', 'entrypoint', 'test']);

/** Compose's merge of the override's value onto the base's (the merge tags apply at the service level). */
function merge(baseNode: unknown, over: unknown, key = ''): unknown {
  if (isMap(baseNode) && isMap(over)) {
    const out: Record<string, unknown> = { ...baseNode };
    for (const [k, v] of Object.entries(over)) out[k] = merge(baseNode[k], v, k);
    return out;
  }
  if (Array.isArray(baseNode) && Array.isArray(over) && !REPLACED.has(key)) {
    const seen = new Set(baseNode.map((v) => JSON.stringify(v)));
    return [...baseNode, ...over.filter((v) => !seen.has(JSON.stringify(v)))];
  }
  return over;
}
function mergeService(name: string, baseService: Service | undefined, over: Service): Service {
  const out: Record<string, unknown> = { ...baseService };
  for (const [k, v] of Object.entries(over)) {
    const tag = tags[name]?.[k];
    if (tag === '!reset') delete out[k];
    else if (tag === '!override') out[k] = v;
    else out[k] = merge(out[k], v, k);
  }
  return out;
}
const merged = {
  ...(merge(base, { ...split, services: {} }) as ComposeFile),
  services: {
    ...base.services,
    ...Object.fromEntries(
      Object.entries(split.services).map(([n, s]) => [n, mergeService(n, base.services[n], s)] as const),
    ),
  },
} as ComposeFile & {
  networks: Record<string, { internal?: boolean; ipam?: { config: { subnet: string }[] } }>;
};

type Node = Service & {
  networks: Record<string, { ipv4_address?: string } | null>;
  healthcheck: { test: string[]; interval?: string; timeout?: string; retries?: number; start_period?: string };
};
const svc = (name: string) => {
  const s = merged.services[name];
  if (!s) throw new Error(`no service ${name}`);
  return s as Node;
};

/** Each container of the split and the one service of Temporal it runs. */
const NODES: Record<string, string> = {
  'temporal-frontend-1': 'frontend',
  'temporal-frontend-2': 'frontend',
  'temporal-history-1': 'history',
  'temporal-history-2': 'history',
  'temporal-matching-1': 'matching',
  'temporal-matching-2': 'matching',
  'temporal-internal-frontend': 'internal-frontend',
  'temporal-worker': 'worker',
};
const BALANCER = 'temporal';
const SPLIT = [BALANCER, ...Object.keys(NODES)];

/** Renders the Temporal server's `{{ env "NAME" }}` (sprig, as the server renders an `enable-template` file). */
const renderEnv = (template: string, vars: Record<string, string>) =>
  template.replace(/\{\{ env "([A-Z0-9_]+)" \}\}/g, (_m, name: string) => {
    if (!(name in vars)) throw new Error(`${name} is not set`);
    return vars[name]!;
  });
interface ServerConfig {
  global: { membership: Record<string, unknown>; authorization?: unknown };
  services: Record<string, { rpc: { grpcPort: number; membershipPort: number; bindOnIP: string } }>;
  clusterMetadata?: { clusterInformation: Record<string, { rpcAddress: string }> };
}
const rendered = (configName: string, vars: Record<string, string>) =>
  YAML.parse(renderEnv(merged.configs![configName]!.content, vars)) as ServerConfig;

/** A node's address in the network only Temporal's services join. */
const clusterAddress = (name: string) => svc(name).networks['temporal-cluster']?.ipv4_address;

describe('deploy/compose.temporal-split.yml', () => {
  test('interpolates only variables deploy/.env.example documents', () => {
    const documented = parseDotenv(read('deploy/.env.example')).documented;
    expect(splitUses.has('TEMPORAL_NETWORK_PREFIX')).toBe(true);
    expect([...splitUses].filter((v) => !documented.has(v))).toEqual([]);
  });

  test("runs each of Temporal's services in a container of its own, every service of the compose's server", () => {
    // Only the split's services: the override changes nothing else of docker-compose.yml.
    expect(Object.keys(split.services).sort()).toEqual([...SPLIT].sort());
    for (const [name, s] of Object.entries(base.services)) {
      if (!SPLIT.includes(name)) expect([name, merged.services[name]]).toEqual([name, s]);
    }
    for (const [name, service] of Object.entries(NODES)) {
      // The image's start script reads SERVICES, the server's own flag TEMPORAL_SERVICES: one service in both.
      const e = envOf(svc(name));
      expect([name, e.SERVICES, e.TEMPORAL_SERVICES]).toEqual([name, service, service]);
    }
    // Every service the compose's single server runs (the internal frontend with its authorizer), frontends,
    // history and matching twice, the others once.
    const single = envOf(base.services.temporal!).SERVICES!.split(':');
    expect([...new Set(Object.values(NODES))].sort()).toEqual([...single].sort());
    const count = (s: string) => Object.values(NODES).filter((x) => x === s).length;
    expect(['frontend', 'history', 'matching'].map(count)).toEqual([2, 2, 2]);
    expect(['internal-frontend', 'worker'].map(count)).toEqual([1, 1]);
  });

  test("runs them from the compose's server image, database role, secret and authorizer", () => {
    const server = base.services.temporal!;
    const serverEnv = envOf(server);
    // What differs from the single server: the one service, where it is known, its own configuration file.
    const own = ['SERVICES', 'TEMPORAL_SERVICES', 'TEMPORAL_BROADCAST_ADDRESS', 'TEMPORAL_AVAILABILITY_ZONE'];
    for (const name of Object.keys(NODES)) {
      const s = svc(name);
      expect([name, s.image]).toEqual([name, server.image]);
      expect([name, s.entrypoint]).toEqual([name, server.entrypoint]);
      expect([name, s.secrets]).toEqual([name, server.secrets]);
      expect([name, s.volumes]).toEqual([name, server.volumes]);
      // The first node alone (on a fresh database it writes the cluster's metadata), the others once it is up.
      const first = Object.keys(NODES)[0]!;
      expect([name, s.depends_on]).toEqual([
        name,
        name === first ? server.depends_on : { ...server.depends_on, [first]: { condition: 'service_healthy' } },
      ]);
      const e = envOf(s);
      for (const [k, v] of Object.entries(serverEnv)) {
        if (own.includes(k) || k.startsWith('TEMPORAL_INTERNAL_FRONTEND_')) continue;
        expect([name, k, e[k]]).toEqual([name, k, v]);
      }
      // Its configuration over the image's: docker_<zone>.yaml, the split's config.
      expect(s.configs).toEqual([
        { source: 'temporal-split', target: `/etc/temporal/config/docker_${e.TEMPORAL_AVAILABILITY_ZONE}.yaml` },
      ]);
    }
    // The authorizer as the single server has it; the internal frontend's ports the single server's.
    const single = rendered('temporal-auth', { ...serverEnv, TEMPORAL_BROADCAST_ADDRESS: '127.0.0.1' });
    const node = rendered('temporal-split', { ...envOf(svc('temporal-history-1')) });
    expect(node.global.authorization).toEqual(single.global.authorization);
    for (const [service, { rpc }] of Object.entries(single.services)) {
      expect([service, node.services[service]!.rpc]).toMatchObject([
        service,
        { grpcPort: rpc.grpcPort, membershipPort: rpc.membershipPort },
      ]);
    }
    expect(node.services['internal-frontend']!.rpc).toMatchObject({
      grpcPort: Number(serverEnv.TEMPORAL_INTERNAL_FRONTEND_PORT),
      membershipPort: Number(serverEnv.TEMPORAL_INTERNAL_FRONTEND_MEMBERSHIP_PORT),
      httpPort: Number(serverEnv.TEMPORAL_INTERNAL_FRONTEND_HTTP_PORT),
    });
  });

  test('gives every service of the split the hardening docker-compose.yml gives its services', () => {
    const server = base.services.temporal!;
    const balancer = base.services['load-balancer']!;
    // Whatever of these the base file sets on its Temporal server and its HAProxy, the split's have alike.
    const HARDENING = [
      'read_only',
      'cap_drop',
      'cap_add',
      'security_opt',
      'privileged',
      'user',
      'init',
      'mem_limit',
      'cpus',
      'pids_limit',
      'ulimits',
      'tmpfs',
      'deploy',
      'stop_grace_period',
      'logging',
    ];
    for (const name of SPLIT) {
      const like = (name === BALANCER ? balancer : server) as Record<string, unknown>;
      const s = svc(name) as unknown as Record<string, unknown>;
      for (const key of HARDENING) expect([name, key, s[key]]).toEqual([name, key, like[key]]);
    }
    for (const name of SPLIT) {
      const s = svc(name);
      // Long-running, restarted; in no profile (they start with `up`); no fixed container name, no shared namespace.
      expect([name, s.restart]).toEqual([name, 'unless-stopped']);
      expect([name, s.profiles, s.container_name, s.hostname, s.network_mode]).toEqual([
        name,
        undefined,
        undefined,
        undefined,
        undefined,
      ]);
      // Checked as the single server is, as often.
      expect([name, s.healthcheck.test.length > 1]).toEqual([name, true]);
      const { test: _test, ...timing } = s.healthcheck;
      const { test: _serverTest, ...serverTiming } = server.healthcheck as Node['healthcheck'];
      expect([name, timing]).toEqual([name, serverTiming]);
      // A secret is read from its file by the image's user, through SECRETS_GID, in the entrypoint's script.
      for (const secret of s.secrets ?? []) {
        expect([name, secret, (s.entrypoint ?? []).join('\n').includes(`/run/secrets/${secret}`)]).toEqual([
          name,
          secret,
          true,
        ]);
      }
      if ((s.secrets ?? []).length > 0) expect([name, s.group_add]).toEqual([name, [userEnv.SECRETS_GID]]);
      // Published on this machine's loopback or not at all: the balancer alone, where the single server was.
      if (name === BALANCER) expect(publishedPorts(s)).toEqual(publishedPorts(server));
      else expect([name, s.ports]).toEqual([name, undefined]);
    }
    // Every dependency is a service of the merged file, waited on by a condition; the project keeps no other
    // container in a Temporal container's network namespace.
    for (const [name, s] of Object.entries(merged.services)) {
      expect([name, s.network_mode]).toEqual([name, undefined]);
      for (const [dep, d] of Object.entries(s.depends_on ?? {})) {
        expect([name, dep, dep in merged.services, typeof d.condition]).toEqual([name, dep, true, 'string']);
      }
      for (const p of publishedPorts(s)) expect([name, p.hostIp]).toEqual([name, '127.0.0.1']);
    }
  });

  test('knows each service by its own address in a network only they join, where the tokenless ones listen', () => {
    const net = merged.networks['temporal-cluster']!;
    expect(net.internal).toBe(true);
    const subnet = net.ipam!.config[0]!.subnet;
    const prefix = subnet.replace(/\.0\/24$/, '');
    expect(subnet).toBe(`${prefix}.0/24`);
    // Not the project's range.
    expect(merged.networks.default!.ipam!.config[0]!.subnet).not.toBe(subnet);
    // Only the split's server containers join it; the balancer and every other service stay out.
    for (const [name, s] of Object.entries(merged.services)) {
      const joins = Object.keys((s as Node).networks ?? {}).includes('temporal-cluster');
      expect([name, joins]).toEqual([name, name in NODES]);
    }

    const addresses = new Set<string>();
    for (const [name, service] of Object.entries(NODES)) {
      const s = svc(name);
      const e = envOf(s);
      const address = clusterAddress(name)!;
      expect([name, address.startsWith(`${prefix}.`)]).toEqual([name, true]);
      addresses.add(address);
      // On the project's network too: PostgreSQL and Keycloak are there, and the balancer reaches the frontends.
      expect([name, Object.keys(s.networks).sort()]).toEqual([name, ['default', 'temporal-cluster']]);
      expect([name, e.TEMPORAL_BROADCAST_ADDRESS]).toEqual([name, address]);

      const config = rendered('temporal-split', e);
      expect([name, config.global.membership]).toEqual([name, { maxJoinDuration: '30s', broadcastAddress: address }]);
      const { rpc } = config.services[service]!;
      // The frontends check every token and take the balancer's calls on the project's network; the others listen on
      // their address in `temporal-cluster` only.
      expect([name, rpc.bindOnIP]).toEqual([name, service === 'frontend' ? '0.0.0.0' : address]);
      // The health check asks its own service's port (the system worker's membership port: it serves no gRPC).
      const port = service === 'worker' ? rpc.membershipPort : rpc.grpcPort;
      const check = s.healthcheck.test.join(' ');
      expect([name, check.endsWith(` ${port}`)]).toEqual([name, true]);
      if (service !== 'frontend') expect(check).toContain('"$TEMPORAL_BROADCAST_ADDRESS"');
    }
    expect(addresses.size).toBe(Object.keys(NODES).length);
  });

  test("puts the balancer where every client already reaches Temporal: the clients' address resolves to it", () => {
    const lb = svc(BALANCER);
    expect(lb.image).toBe(base.services['load-balancer']!.image);
    // Nothing of the server is left on it.
    expect([lb.environment, lb.secrets, lb.configs, lb.group_add]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    expect(lb.entrypoint?.[0]).toBe('haproxy');
    const mounted = mounts(lb);
    expect(mounted).toEqual([
      { source: './deploy/haproxy/temporal-split.cfg', target: '/usr/local/etc/haproxy/haproxy.cfg', readOnly: true },
    ]);
    expect(lb.entrypoint).toContain(mounted[0]!.target);
    const cfg = read(mounted[0]!.source);
    const port = Number(/^\s*bind :(\d+) proto h2$/m.exec(cfg)?.[1]);
    expect(publishedPorts(lb)).toEqual([{ hostIp: '127.0.0.1', host: port, container: port }]);
    // It waits for the whole cluster: temporal-setup, waiting for `temporal`, finds every service up.
    expect(lb.depends_on).toEqual(
      Object.fromEntries(Object.keys(NODES).map((n) => [n, { condition: 'service_healthy' }])),
    );
    expect(svc('temporal-setup').depends_on).toEqual({ [BALANCER]: { condition: 'service_healthy' } });

    // Every address of Temporal a service is told (the engine, the UI, the jobs, the cluster's own services) is
    // the balancer's name and port.
    const told = Object.entries(merged.services).flatMap(([name, s]) =>
      Object.entries(envOf(s))
        .filter(([k]) => ['TEMPORAL_ADDRESS', 'TEMPORAL_CLUSTER_ADDRESS'].includes(k))
        .map(([k, v]) => [name, k, v] as const),
    );
    expect(told.length).toBeGreaterThan(Object.keys(NODES).length + 3);
    for (const [name, k, address] of told) expect([name, k, address]).toEqual([name, k, `${BALANCER}:${port}`]);
    for (const name of Object.keys(NODES)) {
      const config = rendered('temporal-split', envOf(svc(name)));
      expect(config.clusterMetadata!.clusterInformation.active!.rpcAddress).toBe(`${BALANCER}:${port}`);
    }
  });

  test("balances gRPC over HTTP/2 over both frontends, at the frontends' port", () => {
    const cfg = read(mounts(svc(BALANCER))[0]!.source);
    expect(cfg).toMatch(/^\s*mode http$/m);
    const servers = [...cfg.matchAll(/^\s*server (\S+) (\S+):(\d+)(.*)$/gm)].map((m) => ({
      name: m[1],
      host: m[2],
      port: Number(m[3]),
      options: m[4]!.trim().split(/\s+/),
    }));
    const frontends = Object.keys(NODES).filter((n) => NODES[n] === 'frontend');
    expect(servers.map((s) => s.host)).toEqual(frontends);
    const grpcPort = rendered('temporal-split', envOf(svc(frontends[0]!))).services.frontend!.rpc.grpcPort;
    for (const s of servers) {
      expect(s.port).toBe(grpcPort);
      expect(s.options).toEqual(expect.arrayContaining(['proto', 'h2', 'check']));
      expect(s.options[s.options.indexOf('proto') + 1]).toBe('h2');
    }
    expect(cfg).toMatch(/^\s*balance roundrobin$/m);
    // The calls carry the callers' tokens: HAProxy logs none.
    expect(cfg).not.toMatch(/^\s*(log|option httplog)\b/m);
  });

  test('keeps the number of history shards docker-compose.yml has (it cannot change after the first start)', () => {
    // The single server's: NUM_HISTORY_SHARDS, else the image's template's default (4), which is also the native
    // server's (deploy/temporal/production.yaml).
    const imageDefault = '4';
    const single = envOf(base.services.temporal!).NUM_HISTORY_SHARDS ?? imageDefault;
    const native = /numHistoryShards: \{\{ default "(\d+)" \(env "TEMPORAL_HISTORY_SHARDS"\) \}\}/.exec(
      read('deploy/temporal/production.yaml'),
    )?.[1];
    expect(native).toBe(single);
    for (const name of Object.keys(NODES)) {
      expect([name, envOf(svc(name)).NUM_HISTORY_SHARDS]).toEqual([name, single]);
    }
    expect(read(OVERRIDE)).toMatch(/NUM_HISTORY_SHARDS: '\d+'/);
    expect(read(OVERRIDE)).toContain('cannot change after the first start');
  });
});

const HAPROXY = ['/usr/sbin/haproxy', '/usr/local/sbin/haproxy', '/usr/bin/haproxy'].find((p) => existsSync(p));

describe("the balancer's HAProxy (when haproxy is installed here)", () => {
  (HAPROXY ? test : test.skip)(
    'spreads the calls of one connection over both frontends; healthy while one is up',
    async () => {
      const work = mkdtempSync(path.join(tmpdir(), 'temporal-split-'));
      const seen: string[] = [];
      const frontends: Http2Server[] = ['frontend-1', 'frontend-2'].map((name) =>
        createServer((req, res) => {
          seen.push(name);
          res.writeHead(200, { 'content-type': 'application/grpc', 'grpc-status': '0' });
          res.end();
        }),
      );
      let haproxy: ReturnType<typeof spawn> | undefined;
      try {
        const ports: number[] = [];
        for (const f of frontends) {
          await new Promise<void>((resolve) => f.listen(0, '127.0.0.1', resolve));
          ports.push((f.address() as AddressInfo).port);
        }
        const [grpc, health] = [await freePort(), await freePort()];
        const lb = svc(BALANCER);
        let cfg = read(mounts(lb)[0]!.source);
        // The file as the container reads it, its addresses this machine's.
        const edits: [string, string][] = [
          ['  bind :7233 proto h2\n', `  bind 127.0.0.1:${grpc} proto h2\n`],
          ['  bind 127.0.0.1:8404\n', `  bind 127.0.0.1:${health}\n`],
          ['temporal-frontend-1:7233', `127.0.0.1:${ports[0]}`],
          ['temporal-frontend-2:7233', `127.0.0.1:${ports[1]}`],
        ];
        for (const [from, to] of edits) {
          expect([from, cfg.includes(from)]).toEqual([from, true]);
          cfg = cfg.replace(from, to);
        }
        const file = path.join(work, 'haproxy.cfg');
        writeFileSync(file, cfg);
        execFileSync(HAPROXY!, ['-c', '-q', '-f', file], { stdio: 'pipe' });
        haproxy = spawn(HAPROXY!, ['-db', '-f', file], { stdio: 'ignore' });

        // The container's health check, its port this one's (`$$` is Compose's escape of `$`).
        const check = lb.healthcheck.test;
        expect(check.slice(0, 3)).toEqual(['CMD', 'bash', '-c']);
        const script = check[3]!.replaceAll('$$', '$').replace('/127.0.0.1/8404', `/127.0.0.1/${health}`);
        const healthy = () => spawnSync('bash', ['-c', script], { timeout: 5_000 }).status === 0;
        await until('the balancer healthy', () => Promise.resolve(healthy() ? true : undefined), 15_000);

        // One HTTP/2 connection, as a gRPC client keeps: its calls go to both frontends in turn.
        const session = connect(`http://127.0.0.1:${grpc}`);
        try {
          for (let i = 0; i < 6; i++) {
            await new Promise<void>((resolve, reject) => {
              const req = session.request({
                ':method': 'POST',
                ':path': '/temporal.api.workflowservice.v1.WorkflowService/GetSystemInfo',
                'content-type': 'application/grpc',
                te: 'trailers',
              });
              req.on('response', (headers) => expect(headers[':status']).toBe(200));
              req.on('error', reject);
              req.on('end', () => resolve());
              req.resume();
              req.end();
            });
          }
        } finally {
          session.close();
        }
        expect(seen.filter((n) => n === 'frontend-1').length).toBe(3);
        expect(seen.filter((n) => n === 'frontend-2').length).toBe(3);

        // Both frontends gone: unhealthy once HAProxy's checks have failed.
        for (const f of frontends) await new Promise<void>((resolve) => f.close(() => resolve()));
        await until('the balancer unhealthy', () => Promise.resolve(healthy() ? undefined : true), 15_000);
      } finally {
        haproxy?.kill();
        for (const f of frontends) f.close();
        rmSync(work, { recursive: true, force: true });
      }
    },
    40_000,
  );
});
