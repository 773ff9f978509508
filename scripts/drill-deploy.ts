// `npm run drill:deploy`: a workflow change rolled out, and a bad one rolled back, under parked journeys, on the
// production topology (PostgreSQL, the Temporal server, 2 API replicas behind HAProxy, MinIO, the sandbox), with the
// Temporal CLI's worker deployment commands as docs/deploy.md's runbook gives them. Writes its report into
// docs/reliability.md; exit code 1 when anything in it is wrong.
//
//   1. v1 (this working tree's workflows) on two workers, current; journeys parked in every wait state;
//   2. v2, this tree plus a real change behind patched() (a last-call reminder before the consultation deadline):
//      the replay gate passes it on histories captured from the running system; two v2 workers beside v1; ramped
//      10 %, 50 %, then made current, a share of the parked journeys driven to their end and new journeys started at
//      each step; v1 drained (no journey left on it), its workers stopped and the version deleted;
//   3. v3, v2 plus an unguarded breaking change: the replay gate refuses it; forced current anyway while the last
//      share of parked journeys is driven: their workflow tasks fail, the workers' failure counter rises and the
//      alert rule fires (promtool evaluates deploy/observability's rule on the series scraped); v2 current again,
//      and the time until every one of those journeys has gone on to its end is the time to recovery.
//
//   npm run drill:deploy -- [--per-state N] [--port-base P] [--keep] [--no-doc]
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { DEFAULT_DEPLOYMENT_NAME } from '../src/config';
import { buildWorkflowBundle } from '../src/workflow-bundle';
import { journeyWorkflowId } from '../src/contract/definitions';
import { captureHistories, replayFolder, WAIT_STATES, type ReplayResult, type WaitState } from './histories';
import { ApiClient, type JourneyView } from './demo/api';
import { machineDescription } from '../test/faults/harness/report';
import { exitWith, parseCommandLine, UsageError } from './lib/cli';
import { withSection } from './lib/doc-section';
import { sleep } from './lib/http';
import type { ManagedProcess } from './lib/processes';
import { ProductionStack, productionStackPorts, type ProductionPorts } from './lib/production-stack';
import { startBlocker } from './lib/stack-guard';
import { unsupportedNode } from './lib/stack-log';
import { DEMO_CLINIC_TOKEN, stackSecrets } from './lib/stack-secrets';
import { PRODUCTION_DYNAMIC_CONFIG, temporalServerVersion } from './lib/temporal-server';
import { BREAKING_TIMER, sourceVariant, type SourceEdit } from './lib/workflow-variant';
import {
  control,
  eachLimit,
  PacedApiClient,
  parkJourneys,
  statusesOf,
  until,
  type ParkedJourney,
} from './park-journeys';

const ROOT = path.resolve(__dirname, '..');
const TEMPORAL_CLI = path.join(process.env.TEMPORAL_TOOLS_DIR ?? path.join(ROOT, '.tools'), 'bin', 'temporal');
const PROMTOOL = path.join(process.env.TEMPORAL_TOOLS_DIR ?? path.join(ROOT, '.tools'), 'promtool', 'bin', 'promtool');
const RULES = path.join(ROOT, 'deploy', 'observability', 'prometheus-rules.yml');
const FAILURE_METRIC = 'temporal_workflow_task_execution_failed_total';
/** The SDK's failure reason for a workflow task whose commands do not match its history. */
const NON_DETERMINISM = 'NonDeterminismError';
const ALERT = 'JourneyNonDeterminism';
const DEPLOYMENT = DEFAULT_DEPLOYMENT_NAME;
const run = promisify(execFile);

// ---- the versions ---------------------------------------------------------------------------------------------------

const LAST_CALL = 'last-call-reminder';

/**
 * v2's change, as a developer would write it: one more reminder when a tenth of the consultation window is left, for
 * every journey from its next workflow task on (parked ones included), behind patched() so that histories made before
 * replay as they were made.
 */
export const LAST_CALL_REMINDER: readonly SourceEdit[] = [
  {
    file: 'contract/journey-types.ts',
    find: '  ownershipChecks: OwnershipCheck[];\n',
    replace:
      '  ownershipChecks: OwnershipCheck[];\n' +
      '  /** One more reminder, a last call when a tenth of the consultation window is left. */\n' +
      '  lastCallReminder?: boolean;\n',
  },
  {
    file: 'workflows/journey-state/timers.ts',
    find: '    const nextReminder = t.remindersMs[m.remindersSent];\n',
    replace:
      '    const lastCall = Math.floor(t.consultationDeadlineMs * 0.9);\n' +
      '    const offsets =\n' +
      '      state.lastCallReminder && lastCall > Math.max(0, ...t.remindersMs) ? [...t.remindersMs, lastCall] : t.remindersMs;\n' +
      '    const nextReminder = offsets[m.remindersSent];\n',
  },
  {
    file: 'workflows/journey.ts',
    find: '  allHandlersFinished,\n  condition,\n',
    replace: '  allHandlersFinished,\n  condition,\n  patched,\n',
  },
  {
    file: 'workflows/journey.ts',
    find: 'const DEFAULT_ATTACHMENT_GRACE_MS = 7 * 86_400_000;\n',
    replace:
      'const DEFAULT_ATTACHMENT_GRACE_MS = 7 * 86_400_000;\n' +
      `/** A last-call reminder before the consultation deadline (journey-state's \`lastCallReminder\`). */\n` +
      `const LAST_CALL_REMINDER = '${LAST_CALL}';\n`,
  },
  {
    file: 'workflows/journey.ts',
    find: '      const now = Date.now();\n      const due = dueActions(state, now);\n',
    replace:
      '      if (!state.lastCallReminder && patched(LAST_CALL_REMINDER)) state = { ...state, lastCallReminder: true };\n' +
      '      const now = Date.now();\n      const due = dueActions(state, now);\n',
  },
];

type Label = 'v1' | 'v2' | 'v3';

interface Version {
  label: Label;
  change: string;
  buildId: string;
  bundle: string;
  workflowsPath: string;
  workers: ManagedProcess[];
}

async function buildVersion(label: Label, change: string, edits: readonly SourceEdit[], dir: string) {
  const variant = edits.length > 0 ? sourceVariant(ROOT, `drill-${label}-${process.pid}`, edits) : undefined;
  const workflowsPath = variant?.workflowsPath ?? path.join(ROOT, 'src', 'workflows');
  const bundle = path.join(dir, `${label}.bundle.js`);
  await buildWorkflowBundle(bundle, { workflowsPath: require.resolve(workflowsPath) });
  const hash = createHash('sha256').update(readFileSync(bundle)).digest('hex').slice(0, 10);
  const version: Version = { label, change, buildId: `${label}-${hash}`, bundle, workflowsPath, workers: [] };
  return { version, remove: () => variant?.remove() };
}

// ---- the Temporal CLI -------------------------------------------------------------------------------------------------

/** One `temporal worker deployment` command, as an operator types it; returns its output, throws with it. */
async function deploymentCommand(address: string, args: string[]): Promise<string> {
  // `describe` names the deployment with --name, the version commands with --deployment-name.
  const name = args[0] === 'describe' ? '--name' : '--deployment-name';
  const argv = ['worker', 'deployment', ...args, name, DEPLOYMENT, '--address', address];
  try {
    const { stdout } = await run(TEMPORAL_CLI, argv, { timeout: 30_000 });
    return stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`temporal ${argv.slice(0, 3).join(' ')}: ${(e.stderr ?? e.message).trim().split('\n').pop()}`);
  }
}

interface VersionInfo {
  drainageInfo?: { drainageStatus?: string };
  taskQueuesInfos?: { name: string; type: string }[];
}

async function describeVersion(address: string, buildId: string): Promise<VersionInfo> {
  const out = await deploymentCommand(address, ['describe-version', '--build-id', buildId, '-o', 'json']);
  return JSON.parse(out) as VersionInfo;
}

/** A version's drainage status as the CLI prints it: unspecified (current or ramping), draining or drained. */
async function drainageOf(address: string, buildId: string): Promise<string> {
  return (await describeVersion(address, buildId)).drainageInfo?.drainageStatus ?? 'unspecified';
}

/**
 * Resolves once a new version's workers have registered every task queue (workflow and activity) the running version
 * polls: until then the server refuses to ramp to it, since the missing ones would fall to unversioned workers.
 */
async function registered(address: string, buildId: string, like: string): Promise<void> {
  const queues = (v: VersionInfo) => new Set((v.taskQueuesInfos ?? []).map((q) => `${q.name} (${q.type})`));
  const want = queues(await describeVersion(address, like));
  await eventually(`version ${buildId} registering ${[...want].join(', ')}`, 60_000, async () => {
    const have = queues(await describeVersion(address, buildId));
    return [...want].every((q) => have.has(q)) ? true : undefined;
  });
}

async function eventually<T>(what: string, timeoutMs: number, fn: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s${last ? ` (${last})` : ''}`);
    await sleep(1_000);
  }
}

// ---- journeys ---------------------------------------------------------------------------------------------------------

interface Journey {
  journeyId: string;
  /** Its wait state when the rollout began; a probe is a journey started during the rollout. */
  state: WaitState | 'probe';
  /** The rollout step it was driven in (or started in, for a probe); undefined for one that had ended already. */
  step?: Step;
  expected?: string;
  /** The first patient exam, read before the rollout (a journey whose task fails cannot answer a query). */
  patientExamId?: number;
  endedAs?: string;
  endedAt?: number;
  reminders?: number;
  buildIds?: string[];
  failedTasks?: number;
  nondeterministic?: number;
}

type Step = 'ramp 10 %' | 'ramp 50 %' | 'current' | 'v3 forced';

/** What a parked journey ends as once driven (a closed one stays as it is). */
const END_OF: Record<WaitState, string> = {
  invited: 'completed (Approved)',
  reminded: 'completed (Approved)',
  deferred: 'completed (Approved)',
  awaiting_prescription: 'completed (shipped)',
  awaiting_tracking: 'completed (shipped)',
  parked: 'abandoned',
  completed: 'completed (Approved)',
  cancelled: 'cancelled',
  expired: 'completed (expired)',
};

function endOf(v: JourneyView): string | undefined {
  if (v.workflowStatus === 'RUNNING') return undefined;
  const statuses = statusesOf(v);
  const stage = v.journey.stage;
  if (stage !== 'completed') return stage;
  if (statuses.includes('expired')) return 'completed (expired)';
  const shipped = (v.journey.exams ?? []).some((e) => e.prescriptions?.some((p) => p.tracking?.trackingNumber));
  if (shipped) return 'completed (shipped)';
  return statuses.includes('Approved') ? 'completed (Approved)' : `completed (${statuses.join(', ')})`;
}

interface Drive {
  api: ApiClient;
  admin: ApiClient;
  sandbox: string;
}

/** Drives a parked journey to its end as the provider, the pharmacy or an operator would; records how it ended. */
async function driveToEnd(d: Drive, j: Journey, timeoutMs: number): Promise<void> {
  try {
    const exam = (route: string, body: unknown) =>
      control(d.sandbox, `/_sandbox/patient-exams/${j.patientExamId}/${route}`, body);
    switch (j.state) {
      case 'invited':
      case 'reminded':
      case 'deferred':
        await exam('verdict', { status: 'Approved' });
        break;
      case 'awaiting_prescription':
        await exam('confirm-prescription', {});
        await until(d.api, j.journeyId, (v) => v.journey.stage === 'awaiting_tracking', timeoutMs);
        await exam('ship', {});
        break;
      case 'awaiting_tracking':
        await exam('ship', {});
        break;
      case 'parked':
        await abandon(d, j, timeoutMs);
        break;
      default:
        return;
    }
    const ended = await until(d.api, j.journeyId, (v) => endOf(v) !== undefined, timeoutMs);
    j.endedAt = Date.now();
    j.endedAs = ended ? endOf(ended) : 'still running';
  } catch (err) {
    j.endedAs = `not driven: ${err instanceof Error ? err.message : String(err)}`;
  }
}

/**
 * An operator's abandon, asked again until the journey takes it: an update is only accepted by a workflow task that
 * passes, so while a bad version fails them the API answers that the journey did not respond, as it would to a person.
 */
async function abandon(d: Drive, j: Journey, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await d.admin.request('POST', `/admin/journeys/${j.journeyId}/abandon`, {
        body: { actor: 'deploy-drill', note: 'parked journey closed by the deploy drill' },
        timeoutMs: 60_000,
      });
      return;
    } catch (err) {
      const ended = await until(d.api, j.journeyId, () => true, 5_000);
      if (ended && endOf(ended) !== undefined) return;
      if (Date.now() > deadline) throw err;
      await sleep(5_000);
    }
  }
}

/** Probes: new journeys with a short consultation window, so that each one's reminders show which version ran it. */
const PROBE_TIMINGS = { remindersMs: [1_000], consultationDeadlineMs: 20_000 };

async function startProbes(api: ApiClient, runId: string, step: Step, n: number): Promise<Journey[]> {
  const out: Journey[] = [];
  for (let i = 0; i < n; i++) {
    const tag = `${step.replace(/\W+/g, '')}-${i}`;
    const { body } = await api.request<{ journeyId: string }>('POST', '/v1/journeys', {
      body: {
        patient: {
          firstName: 'Probe',
          lastName: `Patient ${i + 1}`,
          email: `probe-${runId}-${tag}@example.test`,
          dob: '1985-02-17',
          phoneNumber: '5125550142',
          teleState: 'TX',
        },
        exams: [101],
        scenario: { type: 'gfe' },
        timings: PROBE_TIMINGS,
      },
      headers: { 'idempotency-key': `probe-${runId}-${tag}` },
    });
    out.push({ journeyId: body.journeyId, state: 'probe', step, expected: 'completed (expired)' });
  }
  return out;
}

async function waitProbes(api: ApiClient, probes: Journey[]) {
  await eachLimit(probes, 8, async (p) => {
    const v = await until(api, p.journeyId, (x) => endOf(x) !== undefined, 120_000);
    p.endedAs = v ? endOf(v) : 'still running';
    p.endedAt = Date.now();
  });
}

// ---- what the histories say -------------------------------------------------------------------------------------------

const NON_DETERMINISTIC =
  temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR;

/** The versions that completed a journey's workflow tasks, its failed tasks (by cause) and the reminders it sent. */
async function trace(client: Client, j: Journey) {
  const history = await client.workflow.getHandle(journeyWorkflowId(j.journeyId)).fetchHistory();
  const builds = new Set<string>();
  j.failedTasks = 0;
  j.nondeterministic = 0;
  j.reminders = 0;
  for (const e of history.events ?? []) {
    const done = e.workflowTaskCompletedEventAttributes;
    if (done) {
      const id = done.deploymentVersion?.buildId ?? done.workerDeploymentVersion?.split('.').pop();
      builds.add(id || 'unversioned');
    }
    const failed = e.workflowTaskFailedEventAttributes;
    if (failed) {
      j.failedTasks++;
      if (failed.cause === NON_DETERMINISTIC) j.nondeterministic++;
    }
    if (e.activityTaskScheduledEventAttributes?.activityType?.name === 'resendInvite') j.reminders++;
  }
  j.buildIds = [...builds];
}

// ---- the workers' failure counter and the alert -----------------------------------------------------------------------

interface Sample {
  at: number;
  /** Series (labels as the page shows them, plus the worker as `instance`) to value. */
  values: Map<string, number>;
}

async function scrapeFailures(workers: { name: string; url: string }[]): Promise<Sample> {
  const values = new Map<string, number>();
  await Promise.all(
    workers.map(async (w) => {
      const text = await fetch(w.url, { signal: AbortSignal.timeout(3_000) }).then(
        (r) => r.text(),
        () => '',
      );
      for (const line of text.split('\n')) {
        if (!line.startsWith(`${FAILURE_METRIC}{`)) continue;
        const close = line.lastIndexOf('}');
        const labels = line.slice(FAILURE_METRIC.length + 1, close);
        values.set(`${FAILURE_METRIC}{${labels},instance="${w.name}"}`, Number(line.slice(close + 1).trim()));
      }
    }),
  );
  return { at: Date.now(), values };
}

const labelOf = (series: string, name: string) => new RegExp(`${name}="([^"]*)"`).exec(series)?.[1] ?? '';

/**
 * Whether deploy/observability's alert fires on the samples so far: promtool evaluates the rule file on them (as a
 * Prometheus scraping the workers every 5 s would) and is asked to find the alert firing at the last sample.
 */
async function alertFires(samples: Sample[], dir: string): Promise<boolean | 'no promtool'> {
  if (!existsSync(PROMTOOL)) return 'no promtool';
  const series = [...new Set(samples.flatMap((s) => [...s.values.keys()]))];
  if (series.length === 0) return false;
  const groups = new Map<string, Record<string, string>>();
  for (const s of series) {
    const labels = { namespace: labelOf(s, 'namespace'), task_queue: labelOf(s, 'task_queue') };
    groups.set(JSON.stringify(labels), labels);
  }
  const yaml = [
    `rule_files: [${JSON.stringify(RULES)}]`,
    'evaluation_interval: 5s',
    'tests:',
    '  - interval: 5s',
    '    input_series:',
    ...series.flatMap((s) => [
      `      - series: ${JSON.stringify(s)}`,
      `        values: ${JSON.stringify(samples.map((x) => (x.values.has(s) ? String(x.values.get(s)) : '_')).join(' '))}`,
    ]),
    // Firing, not pending: Prometheus's own ALERTS series, as its alerts page and Alertmanager see it.
    '    promql_expr_test:',
    `      - expr: 'ALERTS{alertname="${ALERT}",alertstate="firing"}'`,
    `        eval_time: ${(samples.length - 1) * 5}s`,
    '        exp_samples:',
    ...[...groups.values()].flatMap((l) => [
      `          - labels: '${`ALERTS{alertname="${ALERT}",alertstate="firing",namespace="${l.namespace}",severity="critical",task_queue="${l.task_queue}"}`}'`,
      '            value: 1',
    ]),
    '',
  ].join('\n');
  const file = path.join(dir, 'alert.test.yml');
  writeFileSync(file, yaml);
  try {
    await run(PROMTOOL, ['test', 'rules', file], { timeout: 30_000 });
    return true;
  } catch {
    return false;
  }
}

// ---- the drill --------------------------------------------------------------------------------------------------------

function drillPorts(base: number): ProductionPorts {
  return {
    api: base,
    apiReplicas: [base + 1, base + 2],
    temporal: base + 10,
    temporalHttp: base + 11,
    temporalHistory: base + 12,
    temporalMatching: base + 13,
    temporalWorker: base + 14,
    temporalMembership: base + 20,
    temporalMetrics: base + 30,
    ui: base + 31,
    codec: base + 32,
    sandbox: base + 33,
    postgres: base + 34,
    objectStore: base + 35,
    objectStoreConsole: base + 36,
    workerMetrics: [base + 40, base + 41],
  };
}

/**
 * The production server's dynamic configuration, with the waits a real rollout spends in minutes cut to seconds: how
 * long a version that is no longer current counts as possibly still used (drainage), and how long a stopped worker's
 * polls are remembered (a version with recent pollers cannot be deleted).
 */
function drillDynamicConfig(dir: string): string {
  const file = path.join(dir, 'dynamicconfig.yaml');
  writeFileSync(
    file,
    `${readFileSync(PRODUCTION_DYNAMIC_CONFIG, 'utf8').trimEnd()}\n` +
      '# The deploy drill only: drainage and poller history in seconds instead of minutes.\n' +
      'matching.wv.VersionDrainageStatusVisibilityGracePeriod:\n  - value: 10s\n' +
      'matching.wv.VersionDrainageStatusRefreshInterval:\n  - value: 5s\n' +
      'matching.PollerHistoryTTL:\n  - value: 15s\n',
  );
  return file;
}

export interface Options {
  perState: number;
  probesPerStep: number;
  portBase: number;
  keep: boolean;
  writeDoc: boolean;
}

export interface Report {
  options: Options;
  versions: Pick<Version, 'label' | 'buildId' | 'change'>[];
  journeys: Journey[];
  gate: { v2: ReplayResult[]; v3: ReplayResult[]; histories: number };
  timeline: { at: number; what: string }[];
  drained?: { afterMs: number; deletedAfterMs: number };
  bad?: {
    forcedAt: number;
    firstFailureAfterMs?: number;
    alertAfterMs?: number | 'no promtool';
    rolledBackAt: number;
    recoveryMs: number;
    failuresByVersion: Record<string, Failures>;
  };
  /** Per worker, by the SDK's failure reason (NonDeterminismError, WorkflowError, timeout...). */
  safeFailures: Record<string, Failures>;
  problems: string[];
  startedAt: Date;
  durationMs: number;
}

export async function drill(o: Options, say: (line: string) => void): Promise<Report> {
  const startedAt = new Date();
  const t0 = Date.now();
  const timeline: Report['timeline'] = [];
  const mark = (what: string) => {
    timeline.push({ at: Date.now() - t0, what });
    say(what);
  };
  const problems: string[] = [];
  const dir = mkdtempSync(path.join(os.tmpdir(), 'deploy-drill-'));
  const ports = drillPorts(o.portBase);
  const extraMetrics = { v2: [o.portBase + 42, o.portBase + 43], v3: [o.portBase + 44, o.portBase + 45] };
  const blocked = await startBlocker(dir, [
    ...productionStackPorts(ports, 2),
    ...[...extraMetrics.v2, ...extraMetrics.v3].map((port) => ({
      part: "a new version's worker metrics",
      port,
      variable: '--port-base',
    })),
  ]);
  if (blocked) throw new Error(blocked);

  mark('building v1 (this working tree), v2 (+ a last-call reminder behind patched()), v3 (+ an unguarded timer)');
  const built = [
    await buildVersion('v1', 'this working tree', [], dir),
    await buildVersion(
      'v2',
      'a last-call reminder before the consultation deadline, behind patched()',
      LAST_CALL_REMINDER,
      dir,
    ),
    await buildVersion(
      'v3',
      'v2 plus one more timer at the start of every journey, not behind patched()',
      [...LAST_CALL_REMINDER, BREAKING_TIMER],
      dir,
    ),
  ];
  const [v1, v2, v3] = built.map((b) => b.version) as [Version, Version, Version];

  const stack = new ProductionStack({
    dataDir: path.join(dir, 'stack'),
    ports,
    workers: 2,
    engineEnv: {
      WORKER_BUILD_ID: v1.buildId,
      WORKFLOW_BUNDLE_PATH: v1.bundle,
      // Hundreds of journeys driven at once: the drill's own requests, not a clinic's.
      API_RATE_LIMIT_PER_MINUTE: '12000',
    },
    temporalDynamicConfig: drillDynamicConfig(dir),
    log: () => undefined,
    onFatal: (why) => problems.push(`a part of the stack died: ${why}`),
  });
  const journeys: Journey[] = [];
  const safeFailures: Record<string, Failures> = {};
  let gate: Report['gate'] = { v2: [], v3: [], histories: 0 };
  let drained: Report['drained'];
  let bad: Report['bad'];
  let connection: Connection | undefined;
  const metrics = new Map<ManagedProcess, string>();
  const metricsOf = (w: ManagedProcess) => metrics.get(w) ?? '';
  const startVersion = (v: Version, ports: number[]) => {
    v.workers = stack.startWorkerVersion({
      buildId: v.buildId,
      bundlePath: v.bundle,
      metricsPorts: ports,
      label: v.label,
    });
    v.workers.forEach((w, i) => metrics.set(w, `http://127.0.0.1:${ports[i]}/metrics`));
  };
  // Every part is killed as this process exits (scripts/lib/processes.ts).
  const stop = () => process.exit(130);
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    mkdirSync(path.join(dir, 'stack'), { recursive: true });
    await stack.start();
    v1.workers = [...stack.workers];
    stack.workerMetricsUrls.forEach((url, i) => metrics.set(v1.workers[i]!, url));
    const address = stack.temporalAddress;
    connection = await Connection.connect({ address });
    const client = new Client({ connection, namespace: 'default' });
    const current = async () => {
      const out = await deploymentCommand(address, ['describe', '-o', 'json']);
      return (JSON.parse(out) as { routingConfig?: { currentVersionBuildID?: string } }).routingConfig
        ?.currentVersionBuildID;
    };
    const first = await current();
    if (first !== v1.buildId) problems.push(`at the start the current version is ${first}, not v1 ${v1.buildId}`);
    mark(`stack up: 2 workers of v1 ${v1.buildId}, current`);

    // 1. Journeys parked in every wait state, on v1.
    const api = new PacedApiClient(stack.apiUrl, DEMO_CLINIC_TOKEN, 60);
    const admin = new ApiClient(stack.apiUrl, stack.adminToken);
    const runId = Date.now().toString(36);
    const parked: ParkedJourney[] = await parkJourneys(api, stack.sandboxUrl, {
      perState: o.perState,
      runId,
      say,
    });
    for (const p of parked) journeys.push({ journeyId: p.journeyId, state: p.state, expected: END_OF[p.state] });
    await eachLimit(journeys, 16, async (j) => {
      const v = await until(api, j.journeyId, (x) => (x.journey.exams ?? []).length > 0, 30_000);
      j.patientExamId = v?.journey.exams?.[0]?.patientExamId;
    });
    const notReady = parked.filter((p) => !p.ready);
    if (notReady.length > 0) problems.push(`${notReady.length} journeys did not reach their wait state on v1`);
    mark(`${parked.length - notReady.length} of ${parked.length} journeys parked on v1 (${o.perState} per wait state)`);

    // 2. The replay gate, on histories captured from this system now.
    const keys = stackSecrets(path.join(dir, 'stack')).payloadEncryptionKeys;
    const histories = path.join(dir, 'histories');
    const { captured } = await captureHistories(client, {
      query: `StartTime >= '${startedAt.toISOString()}'`,
      out: histories,
      perState: 2,
      scanLimit: 5_000,
    });
    // The journeys' payloads are sealed for their patients: the gate reads the stack's patient keys.
    const patientKeys = stack.patientKeysReader();
    await patientKeys.init();
    try {
      gate = {
        histories: captured.length,
        v2: await replayFolder(histories, { workflowsPath: v2.workflowsPath, keys, patientKeys }),
        v3: await replayFolder(histories, { workflowsPath: v3.workflowsPath, keys, patientKeys }),
      };
    } finally {
      await patientKeys.close();
    }
    const v2Refused = gate.v2.filter((r) => r.error);
    const v3Passed = gate.v3.filter((r) => !r.error);
    if (captured.length < WAIT_STATES.length)
      problems.push(`the capture found ${captured.length} histories, not one per wait state`);
    if (v2Refused.length > 0)
      problems.push(`the replay gate refused v2: ${v2Refused.map((r) => `${r.file}: ${r.error}`).join('; ')}`);
    if (v3Passed.length > 0) problems.push(`the replay gate let ${v3Passed.length} histories through on v3`);
    mark(
      `replay gate on ${captured.length} captured histories: v2 ${gate.v2.length - v2Refused.length} pass; v3 ${gate.v3.length - v3Passed.length} refused (${mismatchOf(gate.v3.find((r) => r.error)?.error)})`,
    );

    // 3. v2 beside v1, ramped, then current; a share of the parked journeys driven and probes started at each step.
    const running = journeys.filter((j) =>
      ['invited', 'reminded', 'deferred', 'awaiting_prescription', 'awaiting_tracking', 'parked'].includes(j.state),
    );
    const shares: Step[] = ['ramp 10 %', 'ramp 50 %', 'current', 'v3 forced'];
    running.forEach((j, i) => (j.step = shares[i % shares.length]));
    const drive: Drive = { api, admin, sandbox: stack.sandboxUrl };
    startVersion(v2, extraMetrics.v2);
    await registered(address, v2.buildId, v1.buildId);
    mark(`v2 ${v2.buildId}: 2 workers polling beside v1`);
    let currentAt = Date.now();
    for (const [step, command] of [
      ['ramp 10 %', ['set-ramping-version', '--build-id', v2.buildId, '--percentage', '10', '--yes']],
      ['ramp 50 %', ['set-ramping-version', '--build-id', v2.buildId, '--percentage', '50', '--yes']],
      ['current', ['set-current-version', '--build-id', v2.buildId, '--yes']],
    ] as [Step, string[]][]) {
      await deploymentCommand(address, command);
      if (step === 'current') currentAt = Date.now();
      mark(`temporal worker deployment ${command.slice(0, 5).join(' ')}`);
      const probes = await startProbes(api, runId, step, o.probesPerStep);
      journeys.push(...probes);
      const share = running.filter((j) => j.step === step);
      await eachLimit(share, 16, (j) => driveToEnd(drive, j, 180_000));
      await waitProbes(api, probes);
      mark(`${step}: ${share.length} parked journeys driven to their end, ${probes.length} new journeys run`);
    }
    for (const w of [...v1.workers, ...v2.workers]) safeFailures[w.name] = await failedTasks(metricsOf(w));

    // 4. v1 drained, its workers stopped, the version deleted.
    await eventually('v1 drained', 300_000, async () =>
      (await drainageOf(address, v1.buildId)) === 'drained' ? true : undefined,
    );
    const drainedAfter = Date.now() - currentAt;
    mark(`v1 drained ${(drainedAfter / 1000).toFixed(0)} s after v2 became current; stopping its workers`);
    await Promise.all(v1.workers.map((w) => w.stop()));
    await eventually('v1 deleted', 300_000, () =>
      deploymentCommand(address, ['delete-version', '--build-id', v1.buildId]),
    );
    drained = { afterMs: drainedAfter, deletedAfterMs: Date.now() - currentAt };
    mark(`v1 deleted ${(drained.deletedAfterMs / 1000).toFixed(0)} s after v2 became current`);

    // 5. v3 forced current against the gate; the last share driven meanwhile; v2 current again once the alert fires.
    startVersion(v3, extraMetrics.v3);
    await registered(address, v3.buildId, v2.buildId);
    await deploymentCommand(address, ['set-current-version', '--build-id', v3.buildId, '--yes']);
    const forcedAt = Date.now();
    mark(`v3 ${v3.buildId} forced current (the gate refused it)`);
    const last = running.filter((j) => j.step === 'v3 forced');
    // All at once: each one's event is sent while v3 is current (the paced client keeps the API under its limit).
    const driving = eachLimit(last, last.length, (j) => driveToEnd(drive, j, 600_000)).catch((err: unknown) => {
      problems.push(`driving the last share: ${err instanceof Error ? err.message : String(err)}`);
    });
    const scraped = [...v2.workers, ...v3.workers].map((w) => ({ name: w.name, url: metricsOf(w) }));
    const samples: Sample[] = [];
    let firstFailureAt: number | undefined;
    let alertAt: number | 'no promtool' | undefined;
    const alertDeadline = Date.now() + 240_000;
    while (alertAt === undefined && Date.now() < alertDeadline) {
      samples.push(await scrapeFailures(scraped));
      const total = [...samples.at(-1)!.values.values()].reduce((a, b) => a + b, 0);
      if (total > 0) firstFailureAt ??= Date.now();
      if (firstFailureAt !== undefined && samples.length % 3 === 0) {
        const fires = await alertFires(samples, dir);
        if (fires === true) alertAt = Date.now();
        // Without promtool the alert cannot be evaluated: the failures counted are the signal.
        if (fires === 'no promtool' && Date.now() - firstFailureAt > 15_000) alertAt = 'no promtool';
      }
      await sleep(5_000 - (Date.now() - samples.at(-1)!.at));
    }
    if (firstFailureAt === undefined) problems.push('v3 forced: no workflow task failure was counted');
    if (alertAt === undefined) problems.push(`v3 forced: the ${ALERT} alert did not fire within 4 minutes`);
    mark(
      `v3: first failed workflow task counted after ${firstFailureAt ? ((firstFailureAt - forcedAt) / 1000).toFixed(0) : '-'} s; ${ALERT} ${
        typeof alertAt === 'number'
          ? `fires after ${((alertAt - forcedAt) / 1000).toFixed(0)} s`
          : alertAt === 'no promtool'
            ? 'not evaluated (promtool missing)'
            : 'did not fire'
      }`,
    );
    await deploymentCommand(address, ['set-current-version', '--build-id', v2.buildId, '--yes']);
    const rolledBackAt = Date.now();
    mark('v2 current again');
    await driving;
    const notBack = last.filter((j) => j.endedAt === undefined);
    if (notBack.length > 0)
      problems.push(`${notBack.length} journeys driven while v3 was current did not end after the rollback`);
    const recoveredAt = Math.max(rolledBackAt, ...last.map((j) => j.endedAt ?? rolledBackAt));
    const failuresByVersion: Record<string, Failures> = {};
    for (const w of [...v2.workers, ...v3.workers]) failuresByVersion[w.name] = await failedTasks(metricsOf(w));
    bad = {
      forcedAt: forcedAt - t0,
      ...(firstFailureAt !== undefined ? { firstFailureAfterMs: firstFailureAt - forcedAt } : {}),
      ...(alertAt !== undefined ? { alertAfterMs: alertAt === 'no promtool' ? alertAt : alertAt - forcedAt } : {}),
      rolledBackAt: rolledBackAt - t0,
      recoveryMs: recoveredAt - rolledBackAt,
      failuresByVersion,
    };
    mark(`every journey of the last share ended ${(bad.recoveryMs / 1000).toFixed(0)} s after v2 was current again`);

    // 6. The judge: every journey in its end, the versions each one ran on, no task failure in the safe rollout.
    await eachLimit(journeys, 8, async (j) => {
      if (j.endedAs === undefined) {
        const v = await until(api, j.journeyId, () => true, 30_000);
        j.endedAs = v ? (endOf(v) ?? 'still running') : 'not found';
      }
      await trace(client, j);
    });
    const byId = new Map([v1, v2, v3].map((v) => [v.buildId, v.label]));
    for (const j of journeys) {
      if (j.endedAs !== j.expected)
        problems.push(`${j.journeyId} (${j.state}): ended ${j.endedAs}, expected ${j.expected}`);
      const labels = (j.buildIds ?? []).map((b) => byId.get(b) ?? b);
      if (j.state === 'probe' && j.reminders !== undefined) {
        const want = labels.every((l) => l === 'v1') ? [1] : labels.every((l) => l !== 'v1') ? [2] : [1, 2];
        if (!want.includes(j.reminders))
          problems.push(
            `${j.journeyId} (probe, ran on ${labels.join(', ')}): ${j.reminders} reminders, expected ${want.join(' or ')}`,
          );
      }
      if (j.step !== 'v3 forced' && (j.nondeterministic ?? 0) > 0)
        problems.push(`${j.journeyId}: ${j.nondeterministic} non-deterministic workflow tasks in the safe rollout`);
    }
    const safe = totalOf(safeFailures, NON_DETERMINISM);
    if (safe > 0) problems.push(`${safe} non-deterministic workflow tasks counted by the workers in the safe rollout`);
    mark(`judged ${journeys.length} journeys: ${problems.length === 0 ? 'no problem' : `${problems.length} problems`}`);
  } catch (err) {
    problems.push(`the drill stopped: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    process.removeListener('SIGINT', stop);
    process.removeListener('SIGTERM', stop);
    await connection?.close();
    await stack.stop();
    for (const b of built) b.remove();
    if (problems.length === 0 && !o.keep) rmSync(dir, { recursive: true, force: true });
    else say(`run folder kept: ${dir} (every part's log in stack/logs)`);
  }
  return {
    options: o,
    versions: [v1, v2, v3].map(({ label, buildId, change }) => ({ label, buildId, change })),
    journeys,
    gate,
    timeline,
    ...(drained ? { drained } : {}),
    ...(bad ? { bad } : {}),
    safeFailures,
    problems,
    startedAt,
    durationMs: Date.now() - t0,
  };
}

type Failures = Record<string, number>;

/** The workflow task failures a worker's Prometheus page counts, by failure reason (none when it cannot be read). */
async function failedTasks(url: string): Promise<Failures> {
  const out: Failures = {};
  for (const [series, n] of (await scrapeFailures([{ name: url, url }])).values) {
    const reason = labelOf(series, 'failure_reason') || 'unknown';
    out[reason] = (out[reason] ?? 0) + n;
  }
  return out;
}

const countOf = (f: Failures, reason?: string) =>
  Object.entries(f).reduce((a, [r, n]) => a + (reason === undefined || r === reason ? n : 0), 0);
const totalOf = (byWorker: Record<string, Failures>, reason?: string) =>
  Object.values(byWorker).reduce((a, f) => a + countOf(f, reason), 0);
const describeFailures = (byWorker: Record<string, Failures>) =>
  Object.entries(byWorker)
    .map(
      ([w, f]) =>
        `${w} ${
          countOf(f) === 0
            ? 0
            : Object.entries(f)
                .map(([r, n]) => `${n} ${r}`)
                .join(' + ')
        }`,
    )
    .join(', ');

// ---- the report ---------------------------------------------------------------------------------------------------------

const BEGIN = '<!-- deploy drill: written by npm run drill:deploy -->';
const END = '<!-- end of the deploy drill -->';

/** The replayer's first mismatch, without the wrapping it comes in. */
const mismatchOf = (error: string | undefined) =>
  /(\[TMPRL\d+\] )?Nondeterminism error: [^"]*/.exec(error ?? '')?.[0] ?? error?.slice(0, 200) ?? 'none';

const secs = (ms: number | undefined) => (ms === undefined ? '-' : `${(ms / 1000).toFixed(0)} s`);

/** Which versions completed a journey's workflow tasks, in the order of the versions. */
function ranOn(j: Journey, labels: Map<string, Label>): string {
  const on = new Set((j.buildIds ?? []).map((b) => labels.get(b) ?? b));
  return ['v1', 'v2', 'v3'].filter((l) => on.has(l)).join(' + ') || 'none';
}

export function reportSection(r: Report, cmd: string, machine: string, finishedAt: Date): string {
  const labels = new Map(r.versions.map((v) => [v.buildId, v.label]));
  const groups = new Map<string, Journey[]>();
  for (const j of r.journeys) {
    const key = j.state === 'probe' ? `new journey (${j.step})` : j.state;
    groups.set(key, [...(groups.get(key) ?? []), j]);
  }
  const combos = ['v1', 'v1 + v2', 'v2', 'v1 + v2 + v3', 'v2 + v3', 'v3'];
  const seen = combos.filter((c) => r.journeys.some((j) => ranOn(j, labels) === c));
  const rows = [...groups].map(([key, js]) => {
    const order: (Step | 'ended before the rollout')[] = ['ramp 10 %', 'ramp 50 %', 'current', 'v3 forced'];
    const steps = [...new Set(js.map((j) => j.step ?? 'ended before the rollout'))].sort(
      (a, b) => order.indexOf(a) - order.indexOf(b),
    );
    return [
      key,
      String(js.length),
      js[0]!.state === 'probe'
        ? '-'
        : steps
            .map((st) => `${st} ${js.filter((j) => (j.step ?? 'ended before the rollout') === st).length}`)
            .join(', '),
      ...seen.map((c) => String(js.filter((j) => ranOn(j, labels) === c).length)),
      `${js.filter((j) => j.endedAs === j.expected).length} ${js[0]!.expected}`,
      String(js.reduce((a, j) => a + (j.nondeterministic ?? 0), 0)),
      js[0]!.state === 'probe' ? js.map((j) => j.reminders ?? '?').join(' ') : '',
    ];
  });
  const total = r.journeys.length;
  const ended = r.journeys.filter((j) => j.endedAs === j.expected).length;
  const safe = r.journeys.filter((j) => j.step !== 'v3 forced');
  const safeNd = safe.reduce((a, j) => a + (j.nondeterministic ?? 0), 0);
  const lastShare = r.journeys.filter((j) => j.step === 'v3 forced');
  const mdTable = (head: string[], body: string[][]) =>
    [
      `| ${head.join(' | ')} |`,
      `|${head.map(() => '---').join('|')}|`,
      ...body.map((b) => `| ${b.join(' | ')} |`),
    ].join('\n');
  const gateFirst = r.gate.v3.find((g) => g.error);
  const bad = r.bad;
  return `${BEGIN}
## Deploy drill: a workflow change rolled out, and a bad one rolled back

\`npm run drill:deploy\` runs the runbook of [deploy](deploy.md#deploying-a-workflow-change) on the production topology
(PostgreSQL, the Temporal server ${temporalServerVersion()}, MinIO, the sandbox, two API replicas behind HAProxy) under parked journeys:
v1 on two workers with journeys parked in every wait state; v2 (a real change behind \`patched()\`) checked by the
replay gate on histories captured from the running system, started on two more workers and rolled out with the
Temporal CLI (\`set-ramping-version\` 10 %, 50 %, \`set-current-version\`) while a share of the parked journeys is
driven to its end at each step (the provider's verdict, the pharmacy's confirmation and shipment, an operator's
abandon) and new journeys start; v1 drained, its workers stopped and the version deleted; then v3 (an unguarded
breaking change) refused by the gate, forced current anyway while the last share is driven, and v2 made current again.

Journeys auto-upgrade, so a parked journey moves to the ramping or current version at its next workflow task (the
ramp picks journeys by their id). New journeys have a 20 s consultation window with one reminder at 1 s: v2's
last-call reminder (at 90 % of the window) shows which version ran each one (v1 sends 1 reminder, v2 sends 2). Only
the drill changes the server's drainage and poller-history waits (10 s and 15 s instead of minutes); nothing else of
the production configuration.

- Finished: ${finishedAt.toISOString()}
- Command: \`${cmd}\`
- Machine: ${machine}
- Result: **${r.problems.length === 0 ? 'passed' : `FAILED (${r.problems.length} problems)`}** in ${(r.durationMs / 60_000).toFixed(1)} min

${mdTable(
  ['version', 'build id', 'change'],
  r.versions.map((v) => [v.label, `\`${v.buildId}\``, v.change]),
)}

**Journeys per wait state and per version** (the versions that completed each journey's workflow tasks, read from its
history; non-deterministic: workflow tasks failed with that cause in the history):

${mdTable(
  [
    'wait state at the rollout',
    'journeys',
    'driven during',
    ...seen.map((c) => `ran on ${c}`),
    'ended as expected',
    'non-deterministic',
    'reminders',
  ],
  rows,
)}

- **Completed**: ${ended} of ${total} journeys ended in their expected state; **journeys lost: ${total - ended}**.
- **The replay gate** on ${r.gate.histories} histories captured from the running v1 system (one or two per wait state):
  v2 replays ${r.gate.v2.filter((g) => !g.error).length} of ${r.gate.v2.length}; v3 is refused on ${r.gate.v3.filter((g) => g.error).length} of ${r.gate.v3.length}${gateFirst ? ` (first: \`${gateFirst.file}\`, ${mismatchOf(gateFirst.error)})` : ''}.
- **Safe rollout (v1 → v2)**: ${safeNd} non-deterministic workflow tasks in ${safe.length} journeys' histories; ${totalOf(r.safeFailures, NON_DETERMINISM)} non-deterministic workflow tasks counted by the four workers (\`${FAILURE_METRIC}\`, \`failure_reason="${NON_DETERMINISM}"\`; all failures: ${describeFailures(r.safeFailures)}).
- **v1 retired**: drained ${secs(r.drained?.afterMs)} after v2 became current, deleted (\`delete-version\`, once its stopped workers' polls were forgotten) after ${secs(r.drained?.deletedAfterMs)}.
- **v3 forced**: the first failed workflow task was counted ${secs(bad?.firstFailureAfterMs)} after it became current; the \`${ALERT}\` alert ${
    bad?.alertAfterMs === 'no promtool'
      ? 'was not evaluated (promtool is not installed: `bash scripts/install-promtool.sh`)'
      : `fired after ${secs(bad?.alertAfterMs)} (promtool evaluating deploy/observability/prometheus-rules.yml on the counter scraped from the workers every 5 s)`
  }; workflow task failures counted per worker: ${describeFailures(bad?.failuresByVersion ?? {})}.
- **Rollback**: v2 current again; **time to recovery ${secs(bad?.recoveryMs)}**, until every one of the ${lastShare.length} journeys driven while v3 was current had gone on to its end. A failed workflow task is retried when its attempt times out (10 s, growing with each attempt), so recovery depends on how long the bad version was current.

**Timeline**

${mdTable(
  ['t', 'step'],
  r.timeline.map((t) => [secs(t.at), t.what.replace(/\|/g, '/')]),
)}
${r.problems.length === 0 ? '' : `\n### Problems\n\n${r.problems.map((p) => `- ${p}`).join('\n')}\n`}
Ports ${r.options.portBase}-${r.options.portBase + 45} (\`--port-base\`); the run folder (every part's log, the captured histories,
the bundles) is kept when the drill fails (\`--keep\` keeps it anyway).
${END}`;
}

async function main(argv: string[]): Promise<number> {
  try {
    const { values } = parseCommandLine(argv, {
      'per-state': { type: 'string' },
      probes: { type: 'string' },
      'port-base': { type: 'string' },
      keep: { type: 'boolean' },
      'no-doc': { type: 'boolean' },
    });
    const int = (name: string, v: string | undefined, fallback: number, min: number) => {
      const n = v === undefined ? fallback : Number(v);
      if (!Number.isInteger(n) || n < min) throw new UsageError(`--${name} must be a whole number from ${min}`);
      return n;
    };
    const o: Options = {
      perState: int('per-state', values['per-state'], 34, 1),
      probesPerStep: int('probes', values.probes, 10, 0),
      portBase: int('port-base', values['port-base'], 22_000, 1_024),
      keep: values.keep === true,
      writeDoc: values['no-doc'] !== true,
    };
    if (o.portBase + 45 > 32_000) throw new UsageError('--port-base must leave 46 ports below 32000');
    const unsupported = unsupportedNode();
    if (unsupported) throw new Error(unsupported);
    const report = await drill(o, (line) => console.log(`[drill] ${line}`));
    const args = argv.join(' ');
    const section = reportSection(
      report,
      `npm run drill:deploy${args ? ` -- ${args}` : ''}`,
      machineDescription(),
      new Date(),
    );
    console.log(`\n${section}\n`);
    console.log(
      report.problems.length === 0 ? 'deploy drill passed' : `deploy drill FAILED:\n- ${report.problems.join('\n- ')}`,
    );
    if (o.writeDoc && o.perState >= 34) {
      const file = path.join(ROOT, 'docs', 'reliability.md');
      writeFileSync(file, withSection(existsSync(file) ? readFileSync(file, 'utf8') : '', BEGIN, END, section));
      console.log(`written to ${path.relative(process.cwd(), file)}`);
    }
    return report.problems.length === 0 ? 0 : 1;
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(
        `${err.message}\n\nUsage: npm run drill:deploy -- [--per-state N] [--probes N] [--port-base P] [--keep] [--no-doc]`,
      );
      return 2;
    }
    console.error(err instanceof Error ? err.message : String(err));
    return 1;
  }
}

if (require.main === module) exitWith(() => main(process.argv.slice(2)));
