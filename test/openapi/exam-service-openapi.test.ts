// The exam service's interface lives in the repository: an OpenAPI 3.1 document generated from the contract schemas,
// served by the sandbox and committed up to date, and docs that link only to files the repository has.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { EXAM_SERVICE_OPERATIONS } from '../../src/exam-service/schemas';
import { buildSandbox, type Sandbox } from '../../src/sandbox';
import { getJson } from '../sandbox/support';

const ROOT = path.resolve(__dirname, '../..');

/** The operations src/exam-service/client.ts posts to, read from its source (`OPERATIONS`-typed names it calls). */
function operationsTheClientCalls(): string[] {
  const source = readFileSync(path.join(ROOT, 'src/exam-service/client.ts'), 'utf8');
  const named = [...source.matchAll(/'([a-z_]+)'/g)].map((m) => m[1]!);
  return EXAM_SERVICE_OPERATIONS.filter((op) => named.includes(op));
}

describe('exam service OpenAPI', () => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await buildSandbox({ clockMode: 'manual' });
  });
  afterAll(() => sandbox.close());

  it('is served by the sandbox at /docs/openapi.json: OpenAPI 3.1 with a path for every operation the client calls', async () => {
    const res = await getJson(`${sandbox.baseUrl}/docs/openapi.json`);
    expect(res.status).toBe(200);
    const doc = res.body;
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
    expect(doc.info).toMatchObject({ title: expect.any(String), version: '1.0.0' });
    const called = operationsTheClientCalls();
    expect(called.length).toBe(EXAM_SERVICE_OPERATIONS.length);
    for (const op of called) {
      const post = doc.paths[`/api/${op}`]?.post;
      expect({ op, operationId: post?.operationId }).toEqual({ op, operationId: op });
      const schema = post.requestBody.content['application/json'].schema;
      const forms = schema.anyOf ?? [schema];
      for (const form of forms)
        expect({ op, required: form.required }).toEqual({ op, required: expect.arrayContaining(['api_key']) });
      expect(Object.keys(post.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '500']));
      expect(post.responses['400'].content['application/json'].schema.$ref).toBe('#/components/schemas/ErrorBody');
    }
    expect(doc.components.schemas.ErrorBody.required).toEqual(expect.arrayContaining(['http_code', 'error_message']));
    // Every $ref resolves inside the document.
    const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"#\/([^"]+)"/g)].map((m) => m[1]!);
    for (const ref of refs)
      expect({ ref, found: ref.split('/').reduce((n: any, k) => n?.[k], doc) !== undefined }).toEqual({
        ref,
        found: true,
      });
    const events = Object.values(doc.webhooks).map(
      (w: any) => w.post.requestBody.content['application/json'].schema.$ref,
    );
    expect(events).toEqual([
      '#/components/schemas/Event1',
      '#/components/schemas/Event2',
      '#/components/schemas/Event3',
    ]);
    expect(doc.components.schemas.Event1.properties.event).toEqual({ type: 'number', const: 1 });
  });

  it('has a page a person can read at /docs', async () => {
    const res = await getJson(`${sandbox.baseUrl}/docs`);
    expect(res.status).toBe(200);
    for (const op of EXAM_SERVICE_OPERATIONS) expect(res.body).toContain(`/api/${op}`);
    expect(res.body).toContain('href="/docs/openapi.json"');
  });

  it('is committed up to date as docs/exam-service.openapi.json (npm run docs:exam-service writes it)', async () => {
    // The generator formats with prettier, which loads itself by dynamic import: run it as the script it is.
    const tsx = path.join(ROOT, 'node_modules/tsx/dist/cli.mjs');
    const script = path.join(ROOT, 'scripts/exam-service-openapi.ts');
    const { stdout } = await promisify(execFile)(process.execPath, [tsx, script, '--print'], {
      cwd: ROOT,
      maxBuffer: 16 * 1024 * 1024,
    });
    expect(stdout.length).toBeGreaterThan(1000);
    expect(readFileSync(path.join(ROOT, 'docs/exam-service.openapi.json'), 'utf8')).toBe(stdout);
  });
});

describe('links in README.md and docs/', () => {
  const files = [
    'README.md',
    ...readdirSync(path.join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ];

  it.each(files)('%s links only to files inside the repository', (file) => {
    const text = readFileSync(path.join(ROOT, file), 'utf8');
    const targets = [...text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!);
    const local = targets.filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t) && !t.startsWith('#'));
    const astray = local.filter((t) => {
      if (path.isAbsolute(t)) return true;
      const resolved = path.resolve(path.dirname(path.join(ROOT, file)), t.split('#')[0]!);
      return path.relative(ROOT, resolved).startsWith('..') || !existsSync(resolved);
    });
    expect(astray).toEqual([]);
  });
});
