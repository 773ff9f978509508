// The production topology with the Temporal server split as a cluster deploys it (TEMPORAL_SPLIT=on): two frontends
// behind HAProxy, two history and two matching nodes and the internal worker, each a process of its own with its own
// membership port. Every node joins the cluster's membership; the demo passes while a history node is SIGKILLed a
// few seconds in (its shards move to the other node), then again while a matching node is; each is started again, as
// an orchestrator would, and the stack stops with none of them left.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client as PgClient } from 'pg';
import { freeProductionPorts, ProductionStack } from '../../scripts/lib/production-stack';
import type { TemporalNode } from '../../scripts/lib/temporal-server';
import { runDemo } from '../support/demo';

describe("the production topology with Temporal's services split", () => {
  let root: string;
  let stack: ProductionStack;
  const fatal: string[] = [];

  beforeAll(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'temporal-split-'));
    const ports = await freeProductionPorts(25_000, 26_999, { temporalSplit: true });
    stack = new ProductionStack({
      dataDir: root,
      ports,
      workers: 2,
      temporalSplit: true,
      supervise: true,
      onFatal: (why) => fatal.push(why),
    });
    await stack.start();
  }, 300_000);

  afterAll(async () => {
    const nodes = stack?.temporal?.nodes ?? [];
    await stack?.stop();
    expect(nodes.filter((n) => n.running).map((n) => n.name)).toEqual([]);
    if (root && process.env.KEEP_RUN !== '1') rmSync(root, { recursive: true, force: true });
  }, 120_000);

  const node = (service: string): TemporalNode => stack.temporal!.nodes.find((n) => n.service === service)!;

  it('runs each service as processes of its own, every one of them in the cluster membership', async () => {
    const nodes = stack.temporal!.nodes;
    expect(nodes.map((n) => n.service).sort()).toEqual(
      ['frontend', 'frontend', 'history', 'history', 'matching', 'matching', 'worker'].sort(),
    );
    expect(nodes.every((n) => n.running)).toBe(true);
    // Each node's own metrics page: a process of its own.
    for (const n of nodes) expect((await fetch(n.metricsUrl)).ok).toBe(true);
    // The membership the nodes write into the database: seven live members, each on a port of its own.
    const url = new URL(stack.superuserUrl);
    url.pathname = '/temporal';
    const db = new PgClient({ connectionString: url.toString() });
    await db.connect();
    try {
      const live = await db.query<{ role: number; rpc_port: number }>(
        'SELECT role, rpc_port FROM cluster_membership WHERE record_expiry > now()',
      );
      expect(new Set(live.rows.map((r) => r.rpc_port)).size).toBe(7);
    } finally {
      await db.end();
    }
  }, 60_000);

  for (const service of ['history', 'matching'] as const) {
    it(`runs the demo to the end while a ${service} node is SIGKILLed a few seconds in`, async () => {
      const victim = node(service);
      const run = runDemo(stack.apiUrl, 240);
      await new Promise((r) => setTimeout(r, 3_000));
      await victim.kill();
      expect(victim.running).toBe(false);
      const { code, tail } = await run;
      expect({ code, tail }).toEqual({ code: 0, tail: expect.stringContaining('All 5 journeys ended as expected') });
      // A node lost is a pause for the journeys it served, never an error a clinic sees.
      expect(tail).not.toMatch(/\b500 x\d/);
      // Started again, as an orchestrator does: it joins, and takes its share back.
      await victim.start();
      expect(victim.running).toBe(true);
      expect(fatal).toEqual([]);
    }, 420_000);
  }
});
