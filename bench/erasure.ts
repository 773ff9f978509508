// `npm run bench:erasure`: how long erasing a patient takes, from the clinic's request to every copy unreadable. Starts
// its own stack (Temporal dev server, sandbox, worker, API with the files inbox and the file key store, ports
// 22600-22799, a fresh folder under /tmp), gives each of a few patients journeys in two states (two waiting for their
// consultation, one completed), then erases them one after the other through POST /v1/patients/erasure and polls
// GET /v1/patients/erasure/{id} until it is done. Writes its section of docs/performance.md (between its markers; a
// whole `npm run bench` keeps it) unless --no-write.
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { KEY_CACHE_TTL_MS } from '../src/patient-keys/patient-keys';
import { describeMachine, loadAverage } from './lib/machine';
import { ERASURE_END, ERASURE_START, withErasureSection } from './lib/sections';
import { BenchStack, benchPorts, CLINICS } from './lib/stack';
import { summarize, type Summary } from './lib/stats';

const ROOT = path.resolve(__dirname, '..');
const CLINIC = CLINICS.hook;
const headers = { authorization: `Bearer ${CLINIC.token}`, 'content-type': 'application/json' };

interface Erased {
  /** From the request to its 202. */
  acceptedMs: number;
  /** From the request to the status `done` (the key destroyed). */
  doneMs: number;
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
  const stack = new BenchStack({
    dataDir: path.join(dir, 'data'),
    logDir: path.join(dir, 'logs'),
    ports: benchPorts(22_600),
    providerDelayMs: 1_000,
    backgroundNice: 0,
    log,
  });
  const results: Erased[] = [];
  try {
    mkdirSync(path.join(dir, 'data'), { recursive: true });
    await stack.configure();
    await stack.startTemporal();
    await stack.startSandbox();
    await stack.startWorker();
    await stack.startApi({}, [], { store: 'files' });
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
    const settled = async (journeyId: string) => {
      for (let i = 0; i < 600; i++) {
        const j = await json(await fetch(`${api}/v1/journeys/${journeyId}`, { headers }));
        if (['awaiting_consultation', 'completed'].includes(j.journey?.stage)) return;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`journey ${journeyId} did not settle`);
    };
    const emails = Array.from({ length: patients }, (_, i) => `erase-${run}-${i}@example.test`);
    const journeys: string[] = [];
    for (const [i, email] of emails.entries()) {
      journeys.push(await start(`p${i}-a`, email, 'Waitsforconsult'));
      journeys.push(await start(`p${i}-b`, email, 'Waitsforconsult'));
      journeys.push(await start(`p${i}-c`, email, 'Approve'));
    }
    await Promise.all(journeys.map(settled));
    log(`${journeys.length} journeys of ${patients} patients settled (two waiting, one completed each)`);
    for (const [i, email] of emails.entries()) {
      const t0 = performance.now();
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
        await new Promise((r) => setTimeout(r, 50));
        view = await json(await fetch(`${api}/v1/patients/erasure/${accepted.erasureId}`, { headers }));
      }
      const doneMs = performance.now() - t0;
      results.push({ acceptedMs, doneMs, journeys: view.journeys.length });
      log(
        `patient ${i + 1}: accepted in ${acceptedMs.toFixed(1)} ms, done in ${(doneMs / 1000).toFixed(2)} s (${view.journeys.length} journeys)`,
      );
    }
  } finally {
    await stack.stopAll();
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
  const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  const everywhere = done.max + KEY_CACHE_TTL_MS;
  return [
    ERASURE_START,
    '### Erasing a patient',
    '',
    `Measured by \`npm run bench:erasure\` (bench/erasure.ts), ${o.started.toISOString().slice(0, 16).replace('T', ' ')} UTC, ` +
      `on ${o.machine.cpuModel}, ${o.machine.cores} cores; load average (1, 5, 15 min) before ${load(o.loadBefore)}, ` +
      `after ${load(o.loadAfter)}. Its own stack (Temporal dev server, sandbox, worker, API; the files inbox and the ` +
      `file key store); ${r.length} patients, each with ${r[0]?.journeys ?? 0} journeys (two waiting for their ` +
      'consultation, one completed), erased one after the other through `POST /v1/patients/erasure`, each polled ' +
      '(`GET`, every 50 ms) until `done`: its waiting journeys cancelled (each cancels its invite at the sandbox) and ' +
      'ended, their documents and dead letters deleted, the key destroyed.',
    '',
    '| | p50 | max |',
    '|---|---|---|',
    `| Request to its 202 | ${accepted.p50.toFixed(1)} ms | ${accepted.max.toFixed(1)} ms |`,
    `| Request to \`done\` (the key out of the store and into the erasure log; the process that erased holds it no more) | ${s(done.p50)} | ${s(done.max)} |`,
    `| Request to every copy unreadable (\`done\` and the ${KEY_CACHE_TTL_MS / 1000} s another process may still hold the key: \`unreadableEverywhereAt\`) | ${s(done.p50 + KEY_CACHE_TTL_MS)} | ${s(everywhere)} |`,
    '',
    `Goal: every copy unreadable within 60 s of the request: ${everywhere < 60_000 ? '**met**' : '**missed**'} ` +
      `(${s(everywhere)} at most in this run).`,
    ERASURE_END,
  ].join('\n');
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : err);
    process.exit(1);
  });
}
