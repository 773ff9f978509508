// CI's dependency audit gate: reads `npm audit --json` reports and decides.
//
//   npx tsx scripts/audit-gate.ts "<label>" report.json ["<label>" report.json ...]
//
// Exit 1 when a report lists a high or critical vulnerability (or cannot be read at all); exit 0 otherwise. When the
// audit could not run because the registry's advisory endpoint was unreachable or refused the request (an HTTP error
// such as 405 from a registry proxy, a DNS or connection failure), that is not a finding: the gate prints a warning
// saying so and why, and does not fail the build.
import { readFileSync } from 'node:fs';

export const FAILING_SEVERITIES = ['high', 'critical'] as const;

export type AuditDecision =
  | { outcome: 'pass'; summary: string }
  | { outcome: 'fail'; summary: string; findings: string[] }
  | { outcome: 'unavailable'; summary: string };

/** Network failures on the way to the advisory endpoint: the audit did not run. */
const NETWORK_CODES = new Set([
  'ENOTFOUND',
  'EAI_AGAIN',
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'EPROTO',
  'ERR_SOCKET_TIMEOUT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
]);

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

interface Vulnerability {
  name?: string;
  severity?: string;
  isDirect?: boolean;
  range?: string;
  fixAvailable?: boolean | { name?: string; version?: string; isSemVerMajor?: boolean };
  via?: (string | { title?: string; url?: string; severity?: string })[];
}

function describeVulnerability(v: Vulnerability, key: string): string {
  const advisories = (v.via ?? [])
    .filter((x): x is { title?: string; url?: string } => isObject(x))
    .map((x) => [x.title, x.url].filter(Boolean).join(' '))
    .filter(Boolean);
  const through = (v.via ?? []).filter((x): x is string => typeof x === 'string');
  const fix =
    v.fixAvailable === true
      ? 'fix: npm audit fix'
      : isObject(v.fixAvailable)
        ? `fix: ${v.fixAvailable.name}@${v.fixAvailable.version}${v.fixAvailable.isSemVerMajor ? ' (semver major)' : ''}`
        : 'no fix available yet';
  return [
    `${v.severity} ${v.name ?? key}${v.range ? ` ${v.range}` : ''}${v.isDirect ? ' (direct)' : ''}`,
    advisories.length > 0 ? advisories.join('; ') : through.length > 0 ? `through ${through.join(', ')}` : '',
    fix,
  ]
    .filter(Boolean)
    .join(' - ');
}

/** Why the audit could not run, when the report is npm's error instead of a report. */
function unreachable(report: Json): string | undefined {
  // An HTTP error from the advisory endpoint (npm prints the failed request: statusCode, uri, message).
  if (typeof report.statusCode === 'number' && typeof report.uri === 'string') {
    const reason = typeof report.message === 'string' ? report.message : `HTTP ${report.statusCode}`;
    return `the registry's advisory endpoint answered the audit request with an error (${reason})`;
  }
  // `{error: {code, summary, detail}}`: a network failure, or an HTTP status code as E<status>.
  const error = isObject(report.error) ? report.error : undefined;
  const code = typeof error?.code === 'string' ? error.code : undefined;
  if (code && (NETWORK_CODES.has(code) || /^E[45]\d\d$/.test(code))) {
    const summary = typeof error?.summary === 'string' && error.summary ? `: ${error.summary}` : '';
    return `the audit request did not reach the advisory database (${code}${summary})`;
  }
  return undefined;
}

/** The decision for one `npm audit --json` output. */
export function decide(text: string): AuditDecision {
  let report: unknown;
  try {
    report = JSON.parse(text);
  } catch {
    return {
      outcome: 'fail',
      summary: 'the audit output is not JSON (npm audit did not produce a report)',
      findings: [text.trim().slice(0, 500) || '(empty output)'],
    };
  }
  if (!isObject(report)) {
    return { outcome: 'fail', summary: 'the audit output is not a report', findings: [] };
  }
  const why = unreachable(report);
  if (why) return { outcome: 'unavailable', summary: why };

  const meta =
    isObject(report.metadata) && isObject(report.metadata.vulnerabilities)
      ? report.metadata.vulnerabilities
      : undefined;
  const vulnerabilities = isObject(report.vulnerabilities) ? report.vulnerabilities : undefined;
  if (!meta && !vulnerabilities) {
    const error = isObject(report.error) ? JSON.stringify(report.error).slice(0, 300) : 'no vulnerabilities section';
    return {
      outcome: 'fail',
      summary: `the audit output is not a report npm audit would write (${error})`,
      findings: [],
    };
  }
  const findings = Object.entries(vulnerabilities ?? {})
    .filter(([, v]) => isObject(v) && (FAILING_SEVERITIES as readonly string[]).includes(String(v.severity)))
    .map(([key, v]) => describeVulnerability(v as Vulnerability, key))
    .sort();
  // The counts as well, in case a report lists them without the per-package entries.
  const counted = FAILING_SEVERITIES.reduce((n, s) => n + (Number(meta?.[s]) || 0), 0);
  const total = Number(meta?.total) || Object.keys(vulnerabilities ?? {}).length;
  if (findings.length > 0 || counted > 0) {
    return {
      outcome: 'fail',
      summary: `${Math.max(findings.length, counted)} high or critical vulnerabilities (of ${total} reported)`,
      findings,
    };
  }
  return { outcome: 'pass', summary: `no high or critical vulnerabilities (${total} of lower severity)` };
}

/** Runs the gate over labelled reports; returns the exit code. */
export function gate(reports: { label: string; text: string }[], out: (line: string) => void): number {
  let code = 0;
  for (const { label, text } of reports) {
    const d = decide(text);
    if (d.outcome === 'pass') out(`npm audit, ${label}: ${d.summary}`);
    if (d.outcome === 'unavailable') {
      out(`WARNING: npm audit, ${label}: the audit could not run: ${d.summary}.`);
      out(
        'WARNING: no vulnerability data was checked; this is not a pass. Run `npm audit` where the registry answers.',
      );
    }
    if (d.outcome === 'fail') {
      code = 1;
      out(`ERROR: npm audit, ${label}: ${d.summary}`);
      for (const f of d.findings) out(`  - ${f}`);
    }
  }
  return code;
}

function main(argv: string[]): number {
  if (argv.length === 0 || argv.length % 2 !== 0) {
    console.error('usage: tsx scripts/audit-gate.ts "<label>" report.json ["<label>" report.json ...]');
    return 2;
  }
  const reports: { label: string; text: string }[] = [];
  for (let i = 0; i < argv.length; i += 2) {
    let text = '';
    try {
      text = readFileSync(argv[i + 1]!, 'utf8');
    } catch (err) {
      text = `(could not read ${argv[i + 1]}: ${(err as Error).message})`;
    }
    reports.push({ label: argv[i]!, text });
  }
  return gate(reports, (line) => console.log(line));
}

if (require.main === module) process.exitCode = main(process.argv.slice(2));
