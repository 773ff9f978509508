// The README and docs/ against what they describe: every link to a section lands on a heading, the files they name
// exist, the on-call runbook explains every attention code, and the compose page's tables name every service and
// secret of docker-compose.yml with the right count of one-shot jobs.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';

const ROOT = path.resolve(__dirname, '../..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

const PAGES = [
  'README.md',
  'src/sandbox/README.md',
  ...readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** The text outside fenced code blocks (a `#` comment in a shell block is no heading). */
function prose(text: string): string {
  return text.replace(/^```[\s\S]*?^```/gm, '');
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
export function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(file: string): Set<string> {
  const headings = [...prose(read(file)).matchAll(/^#{1,6}\s+(.+)$/gm)].map((m) => anchorOf(m[1]!));
  return new Set(headings);
}

describe('links to a section', () => {
  it.each(PAGES)('%s: each lands on a heading of its page', (file) => {
    const text = prose(read(file));
    const astray: string[] = [];
    for (const m of text.matchAll(/\]\(([^)\s]*#[^)\s]+)\)/g)) {
      const [target, anchor] = m[1]!.split('#') as [string, string];
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
      const page =
        target === '' ? file : path.relative(ROOT, path.resolve(path.dirname(path.join(ROOT, file)), target));
      if (!page.endsWith('.md') || !existsSync(path.join(ROOT, page))) continue; // the file links test's business
      if (!anchorsOf(page).has(anchor)) astray.push(m[1]!);
    }
    expect(astray).toEqual([]);
  });

  it('reads a heading as GitHub does', () => {
    expect(anchorOf("Guarantees where they meet: erasure and sign-in limits under the clinic's own traffic")).toBe(
      'guarantees-where-they-meet-erasure-and-sign-in-limits-under-the-clinics-own-traffic',
    );
    expect(anchorOf('3. Waiting journeys')).toBe('3-waiting-journeys');
    expect(anchorOf('Metrics (`/metrics`)')).toBe('metrics-metrics');
  });
});

/** Paths named in the docs that are not this repository's: other projects' files, and files the set-up makes. */
const NOT_OURS = new Set([
  'src/app/api/qualiphy/route.ts', // a public integration of the live service (docs/live-service.md)
  'src/app/api/qualiphy/webhook/route.ts',
  'deploy/secrets/clinics.json', // made by deploy/init-secrets.sh, git-ignored
]);

describe('files the docs name', () => {
  it.each(PAGES)('%s names only files that exist', (file) => {
    const named = [
      ...read(file).matchAll(
        /(?<![\w/.-])(?:src|scripts|bench|test|deploy|tools)\/[\w./-]*\w\.(?:ts|sh|json|ya?ml|md|cfg|patch|xml|js)\b/g,
      ),
    ].map((m) => m[0]);
    expect([...new Set(named)].filter((p) => !NOT_OURS.has(p) && !existsSync(path.join(ROOT, p)))).toEqual([]);
  });
});

describe('the on-call runbook (docs/operations.md)', () => {
  it('explains every attention code a journey can raise', () => {
    const source = read('src/contract/journey-types.ts');
    const union = /export type AttentionCode =([^;]+);/.exec(source)?.[1] ?? '';
    const codes = [...union.matchAll(/'([a-z_]+)'/g)].map((m) => m[1]!);
    expect(codes.length).toBeGreaterThan(5);
    const rows = [...read('docs/operations.md').matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1]!);
    expect(codes.filter((code) => !rows.includes(code))).toEqual([]);
  });
});

describe("docs/deploy.md's compose tables", () => {
  interface Service {
    restart?: string;
    profiles?: string[];
  }
  const compose = parse(read('docker-compose.yml'), { merge: true }) as {
    services: Record<string, Service>;
    secrets: Record<string, { file: string }>;
  };
  const deploy = read('docs/deploy.md');
  const section = deploy.slice(deploy.indexOf('## Running with Docker Compose'), deploy.indexOf('\n## Kubernetes'));

  it('name every service', () => {
    const rows = [...section.matchAll(/^\| (`[^|]+`) \|/gm)].flatMap((m) =>
      [...m[1]!.matchAll(/`([\w-]+)`/g)].map((n) => n[1]!),
    );
    expect(Object.keys(compose.services).filter((name) => !rows.includes(name))).toEqual([]);
  });

  it('name every secret file', () => {
    const named = [...section.matchAll(/^\| `deploy\/secrets\/[^|]+\|/gm)].map((m) => m[0]).join(' ');
    const files = Object.values(compose.secrets).map((s) => path.basename(s.file));
    expect(files.length).toBeGreaterThan(10);
    expect(files.filter((file) => !named.includes(`\`${file}\``) && !named.includes(`/${file}\``))).toEqual([]);
  });

  it('count the one-shot jobs an `up` runs as compose has them', () => {
    const words = [
      '',
      'one',
      'two',
      'three',
      'four',
      'five',
      'six',
      'seven',
      'eight',
      'nine',
      'ten',
      'eleven',
      'twelve',
    ];
    const oneShot = Object.values(compose.services).filter((s) => s.restart === 'no' && !s.profiles?.length).length;
    expect(section).toContain(`the ${words[oneShot]} one-shot jobs`);
  });
});
