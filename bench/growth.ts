// `npm run bench:growth`: how the engine's costs grow with the number of journeys waiting, on the production topology
// (ProductionStack: the Temporal server on PostgreSQL, the PostgreSQL callback inbox, the patient keys and the audit
// trail in PostgreSQL, MinIO, HAProxy in front of the API; no identity provider). It parks GFE journeys in steps, each
// a real journey with the timers the journey sets (its reminders and its consultation deadline) waiting in
// awaiting_consultation, and at each step measures:
//   - PostgreSQL bytes per parked journey (pg_total_relation_size of every table of Temporal's two databases, the
//     inbox, the patient keys and the audit trail);
//   - the clinic API's start latency (200 starts through POST /v1/journeys), its list (the first page and a page deep
//     into the list) and `count` by clinic and by stage (the admin API's search: the clinic API has no count route);
//   - an operator's batch query as `npm run ops` makes it (its dry run, and the listing a batch action makes);
//   - a wave of reminders: a share of the step's journeys (--wave-share, 10 %) parked last with their one reminder
//     due at about one moment, and how late each fired (bench/lib/growth-wave.ts);
//   - callbacks: the oldest parked journeys (--wake, 200) sent their event 1 at once, and how fast they were applied;
//   - the worker's and the Temporal server's RSS, and how long parking the step took.
// Journeys are parked straight through the Temporal client (bench/lib/growth-park.ts), each bound to its patient's
// key first as the API binds it, at most a window ahead of those parked. A step may be reached across runs: with
// --data-dir <dir> kept, the next run counts what is parked there and parks only the rest.
//
//   npm run bench:growth                                  steps 1000,10000,30000,100000: hours (parking ran at
//                                                         20-25 journeys/s at 1,000 on the 2-core machine)
//   npm run bench:growth -- --steps 200,1000              small (development): about 2 minutes
//   npm run bench:growth -- --data-dir /var/tmp/growth --steps 30000   park on in a kept data folder
//   npm run bench:growth -- --out docs/performance.md     also replace the section between the growth markers there
//   Options: --database single|cluster  --workers 1  --api-starts 200  --api-concurrency 4  --samples 20
//            --deep-pages 50  --concurrency 50  --window 400  --port-base 24000  --keep-data
//            --wave-share 0.1  --wake 200  --svg-dir <dir> (with --out: docs/)
//   npm run bench:growth -- --from <run>/growth.json --out docs/performance.md   render a run's report again
// The results go to the run folder (a fresh folder under /tmp, printed at the end): growth.json, growth.md, logs/.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Client } from '@temporalio/client';
import { loadConfig } from '../src/config';
import { journeyWorkflowId } from '../src/contract/definitions';
import { freeProductionPorts, ProductionStack } from '../scripts/lib/production-stack';
import { DEMO_CLINIC_ID, DEMO_CLINIC_TOKEN, stackSecrets } from '../scripts/lib/stack-secrets';
import { cpuSeconds, killAllNow, ROOT, rssBytes, sleep, treeCpuSeconds } from '../scripts/lib/processes';
import { countWorkflows, waitForCount } from './lib/journeys';
import { describeMachine, loadAverage } from './lib/machine';
import { parkingClient, parkThroughClient, type ParkingClient } from './lib/growth-park';
import { adminCount, apiStarts, clinicList, opsQuery, tableBytes, walPosition } from './lib/growth-measure';
import { measureWave, wakeOldest, type WakeResult, type WaveResult } from './lib/growth-wave';
import {
  renderGrowthSection,
  renderGrowthSvgs,
  withGrowthSection,
  type GrowthRun,
  type GrowthStep,
} from './lib/growth-report';

interface Options {
  steps: number[];
  database: 'single' | 'cluster';
  dataDir: string | undefined;
  keepData: boolean;
  out: string | undefined;
  workers: number;
  apiStarts: number;
  apiConcurrency: number;
  samples: number;
  deepPages: number;
  concurrency: number;
  window: number;
  portBase: number;
  waveShare: number;
  wake: number;
  svgDir: string | undefined;
  from: string | undefined;
}

export function parseGrowthOptions(argv: string[]): Options {
  const { values: v } = parseArgs({
    args: argv,
    strict: true,
    options: {
      steps: { type: 'string', default: '1000,10000,30000,100000' },
      database: { type: 'string', default: 'single' },
      'data-dir': { type: 'string' },
      'keep-data': { type: 'boolean', default: false },
      out: { type: 'string' },
      workers: { type: 'string', default: '1' },
      'api-starts': { type: 'string', default: '200' },
      'api-concurrency': { type: 'string', default: '4' },
      samples: { type: 'string', default: '20' },
      'deep-pages': { type: 'string', default: '50' },
      concurrency: { type: 'string', default: '50' },
      window: { type: 'string', default: '400' },
      'port-base': { type: 'string', default: '24000' },
      'wave-share': { type: 'string', default: '0.1' },
      wake: { type: 'string', default: '200' },
      'svg-dir': { type: 'string' },
      from: { type: 'string' },
    },
  });
  const int = (name: string, value: string, min = 1) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name}: a whole number of at least ${min}, not ${value}`);
    return n;
  };
  const steps = v.steps.split(',').map((s) => int('steps', s.trim().replace(/_/g, '')));
  if (steps.some((s, i) => i > 0 && s <= steps[i - 1]!)) throw new Error('--steps: increasing, e.g. 1000,10000');
  if (v.database !== 'single' && v.database !== 'cluster') {
    throw new Error(`--database: single or cluster, not ${v.database}`);
  }
  const waveShare = Number(v['wave-share']);
  if (!(waveShare >= 0 && waveShare <= 0.5)) throw new Error(`--wave-share: from 0 to 0.5, not ${v['wave-share']}`);
  const out = v.out ? path.resolve(v.out) : undefined;
  return {
    steps,
    database: v.database,
    dataDir: v['data-dir'] ? path.resolve(v['data-dir']) : undefined,
    keepData: v['keep-data'],
    out,
    workers: int('workers', v.workers),
    apiStarts: int('api-starts', v['api-starts'], 0),
    apiConcurrency: int('api-concurrency', v['api-concurrency']),
    samples: int('samples', v.samples),
    deepPages: int('deep-pages', v['deep-pages']),
    concurrency: int('concurrency', v.concurrency),
    window: int('window', v.window),
    portBase: int('port-base', v['port-base'], 1024),
    waveShare,
    wake: int('wake', v.wake, 0),
    svgDir: v['svg-dir'] ? path.resolve(v['svg-dir']) : out ? path.join(ROOT, 'docs') : undefined,
    from: v.from ? path.resolve(v.from) : undefined,
  };
}

/** What a kept data folder remembers between runs. */
interface DataState {
  database: Options['database'];
  /** PostgreSQL's bytes before the first journey was parked (the empty tables). */
  baselineBytes?: number;
  created: string;
}

const CLINIC = DEMO_CLINIC_ID;
const STAGE = 'awaiting_consultation';
const parkedQuery = `WorkflowType = 'patientJourney' AND ClinicId = '${CLINIC}' AND JourneyStage = '${STAGE}' AND ExecutionStatus = 'Running'`;
const attentionQuery = `WorkflowType = 'patientJourney' AND ClinicId = '${CLINIC}' AND ExecutionStatus = 'Running' AND NeedsAttention = true`;
const notRunningQuery = `WorkflowType = 'patientJourney' AND ClinicId = '${CLINIC}' AND ExecutionStatus != 'Running'`;
/** How long a step waits for its wave of reminders to pass, and its callbacks to be applied, at most. */
const WAKE_TIMEOUT_MS = 10 * 60_000;

const loadLine = () => {
  const l = loadAverage();
  return [l.one, l.five, l.fifteen].map((x) => x.toFixed(2)).join(' / ');
};

async function main() {
  const o = parseGrowthOptions(process.argv.slice(2));
  const log = (line: string) => console.log(`[growth] ${new Date().toISOString().slice(11, 19)} ${line}`);
  if (o.from) {
    // The report of a run already made (its growth.json), rendered again: nothing is started or measured.
    const run = JSON.parse(readFileSync(o.from, 'utf8')) as GrowthRun;
    run.options.svgDir = o.svgDir ? 'given' : 'none';
    writeOut(run, o, log);
    return;
  }
  const runDir = mkdtempSync(path.join(os.tmpdir(), 'journeys-growth-'));
  const dataDir = o.dataDir ?? path.join(runDir, 'data');
  const keep = o.keepData || o.dataDir !== undefined;
  const stackDir = path.join(dataDir, 'stack');
  mkdirSync(stackDir, { recursive: true });
  const stateFile = path.join(dataDir, 'growth-state.json');
  const state: DataState = existsSync(stateFile)
    ? (JSON.parse(readFileSync(stateFile, 'utf8')) as DataState)
    : { database: o.database, created: new Date().toISOString() };
  if (state.database !== o.database) {
    throw new Error(`${dataDir} holds a ${state.database} database; run with --database ${state.database}`);
  }
  const saveState = () => writeFileSync(stateFile, JSON.stringify(state, null, 2));
  saveState();
  const m = describeMachine();
  const run: GrowthRun = {
    began: new Date().toISOString(),
    machine: `${m.cpuModel}, ${m.cores} cores, ${m.memTotalGiB.toFixed(0)} GiB, Node ${m.node}`,
    loadBefore: loadLine(),
    database: o.database,
    workers: o.workers,
    clinicId: CLINIC,
    options: { ...o, dataDir: o.dataDir ? 'given' : 'fresh', svgDir: o.svgDir ? 'given' : 'none' },
    steps: [],
    errors: [],
  };
  const runTag = Date.now().toString(36);
  const write = () => {
    writeFileSync(path.join(runDir, 'growth.json'), `${JSON.stringify(run, null, 2)}\n`);
    writeFileSync(path.join(runDir, 'growth.md'), `${renderGrowthSection(run)}\n`);
  };
  log(`run folder ${runDir}; data folder ${dataDir}${keep ? ' (kept)' : ''}`);
  const onSignal = () => process.exit(130);
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  const ports = await freeProductionPorts(o.portBase, o.portBase + 900, {
    replicas: o.workers,
    workerMetrics: true,
    cluster: o.database === 'cluster',
  });
  const stack = new ProductionStack({
    dataDir: stackDir,
    ports,
    workers: o.workers,
    supervise: false,
    database: o.database,
    sandboxEnv: { SANDBOX_HOST: '127.0.0.1' },
    engineEnv: { API_RATE_LIMIT_PER_MINUTE: '1000000', LOG_LEVEL: 'warn' },
    log: (line) => log(`stack: ${line}`),
  });
  let parking: ParkingClient | undefined;
  try {
    log(`starting the production stack (${o.database} PostgreSQL, ${o.workers} worker(s))...`);
    await stack.start();
    const secrets = stackSecrets(stackDir);
    const config = loadConfig({
      DATA_DIR: path.join(dataDir, 'client'),
      TEMPORAL_ADDRESS: stack.temporalAddress,
      CLINICS_FILE: path.join(stackDir, 'clinics.json'),
      WEBHOOK_SECRET: secrets.webhookSecret,
      PAYLOAD_ENCRYPTION_KEYS: secrets.payloadEncryptionKeys,
      PATIENT_KEY_STORE: 'off',
    });
    parking = await parkingClient(stack, config);
    const client = parking.client;
    // Histories read as they are, without the payload codec (only events' types and times are read).
    const historyReader = new Client({ connection: client.connection, namespace: config.temporal.namespace });
    const superuserUrl = stack.superuserUrl;
    const count = (q: string) => countWorkflows(client, q);

    const initially = await count(parkedQuery);
    if (initially === 0 && state.baselineBytes === undefined) {
      state.baselineBytes = (await tableBytes(superuserUrl)).total;
      saveState();
      log(`PostgreSQL's tables hold ${(state.baselineBytes / 2 ** 20).toFixed(1)} MiB before any journey`);
    }
    log(`${initially} journeys parked already`);
    // Journeys this run woke with their callback (ended as planned, not an error), and the rate parking ran at.
    let woken = await count(notRunningQuery);
    const wokenIds = new Set<string>();
    let rate = 20;

    for (const [index, target] of o.steps.entries()) {
      const already = await count(parkedQuery);
      const clientN = Math.max(0, target - already - o.apiStarts);
      // The wave comes out of the journeys this step parks through the client, parked last.
      const waveN = Math.min(clientN, Math.round(o.waveShare * target));
      const firstN = clientN - waveN;
      log(
        `step ${target}: ${already} parked; ${clientN} through the client (${waveN} of them a reminder wave), ` +
          `${o.apiStarts} through the API`,
      );
      const t0 = performance.now();
      const wal0 = await walPosition(superuserUrl).catch(() => NaN);
      const cpu0 = await cpuByPart(stack);
      const ids = Array.from({ length: clientN }, (_, i) => `gr${runTag}s${index}n${String(i).padStart(6, '0')}`);
      const park = async (some: string[], remindAt?: number) => {
        const r = await parkThroughClient(parking!, config, {
          ids: some,
          clinicId: CLINIC,
          parkedQuery,
          concurrency: o.concurrency,
          window: o.window,
          ...(remindAt !== undefined ? { remindAt } : {}),
          log,
        });
        if (r.failed > 0) run.errors.push(`step ${target}: ${r.failed} client starts failed (first: ${r.firstError})`);
        return r.started - r.failed;
      };
      if (firstN > 0) {
        const ok = await park(ids.slice(0, firstN));
        await waitParked(client, already + ok, run, target, log);
      }
      const afterClient = await count(parkedQuery);
      const parkedByClientAt = performance.now();
      if (firstN >= 200) rate = (afterClient - already) / ((parkedByClientAt - t0) / 1000);
      const apiStart = await apiStarts(
        stack.apiUrl,
        DEMO_CLINIC_TOKEN,
        `growth-${runTag}-${index}`,
        o.apiStarts,
        o.apiConcurrency,
      );
      log(
        `step ${target}: API start p50 ${apiStart.p50.toFixed(1)} ms, p99 ${apiStart.p99.toFixed(1)} ms, ${apiStart.refused} refused`,
      );
      await waitParked(client, afterClient + o.apiStarts - apiStart.refused, run, target, log);
      // The wave: due once its journeys are parked (at the rate parking ran, with room to spare) and a minute more.
      let remindAt: number | undefined;
      let waveIds: string[] = [];
      if (waveN > 0) {
        waveIds = ids.slice(firstN);
        remindAt = Date.now() + (waveN / Math.max(rate, 1)) * 1.2 * 1000 + 60_000;
        log(
          `step ${target}: ${waveN} journeys with a reminder due at ${new Date(remindAt).toISOString().slice(11, 19)}`,
        );
        const before = await count(parkedQuery);
        const ok = await park(waveIds, remindAt);
        await waitParked(client, before + ok, run, target, log);
      }
      const parkSeconds = (performance.now() - t0) / 1000;
      const walParked = (await walPosition(superuserUrl).catch(() => NaN)) - wal0;
      const cpuParked = cpuSpent(cpu0, await cpuByPart(stack));
      // The last workflow tasks settle before anything is measured.
      await sleep(3_000);
      const journeys = await count(parkedQuery);
      const parkedNow = journeys - already;
      if (clientN > 0) {
        const s = (parkedByClientAt - t0) / 1000;
        log(
          `step ${target}: ${afterClient - already} parked through the client in ${s.toFixed(1)} s (${((afterClient - already) / s).toFixed(1)}/s)`,
        );
      }
      log(`step ${target}: ${journeys} parked (${parkedNow} by this run in ${parkSeconds.toFixed(1)} s); measuring...`);
      // A measurement that fails is an error of the run, its figures missing: the steps after it still run.
      const attempt = async <T>(what: string, fn: () => Promise<T>, missing: T): Promise<T> => {
        try {
          return await fn();
        } catch (err) {
          const why = err instanceof Error ? err.message : String(err);
          run.errors.push(`step ${target}: ${what} failed: ${why.slice(0, 300)}`);
          log(`step ${target}: ${what} failed: ${why.slice(0, 300)}`);
          return missing;
        }
      };
      let wave: WaveResult | undefined;
      if (remindAt !== undefined) {
        const at = remindAt;
        log(`step ${target}: waiting for the reminder wave (${waveIds.length} journeys)...`);
        wave = await attempt(
          'the reminder wave',
          () => measureWave(historyReader, waveIds.map(journeyWorkflowId), at, { timeoutMs: WAKE_TIMEOUT_MS, log }),
          undefined,
        );
        if (wave) {
          log(
            `step ${target}: reminder wave ${wave.fired}/${wave.journeys} fired, due within ${wave.dueSpreadMs.toFixed(0)} ms; ` +
              `resend late p50 ${wave.sentLate.p50.toFixed(0)} / p99 ${wave.sentLate.p99.toFixed(0)} / max ${wave.sentLate.max.toFixed(0)} ms`,
          );
          if (wave.fired < wave.journeys) {
            run.errors.push(
              `step ${target}: ${wave.journeys - wave.fired} reminders of the wave not found fired in time`,
            );
          }
        }
      }
      const none = { n: 0, p50: NaN, p99: NaN };
      const bytes = await attempt('PostgreSQL bytes', () => tableBytes(superuserUrl), {
        total: NaN,
        byDatabase: {},
        largest: [],
      });
      if (state.baselineBytes !== undefined) bytes.baseline = state.baselineBytes;
      // Half-way into the list (pages of 100), at most --deep-pages in; the first page itself below 200 journeys.
      const depth = Math.min(o.deepPages, Math.floor(journeys / 100 / 2));
      const list = await attempt(
        'the clinic list',
        () => clinicList(stack.apiUrl, DEMO_CLINIC_TOKEN, o.samples, depth),
        {
          first: none,
          deep: { ...none, page: depth + 1, pageSize: 100 },
        },
      );
      const countOf = (what: string, query: string) =>
        attempt(what, () => adminCount(stack.apiUrl, stack.adminToken, CLINIC, query, o.samples), {
          ...none,
          value: null,
        });
      const byClinic = await countOf('the count by clinic', `WorkflowType = 'patientJourney'`);
      const byStage = await countOf('the count by stage', `JourneyStage = '${STAGE}'`);
      const opsFilter = `JourneyStage = '${STAGE}'`;
      const ops = await attempt(
        "the operator's batch query",
        () => opsQuery(stack.apiUrl, stack.adminToken, CLINIC, opsFilter, o.samples),
        { query: opsFilter, dryRun: none, listAll: { ms: NaN, matched: 0, pages: 0 } },
      );
      const workerRss = await Promise.all(stack.workers.map(async (w) => (await rssBytes(w.pid)) ?? NaN));
      const temporalRss = await Promise.all(
        (stack.temporal?.nodes ?? []).map(async (n) => (n.pid === undefined ? NaN : ((await rssBytes(n.pid)) ?? NaN))),
      );
      let wake: WakeResult | undefined;
      let walPerCallback: number | undefined;
      let cpuPerCallback: Record<string, number> | undefined;
      let bytesPerCallback: number | undefined;
      if (o.wake > 0) {
        const walBefore = await walPosition(superuserUrl).catch(() => NaN);
        const cpuBefore = await cpuByPart(stack);
        const bytesBefore = Number.isFinite(bytes.total) ? bytes.total : undefined;
        log(`step ${target}: the oldest ${o.wake} parked journeys sent their event 1...`);
        wake = await attempt(
          'the callbacks',
          () =>
            wakeOldest(client, {
              sandboxUrl: stack.sandboxUrl,
              apiUrl: stack.apiUrl,
              webhookSecret: secrets.webhookSecret,
              n: o.wake,
              woken: wokenIds,
              endedQuery: notRunningQuery,
              timeoutMs: WAKE_TIMEOUT_MS,
            }),
          undefined,
        );
        if (wake) {
          for (const id of wake.ids ?? []) wokenIds.add(id);
          delete wake.ids;
          woken += wake.applied;
          walPerCallback = ((await walPosition(superuserUrl).catch(() => NaN)) - walBefore) / wake.applied;
          cpuPerCallback = perEach(cpuSpent(cpuBefore, await cpuByPart(stack)), wake.applied);
          const bytesAfter = await tableBytes(superuserUrl).catch(() => undefined);
          if (bytesBefore !== undefined && bytesAfter)
            bytesPerCallback = (bytesAfter.total - bytesBefore) / wake.applied;
          log(
            `step ${target}: callbacks ${wake.applied}/${wake.journeys} applied, ${wake.perSecond.toFixed(1)}/s; ` +
              `the last after ${wake.appliedAfter.max.toFixed(0)} ms`,
          );
          if (wake.applied < wake.journeys) {
            run.errors.push(`step ${target}: ${wake.journeys - wake.applied} callbacks not applied in time`);
          }
        }
      }
      const step: GrowthStep = {
        target,
        journeys,
        parkedNow,
        parkSeconds,
        apiStart,
        bytes,
        list,
        count: { byClinic, byStage },
        ops,
        workerRss,
        temporalRss,
        cpu: { perJourney: perEach(cpuParked, parkedNow), ...(cpuPerCallback ? { perCallback: cpuPerCallback } : {}) },
        wal: {
          perJourney: walParked / parkedNow,
          ...(walPerCallback !== undefined && Number.isFinite(walPerCallback) ? { perCallback: walPerCallback } : {}),
          ...(bytesPerCallback !== undefined ? { tablesPerCallback: bytesPerCallback } : {}),
        },
        ...(wave ? { wave } : {}),
        ...(wake ? { wake } : {}),
        at: new Date().toISOString(),
      };
      run.steps.push(step);
      const attention = await count(attentionQuery).catch(() => NaN);
      const ended = await count(notRunningQuery).catch(() => NaN);
      if (attention > 0 || ended > woken) {
        run.errors.push(
          `step ${target}: ${attention} journeys wait for an operator, ${ended - woken} have ended without their callback`,
        );
      }
      log(
        `step ${target}: ${(bytes.total / journeys / 1024).toFixed(1)} KiB per journey; list ${list.first.p50.toFixed(1)} / ` +
          `page ${list.deep.page} ${list.deep.p50.toFixed(1)} ms; count ${byClinic.p50.toFixed(1)} / ${byStage.p50.toFixed(1)} ms; ` +
          `ops dry run ${ops.dryRun.p50.toFixed(1)} ms, listing ${ops.listAll.matched} in ${ops.listAll.ms.toFixed(0)} ms; ` +
          `worker RSS ${workerRss.map((r) => (r / 2 ** 20).toFixed(0)).join(', ')} MiB`,
      );
      write();
    }
  } catch (err) {
    run.errors.push(err instanceof Error ? err.message : String(err));
    throw err;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await parking?.close();
    log('stopping the stack');
    await stack.stop().catch((err: unknown) => log(`the stack's stop: ${String(err)}`));
    killAllNow();
    run.finished = new Date().toISOString();
    run.loadAfter = loadLine();
    write();
    if (!keep) {
      // The logs stay with the results; the data goes.
      const logs = path.join(stackDir, 'logs');
      if (existsSync(logs)) renameSync(logs, path.join(runDir, 'logs'));
      rmSync(dataDir, { recursive: true, force: true });
    }
    log(`results in ${runDir} (growth.json, growth.md${keep ? '' : ', logs/'})`);
  }
  writeOut(run, o, log);
}

/** The report (with --out: the section, bench/growth-last.json) and the charts (--svg-dir). */
function writeOut(run: GrowthRun, o: Options, log: (line: string) => void) {
  if (o.out) {
    const section = renderGrowthSection(run);
    writeFileSync(o.out, withGrowthSection(existsSync(o.out) ? readFileSync(o.out, 'utf8') : '', section));
    writeFileSync(path.join(ROOT, 'bench/growth-last.json'), `${JSON.stringify(run, null, 2)}\n`);
    log(`written to ${path.relative(ROOT, o.out)} and bench/growth-last.json`);
  }
  if (o.svgDir) {
    const svgs = renderGrowthSvgs(run);
    mkdirSync(o.svgDir, { recursive: true });
    writeFileSync(path.join(o.svgDir, 'growth-latency.svg'), svgs.latency);
    writeFileSync(path.join(o.svgDir, 'growth-size.svg'), svgs.size);
    log(`charts in ${o.svgDir} (growth-latency.svg, growth-size.svg)`);
  }
}

/** CPU seconds each part of the stack has used so far (the workers, the Temporal server, the API, PostgreSQL). */
async function cpuByPart(stack: ProductionStack): Promise<Record<string, number>> {
  const total = async (pids: (number | undefined)[], read = cpuSeconds) =>
    (await Promise.all(pids.map(async (pid) => (await read(pid)) ?? NaN))).reduce((a, b) => a + b, 0);
  return {
    worker: await total(stack.workers.map((w) => w.pid)),
    temporal: await total((stack.temporal?.nodes ?? []).map((n) => n.pid)),
    api: await total(stack.apis.map((a) => a.pid)),
    // The postmaster and its backends, those that exited too (a single server; a cluster's are not counted).
    postgres: stack.postgres ? await total([stack.postgres.pid], treeCpuSeconds) : NaN,
  };
}

const cpuSpent = (a: Record<string, number>, b: Record<string, number>) =>
  Object.fromEntries(Object.entries(b).map(([k, v]) => [k, v - (a[k] ?? NaN)]));

/** CPU seconds spent over `n` things, in milliseconds each. */
const perEach = (spent: Record<string, number>, n: number) =>
  Object.fromEntries(Object.entries(spent).map(([k, v]) => [k, n > 0 ? (v * 1000) / n : NaN]));

/** Waits until `target` journeys are parked (10 minutes at most); a shortfall is an error of the run, not fatal. */
async function waitParked(
  client: ParkingClient['client'],
  target: number,
  run: GrowthRun,
  step: number,
  log: (line: string) => void,
): Promise<void> {
  try {
    await waitForCount(client, parkedQuery, target, 600_000, undefined, 2_000);
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    run.errors.push(`step ${step}: not every journey parked in time (${why})`);
    log(`step ${step}: ${why}`);
  }
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : err);
    process.exit(1);
  });
}
