// The clinic API keeps its OpenAPI document, tested from outside as a clinic's tools would: `npm start`'s stack on
// ports of its own, every example of the document sent (each accepted), then Schemathesis fuzzing every /v1 operation
// with a fixed seed and a small budget (scripts/fuzz-api.ts; `npm run fuzz:api` is the longer run before a release).
// A 5xx, a status the document does not list, an answer that breaks its schema, a method not answered 405 with Allow
// or a schema-valid request refused for a reason the document does not state fails it; every operation must reach past
// 404 (the journey routes act on journeys seeded for them).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createClinicClient } from '../../clients/typescript';
import {
  documentExamples,
  FuzzStack,
  runSchemathesis,
  SCHEMATHESIS_PRESENT,
  seedJourney,
  sendExample,
  type Seeded,
} from '../../scripts/fuzz-api';

jest.setTimeout(900_000);

const SEED = 41;
const MAX_EXAMPLES = 100;

const stack = new FuzzStack();
let doc: Record<string, any>;
let forExamples: Seeded;
let forFuzzing: Seeded;

beforeAll(async () => {
  if (!SCHEMATHESIS_PRESENT()) throw new Error('Schemathesis is missing: run bash scripts/install-schemathesis.sh');
  await stack.start(24_100, 24_999);
  const api = createClinicClient({ baseUrl: stack.api, token: 'demo-clinic-token' });
  forExamples = await seedJourney(api, 'contract-examples');
  forFuzzing = await seedJourney(api, 'contract-fuzzing');
  doc = (await (await fetch(`${stack.api}/docs/json`)).json()) as Record<string, any>;
});
afterAll(() => stack.stop());

it("accepts every example of the document's clinic operations", async () => {
  const examples = documentExamples(doc, forExamples);
  const operations = new Set(examples.map((e) => e.label.replace(/ example \d+$/, '')));
  // Each body and each parameter set with examples: the start, the actions, the uploads, the catalog queries.
  expect(operations.size).toBeGreaterThanOrEqual(8);
  const answers = [];
  for (const [i, ex] of examples.entries()) {
    const { status, problem } = await sendExample(stack.api, ex, `contract-example-${i}`);
    answers.push({ example: ex.label, status, ...(problem ? { problem } : {}) });
  }
  expect(answers.filter((a) => a.status < 200 || a.status >= 300)).toEqual([]);
});

it('answers the fuzzer as the document says, on every operation past 404', () => {
  const work = mkdtempSync(path.join(os.tmpdir(), 'contract-fuzz-'));
  try {
    const started = Date.now();
    const result = runSchemathesis({
      api: stack.api,
      seeded: forFuzzing,
      seed: SEED,
      maxExamples: MAX_EXAMPLES,
      workDir: work,
    });
    console.log(
      `contract fuzz (seed ${SEED}, ${MAX_EXAMPLES} examples per operation): ${result.requests} requests in ` +
        `${Math.round((Date.now() - started) / 1000)} s; statuses ${JSON.stringify(result.statuses)}`,
    );
    if (result.exitCode !== 0) console.log(result.output.slice(-12_000));
    expect(result.exitCode).toBe(0);
    const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>)
      .filter(([route]) => route.startsWith('/v1/'))
      .flatMap(([route, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${route}`));
    const pastNotFound = documented.filter((op) =>
      Object.keys(result.operations[op] ?? {}).some((status) => status !== '404' && status !== '405'),
    );
    expect({ missed: documented.filter((op) => !pastNotFound.includes(op)) }).toEqual({ missed: [] });
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});
