// The failover drill on the production topology with its PostgreSQL cluster (ProductionStack, database 'cluster'):
// journeys parked in every wait state, callbacks at a steady rate to journeys that wait for their consultation, new
// journeys starting every few seconds; then every process of the primary PostgreSQL node SIGKILLed (its etcd member,
// Patroni, the postmaster and its children). What it measures, from the outside:
// - acknowledged callbacks lost: every 200 the webhook gave (its deliveryId) must be recorded by its journey (each
//   journey's events[] through the clinic API); a refused callback (503 while no primary) is sent again, as a sender
//   that got no 200 would, until it is acknowledged;
// - the acknowledgement gap: the longest time between two 200s while callbacks were due;
// - the time without a primary (until the cluster names another) and until journeys move again (a journey started
//   after the kill has its invite);
// - journeys ended right (each started one completes as its test-mode patient says), double invites (two invites for
//   one journey at the sandbox: must be 0), parked journeys still where they were, the audit chain whole;
// - the old primary back as the synchronous standby.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { verifyAuditTable } from '../../src/audit/postgres';
import { ApiClient, HttpError, type JourneyView } from '../demo/api';
import { eachLimit, parkJourneys, until as waitFor, type ParkedJourney } from '../park-journeys';
import {
  CallbackLoad,
  drillPatient as patient,
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

export interface FailoverOptions {
  /** Callbacks a second, open loop (each due at its time whatever happened to the ones before). */
  rate: number;
  /** Journeys the callbacks go to (each waits for its consultation; the callbacks are about exams not theirs). */
  loadJourneys: number;
  /** Load before the kill, and after it. */
  beforeKillMs: number;
  afterKillMs: number;
  /** A new journey every so often (a patient in the sandbox's test mode, approved). */
  startEveryMs: number;
  /** Journeys parked in each wait state. */
  parkPerState: number;
  /** Start the killed node again and wait until it follows (default true; the report's rejoin figure). */
  rejoin?: boolean;
  runId: string;
  say: (line: string) => void;
}

export interface FailoverReport {
  killed: { node: string; processes: number; at: string };
  newPrimary: string;
  /** From the kill until the cluster named another primary. */
  noPrimaryMs: number;
  callbacks: {
    due: number;
    acked: number;
    /** Answers other than 200 (sent again), by status ('none': no answer). */
    refused: Record<string, number>;
    /** Acknowledged and not recorded by its journey. */
    lost: number;
    /** Deliveries recorded twice by one journey. */
    duplicates: number;
    /** The longest time between two acknowledgements while callbacks were due, and when it began (ms after the kill). */
    longestGapMs: number;
    longestGapFromKillMs: number;
    /** Acknowledgement to applied: the slowest, over the whole run. */
    slowestAppliedMs: number;
  };
  /**
   * From the kill until journeys move again: the first callback acknowledged after the acknowledgement gap applied by
   * its journey (Temporal and the workers on the new primary), and the first journey whose start was answered after
   * the gap, invited.
   */
  movingAgainMs: number;
  firstInviteAfterGapMs: number;
  journeys: {
    started: number;
    /** Start requests not answered 201/200 (sent again with the same Idempotency-Key). */
    startRefusals: number;
    endedRight: number;
    endedWrong: string[];
    doubleInvites: number;
  };
  parked: { total: number; inPlace: number; moved: string[] };
  /** The trail's chain afterwards; admin reads made during the run (each recorded before it was answered). */
  audit: { ok: boolean; records: number; adminReads: number; problem?: string };
  /** The old primary back as the synchronous standby. */
  rejoinedMs: number;
  problems: string[];
}

export async function failoverDrill(stack: ProductionStack, o: FailoverOptions): Promise<FailoverReport> {
  const cluster = stack.cluster;
  if (!cluster) throw new Error('the failover drill needs the stack with its PostgreSQL cluster');
  const problems: string[] = [];
  const api = new ApiClient(stack.apiUrl, DEMO_CLINIC_TOKEN);
  const secret = stackSecrets(stack.o.dataDir).webhookSecret;
  const view = journeyView(api);
  /** Polls a journey until `ok` (park-journeys' until); on a timeout, the journey as it is then. */
  const until = async (id: string, ok: (v: JourneyView) => boolean, timeoutMs: number) =>
    (await waitFor(api, id, ok, timeoutMs)) ?? (await view(id).catch(() => undefined));

  // 1. Journeys parked in every wait state, and the journeys the callbacks go to.
  o.say(`parking ${o.parkPerState} journey(s) in each wait state...`);
  const parked: ParkedJourney[] = await parkJourneys(api, stack.sandboxUrl, {
    perState: o.parkPerState,
    runId: o.runId,
    say: o.say,
  });
  for (const p of parked.filter((x) => !x.ready)) problems.push(`journey ${p.journeyId} never reached ${p.state}`);
  const parkedStage = new Map<string, string>();
  await eachLimit(parked, 8, async (p) => {
    const v = await view(p.journeyId);
    parkedStage.set(p.journeyId, v.journey.stage);
  });
  o.say(`starting ${o.loadJourneys} journeys for the callbacks...`);
  const loadIds: string[] = [];
  await eachLimit(
    Array.from({ length: o.loadJourneys }, (_, i) => i),
    8,
    async (i) => {
      const { body } = await api.request<{ journeyId: string }>('POST', '/v1/journeys', {
        body: { patient: patient(o.runId, 'load', i, false), exams: [101], scenario: { type: 'gfe' } },
        headers: { 'idempotency-key': `drill-load-${o.runId}-${i}` },
      });
      loadIds.push(body.journeyId);
    },
  );
  await eachLimit(loadIds, 8, async (id) => {
    const v = await until(id, (x) => x.journey.stage === 'awaiting_consultation', 120_000);
    if (v?.journey.stage !== 'awaiting_consultation')
      problems.push(`load journey ${id} never waited for its consultation`);
  });

  // 2. Callbacks at a steady rate, refused ones sent again; new journeys every so often.
  const callbacks = new CallbackLoad(
    { apiUrl: stack.apiUrl, webhookSecret: secret, rate: o.rate, firstPatientExamId: 7_000_000 },
    loadIds,
  );
  let loadRunning = true;
  const t0 = Date.now();
  const loadEnd = t0 + o.beforeKillMs + o.afterKillMs;
  const loadLoop = callbacks.run(loadEnd).then(() => {
    loadRunning = false;
  });
  const sent = callbacks.sent;

  const started: { journeyId: string; at: number; answeredAt: number }[] = [];
  let startRefusals = 0;
  let killAt = 0;
  const startLoop = (async () => {
    for (let i = 0; loadRunning; i++) {
      const key = `drill-new-${o.runId}-${i}`;
      const at = Date.now();
      for (;;) {
        try {
          const { body } = await api.request<{ journeyId: string }>('POST', '/v1/journeys', {
            body: { patient: patient(o.runId, 'new', i, true), exams: [101], scenario: { type: 'gfe' } },
            headers: { 'idempotency-key': key },
            timeoutMs: 15_000,
          });
          started.push({ journeyId: body.journeyId, at, answeredAt: Date.now() });
          break;
        } catch (err) {
          if (err instanceof HttpError && err.status >= 400 && err.status < 500 && err.status !== 409) throw err;
          startRefusals++;
          await sleep(1_000);
        }
      }
      await sleep(o.startEveryMs);
    }
  })();

  // Operators at work meanwhile: admin reads, each on the audit trail before it is answered.
  const adminToken = stack.adminTokenFile ? readFileSync(stack.adminTokenFile, 'utf8').trim() : undefined;
  let adminReads = 0;
  const adminLoop = (async () => {
    while (adminToken && loadRunning) {
      const res = await fetch(`${stack.apiUrl}/admin/dead-letters`, {
        headers: { authorization: `Bearer ${adminToken}`, 'x-actor': 'disaster-drill' },
        signal: AbortSignal.timeout(10_000),
      }).catch(() => undefined);
      if (res?.status === 200) adminReads++;
      await res?.arrayBuffer();
      await sleep(1_000);
    }
  })();

  // 3. The primary's node killed, whole.
  await sleep(o.beforeKillMs);
  const before = await cluster.primary();
  killAt = Date.now();
  const killed = await cluster.killPrimary();
  o.say(`killed ${killed.node} (${killed.pids.length} processes), the primary; callbacks keep coming...`);
  let newPrimary: string | undefined;
  for (;;) {
    newPrimary = await cluster.primary().catch(() => undefined);
    if (newPrimary && newPrimary !== before) break;
    if (Date.now() - killAt > 120_000) {
      const members = await cluster.members().catch((err: unknown) => String(err));
      throw new Error(
        `no new primary two minutes after the kill of ${killed.node}; members: ${JSON.stringify(members)}`,
      );
    }
    await sleep(200);
  }
  const noPrimaryMs = Date.now() - killAt;
  o.say(`${newPrimary} is the primary ${(noPrimaryMs / 1000).toFixed(1)} s after the kill`);

  await Promise.all([loadLoop, startLoop, adminLoop]);
  // Every refused callback sent again until it is acknowledged (at most a minute more).
  const unacked = await callbacks.drain(60_000);
  await callbacks.close();
  if (unacked > 0) problems.push(`${unacked} callbacks never acknowledged, a minute after the load`);

  // 4. The old primary back, following the new one.
  let rejoinedMs = Number.NaN;
  if (o.rejoin !== false) {
    const rejoinFrom = Date.now();
    await cluster.startNode(killed.node);
    await cluster.waitForReplica(killed.node);
    rejoinedMs = Date.now() - rejoinFrom;
    o.say(`${killed.node} is back as a standby (${(rejoinedMs / 1000).toFixed(1)} s)`);
  }

  // 5. What the journeys recorded, once the inbox has handed every callback on (the journeys' own snapshot only: an
  // answer from visibility, while a busy worker lets the query wait, holds no events).
  if (!(await waitForEmptyInbox(stack.superuserUrl, 300_000)))
    problems.push('the inbox still held callbacks five minutes after the load');
  const { recorded: applied, duplicates, unqueried } = await recordedDeliveries(view, loadIds);
  if (unqueried.length > 0) problems.push(`${unqueried.length} load journeys never answered their query: not counted`);
  const unknown = new Set(unqueried);
  let lost = 0;
  let slowestAppliedMs = 0;
  for (const s of sent) {
    if (!s.ackAt || !s.deliveryId || unknown.has(s.journeyId)) continue;
    const at = applied.get(s.deliveryId);
    if (at === undefined) lost++;
    else slowestAppliedMs = Math.max(slowestAppliedMs, at - s.ackAt);
  }
  const acks = callbacks.acks();
  // The longest time between two acknowledgements, the first of them within the load.
  const afterLoad = acks.find((a) => a > loadEnd) ?? Number.POSITIVE_INFINITY;
  const gap = longestGap(acks, acks[0] ?? killAt, afterLoad);
  const longestGapMs = gap.ms;
  const longestGapFromKillMs = gap.at - killAt;
  const refused = callbacks.refused();

  // 6. The started journeys: each approved and completed, one invite each; the first started after the kill invited.
  // The gap's end: the first acknowledgement after the longest gap.
  const gapEnd = killAt + longestGapFromKillMs + longestGapMs;
  let movingAgainMs = Number.NaN;
  for (const s of sent) {
    if (!s.ackAt || s.ackAt < gapEnd || !s.deliveryId) continue;
    const at = applied.get(s.deliveryId);
    if (at !== undefined && (Number.isNaN(movingAgainMs) || at - killAt < movingAgainMs)) movingAgainMs = at - killAt;
  }
  let firstInviteAfterGapMs = Number.NaN;
  const endedWrong: string[] = [];
  await eachLimit(started, 8, async (j) => {
    const v = await until(j.journeyId, (x) => x.journey.stage === 'completed', 180_000);
    const statuses = (v?.journey.exams ?? []).map((e) => e.status);
    if (v?.journey.stage !== 'completed' || statuses.join() !== 'Approved') {
      endedWrong.push(`${j.journeyId}: ${v?.journey.stage ?? 'unreadable'} (${statuses.join(', ')})`);
    }
  });
  const firstAfter = started.filter((j) => j.answeredAt >= gapEnd).sort((a, b) => a.answeredAt - b.answeredAt)[0];
  if (firstAfter) {
    // When its invite was sent: the sandbox's patient exam for it.
    const exams = await sandboxPatientExams(stack.sandboxUrl);
    const invited = exams.find((pe) => invitedJourney(pe) === firstAfter.journeyId);
    if (invited?.created_at) firstInviteAfterGapMs = Date.parse(invited.created_at) - killAt;
  } else {
    problems.push('no journey was started after the acknowledgement gap');
  }
  if (Number.isNaN(movingAgainMs)) problems.push('no callback acknowledged after the gap was applied');
  const doubleInvites = invitedTwice(await sandboxPatientExams(stack.sandboxUrl)).length;

  // 7. The parked journeys where they were; the audit chain whole.
  const moved: string[] = [];
  await eachLimit(parked, 8, async (p) => {
    const v = await view(p.journeyId).catch(() => undefined);
    if (v?.journey.stage !== parkedStage.get(p.journeyId)) {
      moved.push(`${p.journeyId} (${p.state}): ${parkedStage.get(p.journeyId)} -> ${v?.journey.stage ?? 'unreadable'}`);
    }
  });
  let records = 0;
  const chain = await verifyAuditTable(stack.auditDatabaseUrl, { onRecord: () => void records++ }).catch(
    (err: unknown) => ({ ok: false as const, problem: err instanceof Error ? err.message : String(err) }),
  );
  if (adminToken && adminReads === 0) problems.push('no admin read was answered during the run');
  if (records === 0) problems.push('the audit trail holds no record to check');
  const audit = {
    ok: chain.ok,
    records,
    adminReads,
    ...('problem' in chain && chain.problem ? { problem: String(chain.problem) } : {}),
  };

  if (lost > 0) problems.push(`${lost} acknowledged callbacks lost`);
  if (duplicates > 0) problems.push(`${duplicates} deliveries recorded twice`);
  if (doubleInvites > 0) problems.push(`${doubleInvites} journeys invited twice`);
  if (endedWrong.length > 0) problems.push(`${endedWrong.length} journeys did not end as planned`);
  if (moved.length > 0) problems.push(`${moved.length} parked journeys moved`);
  if (!audit.ok) problems.push('the audit chain is not whole');
  return {
    killed: { node: killed.node, processes: killed.pids.length, at: new Date(killAt).toISOString() },
    newPrimary: newPrimary,
    noPrimaryMs,
    callbacks: {
      due: sent.length,
      acked: acks.length,
      refused,
      lost,
      duplicates,
      longestGapMs,
      longestGapFromKillMs,
      slowestAppliedMs,
    },
    movingAgainMs,
    firstInviteAfterGapMs,
    journeys: {
      started: started.length,
      startRefusals,
      endedRight: started.length - endedWrong.length,
      endedWrong,
      doubleInvites,
    },
    parked: { total: parked.length, inPlace: parked.length - moved.length, moved },
    audit,
    rejoinedMs,
    problems,
  };
}

/** A run id for idempotency keys and e-mails: short, unique enough. */
export const runIdOf = () => randomUUID().slice(0, 8);
