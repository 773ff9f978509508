// A small secret scanner for the repository's tracked files: key patterns (private keys, Standard Webhooks secrets,
// AWS keys, bearer tokens, 32-byte base64 keys) and high-entropy strings, with an allow-list of the values the
// project documents as demo or test values.

export interface Finding {
  file: string;
  line: number;
  kind: string;
  match: string;
}

/** Shannon entropy in bits per character. */
export function entropy(s: string): number {
  const counts = new Map<string, number>();
  for (const c of s) counts.set(c, (counts.get(c) ?? 0) + 1);
  let h = 0;
  for (const n of counts.values()) {
    const p = n / s.length;
    h -= p * Math.log2(p);
  }
  return h;
}

interface Rule {
  kind: string;
  pattern: RegExp;
  /** The part of the match that is the secret (group 1 when given). */
  group?: number;
}

const RULES: Rule[] = [
  { kind: 'private key', pattern: /-----BEGIN (?:[A-Z]+ )*PRIVATE KEY(?: BLOCK)?-----/g },
  { kind: 'Standard Webhooks secret', pattern: /whsec_[A-Za-z0-9+/]{16,}={0,2}/g },
  { kind: 'AWS access key id', pattern: /\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b/g },
  {
    kind: 'AWS secret access key',
    pattern: /aws.{0,30}?(?:secret|key).{0,20}?['"=:\s]([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])/gi,
    group: 1,
  },
  { kind: 'bearer token', pattern: /\bBearer\s+([A-Za-z0-9\-._~+/]{8,}=*)/g, group: 1 },
  {
    kind: 'GitHub/Slack/Stripe-style token',
    pattern: /\b(?:gh[pousr]_[A-Za-z0-9]{30,}|xox[abpr]-[A-Za-z0-9-]{10,}|sk_live_[A-Za-z0-9]{16,})/g,
  },
  {
    kind: 'secret in an assignment',
    pattern: /(?:api[_-]?key|apikey|secret|password|passwd|token)["']?\s*[:=]\s*["'`]([^"'`\s$<>{}]{8,})["'`]/gi,
    group: 1,
  },
  // 32 bytes in base64 (44 characters, one "=") or base64url (43), the shape of the payload and webhook keys.
  { kind: '32-byte base64 key', pattern: /(?<![A-Za-z0-9+/=_-])([A-Za-z0-9+/]{43}=)(?![A-Za-z0-9+/=])/g, group: 1 },
  {
    kind: 'high-entropy string',
    pattern: /(?<![A-Za-z0-9+/=_-])([A-Za-z0-9+/_-]{32,}={0,2})(?![A-Za-z0-9+/=_-])/g,
    group: 1,
  },
];

/** A string that looks random: long, mixed letters and digits, high entropy (hex digests and identifiers are not). */
function looksRandom(s: string): boolean {
  const body = s.replace(/=+$/, '');
  if (!/[a-z]/.test(body) || !/[A-Z]/.test(body) || !/[0-9]/.test(body)) return false;
  return entropy(body) >= 4.3;
}

/** Base64 that decodes to readable text (a recorded payload, a JSON document) is data: its text is scanned instead. */
function decodedText(value: string): string | undefined {
  const bytes = Buffer.from(value, 'base64');
  if (bytes.length < 16) return undefined;
  const text = bytes.toString('utf8');
  if (text.includes('\ufffd')) return undefined;
  const printable = [...text].filter((c) => c >= ' ' || c === '\n' || c === '\t' || c === '\r').length;
  return printable / text.length >= 0.95 ? text : undefined;
}

/** An example file's placeholder, not a value. */
const PLACEHOLDER = /REPLACE|CHANGE[-_]?ME|PLACEHOLDER|YOUR[-_]/i;

export interface AllowList {
  /** Values documented as demo or test values: never a finding wherever they appear. */
  values: Set<string>;
  /** Files (or folders, ending in "/") whose bearer tokens and key-shaped literals are test values. */
  testPaths: string[];
  /** Lines that carry a checksum, not a secret (a lock file's integrity hashes). */
  checksumLine: RegExp;
}

/** Kinds a test file may hold as its own test values (a real key's pattern is flagged everywhere). */
const TEST_VALUE_KINDS = new Set([
  'bearer token',
  'secret in an assignment',
  '32-byte base64 key',
  'high-entropy string',
]);

export function scanText(file: string, text: string, allow: AllowList): Finding[] {
  const findings: Finding[] = [];
  const isTestPath = allow.testPaths.some((p) => (p.endsWith('/') ? file.startsWith(p) : file === p));
  text.split('\n').forEach((line, i) => {
    if (allow.checksumLine.test(line)) return;
    for (const rule of RULES) {
      for (const m of line.matchAll(rule.pattern)) {
        const value = m[rule.group ?? 0]!;
        if (allow.values.has(value) || PLACEHOLDER.test(value)) continue;
        if (rule.kind === '32-byte base64 key' || rule.kind === 'high-entropy string') {
          const decoded = decodedText(value);
          if (decoded !== undefined) {
            findings.push(...scanText(`${file}:${i + 1} (base64)`, decoded, allow));
            continue;
          }
        }
        if (isTestPath && TEST_VALUE_KINDS.has(rule.kind)) continue;
        if (rule.kind === 'high-entropy string' && !looksRandom(value)) continue;
        findings.push({ file, line: i + 1, kind: rule.kind, match: value.slice(0, 80) });
      }
    }
  });
  return findings;
}
