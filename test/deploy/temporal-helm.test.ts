// Temporal's own Helm chart (temporalio/helm-charts, vendored in deploy/helm/vendor/temporal) with the engine's values
// (deploy/helm/temporal-values.yaml), linted and rendered offline by the pinned helm (scripts/install-helm.sh) and
// checked against what the engine runs elsewhere: deploy/temporal/production.yaml and its dynamic configuration, the
// journey's search attributes, docker-compose.yml's server, UI and codec settings, and the engine's chart beside it.
// Skipped when helm is not installed.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { SEARCH_ATTRIBUTE_KEYS } from '../../src/contract/definitions';
import { searchAttributeTypeName } from '../../scripts/lib/stack-secrets';
import { envOf, parseCompose } from '../compose/compose-file';

const ROOT = path.resolve(__dirname, '../..');
const HELM = path.join(process.env.TEMPORAL_TOOLS_DIR ?? path.join(ROOT, '.tools'), 'helm', 'bin', 'helm');
const VENDOR = path.join(ROOT, 'deploy/helm/vendor');
const CHART = path.join(VENDOR, 'temporal');
const VALUES = path.join(ROOT, 'deploy/helm/temporal-values.yaml');
const ENGINE_CHART = path.join(ROOT, 'deploy/helm/patient-journey-engine');
/** The release and namespace docs/deploy.md installs Temporal as. */
const RELEASE = 'temporal';
const NAMESPACE = 'temporal';
const SERVICES = ['frontend', 'internal-frontend', 'history', 'matching', 'worker'] as const;

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string }; fieldRef?: unknown };
}
interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  env?: EnvVar[];
}
interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
}
interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  data?: Record<string, string>;
  spec?: Record<string, unknown> & {
    replicas?: number;
    template?: { spec: PodSpec };
    minAvailable?: number;
    selector?: { matchLabels?: Record<string, string> };
    ports?: { name: string; port: number }[];
  };
}

const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

function helm(args: string[]): string {
  return execFileSync(HELM, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

function render(): K8sObject[] {
  return YAML.parseAllDocuments(helm(['template', RELEASE, CHART, '-n', NAMESPACE, '-f', VALUES]))
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
}

const byKind = (objects: K8sObject[], kind: string) => objects.filter((o) => o.kind === kind);
const component = (o: K8sObject) => o.metadata.labels?.['app.kubernetes.io/component'];
const podOf = (o: K8sObject) => o.spec!.template!.spec;
const envValue = (c: Container, name: string) => c.env?.find((e) => e.name === name);

/**
 * A Go template of the server's configuration as YAML: `{{ env "X" }}` becomes <env:X> (quoted with `| quote`),
 * `{{ default "v" (env "X") }}` becomes v, and lines holding only an action (`{{- if ... }}`, `{{- end }}`) go.
 */
function templateAsYaml(text: string): unknown {
  return YAML.parse(
    text
      .split('\n')
      .filter((line) => !/^\s*\{\{-?[^}]*\}\}\s*$/.test(line))
      .join('\n')
      .replace(/\{\{ env "(\w+)" \| quote \}\}/g, '"<env:$1>"')
      .replace(/\{\{ default "([^"]*)" \(env "\w+"\) \}\}/g, '$1')
      .replace(/\{\{ env "(\w+)" \}\}/g, '<env:$1>'),
  );
}

interface SqlStore {
  pluginName: string;
  databaseName: string;
  connectAddr: string;
  connectProtocol: string;
  user: string;
  password?: string;
  maxConns: number;
  maxIdleConns: number;
  maxConnLifetime: string;
}
interface ServerConfig {
  persistence: {
    defaultStore: string;
    visibilityStore: string;
    numHistoryShards: number;
    datastores: Record<string, { sql: SqlStore }>;
  };
  global: {
    authorization: {
      jwtKeyProvider: { keySourceURIs: string[]; refreshInterval: string };
      permissionsClaimName: string;
      audience: string;
      authorizer: string;
      claimMapper: string;
    };
  };
  services: Record<string, unknown>;
}

/** deploy/temporal/production.yaml, the native server's configuration. */
const production = templateAsYaml(read('deploy/temporal/production.yaml')) as ServerConfig;
const compose = parseCompose(read('docker-compose.yml'));

const describeHelm = existsSync(HELM) ? describe : describe.skip;

describe('deploy/helm/vendor/temporal', () => {
  const listed = read('deploy/helm/vendor/temporal.sha256')
    .trim()
    .split('\n')
    .map((line) => /^([0-9a-f]{64}) {2}(.+)$/.exec(line)!);
  const files = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const full = path.join(dir, name);
      return statSync(full).isDirectory() ? files(full) : [path.relative(VENDOR, full)];
    });

  test('is the pinned commit of temporalio/helm-charts, unchanged: every file as its SHA-256 list says', () => {
    expect(listed.every(Boolean)).toBe(true);
    const sums = Object.fromEntries(listed.map(([, sum, file]) => [file!, sum!]));
    expect(files(CHART).sort()).toEqual([...Object.keys(sums), 'temporal/VENDORED.md'].sort());
    for (const [file, sum] of Object.entries(sums)) {
      const actual = createHash('sha256')
        .update(readFileSync(path.join(VENDOR, file)))
        .digest('hex');
      expect([file, actual]).toEqual([file, sum]);
    }
    const script = read('scripts/vendor-temporal-chart.sh');
    const commit = /^commit=([0-9a-f]{40})$/m.exec(script)![1]!;
    const tag = /^tag=(\S+)$/m.exec(script)![1]!;
    const note = readFileSync(path.join(CHART, 'VENDORED.md'), 'utf8');
    expect(note).toContain(commit);
    expect(note).toContain(`\`${tag}\``);
    expect(readFileSync(path.join(CHART, 'LICENSE'), 'utf8')).toMatch(/^The MIT License/);
  });

  test('is chart 1.1.1, whose server is of the 1.30 line the engine runs, with no dependency charts', () => {
    const chart = YAML.parse(readFileSync(path.join(CHART, 'Chart.yaml'), 'utf8')) as Record<string, unknown>;
    expect(chart).toMatchObject({ name: 'temporal', version: '1.1.1', appVersion: '1.30.3' });
    expect(chart.dependencies).toBeUndefined();
    expect(existsSync(path.join(CHART, 'charts'))).toBe(false);
    const installed = /^version="v([^"]+)"$/m.exec(read('scripts/install-temporal-server.sh'))![1]!;
    expect(installed.split('.').slice(0, 2)).toEqual(['1', '30']);
  });
});

describeHelm('deploy/helm/temporal-values.yaml on Temporal’s chart', () => {
  // Rendered here, not while collecting, so that a skipped suite never calls helm.
  let objects: K8sObject[];
  let config: ServerConfig;
  beforeAll(() => {
    objects = render();
    const configMap = byKind(objects, 'ConfigMap').find((o) => o.metadata.name === `${RELEASE}-config`)!;
    config = templateAsYaml(configMap.data!['config_template.yaml']!) as ServerConfig;
  });
  const deployment = (name: string) => {
    const d = byKind(objects, 'Deployment').find((o) => component(o) === name);
    if (!d) throw new Error(`no ${name} Deployment`);
    return d;
  };

  test('passes helm lint --strict, offline', () => {
    expect(() => helm(['lint', '--strict', CHART, '-f', VALUES])).not.toThrow();
  });

  test("runs each of Temporal's services as a Deployment of its own: two frontends, two history, two matching", () => {
    const deployments = byKind(objects, 'Deployment');
    expect(deployments.map((d) => [component(d), d.spec!.replicas]).sort()).toEqual(
      [
        ['frontend', 2],
        ['history', 2],
        ['internal-frontend', 1],
        ['matching', 2],
        ['web', 1],
        ['worker', 1],
      ].sort(),
    );
    // The version of the native stack and of docker-compose.yml.
    const version = /^version="v([^"]+)"$/m.exec(read('scripts/install-temporal-server.sh'))![1]!;
    expect(compose.services.temporal!.image).toBe(`temporalio/server:${version}`);
    for (const service of SERVICES) {
      const [container, ...others] = podOf(deployment(service)).containers;
      expect(others).toEqual([]);
      expect(container!.image).toBe(`temporalio/server:${version}`);
      // One service per process.
      expect(envValue(container!, 'TEMPORAL_SERVICES')?.value).toBe(service);
    }
    // The replicated services each keep one pod through a node drain.
    const budgets = byKind(objects, 'PodDisruptionBudget');
    expect(budgets.map((b) => [component(b), b.spec!.minAvailable]).sort()).toEqual(
      [
        ['frontend', 1],
        ['history', 1],
        ['matching', 1],
      ].sort(),
    );
    for (const b of budgets) {
      expect(b.spec!.selector!.matchLabels).toMatchObject({ 'app.kubernetes.io/component': component(b) });
    }
    // No admin-tools Deployment (it would sit on the internal frontend, which takes no token).
    expect(deployments.map(component)).not.toContain('admintools');
  });

  test("keeps the default store and visibility on PostgreSQL (postgres12), as deploy/temporal/production.yaml's", () => {
    const { persistence } = config;
    expect(persistence.defaultStore).toBe('default');
    expect(persistence.visibilityStore).toBe('visibility');
    // The same databases and pools as the native server's (whose stores are named postgres-default and
    // postgres-visibility; the chart's schema Job needs its own names).
    const pick = (s: SqlStore) => ({
      pluginName: s.pluginName,
      databaseName: s.databaseName,
      connectProtocol: s.connectProtocol,
      maxConns: s.maxConns,
      maxIdleConns: s.maxIdleConns,
      maxConnLifetime: s.maxConnLifetime,
    });
    const native = production.persistence.datastores;
    expect(pick(persistence.datastores.default!.sql)).toEqual(pick(native[production.persistence.defaultStore]!.sql));
    expect(pick(persistence.datastores.visibility!.sql)).toEqual(
      pick(native[production.persistence.visibilityStore]!.sql),
    );
    expect(Object.values(persistence.datastores).map((d) => [d.sql.pluginName, d.sql.databaseName])).toEqual([
      ['postgres12', 'temporal'],
      ['postgres12', 'temporal_visibility'],
    ]);
    // As Temporal's own role, the one docker-compose.yml's temporal-database job makes.
    expect(envOf(compose.services.temporal!).POSTGRES_USER).toBe('temporal_server');
    for (const store of Object.values(persistence.datastores)) expect(store.sql.user).toBe('temporal_server');
    // The password from the environment of each server process, which takes it from an existing Secret.
    expect(persistence.datastores.default!.sql.password).toBe('<env:TEMPORAL_DEFAULT_STORE_PASSWORD>');
    expect(persistence.datastores.visibility!.sql.password).toBe('<env:TEMPORAL_VISIBILITY_STORE_PASSWORD>');
    for (const service of SERVICES) {
      const container = podOf(deployment(service)).containers[0]!;
      for (const name of ['TEMPORAL_DEFAULT_STORE_PASSWORD', 'TEMPORAL_VISIBILITY_STORE_PASSWORD']) {
        expect(envValue(container, name)).toEqual({
          name,
          valueFrom: { secretKeyRef: { name: 'temporal-database', key: 'password' } },
        });
      }
    }
  });

  test("keeps production.yaml's history shard count, which the values say cannot change later", () => {
    expect(config.persistence.numHistoryShards).toBe(production.persistence.numHistoryShards);
    expect(typeof config.persistence.numHistoryShards).toBe('number');
    expect(read('deploy/helm/temporal-values.yaml')).toMatch(/cannot change afterwards/);
  });

  test('sets the schemas up as Temporal’s role before the server starts, on databases made beforehand', () => {
    const jobs = byKind(objects, 'Job');
    const schema = jobs.find((j) => j.metadata.annotations?.['helm.sh/hook'] === 'pre-install,pre-upgrade')!;
    const steps = podOf(schema).initContainers!;
    // No create-database step: the role may not create databases.
    expect(steps.map((c) => c.name)).toEqual(['manage-schema-default-store', 'manage-schema-visibility-store']);
    expect(steps.map((c) => c.args![0])).toEqual([
      expect.stringMatching(
        /update-schema --schema-dir \/etc\/temporal\/schema\/postgresql\/v12\/temporal\/versioned$/,
      ),
      expect.stringMatching(
        /update-schema --schema-dir \/etc\/temporal\/schema\/postgresql\/v12\/visibility\/versioned$/,
      ),
    ]);
    for (const step of steps) {
      expect(envValue(step, 'SQL_USER')?.value).toBe('temporal_server');
      expect(envValue(step, 'SQL_PASSWORD')?.valueFrom).toEqual({
        secretKeyRef: { name: 'temporal-database', key: 'password' },
      });
    }
  });

  test('holds no password: no Secret is rendered, every secret-like variable comes from an existing Secret', () => {
    expect(byKind(objects, 'Secret')).toEqual([]);
    // TEMPORAL_CODEC_PASS_ACCESS_TOKEN is a switch, not a token.
    const secretish = /(PASSWORD|SECRET|API_KEY|PWD|(?<!PASS_ACCESS)_TOKEN)$/;
    for (const o of objects) {
      const pod = o.kind === 'Pod' ? (o.spec as unknown as PodSpec) : o.spec?.template?.spec;
      for (const c of [...(pod?.containers ?? []), ...(pod?.initContainers ?? [])]) {
        for (const e of c.env ?? []) {
          if (secretish.test(e.name)) {
            expect([o.metadata.name, e.name, e.value, e.valueFrom?.secretKeyRef]).toEqual([
              o.metadata.name,
              e.name,
              undefined,
              expect.anything(),
            ]);
          }
        }
      }
    }
    // The server's configuration names each password by the variable that holds it, nothing more.
    const text = helm(['template', RELEASE, CHART, '-n', NAMESPACE, '-f', VALUES]);
    const passwords = [...text.matchAll(/^\s*password:\s*(.*)$/gim)].map((m) => m[1]);
    expect(passwords).toEqual([
      '{{ env "TEMPORAL_DEFAULT_STORE_PASSWORD" | quote }}',
      '{{ env "TEMPORAL_VISIBILITY_STORE_PASSWORD" | quote }}',
    ]);
    const values = YAML.parse(read('deploy/helm/temporal-values.yaml')) as {
      server: { config: { persistence: { datastores: Record<string, { sql: Record<string, unknown> }> } } };
    };
    for (const store of Object.values(values.server.config.persistence.datastores)) {
      expect(store.sql).not.toHaveProperty('password');
      expect(store.sql.existingSecret).toBe('temporal-database');
    }
  });

  test("turns on production.yaml's JWT authorizer and claim mapper, with the internal frontend for the server's worker", () => {
    const auth = config.global.authorization;
    const native = production.global.authorization;
    expect(auth).toMatchObject({
      permissionsClaimName: native.permissionsClaimName,
      authorizer: native.authorizer,
      claimMapper: native.claimMapper,
      jwtKeyProvider: { refreshInterval: native.jwtKeyProvider.refreshInterval },
    });
    expect(native.permissionsClaimName).toBe('permissions');
    // The realm's keys and audience, as docker-compose.yml's server has them (the address as the pods reach it).
    const temporalEnv = envOf(compose.services.temporal!);
    expect(auth.audience).toBe(temporalEnv.TEMPORAL_AUTH_AUDIENCE);
    expect(auth.jwtKeyProvider.keySourceURIs).toHaveLength(1);
    const keys = new URL(auth.jwtKeyProvider.keySourceURIs[0]!);
    expect(keys.pathname).toBe(new URL(temporalEnv.TEMPORAL_AUTH_JWKS_URL!).pathname);
    // The internal frontend: a service of its own, which the server's worker uses; production.yaml has it too.
    expect(Object.keys(config.services)).toContain('internal-frontend');
    expect(Object.keys(production.services)).toContain('internal-frontend');
    for (const service of SERVICES) {
      expect(envValue(podOf(deployment(service)).containers[0]!, 'USE_INTERNAL_FRONTEND')?.value).toBe('1');
    }
    // It takes no token: only the server's own pods and Jobs reach it.
    const [policy, ...others] = byKind(objects, 'NetworkPolicy');
    expect(others).toEqual([]);
    expect(policy!.spec!.podSelector).toEqual({
      matchLabels: {
        'app.kubernetes.io/name': 'temporal',
        'app.kubernetes.io/instance': RELEASE,
        'app.kubernetes.io/component': 'internal-frontend',
      },
    });
    expect(policy!.spec!.ingress).toEqual([
      {
        from: [
          {
            podSelector: {
              matchLabels: { 'app.kubernetes.io/name': 'temporal', 'app.kubernetes.io/instance': RELEASE },
              matchExpressions: [
                {
                  key: 'app.kubernetes.io/component',
                  operator: 'In',
                  values: ['frontend', 'internal-frontend', 'history', 'matching', 'worker', 'database'],
                },
              ],
            },
          },
        ],
      },
      { ports: [{ port: 'metrics', protocol: 'TCP' }] },
    ]);
    // The Web UI goes through the frontend, which checks the person's token.
    const web = podOf(deployment('web')).containers[0]!;
    expect(envValue(web, 'TEMPORAL_ADDRESS')?.value).toBe(`${RELEASE}-frontend.${NAMESPACE}.svc:7233`);
  });

  test('takes deploy/temporal/dynamicconfig/production.yaml as its dynamic configuration', () => {
    const configMap = byKind(objects, 'ConfigMap').find((o) => o.metadata.name === `${RELEASE}-dynamic-config`)!;
    expect(YAML.parse(configMap.data!['dynamic_config.yaml']!)).toEqual(
      YAML.parse(read('deploy/temporal/dynamicconfig/production.yaml')),
    );
  });

  test('creates the namespace the engine runs in and registers every search attribute the journeys write', () => {
    const engineValues = YAML.parse(readFileSync(path.join(ENGINE_CHART, 'values.yaml'), 'utf8')) as {
      temporal: { address: string; namespace: string };
    };
    const ns = engineValues.temporal.namespace;
    const jobs = byKind(objects, 'Job');
    const namespaceJob = jobs.find((j) => j.metadata.name.startsWith(`${RELEASE}-namespace-`))!;
    expect(podOf(namespaceJob).initContainers!.map((c) => c.args)).toEqual([
      [`temporal operator namespace describe -n ${ns} || temporal operator namespace create -n ${ns} --retention 30d`],
    ]);
    // The engine's chart reaches this release's frontend at its default address.
    const frontend = byKind(objects, 'Service').find((s) => s.metadata.name === `${RELEASE}-frontend`)!;
    const grpc = frontend.spec!.ports!.find((p) => p.name === 'grpc-rpc')!;
    expect(engineValues.temporal.address).toBe(`${frontend.metadata.name}.${NAMESPACE}.svc:${grpc.port}`);

    const job = jobs.find((j) => j.metadata.name === `${RELEASE}-search-attributes-1`)!;
    const [container] = podOf(job).containers;
    expect(container!.image).toBe(
      `temporalio/admin-tools:${/^version="v([^"]+)"$/m.exec(read('scripts/install-temporal-server.sh'))![1]}`,
    );
    expect(envValue(container!, 'TEMPORAL_NAMESPACE')?.value).toBe(ns);
    expect(envValue(container!, 'TEMPORAL_ADDRESS')?.value).toBe(`${RELEASE}-internal-frontend.${NAMESPACE}.svc:7236`);
    const script = container!.args![0]!;
    const created = [
      ...script.matchAll(
        /^retry temporal operator search-attribute create --namespace "\$TEMPORAL_NAMESPACE" --name (\w+) --type (\w+)$/gm,
      ),
    ].map((m) => [m[1], m[2]]);
    expect(created.sort()).toEqual(SEARCH_ATTRIBUTE_KEYS.map((k) => [k.name, searchAttributeTypeName(k.type)]).sort());
    // Once the namespace answers; then lists what it has.
    expect(script.indexOf('namespace describe')).toBeLessThan(script.indexOf('search-attribute create'));
    expect(script).toMatch(/search-attribute list --namespace "\$TEMPORAL_NAMESPACE"\n?$/);
    expect(container!.command).toEqual(['/bin/sh', '-ec']);
  });

  test("gives the Web UI the sign-in and the engine's codec endpoint that the engine's chart asks for", () => {
    const web = deployment('web');
    const container = podOf(web).containers[0]!;
    const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value ?? e.valueFrom]));
    // Every setting the engine's NOTES.txt gives for the Web UI.
    const notes = readFileSync(path.join(ENGINE_CHART, 'templates/NOTES.txt'), 'utf8');
    const asked = [...notes.matchAll(/^ {2}(TEMPORAL_[A-Z_]+)=/gm)].map((m) => m[1]!);
    expect(asked).toEqual(expect.arrayContaining(['TEMPORAL_CODEC_ENDPOINT', 'TEMPORAL_CODEC_PASS_ACCESS_TOKEN']));
    expect(asked.filter((name) => !(name in env))).toEqual([]);
    // The codec server over HTTPS (the UI passes a token to an https:// endpoint only), with the person's token.
    expect(new URL(env.TEMPORAL_CODEC_ENDPOINT as string).protocol).toBe('https:');
    expect(env.TEMPORAL_CODEC_PASS_ACCESS_TOKEN).toBe('true');
    expect(env.TEMPORAL_AUTH_ENABLED).toBe('true');
    // As docker-compose.yml's UI has them.
    const composeUi = envOf(compose.services['temporal-ui']!);
    expect(env.TEMPORAL_AUTH_CLIENT_ID).toBe(composeUi.TEMPORAL_AUTH_CLIENT_ID);
    expect(env.TEMPORAL_AUTH_SCOPES).toBe(composeUi.TEMPORAL_AUTH_SCOPES);
    expect(composeUi.TEMPORAL_CODEC_PASS_ACCESS_TOKEN).toBe('true');
    expect(env.TEMPORAL_AUTH_CLIENT_SECRET).toEqual({
      secretKeyRef: { name: 'temporal-ui-client', key: 'client-secret' },
    });
    // The sign-in comes back to the UI's own host, the one its Ingress serves over TLS.
    const ingress = byKind(objects, 'Ingress').find((o) => component(o) === 'web')!;
    const host = (ingress.spec as { rules: { host: string }[] }).rules[0]!.host;
    expect(env.TEMPORAL_AUTH_CALLBACK_URL).toBe(`https://${host}/auth/sso/callback`);
    expect((ingress.spec as { tls: { hosts: string[] }[] }).tls[0]!.hosts).toEqual([host]);
    // The UI's image with its server built with PKCE, as docker-compose.yml builds it.
    expect(container.image).toBe(compose.services['temporal-ui']!.image);
  });
});
