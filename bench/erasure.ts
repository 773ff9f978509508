// `npm run bench:erasure`: how long erasing a patient takes, from the clinic's request to the moment no process can
// read her data any more. Runs on the production topology (scripts/lib/production-stack.ts: the Temporal server on
// PostgreSQL, its PostgreSQL cluster (a primary and a synchronous standby), two API replicas behind HAProxy, a worker,
// the patient keys in their own database; free ports from 22600, a fresh folder under /tmp), gives each of a few
// patients journeys in two states (two waiting for their consultation, one completed), then erases them one after the
// other through POST /v1/patients/erasure and polls GET /v1/patients/erasure/{id} until it is done. Meanwhile each
// replica is asked for the patient's completed journey every 25 ms, straight on its own port: it answers it from its
// snapshot or result (opened by the replica, and the worker behind it) while any of them holds her key, and from
// visibility once none does; the report gives when each replica stopped opening it, and counts any answer read after
// `done` (the promise: none). Writes its section of docs/performance.md (between its markers; a whole `npm run bench`
// keeps it) unless --no-write.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { freeProductionPorts, ProductionStack } from '../scripts/lib/production-stack';
import { DEMO_CLINIC_TOKEN } from '../scripts/lib/stack-secrets';
import { describeMachine, loadAverage } from './lib/machine';
import { ERASURE_END, ERASURE_START, withErasureSection } from './lib/sections';
import { summarize, type Summary } from './lib/stats';

const ROOT = path.resolve(__dirname, '..');
const headers = { authorization: `Bearer ${DEMO_CLINIC_TOKEN}`, 'content-type': 'application/json' };
/** How often each replica is asked whether it still opens the patient's data. */
const PROBE_MS = 25;

interface Erased {
  /** From the request to its 202. */
  acceptedMs: number;
  /** From the request to the status `done`. */
  doneMs: number;
  /** From the request to the last answer of each replica that opened her data (0: none after the request). */
  lastOpenedMs: number[];
  /** Answers that opened her data, read after `done` was (the promise: none). */
  openedAfterDone: number;
  journeys: number;
}

async function json(res: Response): Promise<any> {
  const body = await res.json();
  if (!res.ok) throw new Error(`${res.url} answered ${res.status}: ${JSON.stringify(body).slice(0, 300)}`);
  return body;
}

async function main() {
  const { values } = parseArgs({
    options: {
      patients: { type: 'string', default: '5' },
      'no-write': { type: 'boolean', default: false },
      out: { type: 'string' },
    },
  });
  const patients = Number(values.patients);
  const started = new Date();
  const loadBefore = loadAverage();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-erasure-'));
  const log = (l: string) => console.log(`[erasure] ${l}`);
  const ports = await freeProductionPorts(22_600, 22_799, { cluster: true, replicas: 2 });
  const stack = new ProductionStack({
    dataDir: dir,
    ports,
    workers: 1,
    database: 'cluster',
    supervise: false,
    engineEnv: { API_RATE_LIMIT_PER_MINUTE: '100000' },
    sandboxEnv: { SANDBOX_PROVIDER_DELAY_MS: '1000' },
  });
  const results: Erased[] = [];
  try {
    log('starting the production stack (two API replicas, the PostgreSQL cluster)');
    await stack.start();
    const api = stack.apiUrl;
    const run = randomBytes(4).toString('hex');
    const start = async (key: string, email: string, lastName: string) =>
      (
        await json(
          await fetch(`${api}/v1/journeys`, {
            method: 'POST',
            headers: { ...headers, 'idempotency-key': `${run}-${key}` },
            body: JSON.stringify({
              patient: {
                firstName: 'Test',
                lastName,
                email,
                dob: '1980-01-01',
                phoneNumber: '4155550100',
                teleState: 'TE',
              },
              exams: [101],
              scenario: { type: 'gfe' },
            }),
          }),
        )
      ).journeyId as string;
    const source = async (base: string, journeyId: string) =>
      (await json(await fetch(`${base}/v1/journeys/${journeyId}`, { headers }))) as {
        source: string;
        journey?: { stage?: string };
      };
    const settled = async (journeyId: string, stage: string) => {
      for (let i = 0; i < 1200; i++) {
        const j = await source(api, journeyId);
        if (j.journey?.stage === stage && j.source !== 'visibility') return;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`journey ${journeyId} did not reach ${stage}`);
    };
    const emails = Array.from({ length: patients }, (_, i) => `erase-${run}-${i}@example.test`);
    const completed: string[] = [];
    const waits: Promise<void>[] = [];
    for (const [i, email] of emails.entries()) {
      for (const k of ['a', 'b'])
        waits.push(settled(await start(`p${i}-${k}`, email, 'Waitsforconsult'), 'awaiting_consultation'));
      const c = await start(`p${i}-c`, email, 'Approve');
      completed.push(c);
      waits.push(settled(c, 'completed'));
    }
    await Promise.all(waits);
    log(`${patients * 3} journeys of ${patients} patients settled (two waiting, one completed each)`);
    const replicas = ports.apiReplicas.map((p) => `http://127.0.0.1:${p}`);
    for (const [i, email] of emails.entries()) {
      const journey = completed[i]!;
      // Each replica opens her data now (its key cache holds her key).
      for (const r of replicas) {
        if ((await source(r, journey)).source === 'visibility')
          throw new Error(`replica ${r} could not read the journey`);
      }
      const t0 = performance.now();
      const marks: { doneAt?: number } = {};
      const lastOpened = replicas.map(() => 0);
      let openedAfterDone = 0;
      let probing = true;
      const probes = replicas.map(async (r, k) => {
        while (probing) {
          const sent = performance.now();
          const answer = await source(r, journey).catch(() => undefined);
          if (answer && answer.source !== 'visibility') {
            lastOpened[k] = performance.now() - t0;
            if (marks.doneAt !== undefined && sent > marks.doneAt) openedAfterDone++;
          }
          await new Promise((res) => setTimeout(res, PROBE_MS));
        }
      });
      const accepted = await json(
        await fetch(`${api}/v1/patients/erasure`, {
          method: 'POST',
          headers: { ...headers, 'idempotency-key': `${run}-erase-${i}` },
          body: JSON.stringify({ email }),
        }),
      );
      const acceptedMs = performance.now() - t0;
      let view = accepted;
      while (view.status !== 'done') {
        if (performance.now() - t0 > 180_000) throw new Error(`erasure ${accepted.erasureId} not done in 180 s`);
        await new Promise((r) => setTimeout(r, 25));
        view = await json(await fetch(`${api}/v1/patients/erasure/${accepted.erasureId}`, { headers }));
      }
      const doneAt = (marks.doneAt = performance.now());
      const doneMs = doneAt - t0;
      // Keep asking a while after done: any replica that still opened her data would show here.
      await new Promise((r) => setTimeout(r, 2_000));
      probing = false;
      await Promise.all(probes);
      results.push({ acceptedMs, doneMs, lastOpenedMs: lastOpened, openedAfterDone, journeys: view.journeys.length });
      log(
        `patient ${i + 1}: accepted in ${acceptedMs.toFixed(1)} ms, done in ${(doneMs / 1000).toFixed(2)} s ` +
          `(${view.journeys.length} journeys); replicas last opened her data at ` +
          `${lastOpened.map((ms) => `${(ms / 1000).toFixed(2)} s`).join(', ')}; ${openedAfterDone} answers after done opened it`,
      );
    }
  } finally {
    await stack.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  const section = render(results, {
    machine: describeMachine(),
    loadBefore,
    loadAfter: loadAverage(),
    started,
  });
  console.log(`\n${section}\n`);
  if (!values['no-write']) {
    const file = values.out ?? path.join(ROOT, 'docs', 'performance.md');
    writeFileSync(file, withErasureSection(readFileSync(file, 'utf8'), section));
    console.log(`written to ${path.relative(ROOT, file)}`);
  }
}

function render(
  r: Erased[],
  o: {
    machine: ReturnType<typeof describeMachine>;
    loadBefore: ReturnType<typeof loadAverage>;
    loadAfter: ReturnType<typeof loadAverage>;
    started: Date;
  },
): string {
  const load = (l: ReturnType<typeof loadAverage>) => `${l.one}, ${l.five}, ${l.fifteen}`;
  const done: Summary = summarize(r.map((x) => x.doneMs));
  const accepted: Summary = summarize(r.map((x) => x.acceptedMs));
  const lastOpened: Summary = summarize(r.map((x) => Math.max(...x.lastOpenedMs)));
  const openedAfterDone = r.reduce((n, x) => n + x.openedAfterDone, 0);
  const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  const met = done.max < 5_000 && openedAfterDone === 0;
  return [
    ERASURE_START,
    '### Erasing a patient',
    '',
    `Measured by \`npm run bench:erasure\` (bench/erasure.ts), ${o.started.toISOString().slice(0, 16).replace('T', ' ')} UTC, ` +
      `on ${o.machine.cpuModel}, ${o.machine.cores} cores; load average (1, 5, 15 min) before ${load(o.loadBefore)}, ` +
      `after ${load(o.loadAfter)}. The production topology (the Temporal server on PostgreSQL, the PostgreSQL cluster ` +
      'with its synchronous standby, two API replicas behind HAProxy, a worker, the patient keys in PostgreSQL); ' +
      `${r.length} patients, each with ${r[0]?.journeys ?? 0} journeys (two waiting for their consultation, one ` +
      'completed), erased one after the other through `POST /v1/patients/erasure`, each polled (`GET`, every 25 ms) ' +
      'until `done`: its waiting journeys cancelled (each cancels its invite at the sandbox) and ended, their ' +
      'documents and dead letters deleted, the key destroyed, and every process given the time of its check of the ' +
      `keys it holds (1 s). Meanwhile each replica was asked for her completed journey every ${PROBE_MS} ms on its own ` +
      'port: it reads it (its snapshot from the worker, or its result) while any process holds her key.',
    '',
    '| | p50 | max |',
    '|---|---|---|',
    `| Request to its 202 | ${accepted.p50.toFixed(1)} ms | ${accepted.max.toFixed(1)} ms |`,
    `| Request to \`done\` (= \`unreadableEverywhereAt\`: no process can open her data) | ${s(done.p50)} | ${s(done.max)} |`,
    `| Request to the last answer of either replica that still opened her data | ${s(lastOpened.p50)} | ${s(lastOpened.max)} |`,
    '',
    `Answers that opened her data after \`done\` was read: ${openedAfterDone} (of both replicas, every ${PROBE_MS} ms for ` +
      '2 s after each `done`).',
    '',
    `Goal: \`done\` within 5 s of the request, and no process opening her data after it: ${met ? '**met**' : '**missed**'} ` +
      `(${s(done.max)} at most in this run; ${openedAfterDone} answers after \`done\`).`,
    ERASURE_END,
  ].join('\n');
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : err);
    process.exit(1);
  });
}
