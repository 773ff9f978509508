// `npm run drill:gameday`: the production topology on its PostgreSQL cluster (a primary and a synchronous standby under
// Patroni with etcd, HAProxy, pgBackRest archiving to an object store of its own), two API replicas behind HAProxy,
// two workers, the Temporal server and MinIO, under steady callbacks, steady starts and patients erased and invited
// again, while the PostgreSQL primary, a worker, an API replica, the Temporal server and the object store fail one
// after another (scripts/lib/gameday.ts). The report goes to docs/reliability.md, between its markers (--no-doc
// leaves it); exit status 1 when a promise did not hold. `--short` is the form `npm test` runs (a few minutes).
// `--temporal-split` runs the Temporal server as a cluster deploys it (each service a process of its own: two
// frontends behind HAProxy, two history and two matching nodes, the internal worker) and SIGKILLs a history node,
// then a matching node (`--faults` picks others); its report has a section of its own in docs/reliability.md.
//
//   npm run drill:gameday -- [--short] [--temporal-split] [--faults a,b] [--rate N] [--load-journeys N]
//                            [--start-every MS] [--erase-every S] [--warmup S] [--recover S] [--object-store-down S]
//                            [--port-base P] [--keep] [--no-doc]
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { machineDescription } from '../test/faults/harness/report';
import { exitWith, parseCommandLine, UsageError } from './lib/cli';
import { withSection } from './lib/doc-section';
import { runIdOf } from './lib/disaster';
import {
  GAME_DAY_FAULTS,
  gameDay,
  SPLIT_FAULTS,
  type GameDayFault,
  type GameDayOptions,
  type GameDayReport,
} from './lib/gameday';
import { freeProductionPorts, ProductionStack, productionStackPorts } from './lib/production-stack';
import { guardDrillStack } from './lib/stack-guard';

const ROOT = path.resolve(__dirname, '..');
export const BEGIN = '<!-- begin: npm run drill:gameday -->';
export const END = '<!-- end: npm run drill:gameday -->';
/** The split Temporal server's run: a section of its own. */
export const SPLIT_BEGIN = '<!-- begin: npm run drill:gameday -- --temporal-split -->';
export const SPLIT_END = '<!-- end: npm run drill:gameday -- --temporal-split -->';

/** The long form's settings (before a release), and the short one `npm test` runs. */
export const LONG: Omit<GameDayOptions, 'runId' | 'say'> = {
  rate: 100,
  // The journeys the callbacks go to at first: 80 callbacks each (a journey sent 100 asks for a person,
  // callback_flood), more started as the run goes on when its faults take longer.
  loadJourneys: 450,
  startEveryMs: 1_000,
  eraseEveryMs: 8_000,
  warmupMs: 30_000,
  recoverMs: 40_000,
  objectStoreDownMs: 30_000,
  faults: GAME_DAY_FAULTS,
};
export const SHORT: Omit<GameDayOptions, 'runId' | 'say'> = {
  rate: 20,
  loadJourneys: 50,
  startEveryMs: 2_000,
  eraseEveryMs: 10_000,
  warmupMs: 10_000,
  recoverMs: 15_000,
  objectStoreDownMs: 10_000,
  faults: GAME_DAY_FAULTS,
};

/**
 * The production stack the game day runs on: the cluster, two workers, two API replicas, supervised; with
 * `temporalSplit`, the Temporal server's services each a process of its own.
 */
export async function gameDayStack(
  dataDir: string,
  portBase: number,
  log?: (l: string) => void,
  temporalSplit = false,
) {
  return new ProductionStack({
    dataDir,
    ports: await freeProductionPorts(portBase, 31_000, { cluster: true, temporalSplit }),
    workers: 2,
    database: 'cluster',
    temporalSplit,
    supervise: true,
    // The drill reads its journeys back through the clinic API; the per-clinic limit is for real clinics.
    engineEnv: { API_RATE_LIMIT_PER_MINUTE: '1000000' },
    // The sandbox, as the exam service, sends a callback it got no 200 for again, for minutes.
    sandboxEnv: { SANDBOX_CALLBACK_RETRIES: '8', SANDBOX_CALLBACK_RETRY_BASE_MS: '1000' },
    ...(log ? { log } : {}),
  });
}

const secs = (ms: number) => (Number.isFinite(ms) ? `${(ms / 1000).toFixed(1)} s` : 'none');
const ms = (v: number) => (Number.isFinite(v) ? `${v.toFixed(1)} ms` : '-');
const counts = (c: Record<string, number>) =>
  Object.keys(c).length === 0
    ? 'none'
    : Object.entries(c)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([status, n]) => `${n} × ${status === 'none' ? 'no answer' : status}`)
        .join(', ');

const FAULT_NAMES: Record<string, string> = {
  'postgres-primary': 'PostgreSQL primary SIGKILLed',
  worker: 'a worker SIGKILLed',
  'api-replica': 'an API replica SIGKILLed',
  temporal: 'Temporal server restarted',
  'object-store': 'object store stopped',
  'temporal-history': 'a Temporal history node SIGKILLed',
  'temporal-matching': 'a Temporal matching node SIGKILLed',
};

export function reportSection(
  o: Omit<GameDayOptions, 'runId' | 'say'>,
  r: GameDayReport,
  command: string,
  finishedAt: Date,
  loadBefore?: number[],
): string {
  const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(', ');
  const c = r.callbacks;
  const passed = r.problems.length === 0;
  const split = r.temporalSplit !== undefined;
  const faultRows = r.faults
    .map(
      (f) =>
        `| ${FAULT_NAMES[f.fault]} (at ${secs(f.atMs)}) | ${secs(f.downMs)} | ${ms(f.ackP99Ms)} / ${ms(f.ackMaxMs)} | ${secs(f.ackGapMs)} | ${secs(f.inviteGapMs)} | ${counts(f.refusedCallbacks)} | ${counts(f.refusedRequests)} |`,
    )
    .join('\n');
  return `${split ? SPLIT_BEGIN : BEGIN}
${
  split
    ? "## Game day with Temporal's services split: a history node, then a matching node, SIGKILLed under load"
    : '## Game day: every fault in turn, under load, on the production topology'
}

\`${command}\`, finished ${finishedAt.toISOString()}; **${passed ? 'passed' : 'FAILED'}**.
- Machine: ${machineDescription()}; load average (1, 5, 15 min) ${loadBefore ? `${load(loadBefore)} before the run, ` : ''}${load(os.loadavg())} at its end
- The production topology on its PostgreSQL cluster (a primary and a synchronous standby under Patroni with etcd,
  HAProxy checking \`GET /primary\`, the WAL archived by pgBackRest), two API replicas behind HAProxy, two workers,
  ${split ? `the Temporal server split as a cluster deploys it (${r.temporalSplit}), ` : 'the Temporal server, '}MinIO; Keycloak is not started (sign-in has its own test,
  test/production/sign-in.test.ts).
- Load for ${secs(r.durationMs)}: callbacks at ${o.rate}/s to ${r.callbacks.journeys} journeys waiting for their consultation (${o.loadJourneys} at first, more started while the run went on: at most 80 callbacks each while another had fewer; a
  refused one sent again a second after its answer, as a sender that got no 200 does); a new journey every
  ${secs(o.startEveryMs)} (a test-mode patient the sandbox approves; every third with a document uploaded first, which its
  invite uploads to the exam service); every ${secs(o.eraseEveryMs)} a patient started, erased at once
  (the erasure racing the start's activities), and invited again once the erasure was done. Starts and erasures are
  sent again with their Idempotency-Key after 5xx, no answer, 429 and 409 \`patient-erasure-in-progress\`.
- The faults, one after another, ${secs(o.warmupMs)} of load first and ${secs(o.recoverMs)} after each part was back:

| Fault | Part away | Acknowledgement p99 / max | Longest without an acknowledgement | Longest without an invite | Callback answers other than 200 (sent again) | Clinic answers other than 2xx (sent again) |
|---|---|---|---|---|---|---|
| none (the baseline, before the first fault) | - | ${ms(r.baseline.ackP99Ms)} / ${ms(r.baseline.ackMaxMs)} | ${secs(r.baseline.ackGapMs)} | ${secs(r.baseline.inviteGapMs)} | - | - |
${faultRows}

${r.faults.map((f) => `- ${FAULT_NAMES[f.fault]}: ${f.what}.`).join('\n')}

| Over the whole run | |
|---|---|
| Acknowledgement, request to 200 | p50 ${ms(c.latency.p50)}, p99 ${ms(c.latency.p99)}, max ${ms(c.latency.max)} (${c.latency.count} answers) |
| The same outside the database failover's window | p50 ${ms(c.latencyOutsideFailover.p50)}, p99 ${ms(c.latencyOutsideFailover.p99)}, max ${ms(c.latencyOutsideFailover.max)}: the interface's 100 ms ${c.latencyOutsideFailover.p99 < 100 ? 'met' : '**missed**'} at p99 (while the cluster has no primary a callback waits for one, up to a few seconds, or is answered 503 and sent again) |
| Acknowledged callbacks lost | **${c.lost}** of ${c.acked} acknowledged (${c.due} due; ${c.duplicates} recorded twice${c.deadLettered > 0 ? `; ${c.deadLettered} kept as dead letters for a flooded journey` : ''}) |
| Callback answers other than 200 | ${counts(c.refused)} |
| Answers of 500 | **${r.answers500}** |
| The inbox empty (every acknowledged callback handed on to its journey) | ${secs(r.inboxEmptyAfterLoadMs)} after the load's end |
| Starts | ${r.starts.journeys} journeys, every one answered 2xx in the end (other answers on the way: ${counts(r.starts.refused)}) |
| Journeys ended as planned | ${r.starts.completed} completed and approved${r.starts.decided.length > 0 ? `; ${r.starts.decided.length} parked with an ambiguous invite and decided as the runbook says (${r.starts.decided.join('; ')})` : ''}; ${r.starts.endedWrong.length} otherwise |
| Double invites | **${r.starts.doubleInvites.length}** |
| Erasures | ${r.erasures.done} of ${r.erasures.requested} done (other answers on the way: ${counts(r.erasures.refused)}); nothing of an erased patient readable: ${r.erasures.readable.length === 0 ? 'none found' : `**${r.erasures.readable.length} found**`} (her e-mail in her journey's view, any of its history's own payloads opening); ${r.erasures.invitedAgain} invited again |
| Audit chain afterwards | ${r.audit.ok ? 'whole' : `**broken**: ${r.audit.problem ?? ''}`} (${r.audit.records} records) |
${r.problems.length === 0 ? '' : `\n### Problems\n\n${r.problems.map((p) => `- ${p}`).join('\n')}\n`}${split ? SPLIT_END : END}`;
}

async function main(argv: string[]): Promise<number> {
  let o: Omit<GameDayOptions, 'runId' | 'say'>;
  let portBase: number;
  let keep: boolean;
  let writeDoc: boolean;
  let temporalSplit = false;
  try {
    const { values } = parseCommandLine(argv, {
      short: { type: 'boolean' },
      'temporal-split': { type: 'boolean' },
      faults: { type: 'string' },
      rate: { type: 'string' },
      'load-journeys': { type: 'string' },
      'start-every': { type: 'string' },
      'erase-every': { type: 'string' },
      warmup: { type: 'string' },
      recover: { type: 'string' },
      'object-store-down': { type: 'string' },
      'port-base': { type: 'string' },
      keep: { type: 'boolean' },
      'no-doc': { type: 'boolean' },
    });
    const base = values.short ? SHORT : LONG;
    const int = (name: string, v: string | undefined, fallback: number, min: number) => {
      const n = v === undefined ? fallback : Number(v);
      if (!Number.isInteger(n) || n < min) throw new UsageError(`--${name} must be a whole number from ${min}`);
      return n;
    };
    temporalSplit = values['temporal-split'] === true;
    const known: readonly string[] = [...GAME_DAY_FAULTS, ...SPLIT_FAULTS];
    const faults = values.faults?.split(',').map((f) => f.trim()) ?? (temporalSplit ? [...SPLIT_FAULTS] : base.faults);
    for (const f of faults)
      if (!known.includes(f)) throw new UsageError(`--faults: ${f} is not one of ${known.join(', ')}`);
    if (!temporalSplit && faults.some((f) => (SPLIT_FAULTS as readonly string[]).includes(f)))
      throw new UsageError('--faults: temporal-history and temporal-matching need --temporal-split');
    o = {
      ...base,
      faults: faults as GameDayFault[],
      rate: int('rate', values.rate, base.rate, 1),
      loadJourneys: int('load-journeys', values['load-journeys'], base.loadJourneys, 1),
      startEveryMs: int('start-every', values['start-every'], base.startEveryMs, 100),
      eraseEveryMs: int('erase-every', values['erase-every'], base.eraseEveryMs / 1000, 1) * 1000,
      warmupMs: int('warmup', values.warmup, base.warmupMs / 1000, 1) * 1000,
      recoverMs: int('recover', values.recover, base.recoverMs / 1000, 1) * 1000,
      objectStoreDownMs: int('object-store-down', values['object-store-down'], base.objectStoreDownMs / 1000, 1) * 1000,
    };
    portBase = int('port-base', values['port-base'], 22_600, 1_024);
    keep = values.keep === true;
    writeDoc = values['no-doc'] !== true;
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    console.error(
      `${err.message}\n\nUsage: npm run drill:gameday -- [--short] [--temporal-split] [--faults a,b] [--rate N] [--load-journeys N] [--start-every MS] [--erase-every S] [--warmup S] [--recover S] [--object-store-down S] [--port-base P] [--keep] [--no-doc]`,
    );
    return 2;
  }
  const say = (line: string) => console.log(`[gameday] ${line}`);
  const runDir = mkdtempSync(path.join(os.tmpdir(), 'drill-gameday-'));
  const stack = await gameDayStack(runDir, portBase, (l) => say(`stack: ${l}`), temporalSplit);
  await guardDrillStack({
    dataDir: runDir,
    ports: productionStackPorts(stack.o.ports, 2, false, true, temporalSplit),
    stop: () => stack.stop(),
    say,
  });
  let passed = false;
  try {
    say(`starting the production topology on a PostgreSQL cluster in ${runDir}...`);
    const loadBefore = os.loadavg();
    await stack.start();
    const report = await gameDay(stack, { ...o, runId: runIdOf(), say });
    passed = report.problems.length === 0;
    const args = argv.join(' ');
    const section = reportSection(
      o,
      report,
      `npm run drill:gameday${args ? ` -- ${args}` : ''}`,
      new Date(),
      loadBefore,
    );
    console.log(`\n${section}\n`);
    if (writeDoc) {
      const file = path.join(ROOT, 'docs', 'reliability.md');
      const [begin, end] = temporalSplit ? [SPLIT_BEGIN, SPLIT_END] : [BEGIN, END];
      writeFileSync(file, withSection(existsSync(file) ? readFileSync(file, 'utf8') : '', begin, end, section));
      console.log(`written to ${path.relative(process.cwd(), file)}`);
    }
    console.log(passed ? 'game day passed' : `game day FAILED:\n- ${report.problems.join('\n- ')}`);
    return passed ? 0 : 1;
  } finally {
    await stack.stop();
    if (passed && !keep) rmSync(runDir, { recursive: true, force: true });
    else say(`the run folder is kept: ${runDir}`);
  }
}

if (require.main === module) exitWith(() => main(process.argv.slice(2)));
