// The production topology on its highly available PostgreSQL (ProductionStack, database 'cluster': a primary and a
// synchronous standby run by Patroni with etcd, HAProxy as the primary's address, the WAL archived by pgBackRest).
// First `npm run demo` runs through the stack while every process of the primary's node is SIGKILLed: every scenario
// ends as expected, nothing answered 500. Then the game day's short form (scripts/lib/gameday.ts; `npm run
// drill:gameday` runs the long one): callbacks at a steady rate, new journeys starting, patients erased and invited
// again, while the new primary, a worker, an API replica, the Temporal server and the object store fail in turn: no
// acknowledged callback lost, no 500, no journey invited twice, each ending as planned, every erasure done with nothing
// of the patient readable, the audit chain whole. The figures are logged, never asserted against a time: the machine
// is shared.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { reportSection, SHORT } from '../../scripts/drill-gameday';
import { runIdOf } from '../../scripts/lib/disaster';
import { GAME_DAY_FAULTS, gameDay } from '../../scripts/lib/gameday';
import { freeProductionPorts, ProductionStack } from '../../scripts/lib/production-stack';
import { runDemo } from '../support/demo';

describe('the production topology on a PostgreSQL cluster, its primary killed', () => {
  let root: string;
  let stack: ProductionStack;
  const fatal: string[] = [];

  beforeAll(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'failover-'));
    // Below the ephemeral range, the cluster's 34 ports in a row.
    const ports = await freeProductionPorts(22_600, 31_000, { cluster: true });
    stack = new ProductionStack({
      dataDir: root,
      ports,
      workers: 2,
      database: 'cluster',
      supervise: true,
      // The drill polls its journeys through the clinic API; the per-clinic limit is for real clinics.
      engineEnv: { API_RATE_LIMIT_PER_MINUTE: '100000' },
      // A sender that got no 200 sends again, for minutes (the exam service's retries are not documented; the
      // sandbox's default gives up after about ten seconds, shorter than a failover).
      sandboxEnv: { SANDBOX_CALLBACK_RETRIES: '8', SANDBOX_CALLBACK_RETRY_BASE_MS: '1000' },
      onFatal: (why) => fatal.push(why),
    });
    await stack.start();
  }, 420_000);

  afterAll(async () => {
    await stack?.stop();
    // KEEP_RUN=1 keeps the run folder (every part's log, the cluster's) to look into a failure.
    if (root && process.env.KEEP_RUN !== '1') rmSync(root, { recursive: true, force: true });
  }, 180_000);

  it('runs the demo to the end while every process of the primary is SIGKILLed', async () => {
    const cluster = stack.cluster!;
    const before = await cluster.primary();
    const run = runDemo(stack.apiUrl, 240);
    await new Promise((r) => setTimeout(r, 3_000));
    const killed = await cluster.killPrimary();
    try {
      expect(killed.node).toBe(before);
      const { code, tail } = await run;
      expect({ code, tail }).toEqual({ code: 0, tail: expect.stringContaining('All 5 journeys ended as expected') });
      // A failover is a pause, never an error: whatever the demo sent again was answered 502, 503 or 504 (or not at
      // all: a connection closed), not 500.
      expect(tail).toMatch(/No request had to be sent again|Requests sent again after answers: /);
      expect(tail).not.toMatch(/\b500 x\d/);
      const after = await cluster.primary();
      expect(after).toBeDefined();
      expect(after).not.toBe(before);
    } finally {
      // The old primary follows the new one, also when the demo failed: the game day needs a standby to fail over to.
      await run.catch(() => undefined);
      await cluster.startNode(killed.node);
      await cluster.waitForReplica(killed.node);
      await cluster.waitForSynchronousStandby();
    }
  }, 420_000);

  it('keeps every promise through the game day: the primary, a worker, an API replica, Temporal and the object store failing in turn', async () => {
    const lines: string[] = [];
    const report = await gameDay(stack, { ...SHORT, runId: runIdOf(), say: (l) => lines.push(l) });
    console.log(
      `game day (short form):\n${lines.join('\n')}\n${reportSection(SHORT, report, 'the topology tier', new Date())}`,
    );
    // What a clinic sees, never how long it took: the machine is shared.
    expect(report.problems).toEqual([]);
    expect(report.callbacks.lost).toBe(0);
    expect(report.callbacks.acked).toBe(report.callbacks.due);
    expect(report.answers500).toBe(0);
    expect(report.starts.doubleInvites).toEqual([]);
    expect(report.starts.endedWrong).toEqual([]);
    expect(report.starts.journeys).toBeGreaterThan(0);
    expect(report.erasures.done).toBe(report.erasures.requested);
    expect(report.erasures.requested).toBeGreaterThan(0);
    expect(report.erasures.readable).toEqual([]);
    expect(report.audit.ok).toBe(true);
    expect(report.faults.map((f) => f.fault)).toEqual([...GAME_DAY_FAULTS]);
    expect(fatal).toEqual([]);
  }, 1_200_000);
});
