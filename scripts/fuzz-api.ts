// The clinic API against its own OpenAPI document, from outside as a clinic's tools would test it: a local stack
// (`npm start`'s, on ports of its own and a data folder of its own), journeys seeded for the operations to act on,
// every example of the document sent (each must be accepted), then Schemathesis (.tools/schemathesis, PyPI) fuzzing
// every /v1 operation with a fixed seed, then every operator route (/admin, the stack's admin token) and the webhook
// (a journey and dead letters seeded for them). It fails on a 5xx, a status the document does not list, an answer that
// breaks its schema, a method not answered 405 with Allow, and a schema-valid request refused for a reason the
// document does not state (scripts/fuzz/checks.py).
//
//   npm run fuzz:api                          the run before a release: 200 examples per operation (minutes)
//   npm run fuzz:api -- --max-examples 30 --seed 7
/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-call --
   it reads the OpenAPI document and Schemathesis's HAR report as they come off the wire */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createClinicClient, type ClinicClient } from '../clients/typescript';
import { webhookToken } from '../src/webhook-url';
import { exitWith } from './lib/cli';
import { sleep } from './lib/http';
import { LOCAL_ADMIN_TOKEN } from './lib/stack-secrets';

const ROOT = path.resolve(__dirname, '..');
const TOOLS = process.env.TEMPORAL_TOOLS_DIR ?? path.join(ROOT, '.tools');
export const SCHEMATHESIS = path.join(TOOLS, 'schemathesis/bin/st');
const TOKEN = 'demo-clinic-token';
/** Who the admin token's requests say reads or acts. */
const ADMIN_ACTOR = 'contract-fuzz';

type Json = Record<string, any>;

/** Free ports on 127.0.0.1 from `base` up, one per part of the local stack. */
async function stackPorts(base: number, max: number): Promise<Record<string, string>> {
  const free = (port: number) =>
    new Promise<boolean>((resolve) => {
      const server = net.createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
  const names = ['TEMPORAL_PORT', 'TEMPORAL_UI_PORT', 'SANDBOX_PORT', 'API_PORT', 'CODEC_PORT', 'WORKER_METRICS_PORT'];
  const out: Record<string, string> = {};
  let next = base;
  for (const name of names) {
    while (next <= max && !(await free(next))) next++;
    if (next > max) throw new Error(`no free port between ${base} and ${max}`);
    out[name] = String(next++);
  }
  return out;
}

/** `npm start`'s stack on its own ports and data folder, limits raised so the fuzzer's volume is not refused. */
export class FuzzStack {
  private proc: ChildProcess | undefined;
  private output = '';
  readonly dataDir = mkdtempSync(path.join(os.tmpdir(), 'contract-fuzz-'));
  api = '';

  async start(portBase: number, portMax: number, timeoutMs = 420_000): Promise<void> {
    const ports = await stackPorts(portBase, portMax);
    this.api = `http://127.0.0.1:${ports.API_PORT}`;
    this.proc = spawn(process.execPath, ['--import', 'tsx', 'scripts/local-stack.ts'], {
      cwd: ROOT,
      env: {
        ...process.env,
        ...ports,
        DATA_DIR: this.dataDir,
        LOG_LEVEL: 'warn',
        API_RATE_LIMIT_PER_MINUTE: '1000000',
        API_SIGN_IN_FAILURES_PER_MINUTE: '1000000',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const keep = (c: Buffer) => (this.output = (this.output + c.toString()).slice(-20_000));
    this.proc.stdout!.on('data', keep);
    this.proc.stderr!.on('data', keep);
    const deadline = Date.now() + timeoutMs;
    while (!this.output.includes('Ctrl-C stops everything.')) {
      if (this.proc.exitCode !== null) throw new Error(`the stack exited (${this.proc.exitCode}):\n${this.tail()}`);
      if (Date.now() > deadline) throw new Error(`the stack was not up within ${timeoutMs / 1000} s:\n${this.tail()}`);
      await sleep(500);
    }
  }

  tail(lines = 20): string {
    return this.output.split('\n').slice(-lines).join('\n');
  }

  async stop(): Promise<void> {
    const proc = this.proc;
    if (proc?.pid !== undefined && proc.exitCode === null) {
      const exited = new Promise((r) => proc.once('exit', r));
      process.kill(proc.pid, 'SIGTERM');
      // The grace's timer goes with the stack: left running, it would hold the process (jest) for its minute.
      const grace = new AbortController();
      await Promise.race([exited, sleep(60_000, grace.signal)]);
      grace.abort();
      try {
        process.kill(-proc.pid, 'SIGKILL');
      } catch {
        // stopped
      }
    }
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

export interface Seeded {
  journeyId: string;
  patientExamId: number;
  /** An erasure of the clinic's (of a patient without journeys), for the routes that read one. */
  erasureId?: string;
}

const testPatient = (lastName: string) => ({
  firstName: 'Test',
  lastName,
  email: `fuzz-${lastName.toLowerCase()}@example.test`,
  dob: '1980-06-15',
  phoneNumber: '5125550100',
  teleState: 'TE' as const,
});

/** A journey the operations can act on (GFE, its patient exam pending), with its patient exam's id once invited. */
export async function seedJourney(api: ClinicClient, key: string): Promise<Seeded> {
  const started = await api.POST('/v1/journeys', {
    params: { header: { 'idempotency-key': key } },
    body: { patient: testPatient('Waiting'), exams: [101], scenario: { type: 'gfe' } },
  });
  if (!started.data) throw new Error(`seeding a journey answered ${started.response.status}`);
  const { journeyId } = started.data;
  for (let i = 0; i < 120; i++) {
    const { data } = await api.GET('/v1/journeys/{journeyId}', { params: { path: { journeyId } } });
    const exam = data?.journey.exams?.[0];
    if (exam) {
      // An erasure of the clinic's for the routes that read one: of a patient who has no journey.
      const erased = await api.POST('/v1/patients/erasure', {
        params: { header: { 'idempotency-key': `${key}-erasure` } },
        body: { email: 'fuzz-nobody@example.test' },
      });
      if (!erased.data) throw new Error(`seeding an erasure answered ${erased.response.status}`);
      return { journeyId, patientExamId: exam.patientExamId, erasureId: erased.data.erasureId };
    }
    await sleep(500);
  }
  throw new Error('the seeded journey was not invited within 60 s');
}

/** An erasure for the routes that read one: of a patient who has no journey (nothing else is touched). */
export async function seedErasure(base: string, headers: Record<string, string>, route: string, body: Json) {
  const res = await fetch(`${base}${route}`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json', 'idempotency-key': `seed-${route}` },
    body: JSON.stringify(body),
  });
  const answer = (await res.json()) as Json;
  if (res.status !== 202 && res.status !== 200) throw new Error(`seeding an erasure answered ${res.status}`);
  return String(answer.erasureId);
}

/** One request an example of the document makes. */
export interface ExampleRequest {
  label: string;
  method: string;
  path: string;
  query: Record<string, string>;
  body?: unknown;
}

/**
 * Every example of the document's /v1 operations as a request: each request body example (with the operation's
 * parameter examples), and each operation with examples of its parameters only. Ids a clinic has of its own (the
 * journey in the path, its patient exam in a body) are the seeded journey's.
 */
export function documentExamples(doc: Json, seeded: Seeded): ExampleRequest[] {
  const out: ExampleRequest[] = [];
  for (const [route, operations] of Object.entries(doc.paths as Json)) {
    if (!route.startsWith('/v1/')) continue;
    for (const [method, op] of Object.entries(operations as Json)) {
      const params = (op.parameters ?? []) as Json[];
      const pathParams: Record<string, string> = { journeyId: seeded.journeyId };
      const queries: Record<string, string>[] = [{}];
      for (const p of params) {
        const examples = (p.example !== undefined ? [p.example] : (p.schema?.examples ?? [])) as unknown[];
        if (examples.length === 0) continue;
        if (p.in === 'path') pathParams[p.name] = String(examples[0]);
        if (p.in === 'query' && p.style === 'form' && p.explode) {
          queries.splice(0, queries.length, ...(examples as Record<string, string>[]));
        } else if (p.in === 'query') queries.forEach((q) => (q[p.name] = String(examples[0])));
      }
      const filled = route.replace(/\{(\w+)\}/g, (_m, name: string) => pathParams[name] ?? `{${name}}`);
      const media = op.requestBody?.content?.['application/json'];
      const schema = media?.schema?.$ref ? doc.components.schemas[media.schema.$ref.split('/').pop()] : media?.schema;
      const bodies = (schema?.examples ?? (media?.example !== undefined ? [media.example] : [])) as unknown[];
      const label = `${method.toUpperCase()} ${route}`;
      if (bodies.length > 0) {
        bodies.forEach((b, i) => {
          const body = JSON.parse(JSON.stringify(b)) as Json;
          if (typeof body.patientExamId === 'number') body.patientExamId = seeded.patientExamId;
          out.push({ label: `${label} example ${i + 1}`, method, path: filled, query: queries[0]!, body });
        });
      } else if (params.some((p) => p.example !== undefined || p.schema?.examples !== undefined)) {
        queries.forEach((query, i) => out.push({ label: `${label} example ${i + 1}`, method, path: filled, query }));
      }
    }
  }
  // A cancel ends the journey's invite: the journey's other examples first.
  return [...out.filter((e) => !e.path.endsWith('/cancel')), ...out.filter((e) => e.path.endsWith('/cancel'))];
}

/** Sends one example as a clinic would; the answer's status and, when refused, its problem. */
export async function sendExample(base: string, ex: ExampleRequest, idempotencyKey: string) {
  const qs = new URLSearchParams(ex.query).toString();
  const res = await fetch(`${base}${ex.path}${qs ? `?${qs}` : ''}`, {
    method: ex.method.toUpperCase(),
    headers: {
      authorization: `Bearer ${TOKEN}`,
      ...(ex.body !== undefined ? { 'content-type': 'application/json' } : {}),
      // The start and the erasure take one; the other operations leave it unread.
      ...(ex.method === 'post' ? { 'idempotency-key': idempotencyKey } : {}),
    },
    ...(ex.body !== undefined ? { body: JSON.stringify(ex.body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, problem: res.ok ? undefined : text.slice(0, 500) };
}

/** What one Schemathesis pass fuzzes, signed in how, with which seeded ids. */
export interface FuzzScope {
  /** The operations: their paths match this regular expression. */
  paths: string;
  headers: Record<string, string>;
  /** Values of parameters for every operation (`path.journeyId`), and for one operation by its name. */
  parameters: Record<string, string | number>;
  operations?: { name: string; parameters: Record<string, string | number> }[];
}

/** The clinic API (/v1) with the demo clinic's token, acting on a seeded journey. */
export function clinicScope(seeded: Seeded): FuzzScope {
  return {
    paths: '^/v1/',
    headers: { Authorization: `Bearer ${TOKEN}` },
    parameters: { 'path.journeyId': seeded.journeyId, 'path.pharmacyId': 501 },
    ...(seeded.erasureId
      ? {
          operations: [
            {
              name: 'GET /v1/patients/erasure/{erasureId}',
              parameters: { 'path.erasureId': seeded.erasureId },
            },
          ],
        }
      : {}),
  };
}

/**
 * The operator routes (/admin) with the stack's admin token, which names who reads or acts (X-Actor), acting on a
 * journey and on dead letters of their own (one per operation that takes one: a discarded letter is gone for the
 * others); and the exam service's webhook, at the address of a journey that does not exist (its callbacks become
 * dead letters, no journey changes).
 */
export function operatorScope(seeds: OperatorSeeds): FuzzScope {
  const letter = (name: string, id: string) => ({ name, parameters: { 'path.id': id } });
  return {
    paths: '^/(admin|webhooks)/',
    headers: { Authorization: `Bearer ${LOCAL_ADMIN_TOKEN}`, 'X-Actor': ADMIN_ACTOR },
    parameters: { 'path.journeyId': seeds.journeyId },
    operations: [
      letter('GET /admin/dead-letters/{id}', seeds.deadLetters.read),
      letter('POST /admin/dead-letters/{id}/replay', seeds.deadLetters.replay),
      letter('DELETE /admin/dead-letters/{id}', seeds.deadLetters.discard),
      {
        name: 'POST /webhooks/exam-service/{journeyId}/{token}',
        parameters: { 'path.journeyId': seeds.webhook.journeyId, 'path.token': seeds.webhook.token },
      },
      ...(seeds.erasureId
        ? [{ name: 'GET /admin/patients/erasure/{erasureId}', parameters: { 'path.erasureId': seeds.erasureId } }]
        : []),
    ],
  };
}

/** Ids the operator routes act on, made for the fuzzer on a fresh stack. */
export interface OperatorSeeds {
  journeyId: string;
  /** An erasure (of a patient without journeys), for the route that reads one. */
  erasureId?: string;
  deadLetters: { read: string; replay: string; discard: string };
  webhook: { journeyId: string; token: string };
}

/** The admin token's headers, naming who reads (the static token names nobody). */
export const adminHeaders = { authorization: `Bearer ${LOCAL_ADMIN_TOKEN}`, 'x-actor': ADMIN_ACTOR };

/**
 * A journey for the operators' actions (its own: they cancel and reset it) and three dead letters, each a body the
 * webhook could not read, sent to the webhook address of a journey that does not exist.
 */
export async function seedOperatorWork(stack: FuzzStack, api: ClinicClient, key: string): Promise<OperatorSeeds> {
  const { journeyId } = await seedJourney(api, key);
  const secret = (JSON.parse(readFileSync(path.join(stack.dataDir, 'local-secrets.json'), 'utf8')) as Json)
    .webhookSecret as string;
  const webhookOf = (id: string) => ({ journeyId: id, token: webhookToken(id, secret) });
  const letters: Record<string, string> = {};
  for (const use of ['read', 'replay', 'discard']) {
    const to = webhookOf(`contract-letter-${use}`);
    const sent = await fetch(`${stack.api}/webhooks/exam-service/${to.journeyId}/${to.token}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: 'not a callback',
    });
    await sent.text();
    if (sent.status !== 400) throw new Error(`seeding a dead letter answered ${sent.status}`);
  }
  const listed = await fetch(`${stack.api}/admin/dead-letters?reason=unparseable&limit=500`, { headers: adminHeaders });
  for (const letter of ((await listed.json()) as Json).deadLetters as Json[]) {
    letters[String(letter.journeyId).replace('contract-letter-', '')] = String(letter.id);
  }
  const { read, replay, discard } = letters;
  if (!read || !replay || !discard) throw new Error(`seeding dead letters: ${listed.status}, not all listed`);
  const erasureId = await seedErasure(stack.api, adminHeaders, '/admin/patients/erasure', {
    clinicId: 'demo-clinic',
    email: 'fuzz-nobody@example.test',
  });
  return {
    journeyId,
    erasureId,
    deadLetters: { read, replay, discard },
    webhook: webhookOf('contract-webhook-nobody'),
  };
}

export interface FuzzOptions {
  api: string;
  scope: FuzzScope;
  /** The document's paths (templates): what the report's URLs are counted under. */
  routes: string[];
  seed: number;
  maxExamples: number;
  workDir: string;
}

export interface FuzzResult {
  exitCode: number;
  output: string;
  requests: number;
  statuses: Record<string, number>;
  operations: Record<string, Record<string, number>>;
}

/** The document's path a request's path is an instance of (the one with the most fixed parts when several are). */
function routeOf(pathname: string, routes: string[]): string {
  const matching = routes.filter((route) =>
    new RegExp(`^${route.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{\w+\}/g, '[^/]+')}/?$`).test(pathname),
  );
  const fixed = (route: string) => route.split('/').filter((part) => part !== '' && !part.startsWith('{')).length;
  return matching.sort((a, b) => fixed(b) - fixed(a))[0] ?? pathname;
}

const toml = (v: string | number) => (typeof v === 'number' ? String(v) : JSON.stringify(v));
const inlineTable = (values: Record<string, string | number>) =>
  `{ ${Object.entries(values)
    .map(([k, v]) => `${JSON.stringify(k)} = ${toml(v)}`)
    .join(', ')} }`;

/** Runs Schemathesis over the operations of the API's document in scope; what it sent and the answers' statuses. */
export function runSchemathesis(o: FuzzOptions): FuzzResult {
  const config = path.join(o.workDir, 'schemathesis.toml');
  const har = path.join(o.workDir, 'run.har');
  rmSync(har, { force: true });
  writeFileSync(
    config,
    [
      `hooks = ${JSON.stringify(path.join(ROOT, 'scripts/fuzz/checks.py'))}`,
      'seed = ' + String(o.seed),
      '[parameters]',
      ...Object.entries(o.scope.parameters).map(([k, v]) => `${JSON.stringify(k)} = ${toml(v)}`),
      '[checks.positive_data_acceptance]',
      'enabled = false',
      '[generation]',
      `max-examples = ${o.maxExamples}`,
      'database = "none"',
      ...(o.scope.operations ?? []).flatMap((op) => [
        '[[operations]]',
        `include-name = ${JSON.stringify(op.name)}`,
        `parameters = ${inlineTable(op.parameters)}`,
      ]),
      '',
    ].join('\n'),
  );
  const run = spawnSync(
    SCHEMATHESIS,
    [
      '--config-file',
      config,
      'run',
      `${o.api}/docs/json`,
      '--url',
      o.api,
      '--include-path-regex',
      o.scope.paths,
      ...Object.entries(o.scope.headers).flatMap(([name, value]) => ['--header', `${name}: ${value}`]),
      '--phases',
      'examples,fuzzing',
      '--checks',
      'all',
      '--exclude-checks',
      'positive_data_acceptance',
      // One operation at a time: the seeded journey's and letters' state moves with each, as the seed orders them.
      '--workers',
      '1',
      '--no-color',
      '--output-sanitize',
      'true',
      '--report',
      'har',
      '--report-har-path',
      har,
    ],
    { cwd: o.workDir, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, env: { ...process.env, NO_COLOR: '1' } },
  );
  const statuses: Record<string, number> = {};
  const operations: Record<string, Record<string, number>> = {};
  let requests = 0;
  try {
    const entries = (JSON.parse(readFileSync(har, 'utf8')) as Json).log.entries as Json[];
    for (const e of entries) {
      requests++;
      const status = String(e.response.status);
      statuses[status] = (statuses[status] ?? 0) + 1;
      const url = new URL(e.request.url as string);
      const key = `${String(e.request.method)} ${routeOf(url.pathname, o.routes)}`;
      operations[key] ??= {};
      operations[key][status] = (operations[key][status] ?? 0) + 1;
    }
  } catch {
    // no report: the run failed before it sent anything; its output says why
  }
  return { exitCode: run.status ?? 1, output: `${run.stdout}\n${run.stderr}`, requests, statuses, operations };
}

/** Operations of the document in scope that never answered anything but 404 or 405 (none, when all reached past). */
export function missedOperations(doc: Json, scope: FuzzScope, result: FuzzResult): string[] {
  const inScope = new RegExp(scope.paths);
  const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>)
    .filter(([route]) => inScope.test(route))
    .flatMap(([route, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${route}`));
  return documented.filter(
    (op) => !Object.keys(result.operations[op] ?? {}).some((status) => status !== '404' && status !== '405'),
  );
}

function option(args: string[], name: string, fallback: number): number {
  const at = args.indexOf(name);
  if (at < 0) return fallback;
  const value = Number(args[at + 1]);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} takes a positive whole number`);
  return value;
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  const maxExamples = option(args, '--max-examples', 200);
  const seed = option(args, '--seed', 41);
  const stack = new FuzzStack();
  const work = mkdtempSync(path.join(os.tmpdir(), 'contract-fuzz-run-'));
  const stop = () => void stack.stop().finally(() => process.exit(130));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    console.log('starting a local stack (ports from 24000) ...');
    await stack.start(24_000, 24_999);
    const api = createClinicClient({ baseUrl: stack.api, token: TOKEN });
    const forExamples = await seedJourney(api, `fuzz-examples-${Date.now()}`);
    const seeded = await seedJourney(api, `fuzz-seed-${Date.now()}`);
    const doc = (await (await fetch(`${stack.api}/docs/json`)).json()) as Json;
    let refused = 0;
    for (const [i, ex] of documentExamples(doc, forExamples).entries()) {
      const answer = await sendExample(stack.api, ex, `fuzz-example-${Date.now()}-${i}`);
      const ok = answer.status >= 200 && answer.status < 300;
      if (!ok) refused++;
      console.log(
        `${ok ? 'accepted' : 'REFUSED '} ${answer.status} ${ex.label}${answer.problem ? ` ${answer.problem}` : ''}`,
      );
    }
    const routes = Object.keys(doc.paths as Json);
    const operators = await seedOperatorWork(stack, api, `fuzz-operators-${Date.now()}`);
    let failed = refused > 0;
    // The clinic's operations first, then the operators' (who cancel and reset a journey of their own).
    for (const [name, scope] of [
      ['clinic API (/v1)', clinicScope(seeded)],
      ['operator routes (/admin) and the webhook', operatorScope(operators)],
    ] as const) {
      console.log(`Schemathesis over the ${name}: seed ${seed}, ${maxExamples} examples per operation ...`);
      const started = Date.now();
      const result = runSchemathesis({ api: stack.api, scope, routes, seed, maxExamples, workDir: work });
      console.log(result.output);
      const missed = missedOperations(doc, scope, result);
      console.log(
        `${result.requests} requests in ${Math.round((Date.now() - started) / 1000)} s; statuses ` +
          `${JSON.stringify(result.statuses)}${missed.length > 0 ? `; never past 404: ${missed.join(', ')}` : ''}`,
      );
      failed ||= result.exitCode !== 0 || missed.length > 0;
    }
    return failed ? 1 : 0;
  } finally {
    await stack.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

if (require.main === module) exitWith(main);

export const SCHEMATHESIS_PRESENT = () => spawnSync(SCHEMATHESIS, ['--version']).status === 0;
