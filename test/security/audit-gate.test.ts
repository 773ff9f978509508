// The CI audit gate (scripts/audit-gate.ts, run by .ci/run on `npm audit --json` for the production dependencies and
// for the whole tree) decides on saved reports: a high or critical vulnerability fails the build; moderate and below
// pass; an audit that could not run because the advisory endpoint was unreachable or refused the request (the 405 a
// registry proxy answers, saved from this project's CI machine; a DNS failure) is a warning, not a pass and not a
// failure; anything else it cannot read fails.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { decide, gate } from '../../scripts/audit-gate';

const fixture = (name: string) => path.join(__dirname, 'fixtures', name);
const report = (name: string) => readFileSync(fixture(name), 'utf8');

describe('npm audit gate', () => {
  it('fails on high and critical vulnerabilities, naming each package, advisory and fix', () => {
    const d = decide(report('npm-audit-high.json'));
    expect(d).toEqual({
      outcome: 'fail',
      summary: '2 high or critical vulnerabilities (of 3 reported)',
      findings: [
        'high braces <3.0.3 - Uncontrolled resource consumption in braces https://github.com/advisories/GHSA-grv7-fg5c-xmjg - fix: npm audit fix',
        'high micromatch <=4.0.7 - through braces - fix: micromatch@4.0.8',
      ],
    });
    const critical = JSON.parse(report('npm-audit-moderate.json'));
    critical.vulnerabilities.cookie.severity = 'critical';
    critical.vulnerabilities.cookie.fixAvailable = false;
    critical.metadata.vulnerabilities = { ...critical.metadata.vulnerabilities, moderate: 0, critical: 1 };
    expect(decide(JSON.stringify(critical))).toMatchObject({
      outcome: 'fail',
      findings: [expect.stringMatching(/^critical cookie <0\.7\.0 \(direct\) - .* - no fix available yet$/)],
    });
    // Counts without entries (an abridged report) fail too.
    expect(decide(JSON.stringify({ metadata: { vulnerabilities: { high: 1, total: 1 } } })).outcome).toBe('fail');
  });

  it('passes a clean report and one with moderate vulnerabilities only', () => {
    expect(decide(report('npm-audit-clean.json'))).toEqual({
      outcome: 'pass',
      summary: 'no high or critical vulnerabilities (0 of lower severity)',
    });
    expect(decide(report('npm-audit-moderate.json'))).toEqual({
      outcome: 'pass',
      summary: 'no high or critical vulnerabilities (1 of lower severity)',
    });
  });

  it('reports an unreachable advisory endpoint as "could not run", with the reason, not as a finding', () => {
    expect(decide(report('npm-audit-405.json'))).toEqual({
      outcome: 'unavailable',
      summary:
        "the registry's advisory endpoint answered the audit request with an error " +
        '(405 Method Not Allowed - POST https://registry.npmjs.org/-/npm/v1/security/advisories/bulk)',
    });
    expect(decide(report('npm-audit-enotfound.json'))).toEqual({
      outcome: 'unavailable',
      summary: expect.stringMatching(/^the audit request did not reach the advisory database \(ENOTFOUND: request to/),
    });
    expect(decide(JSON.stringify({ error: { code: 'E503', summary: 'Service Unavailable' } })).outcome).toBe(
      'unavailable',
    );
  });

  it('fails what it cannot read: npm errors that are not the network, non-JSON, empty output', () => {
    expect(decide(report('npm-audit-nolock.json'))).toMatchObject({ outcome: 'fail' });
    expect(decide('npm ERR! something broke')).toMatchObject({
      outcome: 'fail',
      findings: ['npm ERR! something broke'],
    });
    expect(decide('')).toMatchObject({ outcome: 'fail', findings: ['(empty output)'] });
    expect(decide('[]')).toMatchObject({ outcome: 'fail' });
    expect(decide('{"auditReportVersion": 2}')).toMatchObject({ outcome: 'fail' });
  });

  it('gates several reports: one failing report fails the build; an unreachable one only warns', () => {
    const lines: string[] = [];
    const code = gate(
      [
        { label: 'production dependencies', text: report('npm-audit-405.json') },
        { label: 'dependency tree', text: report('npm-audit-high.json') },
      ],
      (l) => lines.push(l),
    );
    expect(code).toBe(1);
    expect(lines[0]).toMatch(/^WARNING: npm audit, production dependencies: the audit could not run: .*405/);
    expect(lines).toContain('ERROR: npm audit, dependency tree: 2 high or critical vulnerabilities (of 3 reported)');
    expect(lines.filter((l) => l.startsWith('  - high '))).toHaveLength(2);

    const quiet: string[] = [];
    expect(gate([{ label: 'tree', text: report('npm-audit-405.json') }], (l) => quiet.push(l))).toBe(0);
    expect(quiet.join('\n')).toMatch(/could not run/);
    expect(quiet.join('\n')).toMatch(/this is not a pass/);
  });

  it('runs as a script with exit codes CI acts on', () => {
    const run = (...args: string[]) =>
      spawnSync(
        process.execPath,
        [require.resolve('tsx/cli'), path.resolve(__dirname, '../../scripts/audit-gate.ts'), ...args],
        {
          encoding: 'utf8',
        },
      );
    const failing = run('prod', fixture('npm-audit-clean.json'), 'all', fixture('npm-audit-high.json'));
    expect(failing.status).toBe(1);
    expect(failing.stdout).toMatch(/npm audit, prod: no high or critical vulnerabilities/);
    expect(failing.stdout).toMatch(/ERROR: npm audit, all: 2 high or critical/);
    const unreachable = run('prod', fixture('npm-audit-405.json'), 'all', fixture('npm-audit-405.json'));
    expect({ status: unreachable.status, stdout: unreachable.stdout }).toEqual({
      status: 0,
      stdout: expect.stringMatching(/WARNING: npm audit, all: the audit could not run: .*405 Method Not Allowed/),
    });
    expect(run('prod', fixture('does-not-exist.json')).status).toBe(1);
    expect(run().status).toBe(2);
  });
});
