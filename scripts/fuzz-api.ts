// The clinic API against its own OpenAPI document, from outside as a clinic's tools would test it: a local stack
// (`npm start`'s, on ports of its own and a data folder of its own), journeys seeded for the operations to act on,
// every example of the document sent (each must be accepted), then Schemathesis (.tools/schemathesis, PyPI) fuzzing
// every /v1 operation with a fixed seed. It fails on a 5xx, a status the document does not list, an answer that breaks
// its schema, a method not answered 405 with Allow, and a schema-valid request refused for a reason the document does
// not state (scripts/fuzz/checks.py).
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
import { exitWith } from './lib/cli';
import { sleep } from './lib/http';

const ROOT = path.resolve(__dirname, '..');
const TOOLS = process.env.TEMPORAL_TOOLS_DIR ?? path.join(ROOT, '.tools');
export const SCHEMATHESIS = path.join(TOOLS, 'schemathesis/bin/st');
const TOKEN = 'demo-clinic-token';

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
    if (exam) return { journeyId, patientExamId: exam.patientExamId };
    await sleep(500);
  }
  throw new Error('the seeded journey was not invited within 60 s');
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
      ...(ex.method === 'post' && ex.path === '/v1/journeys' ? { 'idempotency-key': idempotencyKey } : {}),
    },
    ...(ex.body !== undefined ? { body: JSON.stringify(ex.body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, problem: res.ok ? undefined : text.slice(0, 500) };
}

export interface FuzzOptions {
  api: string;
  seeded: Seeded;
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

/** Runs Schemathesis over the /v1 operations of the API's document; what it sent and the answers' statuses. */
export function runSchemathesis(o: FuzzOptions): FuzzResult {
  const config = path.join(o.workDir, 'schemathesis.toml');
  const har = path.join(o.workDir, 'run.har');
  writeFileSync(
    config,
    [
      `hooks = ${JSON.stringify(path.join(ROOT, 'scripts/fuzz/checks.py'))}`,
      'seed = ' + String(o.seed),
      '[parameters]',
      `"path.journeyId" = ${JSON.stringify(o.seeded.journeyId)}`,
      '"path.pharmacyId" = 501',
      '[checks.positive_data_acceptance]',
      'enabled = false',
      '[generation]',
      `max-examples = ${o.maxExamples}`,
      'database = "none"',
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
      '^/v1/',
      '--header',
      `Authorization: Bearer ${TOKEN}`,
      '--phases',
      'examples,fuzzing',
      '--checks',
      'all',
      '--exclude-checks',
      'positive_data_acceptance',
      // One operation at a time: the journey's actions race each other otherwise (a resend beside a cancel).
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
      const route = url.pathname
        .replace(o.seeded.journeyId, '{journeyId}')
        .replace(/\/partner-pharmacies\/[^/]+\//, '/partner-pharmacies/{pharmacyId}/');
      const key = `${String(e.request.method)} ${route}`;
      operations[key] ??= {};
      operations[key][status] = (operations[key][status] ?? 0) + 1;
    }
  } catch {
    // no report: the run failed before it sent anything; its output says why
  }
  return { exitCode: run.status ?? 1, output: `${run.stdout}\n${run.stderr}`, requests, statuses, operations };
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
    console.log(`Schemathesis: seed ${seed}, ${maxExamples} examples per operation ...`);
    const started = Date.now();
    const result = runSchemathesis({ api: stack.api, seeded, seed, maxExamples, workDir: work });
    console.log(result.output);
    console.log(
      `${result.requests} requests in ${Math.round((Date.now() - started) / 1000)} s; statuses ${JSON.stringify(result.statuses)}`,
    );
    return result.exitCode === 0 && refused === 0 ? 0 : 1;
  } finally {
    await stack.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

if (require.main === module) exitWith(main);

export const SCHEMATHESIS_PRESENT = () => spawnSync(SCHEMATHESIS, ['--version']).status === 0;
