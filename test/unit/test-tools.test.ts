// `npm test` installs what its tests need on a fresh machine, as CI does: package.json's pretest reaches every installer
// .ci/run runs (the sign-in test's browser included), and the README's set-up section names each part it installs.
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

/** What the README calls the part each installer puts on the machine (none for the ones that only run others). */
const PARTS: Record<string, string[]> = {
  'install-test-tools.sh': [],
  'install-production.sh': [],
  'install-temporal-tools.sh': ['Temporal CLI', 'time-skipping test server'],
  'install-postgres.sh': ['PostgreSQL'],
  'install-temporal-server.sh': ['Temporal server'],
  'install-temporal-ui.sh': ['Temporal Web UI server'],
  'install-object-store.sh': ['MinIO'],
  'install-load-balancer.sh': ['HAProxy'],
  'install-keycloak.sh': ['Keycloak'],
  'install-browser.sh': ['Chromium'],
  'install-helm.sh': ['Helm'],
  'install-promtool.sh': ['promtool'],
};

const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
const pretest = reached(installersRun(pkg.scripts.pretest ?? ''));
const readme = read('README.md');
const setUp = readme.slice(readme.indexOf('## Set up'), readme.indexOf('\n## ', readme.indexOf('## Set up') + 1));

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

  it("is what the README's set-up section says npm test installs, with apt-get as a prerequisite", () => {
    expect(setUp).toContain('## Set up');
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
