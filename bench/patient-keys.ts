// What per-patient data keys cost (src/patient-keys): sealing and opening a value for a patient with its key in the
// cache, against today's at-rest sealer (one key for every patient); a cold open (the key read from its store and
// unwrapped), from the file store and from PostgreSQL on this host; a new patient's first seal (the key made and
// stored); a new patient's key on the file store with 1,000 and 10,000 keys held (the writer's insert, a reader's first
// read of it); and the memory one cached key takes. Writes its section of docs/performance.md (between its markers; a
// whole `npm run bench` keeps it) unless --no-write. Run alone: `npm run bench:patient-keys` (needs --expose-gc,
// which the script passes). PostgreSQL comes from Debian's package, on port 26050 of a throwaway cluster.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startPostgres } from '../scripts/lib/postgres-server';
import { RecordSealer } from '../src/codec/at-rest';
import type { EncryptionKey } from '../src/encryption-keys';
import { KeyCache } from '../src/patient-keys/cache';
import { cipherKey, KeyWrapper, newDataKey, PatientRefs } from '../src/patient-keys/crypto';
import {
  FileErasureLog,
  FilePatientKeyStore,
  PatientKeys,
  PostgresPatientKeyStore,
  type PatientKeyStore,
  type PatientRef,
  type SealedEnvelope,
} from '../src/patient-keys';
import { describeMachine, loadAverage } from './lib/machine';
import { PATIENT_KEYS_END, PATIENT_KEYS_START, withPatientKeysSection } from './lib/sections';
import { summarize, type Summary } from './lib/stats';

const ROOT = path.resolve(__dirname, '..');
const PG_PORT = 26050;
const gc = (globalThis as { gc?: () => void }).gc;

const us = (ns: bigint) => Number(ns) / 1_000;
const fmt = (v: number) => (v >= 1000 ? `${(v / 1000).toFixed(2)} ms` : `${v.toFixed(v < 10 ? 1 : 0)} µs`);
const line = (s: Summary) => `${fmt(s.p50)} (p99 ${fmt(s.p99)})`;

async function timed(n: number, warmup: number, op: (i: number) => unknown): Promise<Summary> {
  for (let i = 0; i < warmup; i++) await op(i);
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = process.hrtime.bigint();
    await op(i);
    samples.push(us(process.hrtime.bigint() - t));
  }
  return summarize(samples);
}

/** A value of about `bytes` once in JSON: what a journey's input or a callback holds. */
const payload = (bytes: number) => ({
  note: randomBytes(Math.ceil((bytes * 3) / 4))
    .toString('base64')
    .slice(0, bytes - 12),
});

interface Figures {
  seal: Record<string, { patient: Summary; sealer: Summary }>;
  open: Record<string, { patient: Summary; sealer: Summary }>;
  unwrap: Summary;
  coldFile: Summary;
  coldPostgres: Summary;
  firstSealPostgres: Summary;
  bytesPerEntry: number;
  entries: number;
  /** A new patient on the file store with this many keys held: CPU µs of the writer's insert and a reader's read. */
  growth: { held: number; insert: Summary; read: Summary }[];
}

async function warmFigures(keys: PatientKeys, ring: EncryptionKey[]) {
  const ref = keys.patientRef('clinic-bench', 'warm@example.com');
  await keys.sealForPatient(ref, 'journey-input', 0);
  const sealer = new RecordSealer(ring);
  const seal: Figures['seal'] = {};
  const open: Figures['open'] = {};
  for (const [label, bytes, n] of [
    ['1 KiB', 1024, 20_000],
    ['64 KiB', 65_536, 2_000],
  ] as const) {
    const value = payload(bytes);
    let envelope: SealedEnvelope | undefined;
    const patientSeal = await timed(n, n / 10, async () => {
      envelope = await keys.sealForPatient(ref, 'journey-input', value);
    });
    // The sealer's JSON form (base64, as file records hold it): what an envelope is to compare with.
    const sealed = sealer.sealToJson(JSON.stringify(value), 'callback-inbox');
    const sealerSeal = await timed(n, n / 10, () => sealer.sealToJson(JSON.stringify(value), 'callback-inbox'));
    const patientOpen = await timed(n, n / 10, () => keys.openSealed(envelope, 'journey-input'));
    const sealerOpen = await timed(n, n / 10, () =>
      JSON.parse(sealer.openJson(sealed, 'callback-inbox').toString('utf8')),
    );
    seal[label] = { patient: patientSeal, sealer: sealerSeal };
    open[label] = { patient: patientOpen, sealer: sealerOpen };
  }
  return { seal, open };
}

/** Opens of a 1 KiB value whose key is never in the cache (its time 0): the store read and the unwrap, each time. */
async function coldOpens(store: () => PatientKeyStore, log: string, ring: EncryptionKey[], n: number) {
  const keys = new PatientKeys({
    ring,
    store: store(),
    erasureLog: new FileErasureLog(log),
    audit: () => Promise.resolve(),
    cache: { ttlMs: 0 },
  });
  await keys.init();
  const refs: PatientRef[] = [];
  const envelopes: SealedEnvelope[] = [];
  for (let i = 0; i < 50; i++) {
    const ref = keys.patientRef('clinic-bench', `cold-${i}@example.com`);
    refs.push(ref);
    envelopes.push(await keys.sealForPatient(ref, 'journey-input', payload(1024)));
  }
  const cold = await timed(n, n / 10, (i) => keys.openSealed(envelopes[i % envelopes.length], 'journey-input'));
  return { keys, cold };
}

function cacheBytesPerEntry(ring: EncryptionKey[], entries: number): number {
  if (!gc) throw new Error('run with --expose-gc (npm run bench:patient-keys does)');
  const refs = new PatientRefs(ring[0]!);
  const used = () => {
    gc();
    gc();
    const m = process.memoryUsage();
    return m.heapUsed + m.external;
  };
  const cache = new KeyCache(entries, 3_600_000);
  const before = used();
  // Each entry as the cache holds it: the patient ref it is filed under, the key's id and the key as ciphers take it.
  for (let i = 0; i < entries; i++) {
    const { dekId, dek } = newDataKey();
    cache.set(refs.of('clinic-bench', `mem-${i}@example.com`), { dekId, dek: cipherKey(dek) });
  }
  const after = used();
  if (cache.size !== entries) throw new Error('the cache did not keep every entry');
  return (after - before) / entries;
}

/** A new patient on the file store with `held` keys in it: the writer's insert and a reader's first read, CPU µs. */
async function fileGrowth(dir: string, held: number, n: number) {
  const file = path.join(dir, `growth-${held}.json`);
  const writer = new FilePatientKeyStore(file);
  const reader = new FilePatientKeyStore(file, { readOnly: true });
  await writer.init();
  const ref = (i: number): PatientRef => `pt_${String(i).padStart(22, '0')}`;
  const key = (i: number) => ({
    patientRef: ref(i),
    dekId: `dk_${String(i).padStart(22, '0')}`,
    wrapKeyId: 'bench',
    wrapped: randomBytes(60),
    createdAt: new Date().toISOString(),
  });
  try {
    for (let i = 0; i < held; i += 500) {
      await Promise.all(Array.from({ length: Math.min(500, held - i) }, (_, k) => writer.insert(key(i + k))));
    }
    // The key file holds them all (as after any rewrite), the reader has read it.
    await writer.settleSetting('bench', 'held');
    await reader.init();
    const insert: number[] = [];
    const read: number[] = [];
    for (let i = 0; i < n; i++) {
      const c0 = process.cpuUsage();
      await writer.insert(key(held + i));
      const c1 = process.cpuUsage(c0);
      insert.push(c1.user + c1.system);
      const c2 = process.cpuUsage();
      const got = await reader.get(ref(held + i));
      const c3 = process.cpuUsage(c2);
      if (!got) throw new Error('the reader did not find the key the writer made');
      read.push(c3.user + c3.system);
    }
    return { held, insert: summarize(insert), read: summarize(read) };
  } finally {
    await reader.close();
    await writer.close();
  }
}

async function main(): Promise<void> {
  const write = !process.argv.includes('--no-write');
  const machine = describeMachine();
  const loadBefore = loadAverage();
  const started = new Date();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-patient-keys-'));
  const ring: EncryptionKey[] = [{ id: 'bench', key: randomBytes(32) }];
  const pg = await startPostgres({ dataDir: path.join(dir, 'pg'), port: PG_PORT, database: 'patient_keys' });
  try {
    const warm = new PatientKeys({
      ring,
      store: new FilePatientKeyStore(path.join(dir, 'warm.json')),
      erasureLog: new FileErasureLog(path.join(dir, 'warm.erasures')),
      audit: () => Promise.resolve(),
    });
    await warm.init();
    const { seal, open } = await warmFigures(warm, ring);
    await warm.close();

    const wrapper = new KeyWrapper(ring);
    const { dekId, dek } = newDataKey();
    const ref = new PatientRefs(ring[0]!).of('clinic-bench', 'unwrap@example.com');
    const { wrapKeyId, wrapped } = wrapper.wrap(ref, dekId, dek);
    const unwrap = await timed(20_000, 2_000, () => wrapper.unwrap(ref, dekId, wrapKeyId, wrapped));

    const file = await coldOpens(
      () => new FilePatientKeyStore(path.join(dir, 'cold.json')),
      path.join(dir, 'cold.erasures'),
      ring,
      5_000,
    );
    await file.keys.close();
    const postgres = await coldOpens(
      () => new PostgresPatientKeyStore({ connectionString: pg.url }),
      path.join(dir, 'pg.erasures'),
      ring,
      2_000,
    );
    const firstSealPostgres = await timed(500, 50, (i) =>
      postgres.keys.sealForPatient(
        postgres.keys.patientRef('clinic-bench', `new-${i}@example.com`),
        'journey-input',
        1,
      ),
    );
    await postgres.keys.close();

    const growth = [await fileGrowth(dir, 1_000, 200), await fileGrowth(dir, 10_000, 200)];

    const entries = 50_000;
    const bytesPerEntry = cacheBytesPerEntry(ring, entries);
    const figures: Figures = {
      seal,
      open,
      unwrap,
      coldFile: file.cold,
      coldPostgres: postgres.cold,
      firstSealPostgres,
      bytesPerEntry,
      entries,
      growth,
    };
    const loadAfter = loadAverage();
    const section = render(figures, { machine, loadBefore, loadAfter, started });
    console.log(section);
    if (write) {
      const doc = path.join(ROOT, 'docs/performance.md');
      writeFileSync(doc, withPatientKeysSection(readFileSync(doc, 'utf8'), section));
      console.log(`written into ${path.relative(ROOT, doc)}`);
    }
  } finally {
    await pg.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

function render(
  f: Figures,
  o: {
    machine: ReturnType<typeof describeMachine>;
    loadBefore: ReturnType<typeof loadAverage>;
    loadAfter: ReturnType<typeof loadAverage>;
    started: Date;
  },
): string {
  const load = (l: ReturnType<typeof loadAverage>) => `${l.one}, ${l.five}, ${l.fifteen}`;
  const rows = (['1 KiB', '64 KiB'] as const).map(
    (label) =>
      `| ${label} | ${line(f.seal[label]!.patient)} | ${line(f.open[label]!.patient)} | ${line(f.seal[label]!.sealer)} | ${line(f.open[label]!.sealer)} |`,
  );
  return [
    PATIENT_KEYS_START,
    '## 7. Per-patient data keys',
    '',
    `Measured by \`npm run bench:patient-keys\` (bench/patient-keys.ts), ${o.started.toISOString().slice(0, 16).replace('T', ' ')} UTC, ` +
      `on ${o.machine.cpuModel}, ${o.machine.cores} cores, Node ${o.machine.node}; load average (1, 5, 15 min) before ` +
      `${load(o.loadBefore)}, after ${load(o.loadAfter)}; one process, one event loop. Median per operation (p99), ` +
      'the value JSON-encoded and AES-256-GCM sealed (src/patient-keys, [design](design-notes.md#per-patient-data-keys)).',
    '',
    "| Value | Seal for a patient (key cached) | Open | Seal, today's at-rest sealer (one key, its base64 JSON form) | Open, at-rest sealer |",
    '|---|---|---|---|---|',
    ...rows,
    '',
    `**A cold key** (not in the cache, or past its time): the unwrap alone ${line(f.unwrap)}; an open of a 1 KiB value ` +
      `whose key is read and unwrapped each time, from the file store ${line(f.coldFile)}, from PostgreSQL on this host ` +
      `${line(f.coldPostgres)}. A new patient's first seal (the key made, wrapped and inserted: one commit, which waits ` +
      `for the disk's flush; the audit append left out) on PostgreSQL: ${line(f.firstSealPostgres)}.`,
    '',
    '**A new patient on the file store, against the keys it holds** (CPU per operation, median (p99); one line ' +
      "appended to the key file's journal and synced, then read by a reader from where it last stopped): " +
      f.growth
        .map(
          (g) =>
            `with ${g.held.toLocaleString('en-US')} keys the writer's insert ${line(g.insert)}, a reader's first read of ` +
            `the new key ${line(g.read)}`,
        )
        .join('; ') +
      '. Before the journal, each new key rewrote the whole file and each reader read it whole again: with 1,000 ' +
      'and 3,000 keys an insert took 3.5 and 11.6 ms of CPU, a first read 1.5 and 4.1 ms, growing with the keys.',
    '',
    'With its key cached, a value sealed for its patient costs what the one-key sealer costs: the same cipher over the ' +
      'same bytes, and an envelope a few bytes longer. A key leaves the cache after 30 s, so a process reads and unwraps ' +
      "each active patient's key at most about twice a minute, and checks the keys it holds against the destroyed ones " +
      "(one query for all of them) at most once a second; a replay or a decode of many patients' histories pays the " +
      'cold figure once per patient.',
    '',
    ...(o.loadBefore.five >= o.machine.cores * 0.75
      ? [
          `**The machine was busy with other work during this run** (load average ${o.loadBefore.five} over the 5 ` +
            `minutes before it, on ${o.machine.cores} cores): the p99 figures are pessimistic; read the medians.`,
          '',
        ]
      : []),
    `**The cache's memory**: ${Math.round(f.bytesPerEntry)} bytes per cached key (heap and external memory after a ` +
      `collection, ${f.entries.toLocaleString('en-US')} keys), so the default bound of 10,000 keys holds about ` +
      `${((f.bytesPerEntry * 10_000) / 1024 / 1024).toFixed(1)} MiB.`,
    PATIENT_KEYS_END,
  ].join('\n');
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : err);
    process.exit(1);
  });
}
