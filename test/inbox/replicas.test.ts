// Two API replicas (real processes) share one PostgreSQL inbox. With Temporal down, callbacks flow to both and one
// replica is SIGKILLed in the middle, possibly holding a claim. After Temporal returns, the surviving replica's
// forwarder takes everything, the dead one's entries included: every acknowledged callback is applied by its
// journey exactly once, and nothing that was not acknowledged shows up.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { journeyWorkflowId, SEARCH_ATTRIBUTE_KEYS, SearchAttr, snapshotQuery } from '../../src/contract/definitions';
import { DEFAULT_TIMINGS, type JourneyInput } from '../../src/contract/journey-request';
import { event1, eventually, fakeActivities, gfeBody, TOKENS, WEBHOOK_SECRET, webhookPath } from '../api/support';
import { DevServerProcess, freePort } from '../support/dev-server-process';
import { startTestPostgres, type TestPostgres } from '../support/postgres';

const TASK_QUEUE = 'inbox-replicas';
const JOURNEYS = 6;

interface Replica {
  name: string;
  base: string;
  child: ChildProcess;
  exited: Promise<number | null>;
  stderr: () => string;
}

describe('two API replicas on one PostgreSQL inbox', () => {
  let pg: TestPostgres;
  let server: DevServerProcess;
  let client: Client;
  let workerConnection: NativeConnection;
  let worker: Worker;
  let workerRun: Promise<unknown>;
  const replicas: Replica[] = [];

  async function startReplica(name: string): Promise<Replica> {
    const port = await freePort();
    const child = spawn(
      process.execPath,
      // One process (node with tsx's loader), so that SIGKILL kills the server itself, not a launcher above it.
      ['--import', 'tsx', path.resolve(__dirname, '../../src/api/server.ts')],
      {
        env: {
          ...process.env,
          API_PORT: String(port),
          TEMPORAL_ADDRESS: server.address,
          TEMPORAL_TASK_QUEUE: TASK_QUEUE,
          INBOX_STORE: 'postgres',
          INBOX_DATABASE_URL: pg.url,
          DATA_DIR: path.join(pg.root, name),
          WEBHOOK_SECRET,
          API_TEMPORAL_TIMEOUT_MS: '1000',
          FORWARDER_MAX_BACKOFF_MS: '500',
          PAYLOAD_ENCRYPTION_DISABLED: 'true',
          LOG_LEVEL: 'silent',
          CLINICS_JSON: JSON.stringify([
            {
              clinicId: 'clinic-a',
              examServiceApiKey: 'k',
              apiTokenSha256: [createHash('sha256').update(TOKENS.a).digest('hex')],
            },
          ]),
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const base = `http://127.0.0.1:${port}`;
    // Starting takes seconds alone, far longer beside the rest of the suite on a busy machine: what is tested is what
    // the replicas do once up. A replica that never answers says why (its exit and its last output).
    try {
      await eventually(
        () =>
          fetch(`${base}/healthz`).then(
            (r) => r.status,
            () => (child.exitCode === null ? 0 : -1),
          ),
        (s) => s === 200 || s === -1,
        { timeoutMs: 90_000, intervalMs: 200 },
      );
    } catch (err) {
      throw new Error(`${name} did not answer /healthz: ${(err as Error).message}; stderr: ${stderr.slice(-2000)}`);
    }
    if (child.exitCode !== null) throw new Error(`${name} exited (${child.exitCode}): ${stderr.slice(-2000)}`);
    const replica = { name, base, child, exited, stderr: () => stderr };
    replicas.push(replica);
    return replica;
  }

  beforeAll(async () => {
    pg = await startTestPostgres({ database: 'inbox' });
    server = await DevServerProcess.start(SEARCH_ATTRIBUTE_KEYS);
    client = new Client({ connection: await Connection.connect({ address: server.address }) });
    workerConnection = await NativeConnection.connect({ address: server.address });
    worker = await Worker.create({
      connection: workerConnection,
      taskQueue: TASK_QUEUE,
      workflowsPath: require.resolve('../../src/workflows'),
      activities: fakeActivities(70_000).activities,
    });
    workerRun = worker.run().catch((err: unknown) => err);
  }, 120_000);

  afterAll(async () => {
    for (const r of replicas) {
      if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill('SIGTERM');
      await r.exited;
    }
    if (worker?.getState() === 'RUNNING') worker.shutdown();
    await workerRun;
    await workerConnection?.close();
    await client?.connection.close();
    await server?.teardown();
    await pg?.cleanup();
  });

  it('loses nothing when one replica is SIGKILLed while Temporal is down', async () => {
    const [a, b] = [await startReplica('api-a'), await startReplica('api-b')];

    // Urgent-care journeys waiting for their consultation: after the verdict they wait for the prescription, so
    // every repeated verdict reaches a running journey (and is recorded as a duplicate of the first).
    const urgentCare = gfeBody({ exams: [301], scenario: { type: 'urgent_care', pharmacy: { ncpdpid: '4512345' } } });
    const journeys: { journeyId: string; patientExamId: number }[] = [];
    for (let i = 0; i < JOURNEYS; i++) {
      const journeyId = `jrep${i}`;
      const input: JourneyInput = {
        ...(urgentCare as Omit<JourneyInput, 'clinicId' | 'journeyId' | 'timings'>),
        clinicId: 'clinic-a',
        journeyId,
        timings: DEFAULT_TIMINGS,
      };
      const handle = await client.workflow.start('patientJourney', {
        workflowId: journeyWorkflowId(journeyId),
        taskQueue: TASK_QUEUE,
        args: [input],
        typedSearchAttributes: [{ key: SearchAttr.ClinicId, value: 'clinic-a' }],
      });
      const snap = await eventually(
        () => handle.query(snapshotQuery),
        (s) => s.stage === 'awaiting_consultation',
      );
      journeys.push({ journeyId, patientExamId: snap.exams[0]!.patientExamId });
    }

    await server.stop();
    const acknowledged = new Map<string, string[]>(journeys.map((j) => [j.journeyId, []]));
    let refused = 0;
    const send = async (replica: Replica, j: { journeyId: string; patientExamId: number }) => {
      try {
        const res = await fetch(`${replica.base}${webhookPath(j.journeyId)}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(event1(j.patientExamId, 'Approved', 301)),
        });
        if (res.status === 200)
          acknowledged.get(j.journeyId)!.push(((await res.json()) as { deliveryId: string }).deliveryId);
        else refused++;
      } catch {
        refused++; // the killed replica: not acknowledged, the service would have seen a failure
      }
    };
    // Four rounds to both replicas; replica A is killed in the middle of the third, with callbacks in flight to it
    // and its forwarder retrying (Temporal is down, so it claims, fails and backs off again and again).
    for (let round = 0; round < 4; round++) {
      const inFlight = journeys.flatMap((j, i) => [send(i % 2 === 0 ? a : b, j), send(b, j)]);
      if (round === 2) a.child.kill('SIGKILL');
      await Promise.all(inFlight);
      await new Promise((r) => setTimeout(r, 300));
    }
    expect(await a.exited).toBeNull();
    // Calls to the killed replica failed (the service would see them fail): those were never acknowledged.
    expect(refused).toBeGreaterThan(0);
    const total = [...acknowledged.values()].reduce((n, ids) => n + ids.length, 0);
    expect(total).toBeGreaterThan(JOURNEYS * 4);

    await server.startAgain();
    // Replica B's forwarder drains everything, replica A's entries included.
    await eventually(
      async () => {
        const res = await fetch(`${b.base}/readyz`);
        return res.status === 200 ? ((await res.json()) as { inboxDepth: number }).inboxDepth : -1;
      },
      (depth) => depth === 0,
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    for (const j of journeys) {
      const snap = await eventually(
        () => client.workflow.getHandle(journeyWorkflowId(j.journeyId)).query(snapshotQuery),
        (s) => s.events.length >= acknowledged.get(j.journeyId)!.length,
        { timeoutMs: 30_000, intervalMs: 250 },
      );
      // Each acknowledged delivery exactly once, nothing else; the first verdict applied, the rest duplicates.
      expect(snap.events.map((e) => e.deliveryId).sort()).toEqual([...acknowledged.get(j.journeyId)!].sort());
      expect(snap.events.filter((e) => e.disposition === 'applied')).toHaveLength(1);
    }
    expect(b.stderr()).toBe('');
  }, 240_000);
});
