// One fault run from start to end: the stack up, the sandbox's faults on, journeys started through the clinic API
// while the process faults strike, everything settled, the operators' decisions on the parked journeys, then every
// journey and every callback judged. Bounded everywhere: it ends by itself, with a report, also when things go wrong.
import { mkdtempSync, rmSync } from 'node:fs';
import type { WorkflowHandle } from '@temporalio/client';
import os from 'node:os';
import path from 'node:path';
import { abandonUpdate, journeyWorkflowId, retryUpdate } from '../../../src/contract/definitions';
import { MedicalDirector } from './director';
import type { InjectedProcessFault, ProcessFaultPlan } from './faults';
import { http, planJourneys, Rng, startJourney, type StartedJourney } from './journeys';
import { ProductionFaultStack, type ProductionSettings } from './production';
import type { StackPorts } from './stack';
import { devServerTopology, type FaultInjector, type FaultTopology } from './topology';
import {
  deadLetters,
  invitesByJourney,
  journeySnapshot,
  judge,
  sandboxDeliveries,
  sandboxExams,
  stagesByList,
  TERMINAL,
  type CallbackTotals,
  type JourneySnapshot,
  type JourneyVerdict,
  type OperatorDecision,
  type SandboxDelivery,
} from './verify';

export interface SandboxFaultSettings {
  errorRate: number;
  latencyMs: number;
  dropAfterInviteRate: number;
  duplicateCallbacks: number;
  outOfOrderCallbacks: boolean;
  callbackDelayMs: number;
  /** Which callback layout the sandbox sends (`rotate`: each invite's callbacks in the next alternative layout). */
  callbackLayout: 'interface' | 'rotate';
}

/** The stack a run uses: the dev-server stack (the default) or the production topology. */
export type SuiteTopology =
  | { topology?: 'dev-server'; ports: StackPorts; processFaults: ProcessFaultPlan }
  | { topology: 'production'; production: ProductionSettings };

export type SuiteOptions = SuiteCommonOptions & SuiteTopology;

export interface SuiteCommonOptions {
  name: string;
  journeys: number;
  /** Journeys start at random moments within this window. */
  startWindowMs: number;
  /** Process faults strike at random moments within this window (from the start of the run). */
  faultWindowMs: number;
  sandboxFaults: SandboxFaultSettings;
  /** SANDBOX_* settings of the sandbox process. */
  sandboxEnv: Record<string, string>;
  /** Longest wait for everything to come to rest after the faults. */
  settleTimeoutMs: number;
  operatorRounds: number;
  /** Longest wait for rest after each operator round. */
  operatorSettleTimeoutMs: number;
  /** The whole run's budget: waits are cut short to keep within it, and what is not done by then is a problem. */
  deadlineMs: number;
  seed: number;
  /** Keep the run folder (logs, Temporal database) even when the run passed. */
  keepRunDir?: boolean;
  log?: (line: string) => void;
}

export interface SuiteReport {
  options: SuiteOptions;
  runDir: string;
  ports: object;
  durationMs: number;
  phases: { name: string; ms: number }[];
  journeys: StartedJourney[];
  processFaults: InjectedProcessFault[];
  crashes: { name: string; atMs: number }[];
  maxInboxFiles: number;
  /** Verdicts the run's medical director gave through the sandbox's control surface. */
  director: { journeys: number; deferrals: number; finalVerdicts: number };
  sandboxInjected: { errors: Record<string, number>; delayed: number; droppedInvites: number };
  callbackFaults: {
    duplicateCopies: number;
    outOfOrderExams: number;
    delayedDeliveries: number;
    /** Patient exams per layout their callbacks were sent in. */
    layouts: Record<string, number>;
    /** Failed callback attempts by what the sandbox saw: the HTTP status, or the connection error. */
    failedAttempts: Record<string, number>;
  };
  /** Stage counts when the run settled, before any operator acted (with attention codes). */
  stagesAfterRun: Record<string, number>;
  decisions: OperatorDecision[];
  finalStages: Record<string, number>;
  examStatuses: Record<string, number>;
  invitesHistogram: { none: number; one: number; twoOrMore: number };
  callbacks: CallbackTotals;
  verdicts: JourneyVerdict[];
  problems: string[];
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const count = (xs: string[]) => xs.reduce<Record<string, number>>((m, x) => ((m[x] = (m[x] ?? 0) + 1), m), {});

export async function runFaultSuite(options: SuiteOptions): Promise<SuiteReport> {
  const log = options.log ?? ((line: string) => console.log(`[faults] ${line}`));
  const began = Date.now();
  const phases: { name: string; ms: number }[] = [];
  let phaseStart = began;
  const phase = (name: string) => {
    phases.push({ name, ms: Date.now() - phaseStart });
    phaseStart = Date.now();
    log(`phase done: ${name} (${((Date.now() - began) / 1000).toFixed(0)} s in)`);
  };
  const problems: string[] = [];
  const remaining = () => Math.max(0, began + options.deadlineMs - Date.now());
  const runDir = mkdtempSync(path.join(os.tmpdir(), `journey-faults-${options.name}-`));
  const rng = new Rng(options.seed);
  const stack: FaultTopology =
    options.topology === 'production'
      ? await ProductionFaultStack.create({
          runDir,
          seed: options.seed,
          sandboxEnv: options.sandboxEnv,
          plan: options.production.faults,
          portBase: options.production.portBase,
          log,
        })
      : await devServerTopology({
          runDir,
          ports: options.ports,
          seed: options.seed,
          sandboxEnv: options.sandboxEnv,
          plan: options.processFaults,
        });
  const ports = stack.ports;
  log(`run folder ${runDir}; ${stack.kind} topology; ports ${JSON.stringify(ports)}`);

  let journeys: StartedJourney[] = [];
  let faults: FaultInjector | undefined;
  let director: MedicalDirector | undefined;
  let directing: Promise<void> | undefined;
  const decisions: OperatorDecision[] = [];
  let stagesAfterRun: Record<string, number> = {};
  let report: SuiteReport | undefined;
  try {
    await stack.start();
    phase('start the stack');

    const sandboxFaults = await http('POST', `${stack.sandboxUrl}/_sandbox/faults`, {
      body: { ...options.sandboxFaults, seed: options.seed },
    });
    if (sandboxFaults.status !== 200)
      throw new Error(`setting the sandbox faults: ${JSON.stringify(sandboxFaults.body)}`);

    // ---- the run: journeys start while the process faults strike ----
    const t0 = Date.now();
    faults = stack.faults(rng, t0, log);
    const supervisor = faults.supervise();
    director = new MedicalDirector(stack.sandboxUrl, 5_000);
    directing = director.run();
    const plans = planJourneys(options.journeys, options.startWindowMs, rng, `${options.seed}-${t0.toString(36)}`);
    const startDeadline = Math.max(options.startWindowMs, options.faultWindowMs) + options.settleTimeoutMs;
    const starts = plans.map(async (plan) => {
      await sleep(Math.max(0, t0 + plan.startAfterMs - Date.now()));
      const started = await startJourney(stack.apiUrl, plan, startDeadline);
      if (started.journeyId) faults?.journeyStarted();
      if (started.journeyId && plan.outcome === 'Deferred') director?.follow(started.journeyId);
      return started;
    });
    const progress = setInterval(() => void progressLine(stack, faults!, t0).then(log, () => undefined), 15_000);
    try {
      await faults.run(options.faultWindowMs);
      journeys = await Promise.all(starts);
    } finally {
      clearInterval(progress);
    }
    phase('journeys started under faults');

    const ids = journeys.flatMap((j) => (j.journeyId ? [j.journeyId] : []));
    for (const j of journeys) if (j.error) problems.push(`journey ${j.plan.idempotencyKey} not started: ${j.error}`);
    const rest = await settle(stack, ids, Math.min(options.settleTimeoutMs, remaining()), log);
    if (!rest.ok) problems.push(`the run did not settle within ${options.settleTimeoutMs / 1000} s: ${rest.why}`);
    phase('settle');

    // ---- what the run left, before any operator acted ----
    const snapshots = new Map<string, JourneySnapshot>();
    for (const id of ids) snapshots.set(id, await journeySnapshot(stack.apiUrl, id));
    stagesAfterRun = count(
      [...snapshots.values()].map((s) =>
        s.stage === 'needs_attention' ? `needs_attention (${s.attention.map((a) => a.code).join(',')})` : s.stage,
      ),
    );
    log(`after the run: ${JSON.stringify(stagesAfterRun)}`);
    for (const [id, s] of snapshots) {
      if (s.stage === 'needs_attention' && !s.attention.every((a) => a.code === 'invite_ambiguous')) {
        problems.push(
          `journey ${id}: needs attention for ${s.attention.map((a) => a.code).join(',')}, not an ambiguous invite ` +
            `(${s.attention.map((a) => a.message).join('; ')})`,
        );
      }
    }

    // ---- the operators: an ambiguous invite is abandoned when the service has it, retried when it has not ----
    for (let round = 1; round <= options.operatorRounds; round++) {
      const parked = [...snapshots].filter(([, s]) => s.stage === 'needs_attention');
      if (parked.length === 0) break;
      const invites = invitesByJourney(await sandboxExams(stack.sandboxUrl));
      const client = await stack.operatorClient();
      for (const [id, s] of parked) {
        const found = invites.get(id)?.length ?? 0;
        const action = found > 0 ? 'abandon' : 'retry';
        const handle = client.workflow.getHandle(journeyWorkflowId(id));
        const request = {
          actor: 'fault-suite-operator',
          note: found > 0 ? `the service has ${found} invite(s) for this journey` : 'no invite at the service',
        };
        const cause = await ambiguityCause(handle, s);
        await client.connection.withDeadline(Date.now() + 60_000, () =>
          handle.executeUpdate(action === 'abandon' ? abandonUpdate : retryUpdate, { args: [request] }),
        );
        decisions.push({
          journeyId: id,
          action,
          round,
          invitesFound: found,
          code: s.attention[0]?.code ?? 'none',
          cause,
        });
      }
      log(`operator round ${round}: ${parked.length} parked journeys decided`);
      const decided = parked.map(([id]) => id);
      // Each decided journey's own state (its query), not visibility: right after a retry the list may still say
      // needs_attention while the journey invites again, and the run would look at rest too early.
      const again = await settle(stack, decided, Math.min(options.operatorSettleTimeoutMs, remaining()), log, {
        live: true,
      });
      if (!again.ok) problems.push(`operator round ${round} did not settle: ${again.why}`);
      for (const [id] of parked) snapshots.set(id, await journeySnapshot(stack.apiUrl, id));
    }
    phase('operator decisions');

    // ---- judgement ----
    for (const id of ids) snapshots.set(id, await journeySnapshot(stack.apiUrl, id));
    problems.push(...(await listMatchesJourneys(stack.apiUrl, snapshots)));
    const exams = await sandboxExams(stack.sandboxUrl);
    const deliveries = await sandboxDeliveries(stack.sandboxUrl);
    const letters = await deadLetters(stack.apiUrl);
    const judged = judge({ journeys, snapshots, exams, deliveries, deadLetters: letters, decisions });
    problems.push(...judged.problems);
    const injected = (await http('GET', `${stack.sandboxUrl}/_sandbox/faults`)).body.injected;
    problems.push(...stack.unexpectedExits());
    for (const c of faults.crashes) problems.push(`${c.name} crashed ${(c.atMs / 1000).toFixed(0)} s into the run`);
    const perJourney = [...invitesByJourney(exams).values()];
    const withInvites = new Set([...invitesByJourney(exams).keys()]);
    phase('judge');

    faults.stop();
    await supervisor;
    report = {
      options,
      runDir,
      ports,
      durationMs: 0,
      phases,
      journeys,
      processFaults: faults.injected,
      crashes: faults.crashes,
      maxInboxFiles: faults.maxInboxFiles,
      director: { journeys: director.following, ...director.given },
      sandboxInjected: injected,
      callbackFaults: callbackFaultCounts(deliveries, options.sandboxFaults.callbackDelayMs),
      stagesAfterRun,
      decisions,
      finalStages: count(judged.verdicts.map((v) => v.stage)),
      examStatuses: count(judged.verdicts.filter((v) => v.stage === 'completed').map((v) => v.examStatus ?? 'none')),
      invitesHistogram: {
        none: ids.filter((id) => !withInvites.has(id)).length,
        one: perJourney.filter((m) => m.length === 1).length,
        twoOrMore: perJourney.filter((m) => m.length > 1).length,
      },
      callbacks: judged.callbacks,
      verdicts: judged.verdicts,
      problems,
    };
  } catch (err) {
    problems.push(`the run stopped: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  } finally {
    faults?.stop();
    director?.stop();
    await directing;
    await stack.stop();
  }
  const durationMs = Date.now() - began;
  if (!report) {
    report = {
      options,
      runDir,
      ports,
      durationMs,
      phases,
      journeys,
      processFaults: faults?.injected ?? [],
      crashes: faults?.crashes ?? [],
      maxInboxFiles: faults?.maxInboxFiles ?? 0,
      director: { journeys: director?.following ?? 0, deferrals: 0, finalVerdicts: 0, ...director?.given },
      sandboxInjected: { errors: {}, delayed: 0, droppedInvites: 0 },
      callbackFaults: { duplicateCopies: 0, outOfOrderExams: 0, delayedDeliveries: 0, layouts: {}, failedAttempts: {} },
      stagesAfterRun,
      decisions,
      finalStages: {},
      examStatuses: {},
      invitesHistogram: { none: 0, one: 0, twoOrMore: 0 },
      callbacks: {
        deliveries: 0,
        delivered: 0,
        failedAtSandbox: 0,
        attempts: 0,
        refusedAttempts: 0,
        otherFailedAttempts: 0,
        answered400: 0,
        recorded: {},
        deadLettered: 0,
        deadLettersByReason: {},
        deadLetteredAgain: 0,
        expected: 0,
        appliedExactlyOnce: 0,
      },
      verdicts: [],
      problems,
    };
  }
  report.durationMs = durationMs;
  if (problems.length === 0 && !options.keepRunDir) rmSync(runDir, { recursive: true, force: true });
  else log(`logs and data kept in ${runDir}`);
  return report;
}

/** Why the invite is in doubt, as an operator reads it from the attention facts and the workflow's history. */
async function ambiguityCause(handle: WorkflowHandle, s: JourneySnapshot): Promise<string> {
  const facts = (s.attention[0] as { facts?: { httpStatus?: number | null } } | undefined)?.facts;
  if (facts?.httpStatus) return `HTTP ${facts.httpStatus}`;
  const history = await handle.client.connection.withDeadline(Date.now() + 60_000, () => handle.fetchHistory());
  const timedOut = (history.events ?? []).some((e) => e.activityTaskTimedOutEventAttributes);
  return timedOut ? 'invite activity timed out (worker killed mid-invite)' : 'connection reset, no answer';
}

async function progressLine(stack: FaultTopology, faults: FaultInjector, t0: number): Promise<string> {
  const secs = ((Date.now() - t0) / 1000).toFixed(0);
  return `${secs} s: ${faults.injected.length} process faults so far; ${await stack.status()}`;
}

/**
 * Waits until nothing moves: every journey ended or parked for an operator, the sandbox has nothing scheduled and no
 * callback on the wire or waiting for a retry, and the API's inbox is empty.
 */
async function settle(
  stack: FaultTopology,
  ids: string[],
  timeoutMs: number,
  log: (line: string) => void,
  o: { live?: boolean } = {},
): Promise<{ ok: boolean; why: string }> {
  const until = Date.now() + timeoutMs;
  let why = '';
  let lastLog = 0;
  // Each journey's own stage (its query), not visibility's.
  const ownStages = async () =>
    new Map(
      await Promise.all(ids.map(async (id) => [id, (await journeySnapshot(stack.apiUrl, id, 10_000)).stage] as const)),
    );
  const running = (stages: Map<string, string>) => ids.filter((id) => !atRest(stages.get(id)));
  for (;;) {
    try {
      const open = running(o.live ? await ownStages() : await stagesByList(stack.apiUrl));
      const clock = await http('GET', `${stack.sandboxUrl}/_sandbox/clock`);
      const scheduled = (clock.body.scheduled as unknown[]).length;
      const deliveries = await sandboxDeliveries(stack.sandboxUrl);
      const moving = deliveries.filter((d) => d.state !== 'delivered' && d.state !== 'failed').length;
      const inboxFiles = await stack.inboxDepth();
      why = `${open.length} journeys still running, ${scheduled} sandbox actions scheduled, ${moving} callbacks in flight, inbox files ${inboxFiles}`;
      if (open.length === 0 && scheduled === 0 && moving === 0 && inboxFiles === 0) {
        if (o.live) return { ok: true, why };
        // The list comes from visibility, which may lag the journeys: each journey's own state confirms it.
        const own = await ownStages();
        const behind = running(own);
        if (behind.length === 0) return { ok: true, why };
        why = `the list shows every journey at rest, their own state not: ${behind.map((id) => `${id} ${own.get(id)}`).join(', ')}`;
      }
    } catch (err) {
      why = `not answering: ${err instanceof Error ? err.message : String(err)}`;
    }
    if (Date.now() > until) return { ok: false, why };
    if (Date.now() - lastLog > 15_000) {
      lastLog = Date.now();
      log(`settling: ${why}`);
    }
    await sleep(2_000);
  }
}

/** A journey that will not move without a callback or a person: ended, or waiting for an operator. */
function atRest(stage: string | undefined): boolean {
  return stage !== undefined && (TERMINAL.includes(stage) || stage === 'needs_attention');
}

/**
 * The operators' list (visibility, the JourneyStage search attribute) says what each journey's own state says, within
 * 30 s: a stage left stale there hides a journey from the operators who search for it.
 */
async function listMatchesJourneys(apiUrl: string, snapshots: Map<string, JourneySnapshot>): Promise<string[]> {
  const until = Date.now() + 30_000;
  for (;;) {
    const listed = await stagesByList(apiUrl);
    const differ = [...snapshots]
      .filter(([id, s]) => listed.get(id) !== s.stage)
      .map(([id, s]) => `journey ${id}: the list says ${listed.get(id) ?? 'nothing'}, the journey ${s.stage}`);
    if (differ.length === 0 || Date.now() > until) return differ;
    await sleep(2_000);
  }
}

/** The callback faults as the sandbox's deliveries log shows them. */
function callbackFaultCounts(deliveries: SandboxDelivery[], delayMs: number) {
  const duplicateCopies = deliveries.filter((d) => d.copy > 1).length;
  // A patient exam whose callbacks were first sent in another order than 1, 2, 3.
  const byExam = new Map<number, SandboxDelivery[]>();
  for (const d of deliveries)
    if (d.copy === 1) byExam.set(d.patient_exam_id, [...(byExam.get(d.patient_exam_id) ?? []), d]);
  let outOfOrderExams = 0;
  for (const list of byExam.values()) {
    const events = list.sort((a, b) => a.delivery_id - b.delivery_id).map((d) => d.event);
    if (events.some((e, i) => i > 0 && e < events[i - 1]!)) outOfOrderExams++;
  }
  const delayedDeliveries =
    delayMs <= 0
      ? 0
      : deliveries.filter((d) => {
          const first = d.attempts[0];
          return first !== undefined && Date.parse(first.at) - Date.parse(d.created_at) >= delayMs - 5;
        }).length;
  const layouts = count([...new Map(deliveries.map((d) => [d.patient_exam_id, d.layout ?? 'interface'])).values()]);
  const failedAttempts = count(
    deliveries.flatMap((d) =>
      d.attempts
        .filter((a) => a.status !== 200)
        .map((a) =>
          a.status !== null
            ? `HTTP ${a.status}`
            : (/\b(E[A-Z]+|timeout|Timeout)\b/.exec(a.error ?? '')?.[1] ?? 'no answer').toLowerCase(),
        ),
    ),
  );
  return { duplicateCopies, outOfOrderExams, delayedDeliveries, layouts, failedAttempts };
}
