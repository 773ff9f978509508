// The clinic API's OpenAPI document is one a generator can use: (nearly) every property says what it is, every error
// answer is the shared Problem schema, and openapi-typescript turns it into types a client program compiles against.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Client } from '@temporalio/client';
import { buildApp, type ApiApp } from '../../src/api/app';
import { fakeExamService, tempDataDir, testConfig, unreachableTemporal, type TestDirs } from '../api/support';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../..');
const bin = (pkg: string, file: string) => path.join(ROOT, 'node_modules', pkg, file);

type Json = Record<string, any>;

/** Every property of every schema in the document (components and inline), and whether it carries a description. */
export function propertyDescriptions(doc: Json): { path: string; described: boolean }[] {
  const target = (ref: string): Json | undefined =>
    ref
      .replace(/^#\//, '')
      .split('/')
      .reduce<any>((node, key) => node?.[key], doc);
  const out: { path: string; described: boolean }[] = [];
  const walk = (node: unknown, at: string): void => {
    if (Array.isArray(node)) return node.forEach((n, i) => walk(n, `${at}[${i}]`));
    if (node === null || typeof node !== 'object') return;
    const props = (node as Json).properties;
    if (props && typeof props === 'object' && !Array.isArray(props)) {
      for (const [name, schema] of Object.entries(props as Json)) {
        const own = typeof schema?.description === 'string' && schema.description.trim() !== '';
        const viaRef = typeof schema?.$ref === 'string' && typeof target(schema.$ref)?.description === 'string';
        out.push({ path: `${at}.${name}`, described: own || viaRef });
      }
    }
    for (const [key, value] of Object.entries(node)) walk(value, `${at}/${key}`);
  };
  walk(doc, '#');
  return out;
}

describe('clinic API OpenAPI document', () => {
  let dirs: TestDirs;
  let temporal: Client;
  let app: ApiApp;
  let doc: Json;
  let work: string;

  beforeAll(async () => {
    dirs = tempDataDir();
    temporal = await unreachableTemporal();
    app = await buildApp({
      config: testConfig(dirs.dataDir),
      temporal,
      examServiceFor: () => fakeExamService(),
      startForwarder: false,
    });
    const res = await app.inject({ method: 'GET', url: '/docs/json' });
    expect(res.statusCode).toBe(200);
    doc = res.json();
    work = mkdtempSync(path.join(os.tmpdir(), 'clinic-openapi-'));
  });
  afterAll(async () => {
    await app.close();
    await temporal.connection.close();
    dirs.cleanup();
    rmSync(work, { recursive: true, force: true });
  });

  it('describes at least 90 % of all properties', () => {
    const props = propertyDescriptions(doc);
    const described = props.filter((p) => p.described).length;
    const share = described / props.length;
    const missing = props.filter((p) => !p.described).map((p) => p.path);
    console.log(
      `clinic API OpenAPI: ${described} of ${props.length} properties described (${(share * 100).toFixed(1)} %)` +
        (missing.length > 0 ? `; without: ${missing.join(', ')}` : ''),
    );
    expect(props.length).toBeGreaterThan(100);
    expect(share).toBeGreaterThanOrEqual(0.9);
  });

  it('gives request bodies examples', () => {
    const start = doc.paths['/v1/journeys'].post.requestBody.content['application/json'].schema;
    const schema = start.$ref ? doc.components.schemas[start.$ref.split('/').pop()] : start;
    expect(schema.examples?.[0]).toMatchObject({ exams: expect.any(Array), scenario: expect.any(Object) });
    const bodies = Object.entries(doc.paths as Json).flatMap(([url, ops]) =>
      Object.entries(ops as Json)
        .filter(([, op]) => op.requestBody?.content?.['application/json'])
        .map(([method, op]) => {
          // On the schema (a component), or on the media type (where the document generator moves inline ones).
          const media = op.requestBody.content['application/json'];
          const s = media.schema;
          const resolved = s.$ref ? doc.components.schemas[s.$ref.split('/').pop()] : s;
          const examples =
            resolved.examples ?? (media.example !== undefined ? [media.example] : Object.values(media.examples ?? {}));
          return { route: `${method.toUpperCase()} ${url}`, examples };
        }),
    );
    // The webhook's body is the exam service's callback, documented by that service.
    const clinicBodies = bodies.filter((b) => !b.route.includes('/webhooks/'));
    expect(clinicBodies.filter((b) => !Array.isArray(b.examples) || b.examples.length === 0)).toEqual([]);
  });

  it('answers every error with the one shared Problem schema', () => {
    expect(doc.components.schemas.Problem).toMatchObject({ type: 'object', required: expect.any(Array) });
    const errors = Object.entries(doc.paths as Json).flatMap(([url, ops]) =>
      Object.entries(ops as Json).flatMap(([method, op]) =>
        Object.entries((op.responses ?? {}) as Json)
          .filter(([status]) => Number(status) >= 400)
          .map(([status, response]) => ({
            route: `${method.toUpperCase()} ${url} ${status}`,
            refs: Object.entries((response.content ?? {}) as Json).map(([media, c]) =>
              media === 'application/problem+json' ? c.schema?.$ref : `${media} (not application/problem+json)`,
            ),
          })),
      ),
    );
    expect(errors.length).toBeGreaterThan(50);
    const astray = errors.filter(
      (e) => e.refs.length === 0 || e.refs.some((r) => r !== '#/components/schemas/Problem'),
    );
    expect(astray).toEqual([]);
  });

  it('generates a typed client with openapi-typescript that a client program compiles against', async () => {
    writeFileSync(path.join(work, 'clinic-api.json'), JSON.stringify(doc));
    await run(process.execPath, [
      bin('openapi-typescript', 'bin/cli.js'),
      path.join(work, 'clinic-api.json'),
      '-o',
      path.join(work, 'clinic-api.d.ts'),
    ]);
    writeFileSync(
      path.join(work, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { strict: true, noEmit: true, target: 'ES2022', module: 'commonjs', skipLibCheck: false },
        files: ['client.ts'],
      }),
    );
    const program = (extra: string) => `import type { components, paths } from './clinic-api';
type StartJourney = paths['/v1/journeys']['post'];
type StartBody = StartJourney['requestBody']['content']['application/json'];
type Started = StartJourney['responses'][201]['content']['application/json'];
type GetJourney = paths['/v1/journeys/{journeyId}']['get'];
type Journey = GetJourney['responses'][200]['content']['application/json'];
type Problem = components['schemas']['Problem'];

export const body: StartBody = {
  patient: {
    firstName: 'Test',
    lastName: 'Approve',
    email: 'patient@example.com',
    dob: '1990-01-01',
    phoneNumber: '4155550100',
    teleState: 'TE',
  },
  exams: [201],
  scenario: { type: 'partner_pharmacy', pharmacyId: 501, orderSetId: '8101' },
};
export const journeyIdParam: GetJourney['parameters']['path']['journeyId'] = 'j-1';
export function read(started: Started, journey: Journey, problem: Problem) {
  const id: string = started.journeyId;
  const self: string = started.links.self;
  const stage: string = journey.journey.stage;
  const exams = (journey.journey.exams ?? []).map((e) => [e.patientExamId, e.status] as const);
  const fields = (problem.errors ?? []).map((e) => e.field);
  ${extra}
  return { id, self, stage, exams, detail: problem.detail, fields };
}
`;
    const tsc = () => run(process.execPath, [bin('typescript', 'bin/tsc'), '-p', work]);
    writeFileSync(path.join(work, 'client.ts'), program(''));
    await expect(tsc()).resolves.toBeDefined();
    // The same program using a field the API does not have must not compile: the types are the document's.
    writeFileSync(path.join(work, 'client.ts'), program('const missing: string = started.meetingUrl;'));
    const failed = await tsc().then(
      () => undefined,
      (err: { stdout?: string }) => err.stdout ?? '',
    );
    expect(failed).toMatch(/meetingUrl/);
  });
});
