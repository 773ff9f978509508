// `npm run bench:append`: what one append of the PostgreSQL inbox costs the database, by statement form. It starts the
// production topology's PostgreSQL (a primary with a synchronous standby under Patroni, through HAProxy; the bench's
// cluster, bench/lib/stack.ts) in a temp folder, and appends callbacks of the inbox's shape (a sealed body of 900
// bytes) at a fixed rate, one INSERT committed per callback, in interleaved rounds of each form:
//
// - `array`: the batch as five arrays through unnest(), the sealed bodies hex text in a bytea[] (the form before
//   2026-12-01), parsed and planned at every append;
// - `prepared`: the inbox's own appendStatement (src/inbox/postgres.ts): a row's values as parameters of their own, the
//   body binary, the statement prepared once per connection.
//
// Each form's commit latency, and the CPU per append of the cluster's processes (from /proc): the backend that runs
// the INSERT, the WAL sender and the standby's receiver and replay, HAProxy, and the rest (Patroni, etcd, the
// postmasters' other processes), and this process's own (the client's side of the protocol).
//
//   npm run bench:append -- [--rate 250] [--seconds 8] [--rounds 3] [--batch 1] [--port-base 22640]
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Pool, type QueryConfig } from 'pg';
import { appendStatement, migrate } from '../src/inbox/postgres';
import { startBenchDatabase } from './lib/stack';
import { summarize } from './lib/stats';

interface Row {
  journeyId: string;
  deliveryId: string;
  receivedAt: string;
  keyId: string;
  body: Buffer;
}

const FORMS: Record<string, (rows: Row[]) => QueryConfig> = {
  array: (rows) => ({
    text: `WITH ins AS (
             INSERT INTO callback_inbox (journey_id, delivery_id, received_at, key_id, body)
             SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::bytea[])
             RETURNING 1
           ) SELECT pg_notify('callback_inbox', count(*)::text) FROM ins`,
    values: [
      rows.map((r) => r.journeyId),
      rows.map((r) => r.deliveryId),
      rows.map((r) => r.receivedAt),
      rows.map((r) => r.keyId),
      rows.map((r) => r.body),
    ],
  }),
  prepared: (rows) =>
    appendStatement(
      rows.length,
      rows.flatMap((r) => [r.journeyId, r.deliveryId, r.receivedAt, r.keyId, r.body]),
    ),
};

/** CPU seconds of the cluster's processes by role, and of this process. */
async function cpuByRole(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const [stat, cmd] = await Promise.all([
      readFile(`/proc/${entry}/stat`, 'utf8').catch(() => ''),
      readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => ''),
    ]);
    if (!stat) continue;
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const seconds = (Number(f[11]) + Number(f[12])) / 100;
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const line = cmd.replace(/\0/g, ' ');
    let role: string | undefined;
    if (Number(entry) === process.pid) role = 'client';
    else if (comm === 'postgres') {
      // A backend's title: `postgres: <cluster>: <user> <database> <client address> <state>`.
      if (/^postgres: \S+: \S+ inbox_append_cost /.test(line)) role = 'backend';
      else if (/walsender/.test(line)) role = 'wal sender';
      else if (/walreceiver|startup/.test(line)) role = 'standby receive and replay';
      else role = 'other';
    } else if (/haproxy/.test(line)) role = 'haproxy';
    else if (/patroni|etcd/.test(line)) role = 'other';
    if (role) out[role] = (out[role] ?? 0) + seconds;
  }
  return out;
}

async function main(): Promise<void> {
  const { values: v } = parseArgs({
    options: {
      rate: { type: 'string', default: '250' },
      seconds: { type: 'string', default: '8' },
      rounds: { type: 'string', default: '3' },
      batch: { type: 'string', default: '1' },
      'port-base': { type: 'string', default: '22640' },
    },
  });
  const rate = Number(v.rate);
  const seconds = Number(v.seconds);
  const batch = Number(v.batch);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'inbox-append-cost-'));
  const db = await startBenchDatabase({
    shape: 'synchronous',
    dir: path.join(dir, 'postgres'),
    port: Number(v['port-base']),
    database: 'inbox_append_cost',
    log: () => undefined,
  });
  // Its connections kept open (no idle timeout): a backend that ended between two readings would take its CPU with it.
  const pool = new Pool({ connectionString: db.url, max: 4, idleTimeoutMillis: 0 });
  const results: Record<string, { perAppend: Record<string, number>[]; latency: number[] }> = {};
  try {
    await migrate(pool);
    for (let round = 0; round < Number(v.rounds); round++) {
      for (const [form, query] of Object.entries(FORMS)) {
        await pool.query('TRUNCATE callback_inbox');
        await new Promise((r) => setTimeout(r, 1_500));
        const appends = Math.round((rate * seconds) / batch);
        // The rows made before the clock starts: their making is not the client's cost.
        const batches = Array.from({ length: appends }, () =>
          Array.from({ length: batch }, () => ({
            journeyId: `journey-${randomBytes(6).toString('hex')}`,
            deliveryId: randomBytes(8).toString('hex'),
            receivedAt: new Date().toISOString(),
            keyId: 'k1',
            body: randomBytes(900),
          })),
        );
        const before = await cpuByRole();
        const latency: number[] = [];
        const started = performance.now();
        const inFlight: Promise<unknown>[] = [];
        for (let i = 0; i < appends; i++) {
          const wait = started + (i * 1000 * batch) / rate - performance.now();
          if (wait > 0) await new Promise((r) => setTimeout(r, wait));
          const t = performance.now();
          inFlight.push(pool.query(query(batches[i]!)).then(() => latency.push(performance.now() - t)));
        }
        await Promise.all(inFlight);
        const after = await cpuByRole();
        const perAppend = Object.fromEntries(
          Object.entries(after).map(([role, s]) => [role, ((s - (before[role] ?? 0)) * 1000) / appends]),
        );
        const r = (results[form] ??= { perAppend: [], latency: [] });
        r.perAppend.push(perAppend);
        r.latency.push(...latency);
        const cluster = Object.entries(perAppend)
          .filter(([role]) => role !== 'client')
          .reduce((sum, [, ms]) => sum + ms, 0);
        const s = summarize(latency);
        console.log(
          `round ${round + 1} ${form.padEnd(8)} ${appends} appends of ${batch}: commit p50 ${s.p50.toFixed(1)} ` +
            `p99 ${s.p99.toFixed(1)} ms; the cluster ${cluster.toFixed(2)} ms of CPU per append, the client ` +
            `${(perAppend.client ?? 0).toFixed(2)} ms`,
        );
      }
    }
  } finally {
    await pool.end().catch(() => undefined);
    await db.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(`\nCPU per append (ms, mean of ${v.rounds} rounds), ${rate}/s, ${batch} callback(s) an append:\n`);
  const roles = ['backend', 'wal sender', 'standby receive and replay', 'haproxy', 'other', 'client'];
  console.log(`| Form | ${roles.join(' | ')} | the cluster | commit p50 / p99 |`);
  console.log(`|---|${roles.map(() => '---|').join('')}---|---|`);
  for (const [form, r] of Object.entries(results)) {
    const mean = (role: string) => r.perAppend.reduce((s, p) => s + (p[role] ?? 0), 0) / r.perAppend.length;
    const cluster = roles.filter((x) => x !== 'client').reduce((s, x) => s + mean(x), 0);
    const s = summarize(r.latency);
    console.log(
      `| ${form} | ${roles.map((x) => mean(x).toFixed(2)).join(' | ')} | ${cluster.toFixed(2)} | ` +
        `${s.p50.toFixed(1)} / ${s.p99.toFixed(1)} ms |`,
    );
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
