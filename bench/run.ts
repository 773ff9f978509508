// `npm run bench`: the engine's performance on this machine, every comparison made within one run so the machine's
// noise hits both sides alike. Starts its own stack on ports 22000-22999 (Temporal dev server, sandbox, worker, API,
// and a PostgreSQL for the API's PostgreSQL callback inbox, each a child process) in a fresh folder under /tmp, runs
// the phases, stops everything it started (also on failure, Ctrl-C or the hard time limit) and writes
// docs/performance.md and docs/webhook-latency.svg.
//
//   npm run bench                                   everything, 45 to 52 minutes on a 2-core machine (the waiting
//                                                   phase takes what the hard limit leaves it)
//   npm run bench -- --quick                        small sizes, about 10-12 minutes (development); its inbox part
//                                                   (--quick --only webhook,burst,outage) about 6-7 minutes
//   npm run bench -- --only webhook,burst,outage    some phases (the report then goes to the work folder):
//                                                   cold, tests, alone, layers, webhook, burst, outage,
//                                                   throughput, tuning, waiting
//   npm run bench -- --only tests --npm-test full   a whole `npm test`, kept in bench/npm-test-full.json
//   npm run bench -- --only sustained --out docs/performance.md
//                                                   the sustained load (opt-in, never in a run without --only):
//                                                   each rate held for minutes per store, about an hour with the
//                                                   defaults; only its section of the report (and
//                                                   sustained-inbox-depth.svg beside it) is replaced
//
// layers = the acknowledgement's layers, each left out in turn (bench/ack-layers.ts: the API alone as deployed, a fake
// Temporal), for each store, before the stack starts: the report's per-layer table and its cost target.
// webhook, burst and outage run for each inbox store in turn (--stores), the API restarted on it: webhook = the
// levels with Temporal up beside the bare route and the store's floor (the bare route with one durable write,
// bench/bare-server.ts); burst = 200 simultaneous callbacks, Temporal up (beside both) and stopped; outage = the levels with Temporal stopped, its restart, the forwarder's drain, Temporal's raw signal rate. After
// them, every parked journey's snapshot: ack -> applied per level, and each acknowledged callback applied once.
//
// At the end it prints each target against the last committed report's (docs/performance.md at HEAD; of an earlier
// run when HEAD's is this run's own, or the newest measured on this run's CPU when HEAD's is another CPU's), the report gets the same as a section after its Targets, and the last line names
// every regression: a target met then and missed now, or worse by more than 25 % and a margin (bench/lib/regression.ts).
// Targets a partial run did not reach are "not measured in this run", never regressions.
//
// Options: --levels 100,500,1000  --level-seconds 6  --warmup-seconds 2  --hook-journeys 200  --burst-repeats 3
//          --stores files,postgres  --postgres synchronous|single (the postgres inbox's PostgreSQL: a primary with a
//          synchronous standby under Patroni, through HAProxy, as npm run start:production runs it; or one server)
//          --throughput-journeys 300  --throughput-rounds 4 (raw, visible, GFE; then the mirror order; and again)
//          --start-concurrency 50  --waiting-journeys 10000
//          --provider-delay-ms 1000  --background-nice 10 (the Temporal server, worker and sandbox; 0: equal weights)
//          --background-cpu group|nice (group: those processes also in a cpu cgroup of the lowest weight, where one can be made)
//          --npm-test first|full|skip  --timeout-minutes 40 (the phases before the waiting journeys took 38 minutes on
//          a slower 2-core machine; what is left parks and wakes the 10,000)  --port-base 22200
//          --worker-memory-mib 1024 (the worker in a memory cgroup of this limit; default: the Helm chart's worker
//          limit, as its container runs it; 0: none, the host's memory)
//          --out <md>  --svg <svg>  --keep-data
//          --temporal-store memory|disk (the Temporal dev server's SQLite file in /dev/shm, the default, as a
//          deployment's Temporal keeps its store off the inbox's disk; or on the disk beside the inbox)
//          --extra-ab (adds the keep-alive and SQLite pragma A/Bs to the tuning phase: about 1.5 minutes more)
//          BENCH_API_CPU_PROFILE=1 (with --keep-data): the API's CPU profile around each measured level and burst
//          and each run of GFE journeys in the throughput phase,
//          kept under <work folder>/profiles for `npm run profile` (docs/cpu-profiles.md)
//          sustained: --sustained-rates 50,100,150,200,300  --sustained-seconds 180  --sustained-drain-seconds 120
//          --sustained-svg <svg> (default: sustained-inbox-depth.svg beside --svg, else beside the report)
//          --forwarder-policies a,b (the API restarted with FORWARDER_POLICY=<each> for the sustained rates)
//          The hard limit grows by the sustained phase's own budget when it runs, and by 10 minutes (quick: 6) for the
//          layers phase, and by a minute for each round of throughput runs past two (unless --timeout-minutes).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Client } from '@temporalio/client';
import YAML from 'yaml';
import { OPT_IN_PHASES, PHASES, type Ctx, type Options, type Phase } from './lib/context';
import { benchClient, benchConfig, closeBenchClient } from './lib/journeys';
import { cpuShareSampler, describeMachine, loadAverage } from './lib/machine';
import { backgroundCpuGroup, liveProcesses, memoryLimitGroup, ROOT } from '../scripts/lib/processes';
import { compareWithCommitted, comparisonText } from './lib/regression';
import { renderReport, targets, type Results } from './lib/report';
import { keepSections, spliceSustainedSection } from './lib/sections';
import { kneeLine, knees } from './lib/sustained-report';
import { BenchStack, benchPorts, DATABASE_SHAPES, startBenchDatabase, type DatabaseShape } from './lib/stack';
import { profileDir, profilingWanted } from './lib/cpu-profiles';
import { coldStartPhase, npmTestPhase, readFullNpmTest, saveFullNpmTest } from './phases/cold';
import { buildWorkflowBundle } from '../src/workflow-bundle';
import { apiAlone } from './api-alone';
import { ackLayers, layerCpuInProcess } from './ack-layers';
import { sustainedPhase } from './phases/sustained';
import { throughputPhase } from './phases/throughput';
import { tuningPhase } from './phases/tuning';
import { waitingPhase } from './phases/waiting';
import {
  burstRun,
  finalCheck,
  outagePhase,
  prepareHooks,
  rawSignalRate,
  stopBare,
  webhookPhase,
  type HookState,
} from './phases/webhook';

/** The memory limit the Helm chart gives a worker's container (deploy/helm values: worker.resources.limits.memory). */
function chartWorkerMemoryMiB(): number {
  const values = YAML.parse(
    readFileSync(path.join(ROOT, 'deploy/helm/patient-journey-engine/values.yaml'), 'utf8'),
  ) as {
    worker?: { resources?: { limits?: { memory?: string } } };
  };
  const limit = values.worker?.resources?.limits?.memory ?? '';
  const m = /^(\d+)(Mi|Gi)$/.exec(limit);
  if (!m) throw new Error(`the chart's worker memory limit is not in Mi or Gi: ${limit || '(none)'}`);
  return Number(m[1]) * (m[2] === 'Gi' ? 1024 : 1);
}

function temporalStore(value: string | undefined): Options['temporalStore'] {
  if (value === undefined || value === 'memory' || value === 'disk') return value ?? 'memory';
  throw new Error(`--temporal-store is memory or disk, not ${value}`);
}

function backgroundCpu(value: string | undefined): Options['backgroundCpu'] {
  if (value === undefined || value === 'group' || value === 'nice') return value ?? 'group';
  throw new Error(`--background-cpu is group or nice, not ${value}`);
}

function parseOptions(argv: string[]): Options {
  const { values: v } = parseArgs({
    args: argv,
    strict: true,
    options: {
      quick: { type: 'boolean', default: false },
      only: { type: 'string' },
      skip: { type: 'string' },
      levels: { type: 'string' },
      'level-seconds': { type: 'string' },
      'warmup-seconds': { type: 'string' },
      'hook-journeys': { type: 'string' },
      'burst-repeats': { type: 'string' },
      stores: { type: 'string' },
      'throughput-journeys': { type: 'string' },
      'throughput-rounds': { type: 'string' },
      'start-concurrency': { type: 'string' },
      'waiting-journeys': { type: 'string' },
      'provider-delay-ms': { type: 'string' },
      'background-nice': { type: 'string' },
      'background-cpu': { type: 'string' },
      'npm-test': { type: 'string' },
      'timeout-minutes': { type: 'string' },
      'port-base': { type: 'string' },
      out: { type: 'string' },
      svg: { type: 'string' },
      'keep-data': { type: 'boolean', default: false },
      'temporal-store': { type: 'string' },
      'extra-ab': { type: 'boolean', default: false },
      'sustained-rates': { type: 'string' },
      'sustained-seconds': { type: 'string' },
      'sustained-drain-seconds': { type: 'string' },
      'sustained-svg': { type: 'string' },
      'forwarder-policies': { type: 'string' },
      'worker-memory-mib': { type: 'string' },
      postgres: { type: 'string' },
    },
  });
  const quick = v.quick ?? false;
  const num = (s: string | undefined, fallback: number) => {
    if (s === undefined) return fallback;
    const n = Number(s);
    if (!Number.isFinite(n) || n < 0) throw new Error(`not a number: ${s}`);
    return n;
  };
  const list = (s: string | undefined) => (s ? s.split(',').map((x) => x.trim()) : undefined);
  const only = list(v.only) as Phase[] | undefined;
  const skip = new Set(list(v.skip) ?? []);
  for (const p of [...(only ?? []), ...skip]) if (!PHASES.includes(p as Phase)) throw new Error(`unknown phase ${p}`);
  const phases = new Set((only ?? PHASES.filter((p) => !OPT_IN_PHASES.includes(p))).filter((p) => !skip.has(p)));
  const npmTest = (v['npm-test'] ?? 'first') as Options['npmTest'];
  if (!['first', 'full', 'skip'].includes(npmTest)) throw new Error('--npm-test is first, full or skip');
  if (npmTest === 'skip') phases.delete('tests');
  const partial = only !== undefined || skip.size > 0 || quick;
  const portBase = num(v['port-base'], 22_200);
  if (portBase < 22_000 || portBase + 200 > 23_999) throw new Error('--port-base must keep every port in 22000-23999');
  const stores = list(v.stores) ?? ['files', 'postgres'];
  for (const st of stores) if (st !== 'files' && st !== 'postgres') throw new Error(`unknown inbox store ${st}`);
  const database = (v.postgres ?? 'synchronous') as DatabaseShape;
  if (!DATABASE_SHAPES.includes(database)) throw new Error(`--postgres is ${DATABASE_SHAPES.join(' or ')}`);
  const sustainedRates = (list(v['sustained-rates']) ?? ['50', '100', '150', '200', '300']).map((x) => num(x, 0));
  if (sustainedRates.some((r) => r <= 0)) throw new Error('--sustained-rates are callbacks per second, above 0');
  const sustainedSeconds = num(v['sustained-seconds'], quick ? 30 : 180);
  const sustainedDrainSeconds = num(v['sustained-drain-seconds'], quick ? 60 : 120);
  const forwarderPolicies = list(v['forwarder-policies'])?.filter((x) => x !== '') ?? [];
  for (const p of forwarderPolicies)
    if (!/^[\w.:=+-]+$/.test(p)) throw new Error(`--forwarder-policies: not a plain value: ${p}`);
  const throughputRounds = num(v['throughput-rounds'], quick ? 1 : 4);
  // The sustained phase's own time: every store, policy and rate, its load, drain and settling.
  const sustainedMs = phases.has('sustained')
    ? stores.length *
      Math.max(1, forwarderPolicies.length) *
      sustainedRates.length *
      (Math.min(2, num(v['warmup-seconds'], 2)) + sustainedSeconds + sustainedDrainSeconds + 45) *
      1000
    : 0;
  return {
    phases,
    stores: stores as Options['stores'],
    database,
    burstRepeats: num(v['burst-repeats'], quick ? 2 : 3),
    levels: (list(v.levels) ?? ['100', '500', '1000']).map((x) => num(x, 0)),
    levelSeconds: num(v['level-seconds'], quick ? 4 : 6),
    warmupSeconds: num(v['warmup-seconds'], quick ? 1 : 2),
    hookJourneys: num(v['hook-journeys'], quick ? 100 : 200),
    throughputJourneys: num(v['throughput-journeys'], quick ? 60 : 300),
    throughputRounds,
    startConcurrency: num(v['start-concurrency'], 50),
    waitingJourneys: num(v['waiting-journeys'], quick ? 600 : 10_000),
    providerDelayMs: num(v['provider-delay-ms'], 1_000),
    backgroundNice: Math.min(19, Math.floor(num(v['background-nice'], 10))),
    backgroundCpu: backgroundCpu(v['background-cpu']),
    workerMemoryMiB: v['worker-memory-mib'] !== undefined ? num(v['worker-memory-mib'], 0) : chartWorkerMemoryMiB(),
    npmTest,
    timeoutMs:
      v['timeout-minutes'] !== undefined
        ? num(v['timeout-minutes'], 40) * 60_000
        : (quick ? 15 : 40) * 60_000 +
          sustainedMs +
          (phases.has('layers') ? (quick ? 6 : 10) * 60_000 : 0) +
          // A round of throughput runs past the first two takes about a minute.
          (phases.has('throughput') ? Math.max(0, throughputRounds - 2) * 60_000 : 0),
    // A partial run does not overwrite the committed report.
    out: v.out ?? (partial ? undefined : path.join(ROOT, 'docs', 'performance.md')),
    svg: v.svg ?? (partial ? undefined : path.join(ROOT, 'docs', 'webhook-latency.svg')),
    portBase,
    keepData: v['keep-data'] ?? false,
    temporalStore: temporalStore(v['temporal-store']),
    quickSizes: quick,
    extraAb: v['extra-ab'] ?? false,
    sustainedRates,
    sustainedSeconds,
    sustainedDrainSeconds,
    sustainedSvg: v['sustained-svg'],
    forwarderPolicies,
  };
}

/** Where the sustained plot goes: --sustained-svg, else beside the latency plot, else beside the report. */
function sustainedSvgPath(o: Options, report: string): string {
  return o.sustainedSvg ?? path.join(path.dirname(o.svg ?? report), 'sustained-inbox-depth.svg');
}

async function main() {
  const o = parseOptions(process.argv.slice(2));
  const started = Date.now();
  const workDir = mkdtempSync(path.join(os.tmpdir(), 'journey-bench-'));
  const logDir = path.join(workDir, 'logs');
  await mkdir(logDir, { recursive: true });
  const log = (m: string) => console.log(`[bench +${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${m}`);
  const remainingMs = () => started + o.timeoutMs - Date.now() - 45_000;
  const shares = cpuShareSampler();
  const results: Results = {
    startedAt: new Date(started).toISOString(),
    command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
    options: { ...o, phases: [...o.phases] },
    machine: describeMachine(),
    loadBefore: loadAverage(),
    cpuBusy: [],
    cpuSteal: [],
    phaseSeconds: {},
    errors: [],
  };
  log(
    `${results.machine.cpuModel}, ${results.machine.cores} cores, ${results.machine.memTotalGiB.toFixed(1)} GiB; node ${results.machine.node}; ${results.machine.temporalCli}`,
  );
  log(`load average before: ${results.loadBefore.one} ${results.loadBefore.five} ${results.loadBefore.fifteen}`);
  log(
    `phases: ${[...o.phases].join(', ')}; work folder ${workDir}; hard limit ${(o.timeoutMs / 60_000).toFixed(1)} min`,
  );

  // The Temporal CLI (and test server) in .tools/: installed on first use, as `npm start` and `npm test` do.
  if (!existsSync(path.join(ROOT, '.tools/bin/temporal'))) {
    log('installing the Temporal tools into .tools/ (first run; not part of any figure)...');
    const r = spawnSync('bash', [path.join(ROOT, 'scripts/install-temporal-tools.sh')], { stdio: 'inherit' });
    if (r.status !== 0) throw new Error('installing the Temporal tools failed');
    results.machine = describeMachine();
  }
  const ports = benchPorts(o.portBase);
  const backgroundGroup = o.backgroundCpu === 'group' && o.backgroundNice > 0 ? backgroundCpuGroup() : undefined;
  if (backgroundGroup) o.backgroundGroup = results.options.backgroundGroup = backgroundGroup;
  const workerMemoryGroup = o.workerMemoryMiB > 0 ? memoryLimitGroup('worker', o.workerMemoryMiB * 2 ** 20) : undefined;
  if (workerMemoryGroup) o.workerMemoryGroup = results.options.workerMemoryGroup = workerMemoryGroup;
  else if (o.workerMemoryMiB > 0)
    log(`no memory cgroup could be made here: the worker runs without its ${o.workerMemoryMiB} MiB limit`);
  // The dev server's store in memory: the inbox's flushes are the only ones on the disk, as where Temporal has its own.
  const temporalStoreDir =
    o.temporalStore === 'memory' && existsSync('/dev/shm')
      ? mkdtempSync('/dev/shm/journey-bench-temporal-')
      : undefined;
  if (temporalStoreDir) o.temporalStoreDir = results.options.temporalStoreDir = temporalStoreDir;
  else if (o.temporalStore === 'memory') log('no /dev/shm here: the Temporal dev server keeps its store on the disk');
  const stack = new BenchStack({
    dataDir: path.join(workDir, 'data'),
    ...(temporalStoreDir ? { temporalStoreDir } : {}),
    logDir,
    ports,
    providerDelayMs: o.providerDelayMs,
    backgroundNice: o.backgroundNice,
    database: o.database,
    ...(backgroundGroup ? { backgroundGroup } : {}),
    ...(workerMemoryGroup ? { workerMemoryGroup } : {}),
    log,
  });
  let hooks: HookState | undefined;
  let client: Client | undefined;
  const busyTimer = setInterval(() => {
    const { busy, steal } = shares();
    results.cpuBusy.push(busy);
    results.cpuSteal?.push(steal);
  }, 5_000);

  let finishing: Promise<void> | undefined;
  const finish = (code: number, why?: string) => {
    finishing ??= (async () => {
      if (why) {
        log(why);
        results.errors.push(why);
      }
      clearInterval(busyTimer);
      log('stopping everything the bench started...');
      await stopBare(hooks).catch(() => undefined);
      if (client) await closeBenchClient(client);
      await stack.stopAll().catch(() => undefined);
      for (const child of liveProcesses()) await child.stop(10_000);
      results.loadAfter = loadAverage();
      results.finishedAt = new Date().toISOString();
      results.durationSeconds = (Date.now() - started) / 1000;
      results.npmTestFull = await readFullNpmTest();
      const json = path.join(workDir, 'results.json');
      await writeFile(json, JSON.stringify(results, null, 2));
      const report = o.out ?? path.join(workDir, 'performance.md');
      const depthSvg = sustainedSvgPath(o, report);
      // This run's targets against the last committed report's (git): a section of the report and the log's last lines.
      const against = compareWithCommitted(targets(results).rows, results);
      const { markdown, svg, sustainedSvg } = renderReport(results, {
        sustainedSvgLink: path.relative(path.dirname(report), depthSvg),
        against,
      });
      // The sustained phase alone replaces only its own section (and plot): the rest of the report stays as it was.
      const sustainedOnly = o.phases.has('sustained') && [...o.phases].every((p) => p === 'sustained');
      if (o.out && !sustainedOnly) await writeFile(o.out, keepSections(o.out, markdown));
      else if (o.out && results.sustained?.runs.length) await writeFile(o.out, spliceSustainedSection(o.out, markdown));
      else if (o.out) log(`no sustained run finished: ${o.out} left as it was`);
      if (o.svg && !sustainedOnly) await writeFile(o.svg, svg);
      if (sustainedSvg) await writeFile(depthSvg, sustainedSvg);
      if (o.out && !sustainedOnly) {
        await writeFile(path.join(ROOT, 'bench', 'last-run.json'), `${JSON.stringify(results, null, 2)}\n`);
      } else if (!o.out) await writeFile(path.join(workDir, 'performance.md'), markdown);
      if (sustainedSvg) log(`sustained plot: ${depthSvg}`);
      log(`load average after: ${results.loadAfter.one} ${results.loadAfter.five} ${results.loadAfter.fifteen}`);
      log(`report: ${o.out ?? path.join(workDir, 'performance.md')}; raw results: ${json}`);
      log(
        `done in ${(results.durationSeconds / 60).toFixed(1)} min${results.errors.length ? ` with ${results.errors.length} error(s)` : ''}`,
      );
      for (const line of comparisonText(against)) log(line);
      if (!o.keepData) await rm(path.join(workDir, 'data'), { recursive: true, force: true }).catch(() => undefined);
      if (temporalStoreDir) await rm(temporalStoreDir, { recursive: true, force: true }).catch(() => undefined);
      process.exit(code);
    })();
    return finishing;
  };
  const hardStop = setTimeout(
    () => void finish(2, `hard time limit of ${o.timeoutMs / 60_000} min reached`),
    o.timeoutMs,
  );
  process.once('SIGINT', () => void finish(130, 'interrupted (SIGINT)'));
  process.once('SIGTERM', () => void finish(143, 'terminated (SIGTERM)'));
  process.on('uncaughtException', (err) => void finish(1, `uncaught: ${err.message}`));
  process.on('unhandledRejection', (err) => void finish(1, `unhandled rejection: ${String(err)}`));

  const phase = async <T>(name: string, fn: () => Promise<T>): Promise<T | undefined> => {
    const t0 = performance.now();
    try {
      return await fn();
    } catch (err) {
      const message = `${name} failed: ${err instanceof Error ? err.message : String(err)}`;
      log(message);
      results.errors.push(message);
      return undefined;
    } finally {
      results.phaseSeconds[name] = (performance.now() - t0) / 1000;
    }
  };

  if (o.phases.has('cold')) results.cold = await phase('cold start', () => coldStartPhase(o, workDir, logDir, log));
  if (o.phases.has('tests') && o.npmTest !== 'skip') {
    results.npmTest = await phase('npm test', () => npmTestPhase(o.npmTest as 'first' | 'full', logDir, log));
    if (results.npmTest?.mode === 'full' && results.npmTest.fullMs !== undefined)
      await saveFullNpmTest(results.npmTest);
  }

  const has = (p: Phase) => o.phases.has(p);
  const webhookPhases = has('webhook') || has('burst') || has('outage');
  // Every phase on the parked journeys and the callback inbox (the sustained load among them).
  const inboxPhases = webhookPhases || has('sustained');
  // The PostgreSQL of the postgres inbox: for the API alone (a database of its own) and the inbox phases.
  if (o.stores.includes('postgres') && (has('alone') || has('layers') || inboxPhases)) {
    await phase('postgres start', async () => {
      await mkdir(path.join(workDir, 'data'), { recursive: true });
      const ms = await stack.startPostgres();
      results.postgresStartSeconds = ms / 1000;
      log(`PostgreSQL (${o.database}) up in ${(ms / 1000).toFixed(1)} s on port ${ports.postgres}`);
    });
  }

  if (has('alone')) {
    log('the API alone (fake Temporal client), before the stack starts...');
    const pg = stack.postgres;
    results.alone = await phase('API alone', () =>
      apiAlone({
        stores: o.stores.filter((st) => st === 'files' || pg),
        signalMs: 5,
        rates: [500, 1000],
        seconds: o.quickSizes ? 3 : 5,
        bursts: o.burstRepeats,
        logDir,
        ...(pg ? { postgres: pg } : {}),
        log,
      }),
    );
  }

  if (has('layers')) {
    log('the acknowledgement layer by layer (each left out in turn, fake Temporal), before the stack starts...');
    const pg = stack.postgres;
    results.layers = await phase('ack layers', async () => {
      // A lone server beside the cluster, for the row without the synchronous standby.
      const single = pg
        ? await startBenchDatabase({
            shape: 'single',
            dir: path.join(workDir, 'data', 'postgres-single'),
            port: ports.postgres + 37,
            database: 'journeys_layers',
            log: () => undefined,
          })
        : undefined;
      try {
        const stores = o.stores.filter((st) => st === 'files' || pg);
        // The cost first, in one process (the machine idle), then the effect of each under load.
        const cpu = await layerCpuInProcess({
          stores,
          rounds: o.quickSizes ? 3 : 7,
          perRound: o.quickSizes ? 300 : 600,
          ...(pg ? { postgres: pg.url } : {}),
          log,
        });
        const runs = await ackLayers({
          stores,
          seconds: o.quickSizes ? 3 : 6,
          bursts: o.burstRepeats,
          logDir,
          ...(pg ? { postgres: { synchronous: pg.url, ...(single ? { single: single.url } : {}) } } : {}),
          log,
        });
        return { runs, cpu };
      } finally {
        await single?.stop();
      }
    });
  }

  const needsStack = inboxPhases || ['throughput', 'tuning', 'waiting'].some((p) => has(p as Phase));
  if (needsStack) {
    const config = await phase('stack start', async () => {
      await mkdir(path.join(workDir, 'data'), { recursive: true });
      await stack.configure();
      // The worker runs as the image runs it: on the workflow bundle built ahead, without tracing (BENCH_WORKER_ENV
      // with WORKFLOW_BUNDLE_PATH empty bundles from the sources at start instead, as `npm run worker` does).
      const bundleFile = path.join(workDir, 'workflows.bundle.js');
      const bundle = await buildWorkflowBundle(bundleFile);
      results.workerBundle = { bytes: bundle.bytes, ms: bundle.ms };
      log('starting the stack: Temporal dev server, sandbox, worker, API...');
      const s0 = performance.now();
      await stack.startTemporal();
      await stack.startSandbox();
      // Development: extra settings of the worker and the API (JSON objects of environment variables; node flags).
      const extra = (name: string) => JSON.parse(process.env[name] ?? '{}') as Record<string, string>;
      const args = (name: string) => (process.env[name] ? process.env[name].split(' ') : []);
      stack.workerEnv = { WORKFLOW_BUNDLE_PATH: bundleFile, ...extra('BENCH_WORKER_ENV') };
      stack.apiDevEnv = {
        ...extra('BENCH_API_ENV'),
        // Development: the API's CPU profile around each measured level and burst (bench/lib/cpu-profiles.ts).
        ...(profilingWanted() ? { API_CPU_PROFILE_DIR: profileDir(workDir) } : {}),
      };
      stack.apiNodeArgs = args('BENCH_API_NODE_ARGS');
      await Promise.all([
        stack.startWorker({}, 'worker', args('BENCH_WORKER_NODE_ARGS')),
        stack.startApi({}, stack.apiNodeArgs, { store: 'files' }),
      ]);
      results.stackStartSeconds = (performance.now() - s0) / 1000;
      log(`stack up in ${results.stackStartSeconds.toFixed(1)} s`);
      const c = benchConfig({ ...stack.env, ...stack.workerEnv });
      client = await benchClient(c);
      return c;
    });
    if (!config || !client) {
      clearTimeout(hardStop);
      return finish(1);
    }
    const ctx: Ctx = {
      o,
      stack,
      config,
      client,
      workDir,
      logDir,
      runTag: Date.now().toString(36).slice(-5),
      log,
      remainingMs,
    };
    if (inboxPhases || has('tuning')) {
      const prepared = await phase('webhook set-up', () => prepareHooks(ctx));
      if (prepared) hooks = prepared;
    }
    if (hooks && inboxPhases) {
      const h = hooks;
      if (has('webhook')) {
        results.webhook = {
          journeys: h.journeyIds.length,
          parkSeconds: h.parkSeconds,
          connections: 128,
          levels: [],
          probes: [],
        };
      }
      if (has('burst')) results.burst = { runs: [] };
      if (has('outage')) results.outage = { stores: [] };
      if (webhookPhases) results.rawSignals = [];
      // Each inbox store in turn: the API restarted on it, then its webhook levels, bursts and outage.
      for (const store of webhookPhases ? o.stores : []) {
        if (store === 'postgres' && !stack.postgres) continue;
        const on = await phase(`API on the ${store} inbox`, async () => {
          if (stack.apiStore !== store || !stack.api) await stack.restartApi(store);
          return true;
        });
        if (!on) continue;
        const into = results.webhook;
        if (into) await phase(`webhook (${store})`, () => webhookPhase(ctx, h, into));
        if (has('burst')) {
          const b = await phase(`burst, Temporal up (${store})`, () => burstRun(ctx, h, 'up'));
          if (b) results.burst?.runs.push(b);
        }
        if (has('outage') || has('burst')) {
          const x = await phase(`outage (${store})`, () =>
            outagePhase(ctx, h, { levels: has('outage'), burst: has('burst') }),
          );
          if (x && has('outage')) results.outage?.stores.push(x.outage);
          if (x?.burst) results.burst?.runs.push(x.burst);
        }
        // Temporal's own signal rate, beside each drain (or once, after the webhook levels, without an outage).
        if (has('outage') || (has('webhook') && store === o.stores.at(-1))) {
          const raw = await phase(`raw signals (${store})`, () => rawSignalRate(ctx, h, store));
          if (raw) results.rawSignals?.push(...raw);
        }
      }
      if (has('sustained')) {
        const into = (results.sustained = {
          journeys: h.journeyIds.length,
          parkSeconds: h.parkSeconds,
          connections: 128,
          rates: o.sustainedRates,
          seconds: o.sustainedSeconds,
          warmupSeconds: Math.min(2, o.warmupSeconds),
          drainLimitSeconds: o.sustainedDrainSeconds,
          policies: o.forwarderPolicies,
          forwarderConcurrency: config.forwarder.concurrency,
          runs: [],
          skipped: [],
        });
        await phase('sustained', () => sustainedPhase(ctx, h, into));
      }
      results.delivery = await phase('delivery check', async () => finalCheck(ctx, h, await stack.apiTotals()));
      if (results.sustained) for (const k of knees(results.sustained)) log(kneeLine(k, results.machine.cores));
      await stopBare(h);
      // The later phases run on the default inbox, with the stack's own settings.
      if (stack.apiStore !== 'files' || Object.keys(stack.apiEnv).length > 0)
        await phase('API back on the files inbox', () => stack.restartApi('files'));
    }
    // No later phase uses PostgreSQL: its cluster (two servers under Patroni, etcd, HAProxy) is stopped rather than
    // left idling beside them: idle, it took about 6 % of a core from every run after it (2.1 to 3.8 ms of CPU per
    // journey in the throughput runs of the report of 2026-11-30 16:20).
    if (stack.postgres && ['throughput', 'tuning', 'waiting'].some((p) => has(p as Phase))) {
      await phase('PostgreSQL stopped', () => stack.stopPostgres());
    }
    if (has('throughput')) results.throughput = await phase('throughput', () => throughputPhase(ctx));
    if (has('tuning')) results.tuning = await phase('tuning', () => tuningPhase(ctx, hooks, o.extraAb));
    if (has('waiting')) results.waiting = await phase('waiting journeys', () => waitingPhase(ctx));
  }
  clearTimeout(hardStop);
  await finish(results.errors.length > 0 ? 1 : 0);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
