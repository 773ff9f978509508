// `npm test` installs what its tests need on a fresh machine, as CI does: package.json's pretest reaches every installer
// .ci/run runs (the sign-in test's browser included), and the set-up page (docs/setup.md) names each part it installs.
import { readFileSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '../..');
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');

/** The installers a shell text runs (`bash scripts/install-x.sh`, `bash "$here/install-x.sh"`), comments left out. */
function installersRun(text: string): string[] {
  return text
    .split('\n')
    .filter((line) => !line.trim().startsWith('#'))
    .flatMap((line) => [...line.matchAll(/\bbash\s+"?(?:\$here\/|scripts\/)(install-[\w-]+\.sh)/g)].map((m) => m[1]!));
}

/** Every installer these run, and those they run in turn. */
function reached(installers: string[]): Set<string> {
  const seen = new Set<string>();
  const queue = [...installers];
  while (queue.length > 0) {
    const script = queue.shift()!;
    if (seen.has(script)) continue;
    seen.add(script);
    queue.push(...installersRun(read(`scripts/${script}`)));
  }
  return seen;
}

/** What docs/setup.md calls the part each installer puts on the machine (none for the ones that only run others). */
const PARTS: Record<string, string[]> = {
  'install-test-tools.sh': [],
  'install-production.sh': [],
  'install-temporal-tools.sh': [],
  'install-temporal-cli.sh': ['Temporal CLI'],
  'install-test-server.sh': ['time-skipping test server'],
  'install-postgres.sh': ['PostgreSQL'],
  'install-temporal-server.sh': ['Temporal server'],
  'install-temporal-ui.sh': ['Temporal Web UI server'],
  'install-object-store.sh': ['MinIO'],
  'install-load-balancer.sh': ['HAProxy'],
  'install-keycloak.sh': ['Keycloak'],
  'install-browser.sh': ['Chromium'],
  'install-helm.sh': ['Helm'],
  'install-promtool.sh': ['promtool'],
  'install-schemathesis.sh': ['Schemathesis'],
  'install-postgres-ha.sh': ['Patroni', 'etcd', 'pgBackRest'],
};

const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
const pretest = reached(installersRun(pkg.scripts.pretest ?? ''));
const setUp = read('docs/setup.md');
const deploy = read('docs/deploy.md');

describe("npm test's pretest", () => {
  it('installs the browser of the sign-in test', () => {
    expect([...pretest]).toContain('install-browser.sh');
  });

  it('installs everything CI installs before its tests', () => {
    // Up to its tests: the lowest supported Node.js for the smoke run after them is the run's own business.
    const run = read('.ci/run');
    const ci = reached(installersRun(run.slice(0, run.indexOf('npm test'))));
    expect([...ci].filter((script) => !pretest.has(script))).toEqual([]);
  });

  it('is what docs/setup.md says npm test installs, with apt-get as a prerequisite', () => {
    expect(setUp).toMatch(/^# Set up/);
    for (const script of pretest) {
      expect({ script, known: PARTS[script] !== undefined }).toEqual({ script, known: true });
      for (const part of PARTS[script] ?? [])
        expect({ script, part, named: setUp.includes(part) }).toEqual({ script, part, named: true });
    }
    expect(setUp).toContain('scripts/install-test-tools.sh');
    expect(setUp).toMatch(/Debian/);
    expect(setUp).toMatch(/`apt-get` run as root or through\s+`sudo`/);
  });
});

/** Published advisories of the Temporal server, each as the ranges it affects ([first, last] inclusive). */
const TEMPORAL_ADVISORIES: { id: string; affected: [string, string][] }[] = [
  // Fixed in 1.29.2: requests that carried a second namespace (ExecuteMultiOperation, a task's commands) were checked
  // against one namespace and run in another.
  { id: 'CVE-2025-14986, CVE-2025-14987', affected: [['1.29.0', '1.29.1']] },
  // The batch worker forwarded a namespace name the caller chose (with the internal frontend, as this stack runs).
  {
    id: 'CVE-2026-5199',
    affected: [
      ['1.29.0', '1.29.4'],
      ['1.30.0', '1.30.2'],
    ],
  },
  // The replication stream took no authorization.
  {
    id: 'CVE-2026-5724',
    affected: [
      ['0.0.0', '1.28.3'],
      ['1.29.0', '1.29.5'],
      ['1.30.0', '1.30.3'],
    ],
  },
];

const semver = (v: string) => v.split('.').map(Number) as [number, number, number];
const compare = (a: string, b: string) => {
  const [x, y] = [semver(a), semver(b)];
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return 0;
};

describe('the Temporal server the production shape installs', () => {
  const script = read('scripts/install-temporal-server.sh');
  const version = /^version="v(\d+\.\d+\.\d+)"$/m.exec(script)?.[1] ?? '';

  it('is a release outside every published advisory', () => {
    expect(version).toMatch(/^\d+\.\d+\.\d+$/);
    const within = TEMPORAL_ADVISORIES.filter((a) =>
      a.affected.some(([first, last]) => compare(version, first) >= 0 && compare(version, last) <= 0),
    ).map((a) => a.id);
    expect({ version, within }).toEqual({ version, within: [] });
  });

  it('builds the server and its schema tool from that one version', () => {
    expect(script).toMatch(/go install "go\.temporal\.io\/server\/cmd\/server@\$\{version\}"/);
    expect(script).toMatch(/go install "go\.temporal\.io\/server\/cmd\/tools\/sql@\$\{version\}"/);
    expect(script).toMatch(/go mod download -json "go\.temporal\.io\/server@\$\{version\}"/);
  });

  it("is the dev server's too: the Temporal CLI is built with that server release", () => {
    const patch = read('tools/temporal-cli/server.patch');
    expect(/^\+\tgo\.temporal\.io\/server v(\d+\.\d+\.\d+)$/m.exec(patch)?.[1]).toBe(version);
    expect(patch).toMatch(/^-\tgo\.temporal\.io\/server v1\.29\.1$/m);
    const tools = read('scripts/install-temporal-cli.sh');
    expect(tools).toContain('sh "$root/tools/temporal-cli/build.sh"');
    expect(tools).not.toMatch(/go install "github\.com\/temporalio\/cli/);
  });

  it("is the version docs/deploy.md's production shape names", () => {
    const shape = deploy.slice(deploy.indexOf('## The production shape, natively'));
    expect(shape.slice(0, 1200)).toContain(`v${version}`);
  });
});
