// The Helm chart in deploy/helm/patient-journey-engine, linted and rendered by the pinned helm
// (scripts/install-helm.sh, into .tools/helm) and checked as Kubernetes would run it: the objects and their replicas,
// probes on the API's real routes, images, security contexts, resources, secrets only by reference, and an
// environment from which the engine's own configuration loads. Skipped when helm is not installed.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { API_NODE_FLAGS } from '../../src/api/node-flags';
import { auditStoreSql } from '../../src/audit/postgres';
import { CONFIG_ENV_VARS, loadAuditConfig, loadCodecConfig, loadConfig } from '../../src/config';
import { parseDotenv } from '../compose/compose-file';

const ROOT = path.resolve(__dirname, '../..');
const HELM = path.join(process.env.TEMPORAL_TOOLS_DIR ?? path.join(ROOT, '.tools'), 'helm', 'bin', 'helm');
const CHART = path.join(ROOT, 'deploy/helm/patient-journey-engine');
/** Read by the AWS SDK's credential chain, not by src/config.ts. */
const AWS_SDK_ENV_VARS = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'];

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string }; configMapKeyRef?: unknown };
}
interface Container {
  name: string;
  image: string;
  command?: string[];
  ports?: { name: string; containerPort: number }[];
  env?: EnvVar[];
  envFrom?: { configMapRef?: { name: string } }[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: Record<string, unknown>;
  volumeMounts?: { name: string; mountPath: string }[];
}
interface Probe {
  httpGet?: { path: string; port: string | number };
  tcpSocket?: { port: string | number };
}
interface Volume {
  name: string;
  secret?: { secretName: string; items?: { key: string; path: string }[] };
  emptyDir?: object;
}
interface PodSpec {
  containers: Container[];
  volumes?: Volume[];
  securityContext?: Record<string, unknown>;
  automountServiceAccountToken?: boolean;
  serviceAccountName?: string;
  terminationGracePeriodSeconds?: number;
}
interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  data?: Record<string, string>;
  spec?: {
    replicas?: number;
    selector?: Record<string, unknown> & { matchLabels?: Record<string, string> };
    template?: { metadata: { labels: Record<string, string> }; spec: PodSpec };
    ports?: { name: string; port: number; targetPort: string | number }[];
    clusterIP?: string;
    endpoints?: { port: string; path?: string; interval?: string; scrapeTimeout?: string; honorLabels?: boolean }[];
    rules?: {
      host: string;
      http: { paths: { path: string; backend: { service: { name: string; port: { name: string } } } }[] };
    }[];
    minAvailable?: number;
  };
}

const chartMeta = YAML.parse(readFileSync(path.join(CHART, 'Chart.yaml'), 'utf8')) as { appVersion: string };

function helm(args: string[]): string {
  return execFileSync(HELM, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** `helm template` with these values, as objects. */
function render(set: Record<string, string> = {}): K8sObject[] {
  // Strings as strings (`--set` would make `0.1` a number); true and false as booleans.
  const flag = (v: string) => (v === 'true' || v === 'false' ? '--set' : '--set-string');
  const args = ['template', 'r', CHART, ...Object.entries(set).flatMap(([k, v]) => [flag(v), `${k}=${v}`])];
  return YAML.parseAllDocuments(helm(args))
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
}

const byKind = (objects: K8sObject[], kind: string) => objects.filter((o) => o.kind === kind);
const component = (o: K8sObject) => o.metadata.labels?.['app.kubernetes.io/component'];
function deployment(
  objects: K8sObject[],
  name: 'api' | 'worker' | 'codec',
): K8sObject & { spec: { template: { spec: PodSpec } } } {
  const d = byKind(objects, 'Deployment').find((o) => component(o) === name);
  if (!d?.spec?.template) throw new Error(`no ${name} Deployment`);
  return d as K8sObject & { spec: { template: { spec: PodSpec } } };
}
const containerOf = (objects: K8sObject[], name: 'api' | 'worker' | 'codec') =>
  deployment(objects, name).spec.template.spec.containers[0]!;

/** The Secret an operator creates before installing (test values only). */
const SECRET_DATA: Record<string, string> = {
  'webhook-secret': 'w'.repeat(32),
  'payload-encryption-keys': `key-1:${Buffer.alloc(32, 7).toString('base64')}`,
  'clinics.json': JSON.stringify([{ clinicId: 'demo-clinic', examServiceApiKey: 'k', apiTokenSha256: [] }]),
  'inbox-database-url': 'postgres://journeys:pw@db.example:5432/journeys',
  'codec-server-token': 't'.repeat(32),
  'temporal-api-key': 'an-api-key',
  // The audit trail's writer, in a Secret of its own or the engine's (audit.databaseUrlSecret).
  'audit-database-url': 'postgres://journey_audit_writer:pw@db.example:5432/journey_audit',
  // A service account's client secret, in a Secret of its own (oidc.clientSecrets).
  'client-secret': 'a-service-account-secret',
};

/** An identity provider the clinic brings (a Keycloak realm here), with both service accounts on. */
const ISSUER = 'https://sso.clinic.example/realms/journeys';
const OIDC_VALUES: Record<string, string> = {
  'oidc.issuerUrl': ISSUER,
  'oidc.audience': 'journey-engine',
  'oidc.jwksUrl': 'http://keycloak.sso.svc:8080/realms/journeys/protocol/openid-connect/certs',
  'oidc.tokenUrl': 'http://keycloak.sso.svc:8080/realms/journeys/protocol/openid-connect/token',
  'oidc.clientSecrets.worker': 'journey-worker-client',
  'oidc.clientSecrets.api': 'journey-api-client',
};
const envNames = (c: Container) => (c.env ?? []).map((e) => e.name);
const envValue = (c: Container, name: string) => c.env?.find((e) => e.name === name)?.value;

/**
 * The environment a container's process gets: the ConfigMaps it loads, its own variables, and each file of a mounted
 * Secret written to `dir` (the *_FILE variables pointed there), as the kubelet would.
 */
function processEnv(objects: K8sObject[], pod: PodSpec, c: Container, dir: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const from of c.envFrom ?? []) {
    const cm = byKind(objects, 'ConfigMap').find((o) => o.metadata.name === from.configMapRef?.name);
    expect(cm).toBeDefined();
    Object.assign(env, cm!.data);
  }
  const files = new Map<string, string>();
  for (const m of c.volumeMounts ?? []) {
    const v = pod.volumes?.find((x) => x.name === m.name);
    for (const item of v?.secret?.items ?? []) {
      const file = path.join(dir, c.name, item.path);
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, `${SECRET_DATA[item.key]}\n`);
      files.set(`${m.mountPath}/${item.path}`, file);
    }
  }
  for (const e of c.env ?? []) {
    if (e.valueFrom?.secretKeyRef) env[e.name] = `from-secret-${e.valueFrom.secretKeyRef.key}`;
    else env[e.name] = files.get(e.value ?? '') ?? e.value ?? '';
  }
  for (const [k, v] of Object.entries(env)) {
    if (k.endsWith('_FILE') || k === 'CLINICS_FILE') expect([k, v.startsWith(dir)]).toEqual([k, true]);
  }
  return env;
}

const describeHelm = existsSync(HELM) ? describe : describe.skip;

describeHelm('deploy/helm/patient-journey-engine', () => {
  // With the default values; rendered here, not while collecting, so that a skipped suite never calls helm.
  let objects: K8sObject[];
  let dir: string;
  beforeAll(() => {
    objects = render();
    dir = mkdtempSync(path.join(tmpdir(), 'helm-test-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test('passes helm lint --strict with its default values', () => {
    expect(() => helm(['lint', '--strict', CHART])).not.toThrow();
  });

  test('renders the engine only: API, workers and codec server, their Services, ConfigMap, PDBs; never a Secret', () => {
    const kinds = objects.map((o) => `${o.kind}/${component(o)}`).sort();
    expect(kinds).toEqual(
      [
        'ConfigMap/engine',
        'Deployment/api',
        'Deployment/codec',
        'Deployment/worker',
        'PodDisruptionBudget/api',
        'PodDisruptionBudget/worker',
        'Service/api',
        'Service/codec',
        'ServiceAccount/engine',
      ].sort(),
    );
    // Temporal is deployed by its own chart (or is Temporal Cloud).
    for (const d of byKind(objects, 'Deployment')) {
      for (const c of d.spec!.template!.spec.containers) expect(c.image).not.toMatch(/temporal/);
    }
  });

  test('runs two API replicas and two workers, each set kept by a PodDisruptionBudget', () => {
    expect(deployment(objects, 'api').spec.replicas).toBe(2);
    expect(deployment(objects, 'worker').spec.replicas).toBe(2);
    expect(deployment(objects, 'codec').spec.replicas).toBe(1);
    for (const pdb of byKind(objects, 'PodDisruptionBudget')) {
      const d = deployment(objects, component(pdb) as 'api' | 'worker');
      expect(pdb.apiVersion).toBe('policy/v1');
      expect(pdb.spec!.minAvailable).toBe(1);
      // The workers' budget spans every version running side by side: its selector is the component's alone.
      expect(d.spec.selector!.matchLabels).toMatchObject(pdb.spec!.selector!.matchLabels!);
      expect(d.spec.template.metadata.labels).toMatchObject(pdb.spec!.selector!.matchLabels!);
    }
  });

  test('runs the workers as a version of the Worker Deployment, one Deployment per version side by side', () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const envOf = (d: K8sObject & { spec: { template: { spec: PodSpec } } }) =>
      Object.fromEntries(d.spec.template.spec.containers[0]!.env!.map((e) => [e.name, e.value]));
    const workers = (objs: K8sObject[]) =>
      byKind(objs, 'Deployment').filter((o) => component(o) === 'worker') as (K8sObject & {
        spec: { template: { spec: PodSpec } };
      })[];
    // One build id per release: the image tag, else the appVersion.
    const [current] = workers(objects);
    expect(envOf(current!)).toMatchObject({
      WORKER_BUILD_ID: pkg.version,
      WORKER_DEPLOYMENT_NAME: 'patient-journey-engine',
    });
    expect(current!.metadata.name).toBe(`r-patient-journey-engine-worker-${pkg.version.replace(/\./g, '-')}`);
    const tagged = workers(render({ 'image.tag': '2026.11.25-a1' }));
    expect(envOf(tagged[0]!).WORKER_BUILD_ID).toBe('2026.11.25-a1');
    // A rainbow: the previous version keeps its Deployment, image and build id until it is dropped from the list.
    const rainbow = workers(
      render({
        'image.tag': '0.3.0',
        'worker.versioning.previous[0].buildId': '0.2.0',
        'worker.versioning.previous[0].tag': '0.2.0',
      }),
    );
    expect(
      rainbow.map((d) => [d.metadata.name, d.spec.template.spec.containers[0]!.image, envOf(d).WORKER_BUILD_ID]),
    ).toEqual([
      ['r-patient-journey-engine-worker-0-3-0', 'patient-journey-engine:0.3.0', '0.3.0'],
      ['r-patient-journey-engine-worker-0-2-0', 'patient-journey-engine:0.2.0', '0.2.0'],
    ]);
    // Their pods never belong to each other's Deployment.
    const [a, b] = rainbow.map((d) => d.spec.selector!.matchLabels!['patient-journey-engine/build-id']);
    expect(a).not.toBe(b);
    // Unversioned, for a Temporal server without Worker Deployments: one Deployment, as before.
    const plain = workers(render({ 'worker.versioning.enabled': 'false' }));
    expect(plain.map((d) => d.metadata.name)).toEqual(['r-patient-journey-engine-worker']);
    expect(envOf(plain[0]!)).toMatchObject({ WORKER_VERSIONING: 'off' });
    expect(envOf(plain[0]!).WORKER_BUILD_ID).toBeUndefined();
  });

  test("probes the API on its real routes, on the port it listens on; the Services reach the pods' ports", () => {
    const api = containerOf(objects, 'api');
    const ops = readFileSync(path.join(ROOT, 'src/api/routes/health-and-metrics.ts'), 'utf8');
    for (const route of ['/healthz', '/readyz']) expect(ops).toContain(`'${route}'`);
    expect(api.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
    // Readiness stays on /healthz by default: /readyz is 503 while Temporal is away, when callbacks must still come in.
    expect(api.readinessProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(containerOf(render({ 'api.readinessPath': '/readyz' }), 'api').readinessProbe?.httpGet?.path).toBe(
      '/readyz',
    );
    const port = api.ports!.find((p) => p.name === 'http')!.containerPort;
    expect(api.env!.find((e) => e.name === 'API_PORT')?.value).toBe(String(port));
    expect(api.env!.find((e) => e.name === 'API_HOST')?.value).toBe('0.0.0.0');

    const codec = containerOf(objects, 'codec');
    // /healthz is the codec server's one route without the token: no token in the manifest.
    expect(codec.livenessProbe).toEqual({ httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 10 });
    expect(codec.readinessProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
    // A worker serves the Temporal SDK's Prometheus page only, on the port its scrape annotations name.
    const worker = containerOf(objects, 'worker');
    const metricsPort = worker.ports!.find((p) => p.name === 'metrics')!.containerPort;
    expect(worker.env!.find((e) => e.name === 'WORKER_METRICS_ADDRESS')?.value).toBe(`0.0.0.0:${metricsPort}`);
    const podAnnotations = (o: K8sObject[]) =>
      (deployment(o, 'worker').spec.template as { metadata: { annotations?: Record<string, string> } }).metadata
        .annotations;
    expect(podAnnotations(objects)).toMatchObject({
      'prometheus.io/scrape': 'true',
      'prometheus.io/port': String(metricsPort),
      'prometheus.io/path': '/metrics',
    });
    const quiet = render({ 'worker.metrics.enabled': 'false' });
    expect(containerOf(quiet, 'worker').ports).toBeUndefined();
    expect(containerOf(quiet, 'worker').env!.find((e) => e.name === 'WORKER_METRICS_ADDRESS')?.value).toBe('off');
    expect(podAnnotations(quiet)).not.toHaveProperty(['prometheus.io/scrape']);

    for (const svc of byKind(objects, 'Service')) {
      const d = deployment(objects, component(svc) as 'api' | 'codec');
      expect(d.spec.template.metadata.labels).toMatchObject(svc.spec!.selector as Record<string, string>);
      const target = svc.spec!.ports![0]!.targetPort;
      expect(d.spec.template.spec.containers[0]!.ports!.map((p) => p.name)).toContain(target);
    }
  });

  test('offers ServiceMonitors for the API and the workers, off by default, selecting Services with a metrics port', () => {
    // Off: the scrape annotations only, no object of the operator's CRDs and no Service for the workers.
    expect(byKind(objects, 'ServiceMonitor')).toEqual([]);
    expect(byKind(objects, 'Service').map(component)).not.toContain('worker');
    const podAnnotations = (d: K8sObject) =>
      (d.spec!.template as { metadata: { annotations?: Record<string, string> } }).metadata.annotations ?? {};

    // On, with an earlier worker version still running: each Deployment's pods are scraped where they are annotated.
    const on = render({
      'serviceMonitor.enabled': 'true',
      'serviceMonitor.interval': '15s',
      'serviceMonitor.scrapeTimeout': '10s',
      'serviceMonitor.labels.release': 'kube-prometheus-stack',
      'worker.versioning.previous[0].buildId': '0.1.0',
      'worker.versioning.previous[0].tag': '0.1.0',
    });
    expect(() =>
      helm(['lint', '--strict', CHART, '--set', 'serviceMonitor.enabled=true', '--set', 'serviceMonitor.labels.a=b']),
    ).not.toThrow();
    const monitors = byKind(on, 'ServiceMonitor');
    expect(monitors.map(component).sort()).toEqual(['api', 'worker']);
    for (const monitor of monitors) {
      const name = component(monitor)!;
      expect(monitor.apiVersion).toBe('monitoring.coreos.com/v1');
      expect(monitor.metadata.labels).toMatchObject({ release: 'kube-prometheus-stack' });
      // The selector picks exactly one Service: this component's.
      const selector = monitor.spec!.selector!.matchLabels!;
      const services = byKind(on, 'Service').filter((svc) =>
        Object.entries(selector).every(([k, v]) => svc.metadata.labels?.[k] === v),
      );
      expect(services.map(component)).toEqual([name]);
      const [service] = services;
      const deployments = byKind(on, 'Deployment').filter((d) => component(d) === name);
      expect(deployments.length).toBe(name === 'worker' ? 2 : 1);
      for (const endpoint of monitor.spec!.endpoints!) {
        expect(endpoint).toMatchObject({ path: '/metrics', interval: '15s', scrapeTimeout: '10s' });
        // The endpoint's port is a named port of the Service, whose target is a named port of every pod it selects:
        // the port and path the pods' scrape annotations name.
        const port = service!.spec!.ports!.find((p) => p.name === endpoint.port);
        expect({ name, port: port?.name }).toEqual({ name, port: endpoint.port });
        for (const d of deployments) {
          expect(d.spec!.template!.metadata.labels).toMatchObject(service!.spec!.selector as Record<string, string>);
          const target = d.spec!.template!.spec.containers[0]!.ports!.find((p) => p.name === port!.targetPort);
          expect({ deployment: d.metadata.name, target: target?.name }).toEqual({
            deployment: d.metadata.name,
            target: port!.targetPort,
          });
          expect(podAnnotations(d)).toMatchObject({
            'prometheus.io/port': String(target!.containerPort),
            'prometheus.io/path': endpoint.path,
          });
        }
      }
    }
    // The workers' Service only lists pods for Prometheus (headless); their series keep the Temporal namespace.
    const workerService = byKind(on, 'Service').find((svc) => component(svc) === 'worker')!;
    expect(workerService.spec!.clusterIP).toBe('None');
    const workerMonitor = monitors.find((m) => component(m) === 'worker')!;
    expect(workerMonitor.spec!.endpoints).toEqual([expect.objectContaining({ port: 'metrics', honorLabels: true })]);
    expect(monitors.find((m) => component(m) === 'api')!.spec!.endpoints).toEqual([
      { port: 'http', path: '/metrics', interval: '15s', scrapeTimeout: '10s' },
    ]);

    // Workers without a metrics page: the API's ServiceMonitor alone. Without an interval: the Prometheus's own.
    const apiOnly = render({
      'serviceMonitor.enabled': 'true',
      'worker.metrics.enabled': 'false',
      'serviceMonitor.interval': '',
    });
    expect(byKind(apiOnly, 'ServiceMonitor').map(component)).toEqual(['api']);
    expect(byKind(apiOnly, 'Service').map(component)).not.toContain('worker');
    expect(byKind(apiOnly, 'ServiceMonitor')[0]!.spec!.endpoints).toEqual([{ port: 'http', path: '/metrics' }]);
  });

  test('exposes /webhooks/ and /v1/ only through the optional Ingress', () => {
    expect(byKind(objects, 'Ingress')).toEqual([]);
    const withIngress = render({ 'api.ingress.enabled': 'true', 'api.ingress.host': 'journeys.example.com' });
    const [ingress] = byKind(withIngress, 'Ingress');
    const rule = ingress!.spec!.rules![0]!;
    expect(rule.host).toBe('journeys.example.com');
    expect(rule.http.paths.map((p) => p.path)).toEqual(['/webhooks/', '/v1/']);
    const service = byKind(withIngress, 'Service').find((s) => component(s) === 'api')!;
    for (const p of rule.http.paths) {
      expect(p.backend.service).toEqual({ name: service.metadata.name, port: { name: 'http' } });
    }
  });

  test('runs the project image at the chart appVersion (the package version) with each entry point', () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(chartMeta.appVersion).toBe(pkg.version);
    const entries = { api: 'dist/api/server.js', worker: 'dist/worker.js', codec: 'dist/codec/main.js' } as const;
    for (const [name, entry] of Object.entries(entries)) {
      const c = containerOf(objects, name as keyof typeof entries);
      expect(c.image).toBe(`patient-journey-engine:${pkg.version}`);
      expect(c.command).toEqual(['node', ...(name === 'api' ? API_NODE_FLAGS : []), entry]);
      expect(existsSync(path.join(ROOT, entry.replace(/^dist\//, 'src/').replace(/\.js$/, '.ts')))).toBe(true);
    }
    // The product image (the Dockerfile's default target) holds no sandbox, and nothing in the chart runs one.
    expect(JSON.stringify(objects)).not.toMatch(/sandbox/i);
    // The image's default command and `npm run api` start the API with the same flags.
    const flags = API_NODE_FLAGS.map((f) => `"${f}", `).join('');
    expect(readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8')).toContain(`CMD ["node", ${flags}"dist/api/server.js"]`);
    expect((pkg as unknown as { scripts: Record<string, string> }).scripts.api).toBe(
      `node ${API_NODE_FLAGS.join(' ')} --import tsx src/api/server.ts`,
    );
    const digest = `sha256:${'a'.repeat(64)}`;
    const pinned = render({ 'image.repository': 'registry.local/pje', 'image.digest': digest });
    expect(containerOf(pinned, 'worker').image).toBe(`registry.local/pje@${digest}`);
  });

  test('runs every pod as a non-root user, read-only, without privileges or a service account token', () => {
    for (const d of byKind(objects, 'Deployment')) {
      const pod = d.spec!.template!.spec;
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000 });
      expect(pod.automountServiceAccountToken).toBe(false);
      for (const c of pod.containers) {
        expect(c.securityContext).toEqual({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ['ALL'] },
        });
        // The one folder a process may write, on a read-only root.
        expect(c.volumeMounts?.map((m) => m.mountPath)).toContain('/tmp');
      }
    }
  });

  test('requests CPU and memory for every container; the API gets a CPU request and no CPU limit', () => {
    for (const d of byKind(objects, 'Deployment')) {
      for (const c of d.spec!.template!.spec.containers) {
        expect([c.name, Object.keys(c.resources?.requests ?? {}).sort()]).toEqual([c.name, ['cpu', 'memory']]);
        expect([c.name, c.resources?.limits?.memory]).toEqual([c.name, expect.any(String)]);
      }
    }
    const api = containerOf(objects, 'api').resources!;
    expect(api.requests!.cpu).toBe('500m');
    expect(api.limits!.cpu).toBeUndefined();
    expect(deployment(objects, 'worker').spec.template.spec.terminationGracePeriodSeconds).toBe(60);
  });

  test('sets only variables src/config.ts reads (CONFIG_ENV_VARS), or the AWS SDK reads', () => {
    const names = new Set<string>();
    for (const cm of byKind(objects, 'ConfigMap')) for (const k of Object.keys(cm.data ?? {})) names.add(k);
    const everything = render({
      ...OIDC_VALUES,
      'oidc.clientSecrets.worker': '',
      'oidc.clientSecrets.api': '',
      'secrets.keys.temporalApiKey': 'temporal-api-key',
      'temporal.mtlsSecret': 'temporal-client',
      'temporal.tls': 'true',
      'attachments.s3.credentialsSecret': 's3-credentials',
      'attachments.s3.endpoint': 'http://minio.storage:9000',
    });
    for (const cm of byKind(everything, 'ConfigMap')) for (const k of Object.keys(cm.data ?? {})) names.add(k);
    const accounts = render({
      ...OIDC_VALUES,
      'audit.store': 'postgres',
      'audit.databaseUrlSecret.name': 'journeys-audit',
    });
    for (const d of [
      ...byKind(objects, 'Deployment'),
      ...byKind(everything, 'Deployment'),
      ...byKind(accounts, 'Deployment'),
    ]) {
      for (const c of d.spec!.template!.spec.containers) for (const e of c.env ?? []) names.add(e.name);
    }
    for (const name of ['OIDC_ISSUER', 'CODEC_DECODE_ROLES', 'TEMPORAL_OAUTH_CLIENT_SECRET_FILE', 'AUDIT_STORE']) {
      expect(names).toContain(name);
    }
    expect(names.size).toBeGreaterThan(20);
    expect([...names].filter((n) => !CONFIG_ENV_VARS.includes(n) && !AWS_SDK_ENV_VARS.includes(n))).toEqual([]);
  });

  test('accepts in `settings` exactly the tunables deploy/engine.env.example documents, nothing the chart sets', () => {
    const schema = JSON.parse(readFileSync(path.join(CHART, 'values.schema.json'), 'utf8')) as {
      properties: { settings: { propertyNames: { enum: string[] } } };
    };
    const accepted = schema.properties.settings.propertyNames.enum;
    expect([...accepted].sort()).toEqual(
      [...parseDotenv(readFileSync(path.join(ROOT, 'deploy/engine.env.example'), 'utf8')).documented].sort(),
    );
    const cm = byKind(render({ 'settings.WORKER_MAX_CACHED_WORKFLOWS': '500' }), 'ConfigMap')[0]!;
    expect(cm.data!.WORKER_MAX_CACHED_WORKFLOWS).toBe('500');
    for (const name of Object.keys(byKind(objects, 'ConfigMap')[0]!.data!)) expect(accepted).not.toContain(name);
    // Neither a secret nor an unknown name gets in.
    expect(() => render({ 'settings.WEBHOOK_SECRET': 'x'.repeat(32) })).toThrow(/settings/);
    expect(() => render({ 'settings.NOT_A_SETTING': '1' })).toThrow(/settings/);
  });

  test("gives each process what it needs: the engine's configuration loads from the rendered environment", () => {
    const apiPod = deployment(objects, 'api').spec.template.spec;
    const api = loadConfig(processEnv(objects, apiPod, apiPod.containers[0]!, dir));
    expect(api.inbox).toEqual({
      store: 'postgres',
      databaseUrl: SECRET_DATA['inbox-database-url'],
      poolSize: 10,
      settles: 'deferred',
    });
    expect(api.attachmentStore).toEqual({ kind: 's3', bucket: 'journey-attachments', prefix: '', region: 'us-east-1' });
    expect(api.temporal).toMatchObject({ address: 'temporal-frontend.temporal.svc:7233', namespace: 'default' });
    expect(api.api.webhookSecret).toBe(SECRET_DATA['webhook-secret']);
    expect(api.codec.keys.length).toBe(1);

    const workerPod = deployment(objects, 'worker').spec.template.spec;
    const worker = loadConfig(processEnv(objects, workerPod, workerPod.containers[0]!, dir));
    expect(worker.attachmentStore).toEqual(api.attachmentStore);
    expect(worker.api.publicBaseUrl).toBe(api.api.publicBaseUrl);
    expect(worker.clinics.map((c) => c.clinicId)).toEqual(['demo-clinic']);
    // The inbox's URL is the API's alone.
    expect(workerPod.volumes!.flatMap((v) => v.secret?.items ?? []).map((i) => i.key)).not.toContain(
      'inbox-database-url',
    );

    const codecPod = deployment(objects, 'codec').spec.template.spec;
    const codecEnv = processEnv(objects, codecPod, codecPod.containers[0]!, dir);
    expect(codecPod.containers[0]!.envFrom).toBeUndefined();
    const codec = loadCodecConfig(codecEnv).codec;
    expect(codec.serverToken).toBe(SECRET_DATA['codec-server-token']);
    expect(codec.corsOrigins).toEqual([]);
    expect(
      codecPod
        .volumes!.flatMap((v) => v.secret?.items ?? [])
        .map((i) => i.key)
        .sort(),
    ).toEqual(['audit-database-url', 'codec-server-token', 'payload-encryption-keys']);
  });

  test('Temporal Cloud, mTLS and static S3 credentials come from Secrets too', () => {
    const objs = render({
      'secrets.keys.temporalApiKey': 'temporal-api-key',
      'attachments.s3.credentialsSecret': 's3-credentials',
      'attachments.s3.endpoint': 'http://minio.storage:9000',
    });
    const pod = deployment(objs, 'worker').spec.template.spec;
    const config = loadConfig(processEnv(objs, pod, pod.containers[0]!, dir));
    expect(config.temporal.apiKey).toBe('an-api-key');
    expect(config.attachmentStore).toMatchObject({ kind: 's3', endpoint: 'http://minio.storage:9000' });
    const env = pod.containers[0]!.env!;
    expect(env.find((e) => e.name === 'AWS_SECRET_ACCESS_KEY')?.valueFrom).toEqual({
      secretKeyRef: { name: 's3-credentials', key: 'AWS_SECRET_ACCESS_KEY' },
    });

    const mtls = deployment(render({ 'temporal.mtlsSecret': 'temporal-client' }), 'api').spec.template.spec;
    const mount = mtls.containers[0]!.volumeMounts!.find((m) => m.name === 'temporal-tls')!;
    expect(mtls.volumes!.find((v) => v.name === 'temporal-tls')?.secret?.secretName).toBe('temporal-client');
    expect(mtls.containers[0]!.env!.find((e) => e.name === 'TEMPORAL_TLS_CERT')?.value).toBe(
      `${mount.mountPath}/tls.crt`,
    );
  });

  test('without oidc.issuerUrl renders as before: no identity provider, the codec server on its static token', () => {
    for (const d of byKind(objects, 'Deployment')) {
      for (const c of d.spec!.template!.spec.containers) {
        const identity = envNames(c).filter((n) => /^(OIDC_|TEMPORAL_OAUTH_|CODEC_DECODE_ROLES)/.test(n));
        expect([c.name, identity]).toEqual([c.name, []]);
        expect(c.volumeMounts?.map((m) => m.name)).not.toContain('oidc-client');
      }
    }
    expect(envValue(containerOf(objects, 'codec'), 'CODEC_SERVER_TOKEN_FILE')).toBe(
      '/run/secrets/engine/codec_server_token',
    );
    // The identity provider's other values change nothing while the issuer is empty.
    const clients = render({ 'oidc.clients.worker': 'another-worker', 'oidc.roleClaim': 'groups' });
    expect(clients).toEqual(objects);
  });

  test('with an issuer: the codec server and the API check its tokens, the workers and the API present service accounts', () => {
    const objs = render(OIDC_VALUES);
    const codec = containerOf(objs, 'codec');
    const api = containerOf(objs, 'api');
    const worker = containerOf(objs, 'worker');
    const oidcEnv = {
      OIDC_ISSUER: ISSUER,
      OIDC_AUDIENCE: 'journey-engine',
      OIDC_JWKS_URL: OIDC_VALUES['oidc.jwksUrl'],
      OIDC_ROLE_CLAIM: 'realm_access.roles',
    };
    for (const c of [codec, api]) {
      for (const [k, v] of Object.entries(oidcEnv)) expect([c.name, k, envValue(c, k)]).toEqual([c.name, k, v]);
    }
    expect(envValue(codec, 'CODEC_DECODE_ROLES')).toBe('journey-operator,journey-admin');
    // The workers check no one's token: they only present their own.
    expect(envNames(worker).filter((n) => n.startsWith('OIDC_'))).toEqual([]);
    expect(envNames(codec).filter((n) => n.startsWith('TEMPORAL_'))).toEqual([]);
    const accounts = {
      api: ['journey-api', 'journey-api-client'],
      worker: ['journey-worker', 'journey-worker-client'],
    };
    for (const [name, [clientId, secretName]] of Object.entries(accounts)) {
      const pod = deployment(objs, name as 'api' | 'worker').spec.template.spec;
      const c = pod.containers[0]!;
      expect([name, envValue(c, 'TEMPORAL_OAUTH_CLIENT_ID'), envValue(c, 'TEMPORAL_OAUTH_TOKEN_URL')]).toEqual([
        name,
        clientId,
        OIDC_VALUES['oidc.tokenUrl'],
      ]);
      // Its secret from the Secret the values name, as a file of its own.
      const volume = pod.volumes!.find((v) => v.name === 'oidc-client')!;
      expect(volume.secret).toMatchObject({ secretName, items: [{ key: 'client-secret', path: 'client_secret' }] });
      const mount = c.volumeMounts!.find((m) => m.name === 'oidc-client')!;
      expect(envValue(c, 'TEMPORAL_OAUTH_CLIENT_SECRET_FILE')).toBe(`${mount.mountPath}/client_secret`);
      // What the engine loads from it.
      const config = loadConfig(processEnv(objs, pod, c, dir));
      expect(config.temporal.oauth).toEqual({
        clientId,
        clientSecret: SECRET_DATA['client-secret'],
        tokenUrl: OIDC_VALUES['oidc.tokenUrl'],
      });
      if (name === 'api') {
        expect(config.codec.oidc).toMatchObject({ issuer: ISSUER, audience: ['journey-engine'] });
      }
    }
    const codecPod = deployment(objs, 'codec').spec.template.spec;
    const codecConfig = loadCodecConfig(processEnv(objs, codecPod, codecPod.containers[0]!, dir)).codec;
    expect(codecConfig.oidc).toEqual({
      issuer: ISSUER,
      audience: ['journey-engine'],
      jwksUrl: OIDC_VALUES['oidc.jwksUrl'],
      roleClaim: 'realm_access.roles',
      clockSkewSeconds: 30,
      decodeRoles: ['journey-operator', 'journey-admin'],
    });
    // The static token stays for automation while the Secret has it.
    expect(codecConfig.serverToken).toBe(SECRET_DATA['codec-server-token']);

    // A provider of another shape: roles in `groups`, other clients, its own decode roles; one account only.
    const okta = render({
      'oidc.issuerUrl': 'https://clinic.okta.com/oauth2/default',
      'oidc.audience': 'api://journeys',
      'oidc.roleClaim': 'groups',
      'oidc.decodeRoles[0]': 'journeys-operators',
      'oidc.clients.worker': '0oa-worker',
      'oidc.clientSecrets.worker': 'okta-worker',
      'oidc.tokenUrl': 'https://clinic.okta.com/oauth2/default/v1/token',
    });
    expect(envValue(containerOf(okta, 'codec'), 'OIDC_ROLE_CLAIM')).toBe('groups');
    expect(envValue(containerOf(okta, 'codec'), 'CODEC_DECODE_ROLES')).toBe('journeys-operators');
    expect(envNames(containerOf(okta, 'codec'))).not.toContain('OIDC_JWKS_URL');
    expect(envValue(containerOf(okta, 'worker'), 'TEMPORAL_OAUTH_CLIENT_ID')).toBe('0oa-worker');
    expect(envNames(containerOf(okta, 'api')).filter((n) => n.startsWith('TEMPORAL_OAUTH_'))).toEqual([]);
    expect(() =>
      helm(['lint', '--strict', CHART, ...Object.entries(OIDC_VALUES).flatMap(([k, v]) => ['--set', `${k}=${v}`])]),
    ).not.toThrow();
  });

  test('refuses half an identity provider, naming the value to set', () => {
    const fails = (set: Record<string, string>, why: RegExp) => expect(() => render(set)).toThrow(why);
    // The issuer and the audience go together (values.schema.json).
    fails({ 'oidc.issuerUrl': ISSUER }, /oidc\.audience/);
    fails({ 'oidc.audience': 'journey-engine' }, /oidc\.issuerUrl/);
    fails({ 'oidc.issuerUrl': 'sso.clinic.example', 'oidc.audience': 'journey-engine' }, /oidc\.issuerUrl/);
    // A service account needs the token endpoint, and is not an API key's companion.
    fails(
      { 'oidc.clientSecrets.worker': 'journey-worker-client' },
      /oidc\.tokenUrl: required with oidc\.clientSecrets\.worker/,
    );
    fails(
      { ...OIDC_VALUES, 'secrets.keys.temporalApiKey': 'temporal-api-key' },
      /not with secrets\.keys\.temporalApiKey/,
    );
    // The codec server needs its static token unless the issuer identifies its callers.
    fails({ 'secrets.keys.codecServerToken': '' }, /secrets\.keys\.codecServerToken: .*oidc\.issuerUrl/);
    const tokenless = render({ ...OIDC_VALUES, 'secrets.keys.codecServerToken': '' });
    const pod = deployment(tokenless, 'codec').spec.template.spec;
    expect(envNames(pod.containers[0]!)).not.toContain('CODEC_SERVER_TOKEN_FILE');
    expect(pod.volumes!.flatMap((v) => v.secret?.items ?? []).map((i) => i.key)).toEqual([
      'payload-encryption-keys',
      'audit-database-url',
    ]);
    expect(loadCodecConfig(processEnv(tokenless, pod, pod.containers[0]!, dir)).codec.serverToken).toBeUndefined();
  });

  /** NOTES.txt with these values: `helm template` does not render it, so a copy of the chart renders it as a value. */
  function notes(set: Record<string, string>): string {
    const copy = path.join(dir, 'chart-with-notes');
    if (!existsSync(copy)) {
      execFileSync('cp', ['-r', CHART, copy]);
      writeFileSync(
        path.join(copy, 'templates', 'zz-notes.yaml'),
        'notes: |\n{{ include (print $.Template.BasePath "/NOTES.txt") . | indent 2 }}\n',
      );
    }
    return (
      YAML.parse(
        helm([
          'template',
          'r',
          copy,
          '--show-only',
          'templates/zz-notes.yaml',
          ...Object.entries(set).flatMap(([k, v]) => ['--set', `${k}=${v}`]),
        ]),
      ) as { notes: string }
    ).notes;
  }

  test("NOTES.txt gives the Temporal Web UI its sign-in and codec settings, with the provider's clients", () => {
    const plain = notes({});
    expect(plain).not.toContain('TEMPORAL_AUTH');
    expect(plain).toContain('--codec-auth');
    const withIssuer = notes({ ...OIDC_VALUES, 'codec.corsOrigins[0]': 'https://temporal.clinic.example' });
    for (const line of [
      `TEMPORAL_AUTH_PROVIDER_URL=${ISSUER}`,
      'TEMPORAL_AUTH_CLIENT_ID=temporal-ui',
      'TEMPORAL_CODEC_PASS_ACCESS_TOKEN=true',
      'client journey-ops',
      'service account journey-worker',
      'service account journey-api',
    ]) {
      expect([line, withIssuer.includes(line)]).toEqual([line, true]);
    }
    expect(withIssuer).not.toContain('codec.corsOrigins is empty');
    expect(notes(OIDC_VALUES)).toContain('WARNING: codec.corsOrigins is empty');
  });

  const AUDIT_VALUES = { 'audit.databaseUrlSecret.name': 'journeys-audit' };
  const CHECKPOINTS = {
    store: 's3',
    intervalMs: 60_000,
    bucket: 'journey-audit-checkpoints',
    prefix: 'audit-checkpoints/',
    endpoint: undefined,
    region: 'us-east-1',
    retentionDays: 2190,
  };

  test('records by default: the API, every worker version and the codec server append to one table, anchored', () => {
    const objs = render({
      ...AUDIT_VALUES,
      'image.tag': '0.3.0',
      'worker.versioning.previous[0].buildId': '0.2.0',
      'worker.versioning.previous[0].tag': '0.2.0',
    });
    const expected = { store: 'postgres', databaseUrl: SECRET_DATA['audit-database-url'], checkpoints: CHECKPOINTS };
    const deployments = byKind(objs, 'Deployment');
    expect(deployments.map((d) => component(d)).sort()).toEqual(['api', 'codec', 'worker', 'worker']);
    for (const d of deployments) {
      const pod = d.spec!.template!.spec;
      const c = pod.containers[0]!;
      expect([d.metadata.name, envValue(c, 'AUDIT_STORE')]).toEqual([d.metadata.name, 'postgres']);
      // The writer's URL from the Secret the values name, as a file of its own (never in the environment).
      const volume = pod.volumes!.find((v) => v.name === 'audit-database')!;
      expect(volume.secret).toMatchObject({
        secretName: 'journeys-audit',
        items: [{ key: 'audit-database-url', path: 'database_url' }],
      });
      const mount = c.volumeMounts!.find((m) => m.name === 'audit-database')!;
      expect(envValue(c, 'AUDIT_DATABASE_URL_FILE')).toBe(`${mount.mountPath}/database_url`);
      expect(envNames(c)).not.toContain('AUDIT_DATABASE_URL');
      // What the process loads: the codec server its audit settings alone (src/codec/main.ts), the others everything.
      const env = processEnv(objs, pod, c, dir);
      const { audit } = c.name === 'codec' ? loadAuditConfig(env) : loadConfig(env);
      expect([d.metadata.name, audit]).toEqual([d.metadata.name, expected]);
    }
    // By default the engine's own Secret holds it.
    const codecPod = deployment(objects, 'codec').spec.template.spec;
    expect(loadAuditConfig(processEnv(objects, codecPod, codecPod.containers[0]!, dir)).audit).toEqual(expected);
    expect(codecPod.volumes!.find((v) => v.name === 'audit-database')!.secret!.secretName).toBe(
      'patient-journey-engine',
    );
    // The checkpoints reach the object store as the attachments do: its endpoint, region and credentials.
    const minio = render({
      'attachments.s3.endpoint': 'http://objects:9000',
      'attachments.s3.region': 'eu-west-1',
      'attachments.s3.credentialsSecret': 'objects',
    });
    const pod = deployment(minio, 'codec').spec.template.spec;
    expect(loadAuditConfig(processEnv(minio, pod, pod.containers[0]!, dir)).audit.checkpoints).toMatchObject({
      endpoint: 'http://objects:9000',
      region: 'eu-west-1',
    });
    expect(envNames(pod.containers[0]!)).toEqual(
      expect.arrayContaining(['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY']),
    );
    expect(() =>
      helm(['lint', '--strict', CHART, ...Object.entries(AUDIT_VALUES).flatMap(([k, v]) => ['--set', `${k}=${v}`])]),
    ).not.toThrow();
  });

  test('refuses to render without an audit store, naming the value: no writer Secret, no checkpoint bucket, a file', () => {
    expect(() => render({ 'audit.databaseUrlSecret.name': '' })).toThrow(/audit\.databaseUrlSecret\.name/);
    expect(() => render({ ...AUDIT_VALUES, 'audit.databaseUrlSecret.key': '' })).toThrow(
      /audit\.databaseUrlSecret\.key/,
    );
    expect(() => render({ 'audit.checkpoints.bucket': '' })).toThrow(/audit\.checkpoints\.bucket/);
    expect(() => render({ 'audit.store': 'file' })).toThrow(/audit\.store/);
    expect(() => render({ 'audit.store': 's3' })).toThrow(/audit\.store/);
  });

  describe('PostgreSQL as a CloudNativePG Cluster (postgresql.cloudnativepg)', () => {
    const CNPG: Record<string, string> = {
      'postgresql.cloudnativepg.enabled': 'true',
      'postgresql.cloudnativepg.backup.destinationPath': 's3://journey-backups/postgres',
    };
    interface CnpgObject {
      kind: string;
      metadata: { name: string };
      spec: Record<string, unknown> & { cluster?: { name: string } };
    }
    const cnpg = (set: Record<string, string>) =>
      render(set).filter((o) => o.apiVersion === 'postgresql.cnpg.io/v1') as unknown as CnpgObject[];

    test('renders none by default: the deployer brings a highly available PostgreSQL', () => {
      expect(objects.filter((o) => o.apiVersion.startsWith('postgresql.cnpg.io'))).toEqual([]);
    });

    test('renders three instances, commits waiting for a synchronous standby, backups and WAL to the object store', () => {
      const found = cnpg({ ...CNPG, 'attachments.s3.endpoint': 'http://minio.objects.svc:9000' });
      expect(found.map((o) => o.kind)).toEqual(['Cluster', 'Database', 'ScheduledBackup']);
      const [cluster, audit, daily] = found as [CnpgObject, CnpgObject, CnpgObject];
      expect(cluster.spec).toMatchObject({
        instances: 3,
        postgresql: { synchronous: { method: 'any', number: 1, dataDurability: 'required' } },
        bootstrap: { initdb: { database: 'journeys', owner: 'journeys' } },
        backup: {
          retentionPolicy: '30d',
          barmanObjectStore: {
            destinationPath: 's3://journey-backups/postgres',
            endpointURL: 'http://minio.objects.svc:9000',
            s3Credentials: { inheritFromIAMRole: true },
          },
        },
      });
      // The audit trail's database belongs to a role of its own, which no running process uses.
      expect(cluster.spec.managed).toEqual({
        roles: [
          expect.objectContaining({
            name: 'journey_audit_owner',
            superuser: false,
            passwordSecret: { name: 'journey-audit-owner' },
          }),
        ],
      });
      expect(audit.spec).toMatchObject({ name: 'journey_audit', owner: 'journey_audit_owner' });
      expect(audit.spec.cluster).toEqual({ name: cluster.metadata.name });
      expect(daily.spec).toMatchObject({ schedule: '0 0 2 * * *', cluster: { name: cluster.metadata.name } });
      // Static keys from a Secret, when given.
      const keyed = cnpg({ ...CNPG, 'postgresql.cloudnativepg.backup.credentialsSecret': 'backup-keys' })[0]!;
      expect(
        (keyed.spec.backup as { barmanObjectStore: { s3Credentials: unknown } }).barmanObjectStore.s3Credentials,
      ).toEqual({
        accessKeyId: { name: 'backup-keys', key: 'AWS_ACCESS_KEY_ID' },
        secretAccessKey: { name: 'backup-keys', key: 'AWS_SECRET_ACCESS_KEY' },
      });
      expect(() =>
        helm([
          'lint',
          '--strict',
          CHART,
          '--set',
          'postgresql.cloudnativepg.enabled=true',
          '--set',
          'postgresql.cloudnativepg.backup.destinationPath=s3://journey-backups/postgres',
        ]),
      ).not.toThrow();
    });

    test('refuses a cluster without backups, with fewer than three instances, or with every standby synchronous', () => {
      expect(() => render({ 'postgresql.cloudnativepg.enabled': 'true' })).toThrow(
        /postgresql\.cloudnativepg\.backup\.destinationPath/,
      );
      expect(() => render({ ...CNPG, 'postgresql.cloudnativepg.instances': '2' })).toThrow(/instances/);
      expect(() => render({ ...CNPG, 'postgresql.cloudnativepg.synchronousStandbys': '3' })).toThrow(
        /synchronousStandbys/,
      );
    });
  });

  test("NOTES.txt tells the deployer to prepare the audit table once, with the engine's own SQL", () => {
    expect(notes({})).toContain('Secret "patient-journey-engine" (key audit-database-url)');
    const text = notes(AUDIT_VALUES);
    expect(text).toContain('in the bucket "journey-audit-checkpoints", which must exist with Object Lock enabled');
    expect(text).toContain('Secret "journeys-audit" (key audit-database-url)');
    expect(text).toContain('npm run audit-trail:verify -- --sql --writer-role journey_audit_writer');
    expect(text).toContain('GET /admin/audit/export');
    // The image's equivalent, run in the image's WORKDIR: the same SQL as the npm script's, which is auditStoreSql's.
    const oneLiner = /^ *kubectl run .* --image=(\S+) -- node -e "([^"]+)"$/m.exec(text);
    expect(oneLiner?.[1]).toBe(`patient-journey-engine:${chartMeta.appVersion}`);
    const code = oneLiner![2]!;
    expect(code).toContain("require('./dist/audit/postgres.js')");
    const run = (args: string[]) =>
      execFileSync(process.execPath, ['--import', 'tsx', ...args], { cwd: ROOT, encoding: 'utf8' });
    const sql = `${auditStoreSql({ writerRole: 'journey_audit_writer' })}\n`;
    expect(run(['-e', code.replace('./dist/audit/postgres.js', path.join(ROOT, 'src/audit/postgres.ts'))])).toBe(sql);
    expect(run(['scripts/audit-trail.ts', '--sql', '--writer-role', 'journey_audit_writer'])).toBe(sql);
    // It makes the writer without any password (none to leak or to guess); NOTES.txt says how to set one.
    expect(sql).toMatch(/CREATE ROLE "journey_audit_writer" LOGIN; END IF;$/m);
    expect(sql).not.toMatch(/PASSWORD/);
    expect(text).toContain('SCRAM-SHA-256 verifier');
    expect(text).toContain('\\password journey_audit_writer');
  });

  test('holds no secret value: secrets are mounted files or references to existing Secrets', () => {
    const text = helm(['template', 'r', CHART]);
    const secretish = /(SECRET|PASSWORD|TOKEN|API_KEY|KEYS?|DATABASE_URL|ACCESS_KEY_ID)$/;
    for (const d of byKind(objects, 'Deployment')) {
      const pod = d.spec!.template!.spec;
      for (const v of pod.volumes ?? []) if (v.secret) expect(v.secret.secretName).toBe('patient-journey-engine');
      for (const c of pod.containers) {
        for (const e of c.env ?? []) {
          if (e.name.endsWith('_FILE')) expect([e.name, e.value?.startsWith('/run/secrets/')]).toEqual([e.name, true]);
          else if (secretish.test(e.name))
            expect([e.name, e.value, e.valueFrom?.secretKeyRef]).toEqual([e.name, undefined, expect.anything()]);
        }
      }
    }
    // Nothing that looks like a generated key or token.
    const keyLike = (text.match(/[A-Za-z0-9+/_-]{24,}={0,2}/g) ?? []).filter((t) => /[A-Z]/.test(t) && /\d/.test(t));
    expect(keyLike).toEqual([]);
    const values = readFileSync(path.join(CHART, 'values.yaml'), 'utf8');
    expect(values).not.toMatch(/whsec_|PRIVATE KEY|postgres:\/\/(?!user:password@)\w+:/);
  });
});
