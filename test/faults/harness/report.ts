// The fault run's table: journeys, faults injected per kind, outcomes per final stage, invites per journey, callbacks
// sent vs applied; as Markdown (docs/reliability.md and the console alike).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { installedTool } from '../../support/temporal-env';
import type { SuiteReport } from './suite';

const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const list = (m: Record<string, number>) =>
  Object.entries(m)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${v}`)
    .join(', ') || 'none';
const sum = (m: Record<string, number>) => Object.values(m).reduce((a, b) => a + b, 0);

export function reportTable(r: SuiteReport): string {
  const started = r.journeys.filter((j) => j.journeyId);
  const byScenario: Record<string, number> = {};
  const byOutcome: Record<string, number> = {};
  for (const j of r.journeys) {
    byScenario[j.plan.scenario] = (byScenario[j.plan.scenario] ?? 0) + 1;
    byOutcome[j.plan.outcome] = (byOutcome[j.plan.outcome] ?? 0) + 1;
  }
  const attempts = r.journeys.reduce((a, j) => a + j.startAttempts, 0);
  const failures = r.journeys.reduce((a, j) => a + j.startFailures, 0);
  const replays = r.journeys.reduce((a, j) => a + j.startReplays, 0);
  const created = r.journeys.reduce((a, j) => a + j.created, 0);
  const twins = r.journeys.filter((j) => j.plan.twin).length;
  const faultsOf = (kind: string) => r.processFaults.filter((f) => f.kind === kind);
  const outages = (kind: string) => {
    const fs = faultsOf(kind);
    if (fs.length === 0) return '0';
    const signals = list(fs.reduce<Record<string, number>>((m, f) => ((m[f.signal] = (m[f.signal] ?? 0) + 1), m), {}));
    const times = fs.map((f) => `${(f.atMs / 1000).toFixed(0)} s${f.note ? ` (${f.note})` : ''}`).join(', ');
    return `${fs.length} (${signals}; at ${times} into the run; back after ${fs.map((f) => s(f.outageMs)).join(', ')})`;
  };
  const sf = r.options.sandboxFaults;
  const decisions: Record<string, number> = {};
  for (const d of r.decisions) {
    const key = `${d.action} (${d.invitesFound > 0 ? 'invite found at the service' : 'no invite at the service'})`;
    decisions[key] = (decisions[key] ?? 0) + 1;
  }
  const retried = new Set(r.decisions.filter((d) => d.action === 'retry').map((d) => d.journeyId));
  const retriedEnds = list(
    r.verdicts
      .filter((v) => retried.has(v.journeyId))
      .reduce<Record<string, number>>((m, v) => ((m[v.stage] = (m[v.stage] ?? 0) + 1), m), {}),
  );
  const rounds = new Set(r.decisions.map((d) => d.round)).size;
  const cb = r.callbacks;
  const rows: [string, string][] = [
    ['**Journeys**', ''],
    ['journeys', `${r.journeys.length} (${list(byScenario)})`],
    ['test-mode outcomes planned', list(byOutcome)],
    [
      'started through the clinic API',
      `${started.length}; ${attempts} POST /v1/journeys attempts, retried with the same Idempotency-Key and body (${failures} refused or 5xx during outages); ${twins} sent twice at once (double submit); ${created} answered 201, ${replays} answered 200 created:false`,
    ],
    ['**Faults injected**', ''],
    ...((r.options.topology === 'production'
      ? [
          ['one of the 2 workers SIGKILLed (the other keeps polling), started again', outages('worker_sigkill')],
          [
            'one of the 2 API replicas SIGKILLed (HAProxy sends everything to the other), started again',
            outages('api_replica_sigkill'),
          ],
          [
            'PostgreSQL stopped (fast shutdown or crash), started again on the same data dir and port',
            outages('postgres_restart'),
          ],
          ['Temporal server (on PostgreSQL) stopped, started again', outages('temporal_restart')],
        ]
      : [
          ['worker SIGKILL, started again', outages('worker_sigkill')],
          ['Temporal dev server stopped, started again (same port and db file)', outages('temporal_restart')],
          ['API process restarted while callbacks arrive', outages('api_restart')],
        ]) satisfies [string, string][]),
    [
      `sandbox 500s (errorRate ${sf.errorRate})`,
      `${sum(r.sandboxInjected.errors)} (${list(r.sandboxInjected.errors)})`,
    ],
    [`sandbox latency (+${sf.latencyMs} ms)`, `${r.sandboxInjected.delayed} operations`],
    [
      `connection dropped after the invite was stored (dropAfterInviteRate ${sf.dropAfterInviteRate})`,
      String(r.sandboxInjected.droppedInvites),
    ],
    [`callbacks duplicated (${sf.duplicateCallbacks} copies each)`, `${r.callbackFaults.duplicateCopies} extra copies`],
    ['callbacks out of order', `${r.callbackFaults.outOfOrderExams} patient exams got a later event first`],
    [`callbacks delayed (${sf.callbackDelayMs} ms)`, `${r.callbackFaults.delayedDeliveries} deliveries`],
    [
      `callback layouts (${sf.callbackLayout})`,
      `${
        sf.callbackLayout === 'rotate'
          ? "each invite's callbacks in the next alternative layout public receivers were written for (docs/callback-layouts.md)"
          : 'as the interface describes'
      }; patient exams per layout: ${list(r.callbackFaults.layouts)}`,
    ],
    [
      'callback attempts refused (API down), retried by the sandbox',
      `${cb.refusedAttempts} (other failed attempts: ${cb.otherFailedAttempts}; every failed attempt by what the sandbox saw: ${list(r.callbackFaults.failedAttempts ?? {})})`,
    ],
    [
      r.options.topology === 'production'
        ? 'most callbacks waiting at once in the PostgreSQL callback inbox (rows, sampled every second)'
        : 'most callbacks waiting at once in the callback inbox of the API (Temporal away)',
      String(r.maxInboxFiles),
    ],
    ['unplanned crashes (restarted by the supervisor)', String(r.crashes.length)],
    ['**Outcomes**', ''],
    ['after the run, before any operator', list(r.stagesAfterRun)],
    [
      'why each invite was in doubt (every operator round)',
      list(r.decisions.reduce<Record<string, number>>((m, d) => ((m[d.cause] = (m[d.cause] ?? 0) + 1), m), {})),
    ],
    [
      'operator decisions on invite_ambiguous',
      r.decisions.length === 0
        ? 'none needed'
        : `${list(decisions)}, in ${rounds} round(s); the ${retried.size} journeys retried ended: ${retriedEnds}`,
    ],
    [
      'deferred to the medical director, then approved (verdicts given through the sandbox)',
      `${r.director.journeys} journeys: ${r.director.deferrals} deferrals, ${r.director.finalVerdicts} final verdicts`,
    ],
    ['final stage', list(r.finalStages)],
    ['exam status of the completed journeys', list(r.examStatuses)],
    [
      'invites per journey (at the sandbox)',
      `0: ${r.invitesHistogram.none}, 1: ${r.invitesHistogram.one}, 2+: ${r.invitesHistogram.twoOrMore}`,
    ],
    ['**Callbacks**', ''],
    [
      'sent by the sandbox',
      `${cb.deliveries} deliveries (copies included), ${cb.delivered} answered 200, ${cb.failedAtSandbox} given up; ${cb.attempts} attempts`,
    ],
    ['recorded by the journeys', `${sum(cb.recorded)} (${list(cb.recorded)})`],
    ['callback attempts answered 400 (a callback the API could not read)', String(cb.answered400)],
    [
      'kept as dead letters, by reason (only journey_finished, late copies, may occur)',
      `${cb.deadLettered} (${list(cb.deadLettersByReason)}); of them ${cb.deadLetteredAgain} a delivery the journey had already recorded (forwarded again by the API's inbox after a crash)`,
    ],
    ['expected events (by scenario/outcome) applied exactly once', `${cb.appliedExactlyOnce} of ${cb.expected}`],
    ['**Problems**', String(r.problems.length)],
  ];
  const table = ['| What | Count |', '|---|---|', ...rows.map(([a, b]) => `| ${a} | ${b} |`)].join('\n');
  const phases = [
    '| Phase | Duration |',
    '|---|---|',
    ...r.phases.map((p) => `| ${p.name} | ${s(p.ms)} |`),
    `| **total** | **${s(r.durationMs)}** |`,
  ].join('\n');
  return `${table}\n\n${phases}`;
}

export function problemsText(r: SuiteReport): string {
  return r.problems.length === 0 ? 'no problems' : r.problems.map((p) => `- ${p}`).join('\n');
}

/** The machine, as /proc/cpuinfo, free and the tools say. */
export function machineDescription(): string {
  let cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  let cores = os.cpus().length;
  try {
    const info = readFileSync('/proc/cpuinfo', 'utf8');
    cpu = /model name\s*:\s*(.+)/.exec(info)?.[1]?.trim() ?? cpu;
    cores = (info.match(/^processor\s*:/gm) ?? []).length || cores;
  } catch {
    // not Linux
  }
  let memory = `${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`;
  try {
    const free = execFileSync('free', ['-m'], { encoding: 'utf8' });
    const total = /Mem:\s+(\d+)/.exec(free)?.[1];
    if (total) memory = `${(Number(total) / 1024).toFixed(1)} GiB (free -m: ${total} MiB total)`;
  } catch {
    // no free(1)
  }
  let temporal = 'unknown';
  try {
    const cli = installedTool('temporal');
    if (cli) temporal = execFileSync(cli, ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    // not installed
  }
  return `${cores} cores (${cpu}), ${memory} memory, ${os.type()} ${os.release()}, Node.js ${process.version}, ${temporal}`;
}
