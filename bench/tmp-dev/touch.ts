// DEV ONLY: does a snapshot query put an evicted journey back into the worker's sticky cache?
import { mkdtempSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BenchStack, benchPorts, CLINICS } from '../lib/stack';
import { benchClient, benchConfig, gfeInput, pool, startJourney, waitForCount } from '../lib/journeys';
import { rssBytes, liveChildren, stopChild } from '../lib/proc';
import { journeyWorkflowId, snapshotQuery } from '../../src/workflows/definitions';
async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'touch-'));
  mkdirSync(`${dir}/logs`);
  mkdirSync(`${dir}/data`);
  const stack = new BenchStack({
    dataDir: `${dir}/data`,
    logDir: `${dir}/logs`,
    ports: benchPorts(22200),
    providerDelayMs: 1000,
    log: console.log,
  });
  try {
    await stack.configure();
    await stack.startTemporal();
    await stack.startSandbox();
    await stack.startWorker();
    await stack.startApi();
    const config = benchConfig(stack.env);
    const client = await benchClient(config);
    const n = Number(process.env.N ?? 1200);
    const ids = Array.from({ length: n }, (_, i) => `bt${i}`);
    await pool(ids, 50, (id) =>
      startJourney(client, config, gfeInput(config, CLINICS.waiting.clinicId, id, 'Waiting')),
    );
    await waitForCount(
      client,
      `ClinicId = '${CLINICS.waiting.clinicId}' AND JourneyStage = 'awaiting_consultation'`,
      n,
      300000,
    );
    console.log('parked; worker RSS', ((await rssBytes(stack.worker!.pid))! / 2 ** 20).toFixed(0));
    for (const cache of (process.env.CACHES ?? '2000,1000').split(',')) {
      await stack.stopWorker();
      await stack.startWorker({ WORKER_MAX_CACHED_WORKFLOWS: cache });
      const r0 = (await rssBytes(stack.worker!.pid))! / 2 ** 20;
      const t = performance.now();
      await pool(ids, 16, (id) => client.workflow.getHandle(journeyWorkflowId(id)).query(snapshotQuery));
      const secs = (performance.now() - t) / 1000;
      await new Promise((r) => setTimeout(r, 2000));
      console.log(
        `cache ${cache}: fresh ${r0.toFixed(0)} MiB -> after touching ${n}: ${((await rssBytes(stack.worker!.pid))! / 2 ** 20).toFixed(0)} MiB (${(n / secs).toFixed(0)} queries/s)`,
      );
      const t2 = performance.now();
      await pool(ids.slice(-200), 16, (id) => client.workflow.getHandle(journeyWorkflowId(id)).query(snapshotQuery));
      console.log(`  re-query last 200: ${(200 / ((performance.now() - t2) / 1000)).toFixed(0)}/s`);
    }
    await client.connection.close();
  } finally {
    await stack.stopAll();
    for (const c of liveChildren()) await stopChild(c);
  }
}
void main();
