// `npm run drill:disaster`: the production topology on its PostgreSQL cluster (a primary and a synchronous standby
// run by Patroni with etcd, HAProxy as the primary's address, the WAL archived and full backups taken by pgBackRest
// into an object store of their own), and what a clinic asks first of it, from one run:
// 1. Failover under load (scripts/lib/disaster.ts): journeys parked in every wait state, callbacks at a steady rate,
//    new journeys starting; every process of the primary's node SIGKILLed. Acknowledged callbacks lost, the longest
//    time without an acknowledgement, the time until journeys move again, journeys ended right, double invites, the
//    audit chain afterwards.
// 2. Point-in-time recovery: the moment T noted, callbacks acknowledged after it, then an operator's mistake (a batch
//    terminate of the wrong journeys); the cluster restored to T into a new data folder. Its time, what came back (the
//    journeys running again, the inbox as it was), and what the restore cannot know: the callbacks acknowledged after
//    T, and the journeys that may have missed one (open at T), named for an operator.
// 3. A document deleted by mistake, brought back from the attachments' bucket's versions.
// The report goes to docs/reliability.md (between its markers; --no-doc leaves it).
//
//   npm run drill:disaster -- [--rate N] [--load-journeys N] [--per-state N] [--after-kill S] [--port-base P] [--keep]
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DeleteObjectsCommand, S3Client } from '@aws-sdk/client-s3';
import { Client as PgClient } from 'pg';
import { Client as TemporalClient, Connection } from '@temporalio/client';
import { S3AttachmentStore } from '../src/attachments/s3';
import { RecordSealer } from '../src/codec/at-rest';
import { parseEncryptionKeys } from '../src/encryption-keys';
import { webhookToken } from '../src/webhook-url';
import { journeyWorkflowId } from '../src/contract/definitions';
import { machineDescription } from '../test/faults/harness/report';
import { exitWith, parseCommandLine, UsageError } from './lib/cli';
import { failoverDrill, runIdOf, type FailoverReport } from './lib/disaster';
import { withSection } from './lib/doc-section';
import { freePort } from './lib/postgres-server';
import { sleep } from './lib/processes';
import {
  freeProductionPorts,
  POSTGRES_FULL_BACKUPS_KEPT,
  ProductionStack,
  productionStackPorts,
  ATTACHMENTS_KEEP_DELETED_DAYS,
} from './lib/production-stack';
import { guardDrillStack } from './lib/stack-guard';
import { DEMO_CLINIC_TOKEN, stackSecrets } from './lib/stack-secrets';

const ROOT = path.resolve(__dirname, '..');
export const BEGIN = '<!-- begin: npm run drill:disaster -->';
export const END = '<!-- end: npm run drill:disaster -->';

export interface Options {
  rate: number;
  loadJourneys: number;
  perState: number;
  beforeKillMs: number;
  afterKillMs: number;
  portBase: number;
  keep: boolean;
  writeDoc: boolean;
}

export interface RecoveryReport {
  target: string;
  restoreMs: number;
  recoveryMs: number;
  /** The journeys terminated by mistake after T: running in the restore. */
  terminated: number;
  runningAgain: number;
  /** The inbox as at T: its rows then, and in the restore. */
  inboxAtT: number;
  inboxRestored: number;
  /** Callbacks acknowledged after T (the drill's own send log), to how many journeys; none of them in the restore. */
  ackedAfterT: number;
  journeysAckedAfterT: number;
  ackedAfterTInRestore: number;
  /** What the engine names for an operator: the journeys open at T (each may have missed a callback after it). */
  openAtT: number;
  namedCoverAckedAfterT: boolean;
}

export interface DocumentReport {
  restored: boolean;
  readable: boolean;
  ms: number;
}

async function scalar(url: string, sql: string, params: unknown[] = []): Promise<number> {
  const c = new PgClient({ connectionString: url });
  await c.connect();
  try {
    return Number(Object.values((await c.query(sql, params)).rows[0] as object)[0]);
  } finally {
    await c.end();
  }
}

/** A URL with another database. */
const withDatabase = (url: string, database: string) => {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
};

async function recoveryDrill(
  stack: ProductionStack,
  runDir: string,
  say: (l: string) => void,
): Promise<RecoveryReport> {
  const cluster = stack.cluster!;
  const backups = stack.backups!;
  const su = stack.superuserUrl;
  const temporalDb = withDatabase(cluster.url(), 'temporal');
  // The journeys an operator will terminate by mistake: some waiting for their consultation, started now.
  const api = `${stack.apiUrl}`;
  const clinic = { authorization: `Bearer ${DEMO_CLINIC_TOKEN}`, 'content-type': 'application/json' };
  const victims: string[] = [];
  for (let i = 0; i < 10; i++) {
    const res = await fetch(`${api}/v1/journeys`, {
      method: 'POST',
      headers: { ...clinic, 'idempotency-key': `pitr-${runDir.slice(-8)}-${i}` },
      body: JSON.stringify({
        patient: {
          firstName: 'Waiting',
          lastName: `Patient ${i + 1}`,
          email: `pitr-${i}@example.test`,
          dob: '1979-11-02',
          phoneNumber: '5125550123',
          teleState: 'TX',
        },
        exams: [101],
        scenario: { type: 'gfe' },
      }),
    });
    if (res.status !== 201) throw new Error(`a journey for the recovery drill: HTTP ${res.status}`);
    victims.push(((await res.json()) as { journeyId: string }).journeyId);
  }
  await sleep(5_000);
  // A full backup first (as the daily one would have been), then T.
  await backups.backup('full');
  const inboxAtT = await scalar(su, 'SELECT count(*) FROM callback_inbox');
  await sleep(1_000);
  const target = new Date(await scalar(su, 'SELECT extract(epoch FROM clock_timestamp()) * 1000'));
  const openAtTLive = await scalar(temporalDb, 'SELECT count(*) FROM current_executions WHERE status = 1');
  await sleep(1_000);
  say(`T = ${target.toISOString()}; callbacks acknowledged after it, then the wrong journeys terminated...`);

  // After T: callbacks acknowledged to the victims (the exam service would not send them again).
  const secret = stackSecrets(stack.o.dataDir).webhookSecret;
  const acked: { journeyId: string; deliveryId: string }[] = [];
  for (let i = 0; i < 20; i++) {
    const journeyId = victims[i % victims.length]!;
    const res = await fetch(`${api}/webhooks/exam-service/${journeyId}/${webhookToken(journeyId, secret)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        event: 1,
        exam_id: '101',
        exam_status: 'Deferred to Medical Director',
        patient_exam_id: String(8_000_000 + i),
        questions_answers: [],
      }),
    });
    const body = (await res.json()) as { deliveryId?: string };
    if (res.status === 200 && body.deliveryId) acked.push({ journeyId, deliveryId: body.deliveryId });
  }
  // The mistake: a batch terminate of the wrong journeys.
  const connection = await Connection.connect({ address: stack.temporalAddress });
  const temporal = new TemporalClient({ connection, namespace: 'default' });
  for (const id of victims) await temporal.workflow.getHandle(journeyWorkflowId(id)).terminate('a mistake (drill)');
  await connection.close();
  // The WAL up to now in the archive.
  await backups.check();

  say('restoring the cluster to T into a new data folder...');
  const restoredUrlPort = await freePort();
  const restored = await backups.restoreToTime({
    target,
    dataDir: path.join(runDir, 'restored', 'data'),
    port: restoredUrlPort,
    database: 'journeys',
  });
  try {
    const r = restored.server.url;
    const tdb = withDatabase(r, 'temporal');
    const ids = victims.map((v) => journeyWorkflowId(v));
    const runningAgain = await scalar(
      tdb,
      'SELECT count(*) FROM current_executions WHERE workflow_id = ANY($1) AND status = 1',
      [ids],
    );
    const inboxRestored = await scalar(r, 'SELECT count(*) FROM callback_inbox');
    const ackedAfterTInRestore = await scalar(r, 'SELECT count(*) FROM callback_inbox WHERE delivery_id = ANY($1)', [
      acked.map((a) => a.deliveryId),
    ]).catch(() => Number.NaN);
    // What an operator is given: the journeys open at T (a superset of those that may have missed a callback).
    const openAtT = await scalar(tdb, 'SELECT count(*) FROM current_executions WHERE status = 1');
    const named = await scalar(
      tdb,
      'SELECT count(*) FROM current_executions WHERE status = 1 AND workflow_id = ANY($1)',
      [[...new Set(acked.map((a) => journeyWorkflowId(a.journeyId)))]],
    );
    if (openAtT !== openAtTLive) say(`open at T: ${openAtTLive} read live at T, ${openAtT} in the restore`);
    return {
      target: target.toISOString(),
      restoreMs: restored.restoreMs,
      recoveryMs: restored.recoveryMs,
      terminated: victims.length,
      runningAgain,
      inboxAtT,
      inboxRestored,
      ackedAfterT: acked.length,
      journeysAckedAfterT: new Set(acked.map((a) => a.journeyId)).size,
      ackedAfterTInRestore,
      openAtT,
      namedCoverAckedAfterT: named === new Set(acked.map((a) => a.journeyId)).size,
    };
  } finally {
    await restored.server.stop();
  }
}

async function documentDrill(stack: ProductionStack): Promise<DocumentReport> {
  const store = stack.objectStore!;
  const secrets = stackSecrets(stack.o.dataDir);
  const credentials = { accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey };
  const attachments = new S3AttachmentStore({
    bucket: 'journey-attachments',
    endpoint: store.endpoint,
    credentials,
    sealer: new RecordSealer(parseEncryptionKeys(secrets.payloadEncryptionKeys)),
  });
  const s3 = new S3Client({ region: 'us-east-1', endpoint: store.endpoint, forcePathStyle: true, credentials });
  try {
    const bytes = Buffer.from('%PDF-1.7 a lab result, deleted by mistake');
    const { ref } = await attachments.put(bytes, {
      kind: 'Lab',
      fileName: 'lab.pdf',
      contentType: 'application/pdf',
      clinicId: 'demo-clinic',
    });
    await s3.send(
      new DeleteObjectsCommand({
        Bucket: 'journey-attachments',
        Delete: { Objects: [{ Key: ref }, { Key: `${ref}.json` }] },
      }),
    );
    const t = Date.now();
    const restored = await attachments.undelete(ref);
    const ms = Date.now() - t;
    const back = await attachments.get(ref);
    return { restored, readable: back !== undefined && Buffer.from(back.bytes).equals(bytes), ms };
  } finally {
    attachments.close();
    s3.destroy();
  }
}

const secs = (ms: number) => (Number.isFinite(ms) ? `${(ms / 1000).toFixed(1)} s` : 'n/a');

export function reportSection(
  o: Options,
  f: FailoverReport,
  r: RecoveryReport,
  d: DocumentReport,
  problems: string[],
  cmd: string,
  finishedAt: Date,
): string {
  const refused = Object.entries(f.callbacks.refused)
    .map(([s, n]) => `${n} × ${s === 'none' ? 'no answer' : s}`)
    .join(', ');
  return `${BEGIN}
## Disaster drill: the database host lost, and an operator's mistake undone

\`${cmd}\`, finished ${finishedAt.toISOString()}; ${problems.length === 0 ? 'passed' : `**failed** (${problems.length} problems below)`}.
- Machine: ${machineDescription()}
- PostgreSQL: a primary and a synchronous standby (Patroni 3.0 with a three-member etcd 3.4, HAProxy checking
  \`GET /primary\`), the WAL archived and full backups taken by pgBackRest 2.45 into an object store of their own
  (${POSTGRES_FULL_BACKUPS_KEPT} full backups kept, each with the WAL after it).

### 1. Failover under load

${f.parked.total} journeys parked in every wait state, ${f.journeys.started} started during the run (one every
second or so, each a test-mode patient the sandbox approves), callbacks at ${o.rate}/s to ${o.loadJourneys} journeys
waiting for their consultation; after ${secs(o.beforeKillMs)}, every process of the primary's node (${f.killed.node}:
${f.killed.processes} processes: its etcd member, Patroni, the postmaster and its children) SIGKILLed; the load went on
${secs(o.afterKillMs)} more.

| Measured | |
|---|---|
| Acknowledged callbacks lost | **${f.callbacks.lost}** of ${f.callbacks.acked} acknowledged (${f.callbacks.due} due; every one refused was sent again until acknowledged) |
| Refused answers (sent again) | ${refused || 'none'} |
| Longest time without an acknowledgement | **${secs(f.callbacks.longestGapMs)}** (from ${secs(f.callbacks.longestGapFromKillMs)} after the kill) |
| Without a primary | ${secs(f.noPrimaryMs)} (until ${f.newPrimary} was named) |
| Journeys moving again | **${secs(f.movingAgainMs)}** after the kill (the first callback acknowledged after the gap, applied by its journey); a journey started after the gap invited ${secs(f.firstInviteAfterGapMs)} after the kill |
| Slowest callback, acknowledgement to applied | ${secs(f.callbacks.slowestAppliedMs)} |
| Journeys ended right | ${f.journeys.endedRight} of ${f.journeys.started} (${f.journeys.startRefusals} start request${f.journeys.startRefusals === 1 ? '' : 's'} refused and sent again with their Idempotency-Key) |
| Double invites | **${f.journeys.doubleInvites}** |
| Parked journeys where they were | ${f.parked.inPlace} of ${f.parked.total} |
| Audit chain afterwards | ${f.audit.ok ? 'whole' : `**broken**: ${f.audit.problem ?? ''}`} (${f.audit.records} records; ${f.audit.adminReads} admin reads during the run, each recorded before it was answered) |
| The old primary back as the standby | ${secs(f.rejoinedMs)} |

Goals: 0 acknowledged callbacks lost, acknowledgements back within 30 s, journeys moving again within 60 s.

### 2. Point-in-time recovery

T noted (${r.target}), ${r.ackedAfterT} callbacks acknowledged after it to ${r.journeysAckedAfterT} journeys, then the
mistake: ${r.terminated} journeys terminated by a batch. The cluster restored to T into a new data folder (pgBackRest:
the last full backup, then the archived WAL up to T).

| Measured | |
|---|---|
| Restore (files) | ${secs(r.restoreMs)} |
| Recovery to T, until it takes writes | ${secs(r.recoveryMs)} |
| The terminated journeys, in the restore | ${r.runningAgain} of ${r.terminated} running again |
| The callback inbox | ${r.inboxRestored} rows, as at T (${r.inboxAtT}) |
| Callbacks acknowledged after T, in the restore | ${r.ackedAfterTInRestore} of ${r.ackedAfterT}: what a restore cannot know |
| Journeys named for an operator | the ${r.openAtT} open at T (each may have missed a callback after T); they ${r.namedCoverAckedAfterT ? 'include' : '**do not include**'} every journey that did |

The exam service does not send a callback twice once it got a 200, and cannot be asked for an exam's status: after a
restore, an operator checks the journeys open at T with the clinic (the exam service's portal shows each exam's
state) and acts on them through the admin API.

### 3. A document restored

A document deleted by mistake (a plain delete in the attachments' bucket, not the engine's), brought back from the
bucket's versions (kept ${ATTACHMENTS_KEEP_DELETED_DAYS} days): ${d.restored && d.readable ? `back and readable, in ${d.ms} ms` : '**not brought back**'}.
${problems.length === 0 ? '' : `\n### Problems\n\n${problems.map((p) => `- ${p}`).join('\n')}\n`}${END}`;
}

async function main(argv: string[]): Promise<number> {
  let o: Options;
  try {
    const { values } = parseCommandLine(argv, {
      rate: { type: 'string' },
      'load-journeys': { type: 'string' },
      'per-state': { type: 'string' },
      'after-kill': { type: 'string' },
      'port-base': { type: 'string' },
      keep: { type: 'boolean' },
      'no-doc': { type: 'boolean' },
    });
    const int = (name: string, v: string | undefined, fallback: number, min: number) => {
      const n = v === undefined ? fallback : Number(v);
      if (!Number.isInteger(n) || n < min) throw new UsageError(`--${name} must be a whole number from ${min}`);
      return n;
    };
    o = {
      rate: int('rate', values.rate, 100, 1),
      loadJourneys: int('load-journeys', values['load-journeys'], 200, 1),
      perState: int('per-state', values['per-state'], 2, 1),
      beforeKillMs: 20_000,
      afterKillMs: int('after-kill', values['after-kill'], 60, 10) * 1000,
      portBase: int('port-base', values['port-base'], 22_600, 1_024),
      keep: values.keep === true,
      writeDoc: values['no-doc'] !== true,
    };
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    console.error(
      `${err.message}\n\nUsage: npm run drill:disaster -- [--rate N] [--load-journeys N] [--per-state N] [--after-kill S] [--port-base P] [--keep] [--no-doc]`,
    );
    return 2;
  }
  const say = (line: string) => console.log(`[drill] ${line}`);
  const runDir = mkdtempSync(path.join(os.tmpdir(), 'drill-disaster-'));
  const stack = new ProductionStack({
    dataDir: runDir,
    ports: await freeProductionPorts(o.portBase, 31_000, { cluster: true }),
    workers: 2,
    database: 'cluster',
    supervise: true,
    engineEnv: { API_RATE_LIMIT_PER_MINUTE: '1000000' },
    // The sandbox, as the exam service, sends a callback it got no 200 for again, for minutes.
    sandboxEnv: { SANDBOX_CALLBACK_RETRIES: '8', SANDBOX_CALLBACK_RETRY_BASE_MS: '1000' },
    log: (l) => say(`stack: ${l}`),
  });
  await guardDrillStack({
    dataDir: runDir,
    ports: productionStackPorts(stack.o.ports, 2, false, true),
    stop: () => stack.stop(),
    say,
  });
  let problems: string[] = [];
  try {
    say(`starting the production topology on a PostgreSQL cluster in ${runDir}...`);
    await stack.start();
    const failover = await failoverDrill(stack, {
      ...o,
      startEveryMs: 1_000,
      parkPerState: o.perState,
      runId: runIdOf(),
      say,
    });
    const recovery = await recoveryDrill(stack, runDir, say);
    const document = await documentDrill(stack);
    problems = [...failover.problems];
    if (recovery.runningAgain !== recovery.terminated)
      problems.push('the restore did not bring the terminated journeys back');
    if (recovery.inboxRestored !== recovery.inboxAtT) problems.push('the restored inbox is not the inbox at T');
    if (!recovery.namedCoverAckedAfterT)
      problems.push('the journeys named after the restore miss one that got a callback after T');
    if (!document.restored || !document.readable) problems.push('the document was not brought back');
    const args = argv.join(' ');
    const section = reportSection(
      o,
      failover,
      recovery,
      document,
      problems,
      `npm run drill:disaster${args ? ` -- ${args}` : ''}`,
      new Date(),
    );
    console.log(`\n${section}\n`);
    if (o.writeDoc) {
      const file = path.join(ROOT, 'docs', 'reliability.md');
      writeFileSync(file, withSection(existsSync(file) ? readFileSync(file, 'utf8') : '', BEGIN, END, section));
      console.log(`written to ${path.relative(process.cwd(), file)}`);
    }
    console.log(problems.length === 0 ? 'disaster drill passed' : `disaster drill FAILED:\n- ${problems.join('\n- ')}`);
    return problems.length === 0 ? 0 : 1;
  } finally {
    await stack.stop();
    if (problems.length === 0 && !o.keep) rmSync(runDir, { recursive: true, force: true });
    else say(`the run folder is kept: ${runDir}`);
  }
}

if (require.main === module) exitWith(() => main(process.argv.slice(2)));
