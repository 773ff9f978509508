// The webhook's CPU per callback on the API's event loop, measured quickly in one process: the API built as a
// deployment builds it (bench/ack-layers.ts's layerApp: request log at info, payload keys, each callback sealed for
// its journey's patient, the audit trail; a fake Temporal, the forwarder not started), journeys of the engine's id
// shape, callbacks sent in rounds, the main thread's CPU per callback the median over the rounds. Beside it, in
// alternating rounds, the bare route (bench/bare-server.ts's) taking the same callbacks the same way: the floor of the
// way they are sent.
//
//   node --import tsx bench/ack-cpu.ts                      files inbox, Fastify's inject
//   STORE=memory node --import tsx bench/ack-cpu.ts         nothing stored (the path less its durable write)
//   HTTP=1 node --import tsx bench/ack-cpu.ts               real HTTP on 127.0.0.1, each callback on a new connection,
//                                                           sent from a worker thread (its CPU is not the server's)
//   BASE=/tmp/base node --import tsx bench/ack-cpu.ts       A/B against another copy of the project's src/ (e.g.
//                                                           `git archive HEAD src | tar -x -C /tmp/base` and a link
//                                                           /tmp/base/node_modules to this one's): both APIs built in
//                                                           this process, alternating rounds, the median difference
//   EACH=1 STORE=memory BASE=... node --import tsx bench/ack-cpu.ts     callback by callback (eachCallback)
//   ONLY=api ROUNDS=40 node --cpu-prof --import tsx bench/ack-cpu.ts    the API alone (ONLY=bare: the bare route
//                                                           alone), for a CPU profile
//
// ROUNDS (default 9) and PER_ROUND (default 600; HTTP: 400) set the rounds; BURST (HTTP, default 50) how many
// connections are open at once.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import Fastify from 'fastify';
import pino from 'pino';
import type * as AppModule from '../src/api/app';
import type * as ServerModule from '../src/api/server';
import type * as ConfigModule from '../src/config';
import type * as DefinitionsModule from '../src/contract/definitions';
import type * as WebhookUrlModule from '../src/webhook-url';
import { event1Body } from './lib/journeys';
import { MemoryInbox } from './ack-layers';

const SECRET = 'ack-cpu-bench-secret-0123456789abcdef';
const JOURNEYS = 100;
const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';
/** The project's copy measured (THIS: another, e.g. for an A/A check of the measure itself). */
const HERE = process.env.THIS ? path.resolve(process.env.THIS) : path.resolve(__dirname, '..');

interface Injectable {
  inject(o: {
    method: 'POST';
    url: string;
    payload: string;
    headers: Record<string, string>;
  }): Promise<{ statusCode: number }>;
  listen(o: { host: string; port: number }): Promise<string>;
  server: { address(): AddressInfo | string | null };
  close(): Promise<unknown>;
}

/** A journey id of the engine's shape (`j` + 26 base32 characters), as the request log and the routes see them. */
const journeyId = () => `j${Array.from(randomBytes(26), (b) => BASE32[b & 31]).join('')}`;

/** The API as deployed, from the project's src/ at `root` (this one, or BASE's), ready, its journeys bound. */
async function deployedApi(root: string, o: { dataDir: string; logTo: { write(line: string): unknown } }) {
  const { buildApp } = (await import(path.join(root, 'src/api/app'))) as typeof AppModule;
  const { loadConfig } = (await import(path.join(root, 'src/config'))) as typeof ConfigModule;
  const { apiLoggerOptions } = (await import(path.join(root, 'src/api/server'))) as typeof ServerModule;
  const { journeyWorkflowId } = (await import(path.join(root, 'src/contract/definitions'))) as typeof DefinitionsModule;
  const { webhookToken } = (await import(path.join(root, 'src/webhook-url'))) as typeof WebhookUrlModule;
  const config = loadConfig({
    DATA_DIR: o.dataDir,
    WEBHOOK_SECRET: SECRET,
    CLINICS_JSON: '[]',
    PAYLOAD_ENCRYPTION_KEYS: `ack-cpu-1:${randomBytes(32).toString('base64')}`,
    PATIENT_KEY_STORE: 'file',
    AUDIT_FILE: path.join(o.dataDir, 'audit.jsonl'),
    INBOX_STORE: 'files',
    LOG_LEVEL: 'info',
    LOG_FORMAT: 'json',
  });
  const temporal = {
    workflow: { getHandle: () => ({ signal: () => new Promise((r) => setTimeout(r, 5)) }) },
    connection: { withDeadline: (_deadline: number, fn: () => Promise<unknown>) => fn() },
    workflowService: { getSystemInfo: () => Promise.resolve({}) },
  };
  const app = await buildApp({
    config,
    temporal: temporal as never,
    examServiceFor: () => undefined as never,
    logger: { ...apiLoggerOptions(config), stream: o.logTo },
    startForwarder: false,
    ...(process.env.STORE === 'memory' ? { inbox: new MemoryInbox() } : {}),
  });
  await app.ready();
  const ids = Array.from({ length: JOURNEYS }, journeyId);
  for (const id of ids)
    await app.patientKeys?.bindJourney(journeyWorkflowId(id), `pt_${randomBytes(16).toString('base64url')}`);
  const urls = ids.map((id) => `/webhooks/exam-service/${id}/${webhookToken(id, SECRET)}`);
  return { app: app as unknown as Injectable, urls };
}

/** bench/bare-server.ts's route: the webhook's shape and text body, answered at once. */
async function bareRoute() {
  const app = Fastify({ logger: false, forceCloseConnections: 'idle' });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body));
  app.post('/webhooks/exam-service/:journeyId/:token', () =>
    Promise.resolve({ received: true, deliveryId: randomUUID() }),
  );
  await app.ready();
  const urls = Array.from({ length: JOURNEYS }, (_, i) => `/webhooks/exam-service/${journeyId()}/t${i}`);
  return { app: app as unknown as Injectable, urls };
}

/** The HTTP client, in a thread of its own: `count` POSTs, `burst` at a time, each on a new connection. */
const CLIENT = `
const http = require('node:http');
const { parentPort } = require('node:worker_threads');
const post = (port, url, body) => new Promise((resolve, reject) => {
  const req = http.request({ host: '127.0.0.1', port, path: url, method: 'POST', agent: false,
    headers: { 'content-type': 'application/json', connection: 'close', 'content-length': Buffer.byteLength(body) } },
    (res) => { res.resume(); res.on('end', () => resolve(res.statusCode)); });
  req.on('error', reject);
  req.end(body);
});
parentPort.on('message', async ({ port, urls, bodies, count, burst }) => {
  let next = 0, bad = 0;
  const lane = async () => { while (next < count) { const i = next++;
    const status = await post(port, urls[i % urls.length], bodies[i % bodies.length]); if (status !== 200) bad++; } };
  await Promise.all(Array.from({ length: burst }, lane));
  parentPort.postMessage({ bad });
});`;

type Target = Awaited<ReturnType<typeof bareRoute>> & { port?: number };

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/**
 * EACH=1 (with STORE=memory): the targets take turns callback by callback, each callback timed on its own; the
 * median and the mean of the middle 80 % for each, and of the differences between neighbours. Steadier on a shared
 * machine, where what others run changes from one round to the next. The thread's CPU clock ticks too coarsely to
 * time one callback, so this is the time each took; with nothing stored a callback through inject never waits for
 * I/O, and the median leaves out those the machine took the CPU from.
 */
async function eachCallback(targets: [string, Target][], bodies: string[], count: number) {
  const us = targets.map(() => new Float64Array(count));
  for (let i = 0; i < count; i++) {
    for (const [k, [, t]] of targets.entries()) {
      const url = t.urls[i % t.urls.length]!;
      const payload = bodies[i % bodies.length]!;
      const t0 = process.hrtime.bigint();
      const res = await t.app.inject({ method: 'POST', url, payload, headers: { 'content-type': 'application/json' } });
      us[k]![i] = Number(process.hrtime.bigint() - t0) / 1000;
      if (res.statusCode !== 200) throw new Error(`the webhook answered ${res.statusCode}`);
    }
  }
  const middleMean = (xs: ArrayLike<number>) => {
    const s = Array.from(xs).sort((a, b) => a - b);
    const cut = s.slice(Math.floor(s.length * 0.1), Math.ceil(s.length * 0.9));
    return cut.reduce((a, b) => a + b, 0) / cut.length;
  };
  console.log(`inject, callback by callback, ${count} each: time per callback (µs), median / middle 80 % mean`);
  for (const [k, [name]] of targets.entries()) {
    console.log(`  ${name.padEnd(11)} ${median(Array.from(us[k]!)).toFixed(1)} / ${middleMean(us[k]!).toFixed(1)}`);
  }
  if (targets.length > 1) {
    const d = Array.from(us[0]!, (x, i) => x - us[1]![i]!);
    console.log(`  ${targets[0]![0]} - ${targets[1]![0]}: ${median(d).toFixed(1)} / ${middleMean(d).toFixed(1)}`);
  }
}

async function main() {
  const rounds = Number(process.env.ROUNDS ?? 9);
  const http = process.env.HTTP === '1';
  const perRound = Number(process.env.PER_ROUND ?? (http ? 400 : 600));
  const burst = Number(process.env.BURST ?? 50);
  const work = mkdtempSync(path.join(os.tmpdir(), 'ack-cpu-'));
  const logTo = pino.destination({ dest: path.join(work, 'api.log'), sync: true });
  const bodies = Array.from({ length: JOURNEYS }, (_, i) => event1Body(9_000_000 + i));
  const client = http ? new Worker(CLIENT, { eval: true }) : undefined;
  let next = 0;
  const round = async (t: Target): Promise<number> => {
    const t0 = process.threadCpuUsage();
    if (client) {
      const done = new Promise<{ bad: number }>((r) => client.once('message', r));
      client.postMessage({ port: t.port, urls: t.urls, bodies, count: perRound, burst });
      const { bad } = await done;
      if (bad > 0) throw new Error(`${bad} callbacks were not answered 200`);
    } else {
      for (let i = 0; i < perRound; i++, next++) {
        const res = await t.app.inject({
          method: 'POST',
          url: t.urls[next % t.urls.length]!,
          payload: bodies[next % bodies.length]!,
          headers: { 'content-type': 'application/json' },
        });
        if (res.statusCode !== 200) throw new Error(`the webhook answered ${res.statusCode}`);
      }
    }
    const t1 = process.threadCpuUsage(t0);
    return (t1.user + t1.system) / perRound;
  };
  const base = process.env.BASE ? path.resolve(process.env.BASE) : undefined;
  const only = process.env.ONLY;
  const targets: [string, Target][] = [];
  try {
    let n = 0;
    const api = async (root: string) => deployedApi(root, { dataDir: path.join(work, `data-${++n}`), logTo });
    if (base) targets.push(['base', await api(base)]);
    if (only !== 'bare') targets.push([base ? 'this' : 'api', await api(HERE)]);
    if (!base && only !== 'api') targets.push(['bare route', await bareRoute()]);
    if (http) {
      for (const [, t] of targets) {
        await t.app.listen({ host: '127.0.0.1', port: 0 });
        t.port = (t.app.server.address() as AddressInfo).port;
      }
    }
    for (const [, t] of targets) await round(t); // warm: JIT, caches, the first segment
    if (process.env.EACH === '1' && !http) {
      if (process.env.STORE !== 'memory') throw new Error('EACH=1 times callbacks one by one: with STORE=memory only');
      return await eachCallback(targets, bodies, rounds * perRound);
    }
    const us = new Map<string, number[]>(targets.map(([name]) => [name, []]));
    for (let r = 0; r < rounds; r++) for (const [name, t] of targets) us.get(name)!.push(await round(t));
    const how = http ? `HTTP, new connections, ${burst} at once` : 'inject';
    console.log(
      `${how}, ${process.env.STORE === 'memory' ? 'memory' : 'files'} inbox, ${rounds} rounds of ${perRound}: ` +
        'main-thread CPU per callback (µs), median [min-max]',
    );
    for (const [name, xs] of us) {
      console.log(
        `  ${name.padEnd(11)} ${median(xs).toFixed(1)} [${Math.min(...xs).toFixed(1)}-${Math.max(...xs).toFixed(1)}]`,
      );
    }
    const [first, second] = [...us.values()];
    if (first && second) {
      const d = first.map((x, i) => x - second[i]!);
      console.log(
        `  ${targets[0]![0]} - ${targets[1]![0]}: ${median(d).toFixed(1)} [${Math.min(...d).toFixed(1)}-${Math.max(...d).toFixed(1)}]`,
      );
    }
  } finally {
    for (const [, t] of targets) await t.app.close();
    await client?.terminate();
    logTo.flushSync();
    logTo.end();
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
