// The API keeps its OpenAPI document, tested from outside as a clinic's tools would: `npm start`'s stack on ports of
// its own, every example of the document sent (each accepted), then Schemathesis fuzzing every /v1 operation, and then
// every operator route (/admin, with the stack's admin token) and the webhook, with a fixed seed and a small budget
// (scripts/fuzz-api.ts; `npm run fuzz:api` is the longer run before a release). A 5xx, a status the document does not
// list, an answer that breaks its schema, a method not answered 405 with Allow or a schema-valid request refused for a
// reason the document does not state fails it; every operation must reach past 404 (the journey routes act on journeys
// seeded for them, the dead-letter routes on letters seeded for them).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createClinicClient } from '../../clients/typescript';
import {
  clinicScope,
  documentExamples,
  FuzzStack,
  missedOperations,
  operatorScope,
  runSchemathesis,
  SCHEMATHESIS_PRESENT,
  seedJourney,
  seedOperatorWork,
  sendExample,
  type FuzzScope,
  type OperatorSeeds,
  type Seeded,
} from '../../scripts/fuzz-api';

jest.setTimeout(900_000);

const SEED = 41;
const MAX_EXAMPLES = 100;

const stack = new FuzzStack();
let doc: Record<string, any>;
let forExamples: Seeded;
let forFuzzing: Seeded;
let forOperators: OperatorSeeds;

beforeAll(async () => {
  if (!SCHEMATHESIS_PRESENT()) throw new Error('Schemathesis is missing: run bash scripts/install-schemathesis.sh');
  await stack.start(24_100, 24_999);
  const api = createClinicClient({ baseUrl: stack.api, token: 'demo-clinic-token' });
  forExamples = await seedJourney(api, 'contract-examples');
  forFuzzing = await seedJourney(api, 'contract-fuzzing');
  forOperators = await seedOperatorWork(stack, api, 'contract-operators');
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

/** Schemathesis over the operations in scope: no failure of its checks or ours, every operation past 404. */
function fuzz(name: string, scope: () => FuzzScope) {
  const work = mkdtempSync(path.join(os.tmpdir(), 'contract-fuzz-'));
  try {
    const started = Date.now();
    const routes = Object.keys(doc.paths as Record<string, unknown>);
    const run = { api: stack.api, scope: scope(), routes, seed: SEED, maxExamples: MAX_EXAMPLES, workDir: work };
    const result = runSchemathesis(run);
    console.log(
      `contract fuzz of the ${name} (seed ${SEED}, ${MAX_EXAMPLES} examples per operation): ${result.requests} ` +
        `requests in ${Math.round((Date.now() - started) / 1000)} s; statuses ${JSON.stringify(result.statuses)}; ` +
        `by operation ${JSON.stringify(result.operations)}`,
    );
    if (result.exitCode !== 0) console.log(result.output.slice(-12_000));
    expect(result.exitCode).toBe(0);
    expect({ missed: missedOperations(doc, run.scope, result) }).toEqual({ missed: [] });
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

it('answers the fuzzer as the document says, on every clinic operation past 404', () => {
  fuzz('clinic API', () => clinicScope(forFuzzing));
});

// After the clinic's: the operators cancel and reset a journey (their own), replay and discard letters.
it('answers the fuzzer as the document says, on every operator route and the webhook past 404', () => {
  fuzz('operator routes and the webhook', () => operatorScope(forOperators));
});
