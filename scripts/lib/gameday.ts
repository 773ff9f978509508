// The game day on the production topology with its PostgreSQL cluster (ProductionStack, database 'cluster': a primary
// and a synchronous standby under Patroni, two API replicas behind HAProxy, two workers, the Temporal server, MinIO):
// every promise at once while the parts fail in turn. Throughout, as clinics and the exam service would:
// - callbacks at a steady rate to journeys waiting for their consultation, each one a sender that got no 200 sends
//   again (a second after its answer);
// - new journeys at a steady pace (patients of the sandbox's test mode: each is approved and completes), each start
//   sent again with the same Idempotency-Key until it is answered 2xx;
// - patients erased and invited again: a journey started, its patient's erasure asked for at once (racing the start's
//   activities), waited for until done, the patient's journey read back (nothing of her in it), then the same e-mail
//   invited again under a new key (that journey must complete too).
// And one after another, with time to recover between: the PostgreSQL primary SIGKILLed (every process of its node),
// a worker SIGKILLed, an API replica SIGKILLed, the Temporal server restarted, the object store stopped for a while.
// Everything is judged from the outside: the answers, the journeys' ends, the sandbox's invites, the audit chain.
import { Client as TemporalClient, Connection } from '@temporalio/client';
import { verifyAuditTable } from '../../src/audit/postgres';
import { EncryptionCodec } from '../../src/codec/encryption-codec';
import { PatientCodec, PayloadErasedError } from '../../src/codec/patient-codec';
import { journeyWorkflowId } from '../../src/contract/definitions';
import { parseEncryptionKeys } from '../../src/encryption-keys';
import { encodingOf, historyPayloads } from '../../test/support/history-payloads';
import { waitForPoller } from '../../test/faults/harness/pollers';
import { ApiClient, type JourneyView } from '../demo/api';
import { eachLimit, statusesOf } from '../park-journeys';
import {
  CallbackLoad,
  drillPatient,
  invitedJourney,
  invitedTwice,
  journeyView,
  longestGap,
  recordedDeliveries,
  sandboxPatientExams,
  waitForEmptyInbox,
} from './drill-load';
import { sleep } from './processes';
import type { ProductionStack } from './production-stack';
import { DEMO_CLINIC_TOKEN, stackSecrets } from './stack-secrets';

export const GAME_DAY_FAULTS = ['postgres-primary', 'worker', 'api-replica', 'temporal', 'object-store'] as const;
/** With the Temporal server split (TEMPORAL_SPLIT=on): one of its history nodes SIGKILLed, then one of its matching. */
export const SPLIT_FAULTS = ['temporal-history', 'temporal-matching'] as const;
export type GameDayFault = (typeof GAME_DAY_FAULTS)[number] | (typeof SPLIT_FAULTS)[number];

/** Journeys the split faults ask after (through the clinic API, by their own query): enough to cover every shard. */
const PROBE_JOURNEYS = 24;
const PROBE_VIEW_TIMEOUT_MS = 3_000;
/**
 * Callbacks one load journey is given at most (each is recorded in its history; a journey sent 100 asks for a person,
 * attention callback_flood, and the rest go to dead letters): more load journeys are started as the run goes on.
 */
const CALLBACKS_PER_LOAD_JOURNEY = 80;
/** Seconds of load the journeys' budget still holds when more journeys are started for it. */
const TOP_UP_AHEAD_S = 150;

export interface GameDayOptions {
  /** Callbacks a second (open loop). */
  rate: number;
  /** Journeys the callbacks go to (each waits for its consultation; the callbacks are about exams not theirs). */
  loadJourneys: number;
  /** A new journey this often. */
  startEveryMs: number;
  /** A patient erased (and invited again) this often. */
  eraseEveryMs: number;
  /** Load before the first fault (the baseline), and after each fault's part is back before the next one. */
  warmupMs: number;
  recoverMs: number;
  /** How long the object store stays stopped. */
  objectStoreDownMs: number;
  faults: readonly GameDayFault[];
  runId: string;
  say: (line: string) => void;
}

export interface Gaps {
  /** The longest time without an acknowledgement (200) while callbacks were due. */
  ackGapMs: number;
  /** The longest time without a new invite at the exam service while journeys were being started. */
  inviteGapMs: number;
  /** Acknowledgements in the window, request to 200: p99 and max (ms). */
  ackP99Ms: number;
  ackMaxMs: number;
}

export interface FaultReport extends Gaps {
  fault: GameDayFault;
  /** What was done, and what came back (no patient data). */
  what: string;
  /** From the run's start. */
  atMs: number;
  /** Until the part was back (the new primary named, the process ready again). */
  downMs: number;
  /**
   * A Temporal node's kill: until every probed journey answered its own query again, the killed node's shards (or
   * task queue partitions) taken over by the other node, before the killed one was started again.
   */
  movedMs?: number;
  /** Callback answers other than 200 in the fault's window (sent again), by status. */
  refusedCallbacks: Record<string, number>;
  /** Clinic requests (starts, erasures, reads) answered other than 2xx in the window, by status. */
  refusedRequests: Record<string, number>;
}

export interface Latency {
  count: number;
  p50: number;
  p99: number;
  max: number;
}

export interface GameDayReport {
  durationMs: number;
  baseline: Gaps;
  faults: FaultReport[];
  callbacks: {
    /** Journeys the callbacks went to: the first ones and those started as their budget ran low. */
    journeys: number;
    due: number;
    acked: number;
    /** Request to answer of every attempt answered 200. */
    latency: Latency;
    /** The same outside the database failover's window (while the cluster has no primary, answers wait or are 503). */
    latencyOutsideFailover: Latency;
    /** Attempts not answered 200 (each sent again), by status ('none': no answer). */
    refused: Record<string, number>;
    lost: number;
    /** Acknowledged, then kept as dead letters because their journey asked for a person (callback_flood). */
    deadLettered: number;
    duplicates: number;
  };
  starts: {
    journeys: number;
    /** Answered 2xx in the end (each sent again with its Idempotency-Key until it was). */
    answered: number;
    /** Answers other than 2xx on the way, by status. */
    refused: Record<string, number>;
    completed: number;
    /** Parked with an ambiguous invite, decided as the runbook says (abandon when the service has it, else retry). */
    decided: string[];
    endedWrong: string[];
    doubleInvites: string[];
  };
  erasures: {
    requested: number;
    done: number;
    /** Erased journeys still showing something of their patient (her e-mail in the clinic's view, a payload that opens). */
    readable: string[];
    /** The same patients invited again after their erasure: how many, and how many completed. */
    invitedAgain: number;
    refused: Record<string, number>;
  };
  /** Every answer of 500 from the clinic API or the webhook, all run long. */
  answers500: number;
  /** From the load's end until the inbox was empty (every acknowledged callback handed on to its journey). */
  inboxEmptyAfterLoadMs: number;
  audit: { ok: boolean; records: number; problem?: string };
  /** The Temporal server split into processes of its own: which (no patient data). */
  temporalSplit?: string;
  problems: string[];
}

/** The split server's processes in words: "2 frontends behind HAProxy, 2 history nodes, ...". */
export function splitDescription(nodes: readonly { service: string }[], historyShards: number): string | undefined {
  if (nodes.length < 2) return undefined;
  const n = (service: string) => nodes.filter((x) => x.service === service).length;
  return [
    `${n('frontend')} frontends behind HAProxy`,
    `${n('history')} history nodes`,
    `${n('matching')} matching nodes`,
    ...(n('internal-frontend') > 0 ? [`${n('internal-frontend')} internal frontend`] : []),
    `${n('worker')} internal worker`,
    `${historyShards} history shards`,
  ].join(', ');
}

/** The fields of the clinic API's answers the game day reads (a journey's start, an erasure, a problem). */
interface AnswerBody {
  journeyId?: string;
  erasureId?: string;
  status?: string;
  journeys?: string[];
  type?: string;
  title?: string;
}

/** A clinic request's answer: its status ('none': no answer), its body, and Retry-After. */
interface Answer {
  status: number | 'none';
  body: AnswerBody | undefined;
  retryAfterMs?: number;
}

const percentile = (sorted: number[], p: number) =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;

function latencyOf(values: number[]): Latency {
  const sorted = [...values].sort((a, b) => a - b);
  return { count: sorted.length, p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), max: sorted.at(-1) ?? 0 };
}

/** A journey's attention codes (why it is parked). */
const codes = (v: JourneyView) => (v.journey.attention ?? []).map((a) => a.code);

const add = (counts: Record<string, number>, key: string | number) => (counts[key] = (counts[key] ?? 0) + 1);

export async function gameDay(stack: ProductionStack, o: GameDayOptions): Promise<GameDayReport> {
  const cluster = stack.cluster;
  if (!cluster) throw new Error('the game day needs the stack with its PostgreSQL cluster');
  const problems: string[] = [];
  const api = new ApiClient(stack.apiUrl, DEMO_CLINIC_TOKEN);
  const view = journeyView(api);
  // A Temporal node's kill is measured in rounds of views; a view slower than this counts as not answering, so a
  // round (and the figure's resolution) stays within a few seconds.
  const probeView = (id: string) =>
    api.request<JourneyView>('GET', `/v1/journeys/${id}`, { timeoutMs: PROBE_VIEW_TIMEOUT_MS }).then((r) => r.body);
  const secrets = stackSecrets(stack.o.dataDir);
  const t0 = Date.now();
  const since = (t: number) => `${((t - t0) / 1000).toFixed(1)} s`;

  // Every clinic request, with its answer noted (when, what): the windows' refusals and the 500s come from here.
  const requests: { at: number; status: number | 'none'; what: string }[] = [];
  const clinic = async (method: 'GET' | 'POST', route: string, body?: unknown, key?: string): Promise<Answer> => {
    let answer: Answer;
    try {
      const res = await fetch(`${stack.apiUrl}${route}`, {
        method,
        headers: {
          authorization: `Bearer ${DEMO_CLINIC_TOKEN}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(key ? { 'idempotency-key': key } : {}),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(20_000),
      });
      const text = await res.text();
      const retryAfter = Number(res.headers.get('retry-after'));
      answer = {
        status: res.status,
        body: text.startsWith('{') ? (JSON.parse(text) as AnswerBody) : undefined,
        ...(retryAfter > 0 ? { retryAfterMs: retryAfter * 1000 } : {}),
      };
    } catch {
      answer = { status: 'none', body: undefined };
    }
    requests.push({
      at: Date.now(),
      status: answer.status,
      what: `${method} ${route.split('/').slice(0, 3).join('/')}`,
    });
    return answer;
  };
  /**
   * A request with an Idempotency-Key sent until it is answered 2xx, as a clinic's client does: again after 5xx, no
   * answer, 429 and 409 `patient-erasure-in-progress` (after Retry-After, else a backoff with jitter); another answer
   * is final. Gives up after `timeoutMs`.
   */
  const untilAnswered = async (
    method: 'POST',
    route: string,
    body: unknown,
    key: string,
    timeoutMs = 300_000,
  ): Promise<Answer> => {
    const end = Date.now() + timeoutMs;
    for (let attempt = 1; ; attempt++) {
      const a = await clinic(method, route, body, key);
      if (typeof a.status === 'number' && a.status < 300) return a;
      const again =
        a.status === 'none' ||
        a.status >= 500 ||
        a.status === 429 ||
        (a.status === 409 && a.body?.type?.endsWith('patient-erasure-in-progress') === true);
      if (!again || Date.now() > end) return a;
      await sleep((a.retryAfterMs ?? Math.min(500 * 2 ** (attempt - 1), 4_000)) * (0.75 + Math.random() * 0.5));
    }
  };

  // 1. The journeys the callbacks go to, each waiting for its consultation.
  // The journeys started, and of them the ones waiting for their consultation within `readyWithinMs` (or while
  // `wanted` says so): a journey started while a worker is killed may end its invite ambiguous and ask for a person
  // instead (the runbook's case, judged for the run's own starts), and takes no callbacks.
  const startLoadJourneys = async (
    from: number,
    count: number,
    readyWithinMs: number,
    wanted: () => boolean = () => true,
  ): Promise<{ ready: string[]; notReady: string[] }> => {
    const ids: string[] = [];
    await eachLimit(
      Array.from({ length: count }, (_, k) => from + k),
      8,
      async (i) => {
        const a = await untilAnswered(
          'POST',
          '/v1/journeys',
          { patient: drillPatient(o.runId, 'load', i, false), exams: [101], scenario: { type: 'gfe' } },
          `gameday-load-${o.runId}-${i}`,
        );
        if (a.status !== 201 && a.status !== 200) throw new Error(`a load journey's start was answered ${a.status}`);
        ids.push(a.body!.journeyId!);
      },
    );
    const ready: string[] = [];
    const notReady: string[] = [];
    const deadline = Date.now() + readyWithinMs;
    await eachLimit(ids, 8, async (id) => {
      while ((await view(id).catch(() => undefined))?.journey.stage !== 'awaiting_consultation') {
        if (Date.now() > deadline || !wanted()) {
          notReady.push(id);
          return;
        }
        await sleep(500);
      }
      ready.push(id);
    });
    return { ready, notReady };
  };
  o.say(`starting ${o.loadJourneys} journeys for the callbacks...`);
  const first = await startLoadJourneys(0, o.loadJourneys, 120_000);
  if (first.notReady.length > 0)
    throw new Error(`load journey ${first.notReady[0]} never waited for its consultation (before any fault)`);
  const loadIds = first.ready;

  // 2. The load: callbacks, starts, erasures; each runs until `running` turns false.
  let running = true;
  const loadStart = Date.now();
  const callbacks = new CallbackLoad(
    {
      apiUrl: stack.apiUrl,
      webhookSecret: secrets.webhookSecret,
      rate: o.rate,
      firstPatientExamId: 8_000_000,
      perJourney: CALLBACKS_PER_LOAD_JOURNEY,
    },
    loadIds,
  );
  const callbackLoop = callbacks.run(Number.POSITIVE_INFINITY, () => running);
  // The faults take as long as they take (a slow machine's failover, Temporal's restart), and the load runs until
  // the last part is back: when the journeys' budget has TOP_UP_AHEAD_S of callbacks left, as many more are started
  // (through the clinic API, whatever is failing then: starting 30 took a minute under the faults) and take their turn.
  const topUpLoop = (async () => {
    let next = o.loadJourneys;
    while (running) {
      if (callbacks.remaining() < o.rate * TOP_UP_AHEAD_S) {
        const count = Math.max(10, Math.ceil((o.rate * TOP_UP_AHEAD_S) / CALLBACKS_PER_LOAD_JOURNEY));
        o.say(`${since(Date.now())}: starting ${count} more journeys for the callbacks...`);
        try {
          const { ready, notReady } = await startLoadJourneys(next, count, 180_000, () => running);
          next += count;
          loadIds.push(...ready);
          callbacks.addJourneys(ready);
          o.say(
            `${since(Date.now())}: ${ready.length} more journeys take callbacks` +
              (notReady.length > 0 ? ` (${notReady.length} not waiting for their consultation: left out)` : ''),
          );
          if (ready.length === 0 && running)
            problems.push(`none of ${count} more journeys for the callbacks was ready in time`);
        } catch (err) {
          problems.push(`more journeys for the callbacks: ${err instanceof Error ? err.message : String(err)}`);
          return;
        }
      }
      await sleep(1_000);
    }
  })();

  const started: { journeyId: string; answeredAt: number }[] = [];
  const startFailures: string[] = [];
  // Every third start takes a document (a lab result, uploaded first: into the object store), which its invite then
  // uploads to the exam service: the object store's outage meets journeys at both ends.
  const upload = async (i: number): Promise<unknown> => {
    const end = Date.now() + 300_000;
    for (let attempt = 1; ; attempt++) {
      const form = new FormData();
      form.append('kind', 'Lab');
      form.append('file', new Blob([`%PDF-1.4 lab results ${o.runId}-${i}`], { type: 'application/pdf' }), 'lab.pdf');
      let status: number | 'none' = 'none';
      let body: { attachment?: unknown } | undefined;
      try {
        const res = await fetch(`${stack.apiUrl}/v1/attachments`, {
          method: 'POST',
          headers: { authorization: `Bearer ${DEMO_CLINIC_TOKEN}` },
          body: form,
          signal: AbortSignal.timeout(20_000),
        });
        status = res.status;
        body = (await res.json().catch(() => undefined)) as typeof body;
      } catch {
        status = 'none';
      }
      requests.push({ at: Date.now(), status, what: 'POST /v1/attachments' });
      if (status === 201 && body?.attachment) return body.attachment;
      if ((status !== 'none' && status < 500 && status !== 429) || Date.now() > end)
        throw new Error(`an upload was answered ${status}`);
      await sleep(Math.min(500 * 2 ** (attempt - 1), 4_000) * (0.75 + Math.random() * 0.5));
    }
  };
  const startOne = async (i: number) => {
    let attachment: unknown;
    try {
      attachment = i % 3 === 2 ? await upload(i) : undefined;
    } catch (err) {
      startFailures.push(`start ${i}'s document: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    const a = await untilAnswered(
      'POST',
      '/v1/journeys',
      {
        patient: drillPatient(o.runId, 'new', i, true),
        exams: [101],
        scenario: { type: 'gfe' },
        ...(attachment ? { attachments: [{ examId: 101, attachment }] } : {}),
      },
      `gameday-new-${o.runId}-${i}`,
    );
    if (a.status === 201 || a.status === 200) started.push({ journeyId: a.body!.journeyId!, answeredAt: Date.now() });
    else startFailures.push(`start ${i}: ${a.status} ${a.body?.title ?? ''}`);
  };
  const startTasks: Promise<void>[] = [];
  const startLoop = (async () => {
    for (let i = 0; running; i++) {
      startTasks.push(startOne(i));
      await sleep(o.startEveryMs);
    }
  })();

  interface Erasure {
    email: string;
    first?: string;
    erasureId?: string;
    done: boolean;
    covered: string[];
    again?: string;
    /** When its first start and its erasure were asked for and when it was seen done (the run's clock, for the log). */
    times: string[];
  }
  const erasures: Erasure[] = [];
  const eraseOne = async (k: number) => {
    const patient = drillPatient(o.runId, 'erased', k, true);
    const e: Erasure = { email: patient.email, done: false, covered: [], times: [`started ${since(Date.now())}`] };
    erasures.push(e);
    const first = await untilAnswered(
      'POST',
      '/v1/journeys',
      { patient, exams: [101], scenario: { type: 'gfe' } },
      `gameday-erased-${o.runId}-${k}`,
    );
    if (first.status !== 201 && first.status !== 200) {
      startFailures.push(`erased patient ${k}'s first start: ${first.status}`);
      return;
    }
    e.first = first.body!.journeyId!;
    // At once: the erasure races the journey's invite and its callbacks.
    e.times.push(`erasure asked ${since(Date.now())}`);
    const asked = await untilAnswered(
      'POST',
      '/v1/patients/erasure',
      { email: patient.email },
      `gameday-erasure-${o.runId}-${k}`,
    );
    if (asked.status !== 202 && asked.status !== 200) {
      problems.push(`erasure ${k} was answered ${asked.status}`);
      return;
    }
    e.erasureId = asked.body!.erasureId!;
    const deadline = Date.now() + 300_000;
    while (Date.now() < deadline) {
      const s = await clinic('GET', `/v1/patients/erasure/${e.erasureId}`);
      if (s.status === 200 && s.body?.status === 'done') {
        e.done = true;
        e.times.push(`done ${since(Date.now())}`);
        e.covered = s.body.journeys ?? [];
        break;
      }
      await sleep(500);
    }
    if (!e.done) return;
    // The same e-mail, invited again: a new journey under a new key.
    const again = await untilAnswered(
      'POST',
      '/v1/journeys',
      { patient, exams: [101], scenario: { type: 'gfe' } },
      `gameday-again-${o.runId}-${k}`,
    );
    if (again.status === 201 || again.status === 200) {
      e.again = again.body!.journeyId!;
      started.push({ journeyId: e.again, answeredAt: Date.now() });
    } else startFailures.push(`erased patient ${k} invited again: ${again.status}`);
  };
  const eraseTasks: Promise<void>[] = [];
  const eraseLoop = (async () => {
    for (let k = 0; running; k++) {
      eraseTasks.push(eraseOne(k));
      await sleep(o.eraseEveryMs);
    }
  })();

  // 3. The faults, one after another.
  await sleep(o.warmupMs);
  const faultsAt: { fault: GameDayFault; at: number; what: string; downMs: number; movedMs?: number }[] = [];
  for (const fault of o.faults) {
    const at = Date.now();
    o.say(`${since(at)}: ${fault}...`);
    const { what, downMs, movedMs } = await inject(stack, fault, o, () => answering(probeView, loadIds));
    faultsAt.push({ fault, at, what, downMs, ...(movedMs !== undefined ? { movedMs } : {}) });
    o.say(`${since(Date.now())}: ${what}`);
    await sleep(o.recoverMs);
  }
  running = false;
  const loadEnd = Date.now();
  await Promise.all([callbackLoop, startLoop, eraseLoop, topUpLoop]);
  o.say(`${since(Date.now())}: the load stopped; waiting for every start and erasure to be answered...`);
  await Promise.all([...startTasks, ...eraseTasks]);
  const split = stack.temporal ? splitDescription(stack.temporal.nodes, stack.temporal.historyShards) : undefined;
  const unacked = await callbacks.drain(120_000);
  await callbacks.close();
  if (unacked > 0) problems.push(`${unacked} callbacks never acknowledged, two minutes after the load`);
  problems.push(...startFailures);

  // 4. What the journeys recorded, once the inbox handed every callback on.
  o.say(`${since(Date.now())}: reading what the ${loadIds.length} load journeys recorded...`);
  // The forwarder's backlog at the load's end (callbacks acknowledged, not yet signalled) is handed on at the pace
  // Temporal takes signals on this machine: how long that took is a figure, never a loss, up to 20 minutes.
  const drainFrom = Date.now();
  if (!(await waitForEmptyInbox(stack.superuserUrl, 1_200_000)))
    problems.push('the inbox still held callbacks twenty minutes after the load');
  const inboxEmptyAfterLoadMs = Date.now() - loadEnd;
  o.say(`${since(Date.now())}: the inbox is empty (${((Date.now() - drainFrom) / 1000).toFixed(0)} s of waiting)`);
  const { recorded, duplicates, unqueried, flooded } = await recordedDeliveries(view, loadIds);
  if (unqueried.length > 0) problems.push(`${unqueried.length} load journeys never answered their query: not counted`);
  if (flooded.length > 0)
    problems.push(
      `${flooded.length} load journeys were sent so many callbacks that they asked for a person (callback_flood; the rest went to dead letters): give the run more load journeys`,
    );
  // A flooded journey's further callbacks were kept as dead letters for a person, not given to it: counted as kept,
  // never as lost (the flooding itself is the run's problem, said above).
  const kept = flooded.length > 0 ? await floodedDeliveries(stack) : new Set<string>();
  const unknown = new Set(unqueried);
  let lost = 0;
  let deadLettered = 0;
  for (const s of callbacks.sent) {
    if (!s.ackAt || !s.deliveryId || unknown.has(s.journeyId) || recorded.has(s.deliveryId)) continue;
    if (kept.has(s.deliveryId)) deadLettered++;
    else lost++;
  }

  o.say(`${since(Date.now())}: waiting for the ${started.length} started journeys' ends...`);
  // 5. Every started journey at its end: completed and approved, or parked with an ambiguous invite and decided as
  // the runbook says.
  const adminToken = stack.adminToken;
  const invites = await sandboxPatientExams(stack.sandboxUrl);
  const decided: string[] = [];
  const endedWrong: string[] = [];
  let completed = 0;
  const ended = (v: JourneyView | undefined) =>
    v?.journey.stage === 'completed' || v?.journey.stage === 'abandoned' || v?.journey.stage === 'needs_attention';
  // One deadline for all (ten minutes): a loaded machine takes longer, and what is judged is the end, not the time.
  const endsBy = Date.now() + 600_000;
  await eachLimit(started, 8, async (j) => {
    let v: JourneyView | undefined;
    const deadline = endsBy;
    while (!ended(v) && Date.now() < deadline) {
      v = await view(j.journeyId).catch(() => undefined);
      if (!ended(v)) await sleep(1_000);
    }
    if (v?.journey.stage === 'needs_attention' && codes(v).includes('invite_ambiguous')) {
      const atService = invites.some((pe) => invitedJourney(pe) === j.journeyId);
      const action = atService ? 'abandon' : 'retry';
      const res = await fetch(`${stack.apiUrl}/admin/journeys/${j.journeyId}/${action}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          actor: 'game-day',
          note: `ambiguous invite: ${atService ? 'at' : 'not at'} the service`,
        }),
        signal: AbortSignal.timeout(30_000),
      });
      decided.push(`${j.journeyId}: ${action} (${res.status})`);
      if (action === 'abandon') return;
      const deadlineAgain = Math.max(endsBy, Date.now() + 180_000);
      for (v = undefined; v?.journey.stage !== 'completed' && Date.now() < deadlineAgain; await sleep(1_000))
        v = await view(j.journeyId).catch(() => undefined);
    }
    const statuses = v ? statusesOf(v) : [];
    if (v?.journey.stage === 'completed' && statuses.join() === 'Approved') completed++;
    else
      endedWrong.push(
        `${j.journeyId}: ${v?.journey.stage ?? 'unreadable'} (${statuses.join(', ')}${v && codes(v).length ? `; ${codes(v).join(', ')}` : ''})`,
      );
  });
  const doubleInvites = invitedTwice(await sandboxPatientExams(stack.sandboxUrl));

  o.say(`${since(Date.now())}: reading the ${erasures.length} erased patients' journeys and histories...`);
  // 6. The erased patients: each erasure done and covering her first journey; that journey's view holds nothing of
  // her, and its history's own payloads no longer open (the stack's keys, read after the erasures).
  const readable: string[] = [];
  const live = stack.patientKeysReader();
  await live.init();
  const connection = await Connection.connect({ address: stack.temporalAddress });
  try {
    const temporal = new TemporalClient({ connection });
    const codec = new PatientCodec(live, new EncryptionCodec(parseEncryptionKeys(secrets.payloadEncryptionKeys)));
    await eachLimit(
      erasures.filter((e) => e.first),
      4,
      async (e) => {
        if (!e.done) {
          problems.push(`the erasure of ${e.first}'s patient was not done`);
          return;
        }
        if (!e.covered.includes(e.first!)) problems.push(`the erasure of ${e.first}'s patient did not cover it`);
        const seen = await clinic('GET', `/v1/journeys/${e.first}`);
        const when = `(${e.times.join(', ')})`;
        if (JSON.stringify(seen.body ?? '').includes(e.email)) readable.push(`${e.first} ${when}: its view`);
        const history = await temporal.workflow.getHandle(journeyWorkflowId(e.first!)).fetchHistory();
        for (const { payload, at } of historyPayloads(history).own) {
          // Opened, or failed otherwise than as erased (which hides what it was sealed under): both are said.
          const how = await codec.decode([payload]).then(
            () => `opened (${encodingOf(payload)})`,
            (err: unknown) =>
              err instanceof PayloadErasedError ? undefined : `not opened, but not as erased: ${(err as Error).name}`,
          );
          if (how) readable.push(`${e.first} ${when}: ${at} ${how}`);
        }
      },
    );
  } finally {
    await connection.close();
    await live.close();
  }

  // 7. The audit chain, whole.
  let records = 0;
  const chain = await verifyAuditTable(stack.auditDatabaseUrl, { onRecord: () => void records++ }).catch(
    (err: unknown) => ({ ok: false as const, problem: err instanceof Error ? err.message : String(err) }),
  );
  const audit = {
    ok: chain.ok,
    records,
    ...('problem' in chain && chain.problem ? { problem: String(chain.problem) } : {}),
  };

  // 8. The windows: the baseline before the first fault, each fault's from its start to the next one's.
  const acks = callbacks.acks();
  const inviteTimes = invites
    .map((pe) => (pe.created_at ? Date.parse(pe.created_at) : Number.NaN))
    .filter((t) => Number.isFinite(t))
    .sort((a, b) => a - b);
  const gaps = (from: number, to: number): Gaps => {
    const latency = latencyOf(callbacks.ackLatencies(from, to));
    return {
      ackGapMs: longestGap(acks, from, to).ms,
      inviteGapMs: longestGap(inviteTimes, from, to).ms,
      ackP99Ms: latency.p99,
      ackMaxMs: latency.max,
    };
  };
  const statusCounts = (from: number, to: number) => {
    const out: Record<string, number> = {};
    for (const r of requests)
      if (r.at >= from && r.at < to && (r.status === 'none' || r.status >= 300)) add(out, r.status);
    return out;
  };
  const faults: FaultReport[] = faultsAt.map((f, i) => {
    const to = faultsAt[i + 1]?.at ?? loadEnd;
    return {
      fault: f.fault,
      what: f.what,
      atMs: f.at - t0,
      downMs: f.downMs,
      ...(f.movedMs !== undefined ? { movedMs: f.movedMs } : {}),
      ...gaps(f.at, to),
      refusedCallbacks: callbacks.refused(f.at, to),
      refusedRequests: statusCounts(f.at, to),
    };
  });
  const failoverAt = faultsAt.findIndex((f) => f.fault === 'postgres-primary');
  const failoverWindow =
    failoverAt < 0 ? undefined : { from: faultsAt[failoverAt]!.at, to: faultsAt[failoverAt + 1]?.at ?? loadEnd };
  // The baseline from a few seconds into the load (the first invites need their journeys' first tasks).
  const baseline = gaps(loadStart + Math.min(5_000, o.warmupMs / 2), faultsAt[0]?.at ?? loadEnd);

  const callbackRefused = callbacks.refused();
  const answers500 = (callbackRefused['500'] ?? 0) + requests.filter((r) => r.status === 500).length;
  const byKind = (prefix: string) => {
    const out: Record<string, number> = {};
    for (const r of requests)
      if (r.what.startsWith(prefix) && (r.status === 'none' || r.status >= 300)) add(out, r.status);
    return out;
  };
  const doneErasures = erasures.filter((e) => e.done).length;
  if (lost > 0) problems.push(`${lost} acknowledged callbacks lost`);
  if (duplicates > 0) problems.push(`${duplicates} deliveries recorded twice`);
  if (doubleInvites.length > 0) problems.push(`${doubleInvites.length} journeys invited twice`);
  if (endedWrong.length > 0)
    problems.push(`${endedWrong.length} journeys did not end as planned: ${endedWrong.join('; ')}`);
  if (readable.length > 0) {
    problems.push(`${readable.length} things of erased patients still readable: ${readable.join('; ')}`);
  }
  if (answers500 > 0) problems.push(`${answers500} answers of 500`);
  if (!audit.ok) problems.push('the audit chain is not whole');
  if (records === 0) problems.push('the audit trail holds no record to check');
  if (erasures.length === 0) problems.push('no patient was erased during the run');
  return {
    durationMs: loadEnd - loadStart,
    baseline,
    faults,
    callbacks: {
      journeys: loadIds.length,
      due: callbacks.sent.length,
      acked: acks.length,
      latency: latencyOf(callbacks.ackLatencies()),
      latencyOutsideFailover: latencyOf(
        failoverWindow
          ? [...callbacks.ackLatencies(0, failoverWindow.from), ...callbacks.ackLatencies(failoverWindow.to)]
          : callbacks.ackLatencies(),
      ),
      refused: callbackRefused,
      lost,
      deadLettered,
      duplicates,
    },
    starts: {
      journeys: started.length,
      answered: started.length,
      refused: byKind('POST /v1/journeys'),
      completed,
      decided,
      endedWrong,
      doubleInvites,
    },
    erasures: {
      requested: erasures.filter((e) => e.erasureId).length,
      done: doneErasures,
      readable,
      invitedAgain: erasures.filter((e) => e.again).length,
      refused: byKind('POST /v1/patients'),
    },
    answers500,
    inboxEmptyAfterLoadMs,
    audit,
    ...(split ? { temporalSplit: split } : {}),
    problems,
  };
}

/**
 * Whether each of the first journeys answers the clinic's view by its own query, in one round: the frontend, the
 * history shard that owns it, matching and a worker all reached (a view that cannot query answers from visibility).
 */
/** The delivery ids of the callbacks kept as dead letters because their journey was flooded (journey_flooded). */
async function floodedDeliveries(stack: ProductionStack): Promise<Set<string>> {
  const ids = new Set<string>();
  for (let after: string | null = null, pages = 0; pages < 1_000; pages++) {
    const query = new URLSearchParams({ reason: 'journey_flooded', limit: '200', ...(after ? { after } : {}) });
    const res = await fetch(`${stack.apiUrl}/admin/dead-letters?${query.toString()}`, {
      headers: { authorization: `Bearer ${stack.adminToken}`, 'x-actor': 'game-day' },
      signal: AbortSignal.timeout(30_000),
    });
    if (!res.ok) throw new Error(`the dead letters were answered ${res.status}`);
    const page = (await res.json()) as { deadLetters: { deliveryId?: string }[]; next: string | null };
    for (const l of page.deadLetters) if (l.deliveryId) ids.add(l.deliveryId);
    if (!page.next) break;
    after = page.next;
  }
  return ids;
}

async function answering(view: (id: string) => Promise<JourneyView>, journeyIds: readonly string[]): Promise<boolean> {
  const views = await Promise.all(journeyIds.slice(0, PROBE_JOURNEYS).map((id) => view(id).catch(() => undefined)));
  return views.every((v) => v?.source === 'query');
}

/** One fault, and the wait until its part is back: what was done, and how long the part was away. */
async function inject(
  stack: ProductionStack,
  fault: GameDayFault,
  o: Pick<GameDayOptions, 'objectStoreDownMs'>,
  journeysAnswer: () => Promise<boolean>,
): Promise<{ what: string; downMs: number; movedMs?: number }> {
  const t = Date.now();
  const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const untilAnswering = async (what: string) => {
    while (!(await journeysAnswer())) {
      if (Date.now() - t > 300_000) throw new Error(`the journeys did not answer again five minutes after ${what}`);
      await sleep(250);
    }
    return Date.now() - t;
  };
  switch (fault) {
    case 'temporal-history':
    case 'temporal-matching': {
      const service = fault === 'temporal-history' ? 'history' : 'matching';
      const node = stack.temporal?.nodes.find((n) => n.service === service);
      if (!node) throw new Error(`the ${fault} fault needs the Temporal server split (TEMPORAL_SPLIT=on)`);
      await node.kill();
      const movedMs = await untilAnswering(`${node.name}'s kill`);
      // As an orchestrator does: the node started again; its share comes back to it from the other node.
      await node.start();
      const readyMs = Date.now() - t;
      const downMs = await untilAnswering(`${node.name}'s return`);
      const share = service === 'history' ? 'its shards' : 'its task queue partitions';
      return {
        what: `${node.name} SIGKILLed: the ${PROBE_JOURNEYS} probed journeys all answered their own query again after ${secs(movedMs)} (${share} taken over by the other ${service} node; measured in rounds of their views, each view given ${secs(PROBE_VIEW_TIMEOUT_MS)}); started again, ready after ${secs(readyMs)}, every probed journey answering after ${secs(downMs)}`,
        downMs,
        movedMs,
      };
    }
    case 'postgres-primary': {
      const cluster = stack.cluster!;
      const before = await cluster.primary();
      // A kill with no synchronous standby to promote is a lost cluster, not a failover: said as that, at once.
      await cluster.waitForSynchronousStandby(30_000).catch(async () => {
        throw new Error(
          `no synchronous standby to fail over to before the primary's kill (${await membersSaid(cluster)})`,
        );
      });
      const killedAt = Date.now();
      const killed = await cluster.killPrimary();
      let now: string | undefined;
      while (!now || now === before) {
        if (Date.now() - killedAt > 120_000) {
          throw new Error(
            `no new primary two minutes after the kill of ${killed.node} (${await membersSaid(cluster)})`,
          );
        }
        await sleep(200);
        now = await cluster.primary().catch(() => undefined);
      }
      const downMs = Date.now() - killedAt;
      await cluster.startNode(killed.node);
      await cluster.waitForReplica(killed.node);
      await cluster.waitForSynchronousStandby();
      return {
        what: `${killed.node}, the primary, SIGKILLed (${killed.pids.length} processes); ${now} the primary after ${secs(downMs)}; ${killed.node} its synchronous standby again after ${secs(Date.now() - killedAt)}`,
        downMs,
      };
    }
    case 'worker': {
      const w = stack.workers[0]!;
      await w.kill();
      w.start();
      await waitForPoller({
        address: stack.temporalAddress,
        pid: () => w.pid,
        running: () => w.running,
        name: w.name,
        timeoutMs: 180_000,
      });
      const downMs = Date.now() - t;
      return { what: `${w.name} SIGKILLed, started again, polling after ${secs(downMs)}`, downMs };
    }
    case 'api-replica': {
      const a = stack.apis[0]!;
      await a.kill();
      a.start();
      const url = `http://127.0.0.1:${stack.o.ports.apiReplicas[0]}/readyz`;
      while (
        !(await fetch(url, { signal: AbortSignal.timeout(2_000) }).then(
          (r) => r.ok,
          () => false,
        ))
      ) {
        if (!a.running || Date.now() - t > 120_000) throw new Error(`${a.name} did not come back; see ${a.logFile}`);
        await sleep(200);
      }
      const downMs = Date.now() - t;
      return { what: `${a.name} SIGKILLed, started again, ready after ${secs(downMs)}`, downMs };
    }
    case 'temporal': {
      const temporal = stack.temporal!;
      await temporal.stop();
      await temporal.start();
      const downMs = Date.now() - t;
      return { what: `the Temporal server stopped (SIGTERM) and started again, serving after ${secs(downMs)}`, downMs };
    }
    case 'object-store': {
      const store = stack.objectStore!;
      await store.stop();
      await sleep(o.objectStoreDownMs);
      await store.start();
      const downMs = Date.now() - t;
      return {
        what: `the object store stopped for ${secs(o.objectStoreDownMs)}, serving again after ${secs(downMs)}`,
        downMs,
      };
    }
  }
}

/** The cluster's members as Patroni names them (name, role, state), for an error that says what the cluster was. */
async function membersSaid(cluster: NonNullable<ProductionStack['cluster']>): Promise<string> {
  const members = await cluster.members().catch(() => []);
  if (members.length === 0) return 'no Patroni answered';
  return members.map((m) => `${m.name} ${m.role} ${m.state}`).join(', ');
}
