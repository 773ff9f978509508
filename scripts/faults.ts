// `npm run test:faults`: the full fault suite (test/faults/harness), 100+ journeys through the real API, worker,
// Temporal dev server and sandbox while every fault kind strikes. Prints the table and writes the run, with the
// command and the machine, to docs/reliability.md. Exit code 1 when any journey or callback is wrong.
//
//   npm run test:faults                      the full run (writes docs/reliability.md)
//   npm run test:faults -- --ci              the CI-sized part (what `npm test` runs; does not write the doc)
//   npm run test:faults -- --journeys 40     a smaller full run (does not write the doc below 100 journeys)
//   npm run test:faults -- --seed 7 --keep   another random pattern; keep the run folder (logs, database)
//   npm run test:faults -- --topology production        the run on the production topology (PostgreSQL, the Temporal
//                                                        server, 2 workers, 2 API replicas behind HAProxy, MinIO):
//                                                        writes its own section of docs/reliability.md
//   npm run test:faults -- --topology production --ci   a small one (does not write the doc)
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { KEPT_MARKER, withSection } from './lib/doc-section';
import { temporalServerVersion } from './lib/temporal-server';
import { CI_RUN, FULL_RUN, PRODUCTION_CI_RUN, PRODUCTION_RUN } from '../test/faults/harness/presets';
import { machineDescription, problemsText, reportTable } from '../test/faults/harness/report';
import { runFaultSuite, type SuiteOptions, type SuiteReport } from '../test/faults/harness/suite';

function argValue(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

function command(): string {
  const args = process.argv.slice(2).join(' ');
  const base = process.env.npm_lifecycle_event === 'test:faults' ? 'npm run test:faults' : 'npx tsx scripts/faults.ts';
  return args ? (base.startsWith('npm') ? `${base} -- ${args}` : `${base} ${args}`) : base;
}

function reliabilityDoc(report: SuiteReport, cmd: string, machine: string, finishedAt: Date): string {
  const o = report.options;
  if (o.topology === 'production') throw new Error('the production run has its own section');
  const pf = o.processFaults;
  return `# Reliability: the fault suite

The engine is run as it is deployed, each part its own process: the Temporal dev server (file-persisted), the
exam-service sandbox, the worker (\`src/worker.ts\`) and the clinic API (\`src/api/server.ts\`). Journeys of the four
scenarios are started through the clinic API (HTTP, \`Idempotency-Key\`) in the sandbox's test mode, so the simulated
provider approves, rejects or answers N/A and calls back on its own, to the API's real webhook URL. Meanwhile:

- the worker is killed with SIGKILL at random moments, each 0-${o.processFaults.workerKillAfterStartMs} ms after a journey's start was answered (its
  catalog check, invite or uploads are running), and started again;
- the Temporal dev server is stopped (SIGKILL, then SIGTERM) and started again on the same port and database file,
  ${o.processFaults.callbacksDueAfterStartMs.map((ms) => ms / 1000).join('-')} s after a journey's start (its callbacks arrive during the outage and go through the API's inbox);
  during the first outage the API is killed too, with callbacks in its inbox, and the next API process forwards them;
- the API process is stopped (SIGTERM: graceful; SIGKILL: mid-request) and started again while callbacks keep
  coming; the sandbox retries a refused connection like any failed attempt (\`SANDBOX_CALLBACK_RETRIES\` ${o.sandboxEnv.SANDBOX_CALLBACK_RETRIES}, backoff
  ${o.sandboxEnv.SANDBOX_CALLBACK_RETRY_BASE_MS} ms doubling), so callbacks sent while it is down arrive once it is back;
- some starts are sent twice at once (a double submit): both answers must name the same journey, one of them 201;
- the sandbox answers 500 to a share of all operations, adds latency to each, drops the connection after storing a
  share of the invites (the ambiguous failure), sends every callback ${o.sandboxFaults.duplicateCallbacks} times, out of order (3 before 2 before 1) and
  delayed${
    o.sandboxFaults.callbackLayout === 'rotate'
      ? `;
- each invite's callbacks come in another of the layouts the service is known to send ([callback layouts](callback-layouts.md)),
  in turn: \`event\` as a string, other verdict spellings, event 2 once per drug at the top level, event 3 as a tracking
  array without \`patient_exam_id\` and \`prescription_id\`, and all of them at once`
      : ''
  }.

**What must hold** (checked from the outside, after the run):

- every journey ends in its correct final state for its scenario and outcome (exam status, prescriptions, tracking);
  every fifth good faith exam is invited outside test mode and deferred to the medical director by the suite (through
  the sandbox's control surface), who approves it 5 s later: the journey waits for that final verdict and completes,
  or parks in \`needs_attention\` with code \`invite_ambiguous\`: the invite may have been sent (a 500, a dropped
  connection, a worker killed mid-invite) and the engine never re-sends it on its own;
- never two invites for one journey: the sandbox's control surface lists every patient exam with its \`webhook_url\`,
  which names the journey;
- no callback lost: every callback the sandbox delivered with a 200 (its deliveries log) is in the journey's events
  (\`GET /v1/journeys/{id}\`, applied or recorded as a duplicate) or, when it came after the journey had finished, a
  dead letter of that journey; and nothing is recorded more often than it could have arrived;
- every expected event (by scenario and outcome: event 1, twice for a deferral; event 2 after an approved prescription, once per drug when
  the layout sends it so; event 3 per prescription of a partner pharmacy, with the tracking number the sandbox shipped
  for that prescription) is applied exactly once; callbacks are counted by the sandbox's own ids (its deliveries log
  says which patient exam and prescription each one is about), whatever ids their layout carried;
- no callback is answered 400 and none is dead-lettered for any reason but \`journey_finished\` (a late copy);
- no process crashes except the ones the suite causes.

**The operator's part.** After the run, each journey parked as \`invite_ambiguous\` is decided the way the runbook
(docs/operations.md, "Operating journeys") says: the suite looks at the service (the sandbox) for an invite of that
journey; one there, \`abandon\`; none there, \`retry\` (the journey invites again and must then complete like the
others). Rounds repeat while retried journeys park again (the service keeps failing).

## Last full run

- Finished: ${finishedAt.toISOString()}
- Command: \`${cmd}\`
- Machine: ${machine}
- Seed: ${o.seed} (fault times, journey start times and the sandbox's fault shares); timing still varies run to run
- Journeys: ${o.journeys}, started at random moments over ${o.startWindowMs / 1000} s; process faults over ${o.faultWindowMs / 1000} s
  (${pf.workerKills} worker kills, ${pf.temporalRestarts} dev server restarts, ${pf.apiRestarts} API restarts${
    pf.apiKillDuringTemporalOutage ? ' and one more API kill during the first dev server outage' : ''
  })
- Sandbox faults: \`${JSON.stringify(o.sandboxFaults)}\`
- Sandbox settings: \`${Object.entries(o.sandboxEnv)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ')}\`
- Result: **${report.problems.length === 0 ? 'passed' : `FAILED (${report.problems.length} problems)`}** in ${(report.durationMs / 60_000).toFixed(1)} min

${reportTable(report)}

${report.problems.length === 0 ? '' : `### Problems\n\n${problemsText(report)}\n`}
## Running it

\`\`\`sh
npm run test:faults                 # this run: ${o.journeys} journeys, writes this file
npx jest test/faults                # the CI part (${CI_RUN.journeys} journeys, every fault kind), also part of npm test
npm run test:faults -- --seed 7     # another pattern; --keep keeps the run folder (logs of every process)
\`\`\`

The suite listens on ports 20000-20999 only (the dev server's internal cluster ports are its own choice) and works
in a folder under the system's temp directory (kept when a run fails); each process is started and stopped by its PID. The harness is \`test/faults/harness\` (\`stack.ts\` the processes, \`faults.ts\` the process faults,
\`journeys.ts\` the plan and the starts, \`verify.ts\` the checks, \`suite.ts\` the run, \`report.ts\` this table).
`;
}

function keptSections(file: string): string {
  const existing = existsSync(file) ? readFileSync(file, 'utf8') : '';
  const at = existing.indexOf(KEPT_MARKER);
  return at < 0 ? '' : `\n${existing.slice(at)}`;
}

// The production run's section: below KEPT_MARKER (a dev-server run keeps it), between these two lines.
const PRODUCTION_BEGIN =
  '<!-- fault run on the production topology: written by npm run test:faults -- --topology production -->';
const PRODUCTION_END = '<!-- end of the fault run on the production topology -->';

function productionSection(report: SuiteReport, cmd: string, machine: string, finishedAt: Date): string {
  const o = report.options;
  if (o.topology !== 'production') throw new Error('not a run on the production topology');
  const pf = o.production.faults;
  const range = ([a, b]: [number, number]) => `${a / 1000}-${b / 1000} s`;
  return `${PRODUCTION_BEGIN}
## Fault run on the production topology

The same journeys, sandbox faults, medical director, operator rounds and judge as the run above, on the topology of
\`npm run start:production\` ([deploy](deploy.md)): PostgreSQL (Debian's server, its own data dir), the Temporal
server itself on it (persistence and SQL visibility), MinIO holding the attachments, the sandbox, **two workers** and
**two API replicas behind HAProxy**; the replicas keep callbacks in the **PostgreSQL inbox** (\`INBOX_STORE=postgres\`)
and share nothing but PostgreSQL, Temporal and the object store. One fault at a time, at seeded moments:

- one worker SIGKILLed 0-${pf.workerKillAfterStartMs} ms after a journey's start was answered (the other keeps polling; the killed one's
  activities time out and run again there), started again after ${range(pf.workerDownMs)};
- one API replica SIGKILLed ${range(pf.callbacksDueAfterStartMs)} after a journey's start, while callbacks come (HAProxy checks every second
  and sends the others' requests to the live replica; a callback cut off with the replica is retried by the sandbox),
  started again after ${range(pf.apiDownMs)};
- PostgreSQL stopped, alternately by a fast shutdown (SIGINT) and a crash (SIGKILL of the postmaster), and started
  again on the same data dir and port after ${range(pf.postgresDownMs)}: meanwhile Temporal cannot persist and the webhook cannot append
  (it answers 503, the sandbox retries); both reconnect by themselves;
- the Temporal server stopped, alternately SIGTERM and SIGKILL, and started again after ${range(pf.temporalDownMs)}: callbacks wait in
  the inbox and are forwarded once it is back.

Behind HAProxy a callback never meets a refused connection: the sandbox's failed attempts in the table are answers
other than 200 (the webhook's 503 while PostgreSQL is away, the load balancer's while a replica it picked dies) and
cut connections, each retried by the sandbox.

The judge is the one of the run above: every journey in its correct final state (or parked as \`invite_ambiguous\`
and decided by the operator rounds), never two invites for one journey, every callback the sandbox delivered with a
200 recorded by its journey (or a dead letter of a finished one), every expected event applied exactly once.

- Finished: ${finishedAt.toISOString()}
- Command: \`${cmd}\`
- Machine: ${machine}; Temporal server ${temporalServerVersion()} (\`.tools/temporal-server\`)
- Seed: ${o.seed}
- Journeys: ${o.journeys}, started at random moments over ${o.startWindowMs / 1000} s; process faults over ${o.faultWindowMs / 1000} s
  (${pf.workerKills} worker kills, ${pf.apiReplicaKills} API replica kills, ${pf.postgresRestarts} PostgreSQL restarts, ${pf.temporalRestarts} Temporal server restarts)
- Sandbox faults: \`${JSON.stringify(o.sandboxFaults)}\`
- Result: **${report.problems.length === 0 ? 'passed' : `FAILED (${report.problems.length} problems)`}** in ${(report.durationMs / 60_000).toFixed(1)} min

${reportTable(report)}

${report.problems.length === 0 ? '' : `### Problems\n\n${problemsText(report)}\n\n`}Ports 21000-21999 only; the run folder (every part's log, the PostgreSQL data dir) is kept when a run fails
(\`--keep\` keeps it anyway). The harness: \`test/faults/harness/production.ts\` (the stack and its faults),
\`topology.ts\` (what the suite needs of either stack).
${PRODUCTION_END}`;
}

async function main() {
  const ci = process.argv.includes('--ci');
  const topology = argValue('--topology') ?? 'dev-server';
  if (topology !== 'dev-server' && topology !== 'production')
    throw new Error(`--topology: dev-server or production, not ${topology}`);
  const production = topology === 'production';
  const base: SuiteOptions = production ? (ci ? PRODUCTION_CI_RUN : PRODUCTION_RUN) : ci ? CI_RUN : FULL_RUN;
  const journeys = argValue('--journeys');
  const seed = argValue('--seed');
  const options: SuiteOptions = {
    ...base,
    ...(journeys ? { journeys: Number(journeys) } : {}),
    ...(seed ? { seed: Number(seed) } : {}),
    keepRunDir: process.argv.includes('--keep'),
  };
  const report = await runFaultSuite(options);
  const table = reportTable(report);
  console.log(`\n${table}\n\n${problemsText(report)}\n`);
  if (production && !ci && options.journeys >= 60) {
    const file = path.resolve(__dirname, '../docs/reliability.md');
    const existing = existsSync(file) ? readFileSync(file, 'utf8') : '';
    const section = productionSection(report, command(), machineDescription(), new Date());
    writeFileSync(file, withSection(existing, PRODUCTION_BEGIN, PRODUCTION_END, section));
    console.log(`written to ${path.relative(process.cwd(), file)}`);
  } else if (!production && !ci && options.journeys >= 100) {
    const file = path.resolve(__dirname, '../docs/reliability.md');
    writeFileSync(file, reliabilityDoc(report, command(), machineDescription(), new Date()) + keptSections(file));
    console.log(`written to ${path.relative(process.cwd(), file)}`);
  }
  process.exit(report.problems.length === 0 ? 0 : 1);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
