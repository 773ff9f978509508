// The production shape's core: the Temporal server itself (not the dev server) on a real PostgreSQL, schema set up by
// temporal-sql-tool from the module's versioned files, namespace and search attributes registered. A journey runs on
// it, survives a SIGKILL of the server (state is in PostgreSQL), and is found by its search attributes.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { freePort } from '../../scripts/lib/postgres-server';
import {
  prepareNamespace,
  setupTemporalSchema,
  startTemporalServer,
  type TemporalServer,
} from '../../scripts/lib/temporal-server';
import {
  callbackReceived,
  journeyWorkflowId,
  SEARCH_ATTRIBUTE_KEYS,
  SearchAttr,
  snapshotQuery,
} from '../../src/contract/definitions';
import { DEFAULT_TIMINGS, type JourneyInput } from '../../src/contract/journey-request';
import { eventually, fakeActivities, gfeBody } from '../api/support';
import { startTestPostgres, type TestPostgres } from '../support/postgres';

const TASK_QUEUE = 'production-server';

describe('Temporal server on PostgreSQL', () => {
  let pg: TestPostgres;
  let server: TemporalServer;

  beforeAll(async () => {
    pg = await startTestPostgres({ database: 'journeys', user: 'temporal' });
    const postgres = { host: '127.0.0.1', port: pg.port, user: pg.user, password: new URL(pg.url).password };
    await setupTemporalSchema(postgres);
    // A second run finds the schema current and changes nothing.
    await setupTemporalSchema(postgres);
    // Membership ports below 32768 (smallint in the schema).
    const base = 20_000 + Math.floor(Math.random() * 10_000);
    server = startTemporalServer({
      postgres,
      ports: {
        frontend: await freePort(),
        http: await freePort(),
        history: await freePort(),
        matching: await freePort(),
        worker: await freePort(),
        membershipBase: base,
        metrics: await freePort(),
      },
      logDir: path.join(pg.root, 'logs'),
      configDir: path.join(pg.root, 'temporal-config'),
    });
    await server.start();
    await prepareNamespace(
      server.address,
      'default',
      SEARCH_ATTRIBUTE_KEYS.map((k) => ({ name: k.name, type: k.type })),
    );
  }, 180_000);

  afterAll(async () => {
    await server?.stop();
    await pg?.cleanup();
  });

  it('is the version scripts/install-temporal-server.sh installs', async () => {
    const script = readFileSync(path.resolve(__dirname, '../../scripts/install-temporal-server.sh'), 'utf8');
    const installed = /^version="v([\d.]+)"$/m.exec(script)![1];
    const connection = await Connection.connect({ address: server.address });
    try {
      const info = await connection.workflowService.getSystemInfo({});
      expect(info.serverVersion).toBe(installed);
    } finally {
      await connection.close();
    }
  });

  it('runs a journey, keeps it across a server crash, and finds it by search attribute', async () => {
    const client = new Client({ connection: await Connection.connect({ address: server.address }) });
    const workerConnection = await NativeConnection.connect({ address: server.address });
    const worker = await Worker.create({
      connection: workerConnection,
      taskQueue: TASK_QUEUE,
      workflowsPath: require.resolve('../../src/workflows'),
      activities: fakeActivities(50_000).activities,
    });
    const running = worker.run();
    try {
      const journeyId = 'jprod1';
      const input: JourneyInput = {
        ...(gfeBody() as Omit<JourneyInput, 'clinicId' | 'journeyId' | 'timings'>),
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
      const waiting = await eventually(
        () => handle.query(snapshotQuery),
        (s) => s.stage === 'awaiting_consultation',
      );

      await server.kill();
      await server.start();

      await handle.signal(callbackReceived, {
        deliveryId: 'd-prod-1',
        receivedAt: new Date().toISOString(),
        callback: {
          event: 1,
          patientExamId: waiting.exams[0]!.patientExamId,
          examId: 101,
          examStatus: 'Approved',
          rxStatus: null,
          examUrl: null,
          providerName: null,
          reason: null,
        },
        raw: { event: 1 },
      });
      await handle.result();
      const found = await eventually(
        async () => {
          const ids: string[] = [];
          for await (const w of client.workflow.list({
            query: `ClinicId = 'clinic-a' AND JourneyStage = 'completed'`,
          })) {
            ids.push(w.workflowId);
          }
          return ids;
        },
        (ids) => ids.length === 1,
        { timeoutMs: 30_000, intervalMs: 500 },
      );
      expect(found).toEqual([journeyWorkflowId(journeyId)]);
    } finally {
      worker.shutdown();
      await running;
      await workerConnection.close();
      await client.connection.close();
    }
  }, 120_000);
});
