// `npm run demo`: every scenario through the clinic API against the exam-service sandbox, in test mode, so the
// sandbox's simulated provider calls back through the real webhook. Uploads the required attachments, starts each
// journey with an Idempotency-Key (and starts it again to show the replay), follows GET /v1/journeys/:id live and
// ends with a table. Exits 0 when every journey ended as expected, 1 when one did not (or did not finish in time),
// 2 when the demo could not run (no API, refused token, bad options).
//
//   npm run demo                                   against a running stack (`npm start` in another terminal)
//   npm run demo -- --start-stack                  starts its own local stack first and stops it afterwards
//   npm run demo -- --api http://127.0.0.1:13000 --token demo-clinic-token --timeout 120
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { StartJourneyBody } from '../src/api/schemas';
import type { CustomPharmacy, Scenario } from '../src/workflows/journey-request';

const root = path.resolve(__dirname, '..');

// ---- options ---------------------------------------------------------------------------------------------------

export interface Options {
  api: string;
  token: string;
  /** Where the token came from (printed instead of the token). */
  tokenSource: string;
  timeoutMs: number;
  startStack: boolean;
  /** The API port the started stack must listen on (--start-stack only). */
  stackApiPort: number | undefined;
  stackReadyTimeoutMs: number;
  pollMs: number;
}

export class UsageError extends Error {
  override name = 'UsageError';
}

const DEFAULT_API = 'http://127.0.0.1:3000';
const DEFAULT_TOKEN = 'demo-clinic-token';

export const USAGE = `Usage: npm run demo -- [options]

Runs the GFE, partner pharmacy, urgent care, choose-your-own pharmacy and a stacked invite through the clinic API
against the exam-service sandbox (test mode) and checks that every journey ends as expected.

Options:
  --api <url>          the clinic API (default: $API_URL, else ${DEFAULT_API}; with --start-stack and $API_PORT,
                       http://127.0.0.1:$API_PORT)
  --token <token>      the clinic's API token (default: $DEMO_TOKEN, else the local stack's demo clinic token)
  --timeout <seconds>  how long the journeys may take, all together (default 120)
  --start-stack        start a local stack first (scripts/local-stack.ts; honours TEMPORAL_PORT, TEMPORAL_UI_PORT,
                       SANDBOX_PORT, API_PORT, CODEC_PORT, DATA_DIR) and stop it at the end
  --stack-timeout <s>  how long the started stack may take to become ready (default 300; the first run installs
                       the Temporal tools)
  -h, --help           this text

Exit status: 0 every journey as expected; 1 a journey ended wrong or did not finish in time; 2 the demo could not run.`;

function seconds(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback * 1000;
  const n = Number(value.replace(/s$/, ''));
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`${name} takes a number of seconds, got "${value}"`);
  return Math.round(n * 1000);
}

/** Parses the command line; returns undefined for --help. */
export function parseOptions(argv: string[], env: NodeJS.ProcessEnv): Options | undefined {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        api: { type: 'string' },
        token: { type: 'string' },
        timeout: { type: 'string' },
        'start-stack': { type: 'boolean', default: false },
        'stack-timeout': { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
  const v = parsed.values;
  if (v.help) return undefined;
  const startStack = v['start-stack'] ?? false;
  const envApiPort = env.API_PORT ? Number(env.API_PORT) : undefined;
  if (envApiPort !== undefined && !(Number.isInteger(envApiPort) && envApiPort > 0 && envApiPort < 65536)) {
    throw new UsageError('API_PORT must be a port number');
  }
  let api = v.api ?? env.API_URL;
  if (api === undefined) api = startStack && envApiPort !== undefined ? `http://127.0.0.1:${envApiPort}` : DEFAULT_API;
  let url: URL;
  try {
    url = new URL(api);
  } catch {
    throw new UsageError(`--api must be a URL such as ${DEFAULT_API}, got "${api}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError('--api must be an http(s) URL');
  let stackApiPort: number | undefined;
  if (startStack) {
    if (!['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname) || url.protocol !== 'http:') {
      throw new UsageError(`--start-stack runs the stack on this machine: --api must be http://127.0.0.1:<port>`);
    }
    const urlPort = Number(url.port || 80);
    if (envApiPort !== undefined && envApiPort !== urlPort) {
      throw new UsageError(`API_PORT=${envApiPort} and --api ${api} disagree; the stack's API would not be there`);
    }
    stackApiPort = urlPort;
  }
  const token = v.token ?? env.DEMO_TOKEN ?? DEFAULT_TOKEN;
  const tokenSource =
    v.token !== undefined
      ? 'the --token option'
      : env.DEMO_TOKEN !== undefined
        ? 'DEMO_TOKEN'
        : "the local stack's demo clinic token";
  return {
    api: api.replace(/\/+$/, ''),
    token,
    tokenSource,
    timeoutMs: seconds(v.timeout, '--timeout', 120),
    startStack,
    stackApiPort,
    stackReadyTimeoutMs: seconds(v['stack-timeout'], '--stack-timeout', 300),
    pollMs: 1_000,
  };
}

// ---- HTTP ------------------------------------------------------------------------------------------------------

interface Problem {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  errors?: { field: string; message: string }[];
}

/** An answer that is not 2xx, with the problem+json details when the API sent them. */
export class HttpError extends Error {
  override name = 'HttpError';
  constructor(
    readonly method: string,
    readonly route: string,
    readonly status: number,
    readonly problem: Problem | undefined,
    bodyText: string,
  ) {
    super(HttpError.describe(method, route, status, problem, bodyText));
  }

  static describe(method: string, route: string, status: number, problem: Problem | undefined, text: string) {
    const head = `${method} ${route} answered ${status}${problem?.title ? ` ${problem.title}` : ''}`;
    const errors = problem?.errors ?? [];
    const fields = errors.map((e) => `\n    - ${e.field}: ${e.message}`).join('');
    const body = text.trim();
    const detail =
      problem?.detail ??
      (body === '' ? '(no body)' : body.startsWith('<') ? '(an HTML page)' : body.split('\n')[0]!.slice(0, 200));
    // A validation detail usually lists the fields already: then the list alone says it better.
    if (errors.length > 0 && detail.includes(errors[0]!.field)) return `${head}:${fields}`;
    return `${head}: ${detail}${fields}`;
  }
}

/** Nothing answered at all (refused, DNS, timeout). */
export class UnreachableError extends Error {
  override name = 'UnreachableError';
  constructor(
    readonly url: string,
    readonly reason: string,
  ) {
    super(`nothing answers at ${url} (${reason})`);
  }
}

function networkReason(err: unknown): string {
  if (err instanceof Error && err.name === 'TimeoutError') return 'no answer in time';
  const cause = err instanceof Error ? (err.cause as { code?: string; message?: string } | undefined) : undefined;
  return cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms)));

export class ApiClient {
  constructor(
    readonly base: string,
    private readonly token: string,
  ) {}

  /** JSON request; 429 is retried after Retry-After (a few times), other non-2xx answers throw HttpError. */
  async request<T>(
    method: 'GET' | 'POST',
    route: string,
    options: { body?: unknown; headers?: Record<string, string>; auth?: boolean; timeoutMs?: number } = {},
  ): Promise<{ status: number; body: T }> {
    for (let attempt = 1; ; attempt++) {
      let res: Response;
      try {
        res = await fetch(`${this.base}${route}`, {
          method,
          headers: {
            accept: 'application/json, application/problem+json',
            ...(options.auth === false ? {} : { authorization: `Bearer ${this.token}` }),
            ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
            ...options.headers,
          },
          ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
          signal: AbortSignal.timeout(options.timeoutMs ?? 20_000),
        });
      } catch (err) {
        throw new UnreachableError(this.base, networkReason(err));
      }
      const text = await res.text();
      let parsed: unknown;
      try {
        parsed = text === '' ? undefined : JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      if (res.status === 429 && attempt < 5) {
        await sleep(Math.min(Number(res.headers.get('retry-after') ?? 1) || 1, 10) * 1000);
        continue;
      }
      if (!res.ok) {
        const problem = parsed !== null && typeof parsed === 'object' ? (parsed as Problem) : undefined;
        throw new HttpError(method, route.split('?')[0]!, res.status, problem, text);
      }
      return { status: res.status, body: parsed as T };
    }
  }
}

// ---- what the API answers (the parts the demo reads) -----------------------------------------------------------

interface CatalogExam {
  examId: number;
  title: string;
  rxType: 1 | 2;
  attachmentsRequired: number;
  attachments: string[];
}

interface AttachmentRef {
  ref: string;
  kind: string;
  fileName: string;
  contentType: string;
  size: number;
}

export interface ReceivedEvent {
  deliveryId?: string;
  event: number;
  patientExamId: number;
  prescriptionId?: number;
  receivedAt?: string;
  disposition: string;
}

export interface ExamView {
  patientExamId: number;
  examId: number;
  status: string;
  rxStatus: string | null;
  prescriptions: { prescriptionId: number; drugName: string; tracking?: { trackingNumber: string } | null }[];
  prescriptionOverdue?: boolean;
  trackingOverdue?: boolean;
}

export interface JourneyView {
  journeyId: string;
  workflowStatus: string;
  startedAt: string;
  closedAt: string | null;
  source: 'query' | 'result' | 'visibility';
  journey: {
    stage: string;
    exams?: ExamView[];
    events?: ReceivedEvent[];
    attention?: { code: string; message: string }[];
    lastError?: { kind: string; operation: string; message: string } | null;
    examStatus?: string[];
  };
}

interface StartResponse {
  journeyId: string;
  created: boolean;
}

// ---- the scenarios ---------------------------------------------------------------------------------------------

/** How a patient exam must end: Approved, with events 1 / 1,2 / 1,2 and a 3 per prescription. */
export interface ExamExpectation {
  examId: number;
  fulfilment: 'none' | 'custom' | 'partner';
}

export interface DemoScenario {
  key: string;
  label: string;
  exams: number[];
  /** The test-mode outcome keyword, as the patient's last name. */
  outcome: 'Approve' | 'Prescription Approve';
  scenario: Scenario;
  expect: ExamExpectation[];
}

export const PARTNER_PHARMACY_ID = 501;
export const RETAIL_NCPDPID = '4512345';

export function demoScenarios(retail: CustomPharmacy): DemoScenario[] {
  return [
    {
      key: 'gfe',
      label: 'GFE',
      exams: [101],
      outcome: 'Approve',
      scenario: { type: 'gfe' },
      expect: [{ examId: 101, fulfilment: 'none' }],
    },
    {
      key: 'partner',
      label: 'Partner pharmacy',
      exams: [201],
      outcome: 'Prescription Approve',
      scenario: { type: 'partner_pharmacy', pharmacyId: PARTNER_PHARMACY_ID, orderSetId: '8101' },
      expect: [{ examId: 201, fulfilment: 'partner' }],
    },
    {
      key: 'urgent-care',
      label: 'Urgent care',
      exams: [301],
      outcome: 'Prescription Approve',
      scenario: { type: 'urgent_care', pharmacy: retail },
      expect: [{ examId: 301, fulfilment: 'custom' }],
    },
    {
      key: 'own-pharmacy',
      label: 'Choose-your-own pharmacy',
      exams: [302],
      outcome: 'Prescription Approve',
      scenario: { type: 'custom_pharmacy', pharmacy: retail, patientChoice: 1 },
      expect: [{ examId: 302, fulfilment: 'custom' }],
    },
    {
      key: 'stacked',
      label: 'Stacked: 2 GFEs + partner',
      exams: [102, 103, 202],
      outcome: 'Prescription Approve',
      scenario: { type: 'partner_pharmacy', pharmacyId: PARTNER_PHARMACY_ID, orderSetId: '8201' },
      expect: [
        { examId: 102, fulfilment: 'none' },
        { examId: 103, fulfilment: 'none' },
        { examId: 202, fulfilment: 'partner' },
      ],
    },
  ];
}

export function journeyBody(s: DemoScenario, runId: string, attachments: StartJourneyBody['attachments']) {
  const body: StartJourneyBody = {
    patient: {
      firstName: 'Test',
      lastName: s.outcome,
      email: `demo-${runId}-${s.key}@example.test`,
      dob: '1988-04-12',
      phoneNumber: '5125550199',
      teleState: 'TE',
    },
    exams: s.exams,
    scenario: s.scenario,
    ...(attachments && attachments.length > 0 ? { attachments } : {}),
    additionalData: JSON.stringify({ demoRun: runId, scenario: s.key }),
  };
  return body;
}

/** A tiny file standing in for the attachment: a JPEG for photos, a PDF otherwise. */
export function sampleAttachment(kind: string, examId: number) {
  const slug = kind
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
  if (/photo/i.test(kind)) {
    const jpeg = Buffer.concat([
      Buffer.from([0xff, 0xd8, 0xff, 0xe0]),
      Buffer.from(`demo ${kind} for exam ${examId}`),
      Buffer.from([0xff, 0xd9]),
    ]);
    return { kind, fileName: `${slug}.jpg`, contentType: 'image/jpeg', contentBase64: jpeg.toString('base64') };
  }
  const pdf = Buffer.from(`%PDF-1.4\n% demo ${kind} for exam ${examId}\n%%EOF\n`);
  return { kind, fileName: `${slug}.pdf`, contentType: 'application/pdf', contentBase64: pdf.toString('base64') };
}

// ---- checking a finished journey -------------------------------------------------------------------------------

const TERMINAL_STAGES = ['completed', 'cancelled', 'abandoned', 'failed'];

/**
 * The workflow has closed. Its stage turns final a moment before the workflow returns: a journey read in between
 * is finishing, not finished, and is read again at once.
 */
export function isFinished(view: JourneyView): boolean {
  return view.workflowStatus !== 'RUNNING';
}

export function isFinishing(view: JourneyView): boolean {
  return view.workflowStatus === 'RUNNING' && TERMINAL_STAGES.includes(view.journey.stage);
}

const count = (events: ReceivedEvent[], event: number) => events.filter((e) => e.event === event).length;

/** What is wrong with a finished journey; empty when it ended as the scenario expects. */
export function verify(s: DemoScenario, view: JourneyView, events: ReceivedEvent[] | undefined): string[] {
  const problems: string[] = [];
  const j = view.journey;
  if (j.stage !== 'completed') {
    const why = j.attention?.[0] ?? (j.lastError ? { code: j.lastError.kind, message: j.lastError.message } : null);
    problems.push(`stage ${j.stage}, expected completed${why ? ` (${why.code}: ${why.message})` : ''}`);
  }
  if (view.workflowStatus !== 'COMPLETED') problems.push(`workflow ${view.workflowStatus}, expected COMPLETED`);
  const exams = j.exams ?? [];
  if (view.source === 'visibility') problems.push('only the search attributes could be read (no worker answered)');
  const applied = (events ?? []).filter((e) => e.disposition === 'applied');
  if (events === undefined && view.source !== 'visibility') problems.push('the received events could not be read');
  for (const x of s.expect) {
    const found = exams.filter((e) => e.examId === x.examId);
    if (found.length !== 1) {
      if (view.source !== 'visibility') problems.push(`exam ${x.examId}: ${found.length} patient exams, expected 1`);
      continue;
    }
    const e = found[0]!;
    const tag = `exam ${x.examId}`;
    if (e.status !== 'Approved') problems.push(`${tag}: ${e.status}, expected Approved`);
    if (e.prescriptionOverdue || e.trackingOverdue) problems.push(`${tag}: overdue`);
    const own = applied.filter((ev) => ev.patientExamId === e.patientExamId);
    if (events !== undefined && count(own, 1) !== 1) problems.push(`${tag}: event 1 applied ${count(own, 1)} times`);
    const wantEvent2 = x.fulfilment === 'none' ? 0 : 1;
    if (events !== undefined && count(own, 2) !== wantEvent2) {
      problems.push(`${tag}: event 2 applied ${count(own, 2)} times, expected ${wantEvent2}`);
    }
    if (x.fulfilment === 'none') {
      if (e.prescriptions.length > 0) problems.push(`${tag}: a GFE with prescriptions`);
      if (events !== undefined && count(own, 3) > 0) problems.push(`${tag}: event 3 for a GFE`);
      continue;
    }
    if (e.rxStatus !== 'Pharmacy Confirmed') {
      problems.push(`${tag}: rx status ${e.rxStatus}, expected Pharmacy Confirmed`);
    }
    if (e.prescriptions.length === 0) problems.push(`${tag}: no prescriptions`);
    if (x.fulfilment === 'custom') {
      if (events !== undefined && count(own, 3) > 0) problems.push(`${tag}: event 3 for a custom pharmacy`);
      continue;
    }
    const unshipped = e.prescriptions.filter((p) => !p.tracking).map((p) => p.prescriptionId);
    if (unshipped.length > 0) problems.push(`${tag}: prescriptions ${unshipped.join(', ')} not shipped`);
    if (events !== undefined) {
      const shipped = own.filter((ev) => ev.event === 3).map((ev) => ev.prescriptionId);
      const want = e.prescriptions.map((p) => p.prescriptionId);
      const same = shipped.length === want.length && want.every((id) => shipped.includes(id));
      if (!same) {
        problems.push(`${tag}: event 3 for [${shipped.join(', ')}], expected one each for [${want.join(', ')}]`);
      }
    }
  }
  const expected = new Set(s.expect.map((x) => x.examId));
  for (const e of exams) {
    if (!expected.has(e.examId)) problems.push(`unexpected patient exam ${e.patientExamId} (exam ${e.examId})`);
  }
  return problems;
}

/** "1,2,3,3": the applied events in the order received; other dispositions counted after them. */
export function eventsSeen(events: ReceivedEvent[] | undefined): string {
  if (events === undefined) return '-';
  const applied = events.filter((e) => e.disposition === 'applied').map((e) => String(e.event));
  const others = new Map<string, number>();
  for (const e of events) {
    if (e.disposition !== 'applied') others.set(e.disposition, (others.get(e.disposition) ?? 0) + 1);
  }
  const extra = [...others].map(([d, n]) => `${n} ${d}`).join(', ');
  return `${applied.join(',') || '-'}${extra ? ` (+${extra})` : ''}`;
}

/** "completed: 201 Approved, Pharmacy Confirmed, 2/2 shipped". */
export function outcomeOf(view: JourneyView | undefined): string {
  if (!view) return 'not read yet';
  const exams = (view.journey.exams ?? []).map((e) => {
    const parts = [`${e.examId} ${e.status}`];
    if (e.rxStatus) parts.push(e.rxStatus);
    const shipped = e.prescriptions.filter((p) => p.tracking).length;
    if (shipped > 0) parts.push(`${shipped}/${e.prescriptions.length} shipped`);
    return parts.join(', ');
  });
  if (exams.length === 0 && view.journey.examStatus?.length) exams.push(view.journey.examStatus.join('/'));
  return exams.length > 0 ? `${view.journey.stage}: ${exams.join('; ')}` : view.journey.stage;
}

// ---- following the journeys ------------------------------------------------------------------------------------

interface Run {
  s: DemoScenario;
  journeyId: string;
  startedMs: number;
  view?: JourneyView;
  events?: ReceivedEvent[];
  done: boolean;
  timedOut: boolean;
  endedMs?: number;
  note?: string;
  problems: string[];
}

function durationMs(run: Run, now = Date.now()): number {
  const v = run.view;
  if (run.done && v?.closedAt) return Date.parse(v.closedAt) - Date.parse(v.startedAt);
  return (run.endedMs ?? now) - run.startedMs;
}

const fmtSeconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

interface FollowOptions {
  deadline: number;
  pollMs: number;
  gone: () => string | undefined;
}

async function follow(
  client: ApiClient,
  run: Run,
  { deadline, pollMs, gone }: FollowOptions,
  changed: (r: Run) => void,
) {
  let lateReads = 0;
  while (Date.now() < deadline) {
    const why = gone();
    if (why) {
      run.done = true;
      run.endedMs = Date.now();
      run.problems.push(why);
      changed(run);
      return;
    }
    try {
      const { body } = await client.request<JourneyView>('GET', `/v1/journeys/${run.journeyId}`, {
        timeoutMs: Math.max(1_000, Math.min(20_000, deadline - Date.now())),
      });
      run.view = body;
      if (body.journey.events) run.events = body.journey.events;
      run.note = body.source === 'query' ? undefined : `read from ${body.source}`;
      // A finished journey read from its result or visibility has no events: read again for the query.
      if (isFinished(body) && (body.source === 'query' || ++lateReads > 3)) {
        run.done = true;
        run.endedMs = Date.now();
        run.problems.push(...verify(run.s, body, run.events));
        changed(run);
        return;
      }
    } catch (err) {
      run.note = err instanceof Error ? err.message.split('\n')[0] : String(err);
      if (err instanceof HttpError && [401, 403, 404].includes(err.status)) {
        run.done = true;
        run.endedMs = Date.now();
        run.problems.push(err.message);
        changed(run);
        return;
      }
    }
    changed(run);
    const finishing = run.view !== undefined && isFinishing(run.view);
    await sleep(Math.min(finishing ? 200 : pollMs, deadline - Date.now()));
  }
  run.timedOut = true;
  run.endedMs = Date.now();
  changed(run);
}

// ---- output ----------------------------------------------------------------------------------------------------

const useColor = () => process.stdout.isTTY && !process.env.NO_COLOR;
const paint = (code: number, text: string) => (useColor() ? `\x1b[${code}m${text}\x1b[0m` : text);
const green = (t: string) => paint(32, t);
const red = (t: string) => paint(31, t);
const dim = (t: string) => paint(2, t);

function runState(run: Run): string {
  if (run.timedOut) return 'TIMEOUT';
  if (!run.done) return '...';
  return run.problems.length === 0 ? 'ok' : 'FAIL';
}

/** Why a journey waits or went wrong: an attention, the last error, or a problem reading it. */
function detailOf(run: Run, long: boolean): string | undefined {
  const j = run.view?.journey;
  const attention = j?.attention?.[0];
  if (attention) return long ? `${attention.code}: ${attention.message}` : `needs attention: ${attention.code}`;
  if (run.note) return run.note;
  if (j?.lastError) {
    return `last error: ${j.lastError.kind} in ${j.lastError.operation}${long ? `: ${j.lastError.message}` : ''}`;
  }
  return undefined;
}

function progressLine(run: Run, labelWidth: number): string {
  const stage = run.view?.journey.stage ?? 'starting';
  const detail = detailOf(run, false);
  return [
    run.s.label.padEnd(labelWidth),
    runState(run).padEnd(7),
    stage.padEnd(22),
    `events ${eventsSeen(run.events)}`.padEnd(20),
    fmtSeconds(durationMs(run)).padStart(7),
    detail ? `  ${detail}` : '',
  ].join('  ');
}

/** Set once the demo is being interrupted: the progress stops printing. */
let muted = false;

/** A line per journey refreshed in place on a terminal; a line per change otherwise (CI, pipes). */
class Progress {
  private readonly live = process.stdout.isTTY === true && !process.env.CI;
  private readonly width: number;
  private drawn = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly last = new Map<Run, string>();
  private readonly t0 = Date.now();

  constructor(private readonly runs: Run[]) {
    this.width = Math.max(...runs.map((r) => r.s.label.length));
  }

  start() {
    if (this.live) {
      this.draw();
      this.timer = setInterval(() => this.draw(), 250);
    }
  }

  changed(run: Run) {
    if (muted) return;
    if (this.live) return this.draw();
    const stage = run.view?.journey.stage ?? 'starting';
    const detail = detailOf(run, false);
    const key = [runState(run), stage, eventsSeen(run.events), detail ?? ''].join('|');
    if (this.last.get(run) === key) return;
    this.last.set(run, key);
    const at = `[${fmtSeconds(Date.now() - this.t0).padStart(7)}]`;
    const note = detail ? ` (${detail})` : '';
    const state = runState(run) === '...' ? '' : ` -> ${runState(run)}`;
    console.log(`${at} ${run.s.label}: ${stage}, events ${eventsSeen(run.events)}${note}${state}`);
  }

  stop() {
    if (this.timer) clearInterval(this.timer);
    if (this.live) this.draw();
  }

  private draw() {
    if (muted) return;
    const columns = process.stdout.columns || 120;
    let out = this.drawn > 0 ? `\x1b[${this.drawn}A` : '';
    for (const r of this.runs) {
      let line = progressLine(r, this.width);
      if (line.length > columns - 1) line = line.slice(0, columns - 2) + '…';
      const state = runState(r);
      const coloured = state === 'ok' ? green(line) : state === 'FAIL' || state === 'TIMEOUT' ? red(line) : line;
      out += `\x1b[2K${coloured}\n`;
    }
    process.stdout.write(out);
    this.drawn = this.runs.length;
  }
}

export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(rows[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n');
}

function resultTable(runs: Run[]): string {
  const rows = [['scenario', 'result', 'outcome', 'events', 'duration']];
  for (const r of runs) {
    const outcome = r.timedOut ? `not finished (${r.view?.journey.stage ?? 'never read'})` : outcomeOf(r.view);
    rows.push([r.s.label, runState(r), outcome, eventsSeen(r.events), fmtSeconds(durationMs(r))]);
  }
  const lines = table(rows).split('\n');
  return lines.map((l, i) => (i < 2 ? l : runState(runs[i - 2]!) === 'ok' ? green(l) : red(l))).join('\n');
}

// ---- the local stack (--start-stack) ---------------------------------------------------------------------------

class LocalStack {
  private readonly proc: ChildProcess;
  private readonly log: WriteStream;
  private echo = true;
  private readonly tail: string[] = [];
  readonly exited: Promise<number | string>;
  running = true;
  private stopping = false;
  /** Set when the stack exited without being asked to. */
  exitedEarly: string | undefined;

  constructor(
    readonly logPath: string,
    apiPort: number,
  ) {
    this.log = createWriteStream(logPath);
    // tsx's CLI, as `npx tsx scripts/local-stack.ts` would run it, without npx in between. Its own process group:
    // a Ctrl-C reaches the demo alone, which then stops the stack in order.
    this.proc = spawn(process.execPath, [require.resolve('tsx/cli'), path.join(root, 'scripts/local-stack.ts')], {
      cwd: root,
      env: { ...process.env, API_PORT: String(apiPort) },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const onData = (chunk: Buffer) => {
      this.log.write(chunk);
      const text = chunk.toString();
      for (const l of text.split('\n')) if (l.trim() !== '') this.tail.push(l);
      this.tail.splice(0, Math.max(0, this.tail.length - 40));
      if (this.echo) process.stdout.write(dim(text.endsWith('\n') ? text : `${text}\n`));
    };
    this.proc.stdout?.on('data', onData);
    this.proc.stderr?.on('data', onData);
    this.exited = new Promise((resolve) => {
      this.proc.once('exit', (code, signal) => {
        this.running = false;
        if (!this.stopping) this.exitedEarly = `the stack exited (${signal ?? code}) while the journeys ran`;
        resolve(signal ?? code ?? 'unknown');
      });
      this.proc.once('error', (err) => {
        this.running = false;
        this.tail.push(err.message);
        resolve(err.message);
      });
    });
  }

  get pid() {
    return this.proc.pid;
  }

  quiet(quiet: boolean) {
    this.echo = !quiet;
  }

  lastLines(n = 15): string {
    return this.tail.slice(-n).join('\n');
  }

  /** Waits until the API's /readyz says ready; throws when the stack exits first or the time runs out. */
  async waitReady(client: ApiClient, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let exitCode: number | string | undefined;
    void this.exited.then((c) => (exitCode = c));
    while (Date.now() < deadline) {
      if (exitCode !== undefined) throw new Error(`the stack exited (${exitCode}) before it was ready`);
      try {
        await client.request('GET', '/readyz', { auth: false, timeoutMs: 5_000 });
        return;
      } catch {
        // not yet
      }
      await sleep(500);
    }
    throw new Error(`the stack was not ready within ${timeoutMs / 1000} s`);
  }

  /** SIGTERM, then wait for the stack to stop its parts in order and exit. */
  async stop(): Promise<number | string> {
    this.echo = true;
    this.stopping = true;
    if (this.running && this.proc.pid !== undefined) {
      this.proc.kill('SIGTERM');
      const timer = setTimeout(() => {
        console.error('[demo] the stack did not stop within 90 s; killing it');
        this.proc.kill('SIGKILL');
      }, 90_000);
      const code = await this.exited;
      clearTimeout(timer);
      await new Promise<void>((resolve) => this.log.end(resolve));
      return code;
    }
    await new Promise<void>((resolve) => this.log.end(resolve));
    return this.exited;
  }

  /** Last resort when the demo exits without stop(): the stack still stops itself in order. */
  killOnExit() {
    if (this.running) this.proc.kill('SIGTERM');
  }
}

// ---- main ------------------------------------------------------------------------------------------------------

function say(message: string) {
  console.log(message);
}

async function checkReady(client: ApiClient): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      await client.request('GET', '/readyz', { auth: false, timeoutMs: 5_000 });
      return;
    } catch (err) {
      if (err instanceof UnreachableError) {
        throw new SetupError(
          `Nothing answers at ${client.base} (${err.reason}).\n` +
            'Start the stack with `npm start` in another terminal, or pass --start-stack ' +
            '(and --api if it listens elsewhere).',
        );
      }
      if (err instanceof HttpError && err.status === 503 && Date.now() < deadline) {
        say(`the API answers but is not ready yet (${err.problem?.detail ?? '503'}); waiting...`);
        await sleep(2_000);
        continue;
      }
      throw new SetupError(`The API at ${client.base} is not ready: ${(err as Error).message}`);
    }
  }
}

class SetupError extends Error {
  override name = 'SetupError';
}

async function uploadAttachments(client: ApiClient, s: DemoScenario, catalog: Map<number, CatalogExam>) {
  const out: NonNullable<StartJourneyBody['attachments']> = [];
  for (const examId of s.exams) {
    const entry = catalog.get(examId);
    if (!entry) throw new SetupError(`exam ${examId} is not in the clinic's exam list (GET /v1/catalog/exams)`);
    if (entry.attachmentsRequired !== 2) continue;
    for (const kind of entry.attachments) {
      const { status, body } = await client.request<{ attachment: AttachmentRef }>('POST', '/v1/attachments', {
        body: sampleAttachment(kind, examId),
      });
      if (status !== 201) throw new SetupError(`POST /v1/attachments answered ${status}, expected 201`);
      out.push({ examId, attachment: body.attachment });
    }
  }
  return out;
}

async function startJourney(client: ApiClient, s: DemoScenario, runId: string, catalog: Map<number, CatalogExam>) {
  const attachments = await uploadAttachments(client, s, catalog);
  const body = journeyBody(s, runId, attachments);
  const key = `demo-${runId}-${s.key}`;
  const headers = { 'idempotency-key': key };
  const startedMs = Date.now();
  const first = await client.request<StartResponse>('POST', '/v1/journeys', { body, headers });
  // The same key and body again: the same journey, 200, never a second invite.
  const again = await client.request<StartResponse>('POST', '/v1/journeys', { body, headers });
  const run: Run = { s, journeyId: first.body.journeyId, startedMs, done: false, timedOut: false, problems: [] };
  if (first.status !== 201 || !first.body.created) run.problems.push(`start answered ${first.status}, expected 201`);
  if (again.status !== 200 || again.body.created || again.body.journeyId !== first.body.journeyId) {
    run.problems.push(`the same Idempotency-Key again answered ${again.status} ${JSON.stringify(again.body)}`);
  }
  const uploaded = attachments.length
    ? `uploaded ${attachments.map((a) => `${a.attachment.kind} (${a.examId})`).join(', ')}`
    : 'no attachments needed';
  say(
    `  ${s.label}: exams ${s.exams.join(', ')}, ${uploaded}; started journey ${run.journeyId} ` +
      `(${first.status}; the same key again: ${again.status}${again.body.journeyId === run.journeyId ? ', same journey' : ''})`,
  );
  return run;
}

/** gone: why the journeys cannot be followed any more (the started stack exited), if so. */
async function runDemo(opts: Options, client: ApiClient, gone: () => string | undefined): Promise<boolean> {
  const { body: catalogBody } = await client.request<{ exams: CatalogExam[] }>('GET', '/v1/catalog/exams');
  const catalog = new Map(catalogBody.exams.map((e) => [e.examId, e]));
  const { body: found } = await client.request<{ pharmacies: CustomPharmacy[] }>(
    'GET',
    `/v1/catalog/pharmacies/search?ncpdpid=${RETAIL_NCPDPID}`,
  );
  const retail = found.pharmacies[0];
  if (!retail) throw new SetupError(`the pharmacy search found no pharmacy ${RETAIL_NCPDPID}`);
  say(
    `Clinic catalog: ${catalog.size} exams; retail pharmacy ${retail.ncpdpid} ${retail.name} (${retail.city}, ${retail.state}).`,
  );

  const runId = `${new Date().toISOString().replace(/[-:]/g, '').slice(0, 15)}-${Math.random().toString(36).slice(2, 6)}`;
  const scenarios = demoScenarios(retail);
  say(`Starting ${scenarios.length} journeys in test mode (run ${runId}):`);
  const t0 = Date.now();
  const runs: Run[] = [];
  for (const s of scenarios) runs.push(await startJourney(client, s, runId, catalog));

  const deadline = t0 + opts.timeoutMs;
  say(`\nFollowing them (GET /v1/journeys/:id every ${opts.pollMs / 1000} s, timeout ${opts.timeoutMs / 1000} s):`);
  const progress = new Progress(runs);
  progress.start();
  await Promise.all(
    runs.map((run) => follow(client, run, { deadline, pollMs: opts.pollMs, gone }, (r) => progress.changed(r))),
  );
  progress.stop();

  say('');
  say(resultTable(runs));
  const failed = runs.filter((r) => r.timedOut || r.problems.length > 0);
  for (const r of failed) {
    const why = [
      ...(r.timedOut
        ? [
            `did not finish within ${opts.timeoutMs / 1000} s: stage ${r.view?.journey.stage ?? 'unknown'}` +
              (detailOf(r, true) ? ` (${detailOf(r, true)})` : ''),
          ]
        : []),
      ...r.problems,
    ];
    say(red(`\n${r.s.label} (journey ${r.journeyId}):`));
    for (const p of why) say(`  - ${p}`);
  }
  const total = fmtSeconds(Date.now() - t0);
  say(
    failed.length === 0
      ? green(`\nAll ${runs.length} journeys ended as expected in ${total}.`)
      : red(`\n${failed.length} of ${runs.length} journeys did not end as expected (${total}).`),
  );
  return failed.length === 0;
}

async function main(): Promise<number> {
  let opts: Options | undefined;
  try {
    opts = parseOptions(process.argv.slice(2), process.env);
  } catch (err) {
    console.error(`demo: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (!opts) {
    say(USAGE);
    return 0;
  }
  const client = new ApiClient(opts.api, opts.token);
  say(`Patient journey demo against ${opts.api} (API token from ${opts.tokenSource}).`);

  let stack: LocalStack | undefined;
  let stopping: Promise<void> | undefined;
  const stopStack = () =>
    (stopping ??= (async () => {
      if (!stack) return;
      if (stack.running) say(`\nStopping the stack (SIGTERM to ${stack.pid})...`);
      const code = await stack.stop();
      say(`The stack ${stack.exitedEarly ? 'had ' : ''}stopped (${code}); its output is in ${stack.logPath}.`);
    })());
  let interrupted = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupted) return;
    interrupted = true;
    muted = true;
    console.error(`\n[demo] ${signal}: stopping`);
    void stopStack().finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('exit', () => stack?.killOnExit());

  try {
    if (opts.startStack) {
      const answer = await client.request('GET', '/readyz', { auth: false, timeoutMs: 3_000 }).then(
        () => 'ready',
        (err: unknown) => (err instanceof UnreachableError ? undefined : (err as Error).message),
      );
      if (answer !== undefined) {
        throw new SetupError(
          `Something already answers at ${opts.api} (${answer}): a stack seems to run there. Run without ` +
            '--start-stack to use it, or give the started stack other ports (API_PORT, TEMPORAL_PORT, ...).',
        );
      }
      const logPath = path.join(os.tmpdir(), `journey-demo-stack-${process.pid}.log`);
      say(`Starting a local stack (scripts/local-stack.ts, API port ${opts.stackApiPort}); output also in ${logPath}`);
      stack = new LocalStack(logPath, opts.stackApiPort!);
      try {
        await stack.waitReady(client, opts.stackReadyTimeoutMs);
      } catch (err) {
        const tail = stack.lastLines();
        throw new SetupError(`${(err as Error).message}.${tail ? `\nIts last lines:\n${tail}` : ''}`);
      }
      stack.quiet(true);
      say('The stack is ready.\n');
    } else {
      await checkReady(client);
      say('The API is ready (Temporal answers).');
    }
    const started = stack;
    const ok = await runDemo(opts, client, () => started?.exitedEarly);
    if (!ok && stack) say(`The stack's output (worker, API, sandbox) is in ${stack.logPath}.`);
    return ok ? 0 : 1;
  } catch (err) {
    if (err instanceof HttpError && err.status === 401) {
      console.error(red(`\n${err.message}\nThe API refused the token from ${opts.tokenSource}.`));
    } else if (err instanceof SetupError || err instanceof HttpError || err instanceof UnreachableError) {
      console.error(red(`\n${err.message}`));
    } else {
      console.error(red(`\n${err instanceof Error ? (err.stack ?? err.message) : String(err)}`));
    }
    return 2;
  } finally {
    await stopStack();
  }
}

if (require.main === module) {
  void main().then((code) => {
    // Keep-alive sockets would hold the process open a few seconds longer.
    process.exitCode = code;
    setImmediate(() => process.exit(code));
  });
}
