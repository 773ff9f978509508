// The deploy drill (npm run drill:deploy) at its smallest, on the production topology: one journey per wait state,
// two new journeys per rollout step. v2 ramps, becomes current and v1 is deleted with no workflow task failing; v3 is
// refused by the replay gate, fails tasks once forced, and every journey ends as it should once v2 is current again.
// The full run (306 journeys) writes docs/reliability.md; this one guards the drill and the changes it builds from
// the working tree (a change to src/ that moves their anchors fails here, not on the day of a deploy).
import { drill, reportSection, type Report } from '../../scripts/drill-deploy';
import { temporalServerInstalled } from '../../scripts/lib/temporal-server';

const describeIf = temporalServerInstalled() ? describe : describe.skip;

describeIf('the deploy drill, one journey per wait state', () => {
  let report: Report;
  const lines: string[] = [];

  beforeAll(async () => {
    // Ports of its own, below the membership ports' limit and away from the other tests' fixed ranges.
    const portBase = 23_000 + (process.pid % 40) * 100;
    report = await drill({ perState: 1, probesPerStep: 2, portBase, keep: false, writeDoc: false }, (l) =>
      lines.push(l),
    );
  }, 900_000);

  it('passes: every journey ends as expected, none lost', () => {
    expect({ problems: report.problems, log: report.problems.length ? lines : [] }).toEqual({ problems: [], log: [] });
    expect(report.journeys.length).toBe(9 + 3 * 2);
    expect(report.journeys.every((j) => j.endedAs === j.expected)).toBe(true);
  });

  it('gates v2 in and v3 out on histories captured from the running system', () => {
    expect(report.gate.histories).toBeGreaterThanOrEqual(9);
    expect(report.gate.v2.filter((r) => r.error)).toEqual([]);
    expect(report.gate.v3.every((r) => /Nondeterminism/i.test(r.error ?? ''))).toBe(true);
  });

  it('rolls v2 out with no task failing, retires v1, and recovers from v3 by setting v2 current', () => {
    // No non-determinism anywhere in the safe rollout (the SDK's failure reason, on each of the four workers).
    expect(Object.keys(report.safeFailures)).toHaveLength(4);
    expect(Object.values(report.safeFailures).map((f) => f.NonDeterminismError ?? 0)).toEqual([0, 0, 0, 0]);
    expect(report.drained?.deletedAfterMs).toBeGreaterThan(0);
    const v3Failures = Object.entries(report.bad?.failuresByVersion ?? {})
      .filter(([worker]) => worker.includes('v3'))
      .reduce((a, [, f]) => a + (f.NonDeterminismError ?? 0), 0);
    expect(v3Failures).toBeGreaterThan(0);
    // The JourneyNonDeterminism alert fires on them: promtool (scripts/install-promtool.sh, run before the tests)
    // evaluates deploy/observability's rule on the series scraped from the workers.
    expect(report.bad?.alertAfterMs).toEqual(expect.any(Number));
    expect(report.bad?.recoveryMs).toBeGreaterThanOrEqual(0);
    // The new journeys show the version that ran them: v2's last-call reminder is the second one.
    const onlyV2 = report.journeys.filter(
      (j) => j.state === 'probe' && j.step === 'current' && j.buildIds?.every((b) => b.startsWith('v2-')),
    );
    expect(onlyV2.length).toBe(2);
    for (const j of onlyV2) expect(j.reminders).toBe(2);
  });

  it('reports per wait state and version, with the time to recovery', () => {
    const section = reportSection(report, 'npm run drill:deploy -- --per-state 1', 'test machine', new Date(0));
    expect(section).toContain('| awaiting_tracking | 1 |');
    expect(section).toContain('**journeys lost: 0**');
    expect(section).toMatch(/\*\*time to recovery \d+ s\*\*/);
    expect(section).toContain('v3 is refused on');
  });
});
