// The disk's own durable-write latency, measured beside a run: a worker thread writes one callback-sized record
// (1.5 KB) every 100 ms into a preallocated file of its own opened O_DSYNC (the file inbox's kind of write: a data
// flush, no journal commit), timing each write synchronously in the thread, so neither the bench's event loop nor
// any process of the stack can make a write look slow. An acknowledgement that waits for a durable write cannot be
// faster than the disk; where a slow answer and a slow probe write overlap, the disk stalled for both.
import { constants, mkdirSync } from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';

/** One probe write: wall-clock ms when it began, and how long it took (ms). */
export type ProbeWrite = [number, number];

export interface DiskProbeResult {
  intervalMs: number;
  writes: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Writes at or above slowMs, in order. */
  slow: ProbeWrite[];
  slowMs: number;
}

const THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
const fs = require('node:fs');
const { file, bytes, intervalMs, flags, slowMs } = workerData;
const zeros = Buffer.alloc(1 << 20);
let fd = fs.openSync(file, 'w');
for (let at = 0; at < bytes; at += zeros.length) fs.writeSync(fd, zeros, 0, Math.min(zeros.length, bytes - at), at);
fs.fsyncSync(fd);
fs.closeSync(fd);
fd = fs.openSync(file, flags);
const record = Buffer.alloc(1536, 0x5a);
const all = [];
const slow = [];
let position = 0;
let stop = false;
parentPort.on('message', () => { stop = true; });
parentPort.postMessage({ ready: true });
const tick = () => {
  if (stop) {
    fs.closeSync(fd);
    parentPort.postMessage({ all, slow });
    return;
  }
  const wall = Date.now();
  const t0 = performance.now();
  fs.writeSync(fd, record, 0, record.length, position);
  const ms = performance.now() - t0;
  position = (position + record.length) % (bytes - record.length);
  all.push(ms);
  if (ms >= slowMs) slow.push([wall, Math.round(ms * 10) / 10]);
  setTimeout(tick, intervalMs);
};
tick();
`;

export interface DiskProbe {
  stop(): Promise<DiskProbeResult>;
}

/** Starts probing `dir` (the folder the inbox writes to); resolves once the probe's file is ready. */
export async function startDiskProbe(
  dir: string,
  o: { intervalMs?: number; slowMs?: number } = {},
): Promise<DiskProbe> {
  const intervalMs = o.intervalMs ?? 100;
  const slowMs = o.slowMs ?? 20;
  mkdirSync(dir, { recursive: true });
  const worker = new Worker(THREAD, {
    eval: true,
    workerData: {
      file: path.join(dir, 'disk-probe.bin'),
      bytes: 8 << 20,
      intervalMs,
      flags: constants.O_RDWR | constants.O_DSYNC,
      slowMs,
    },
  });
  const done = new Promise<{ all: number[]; slow: ProbeWrite[] }>((resolve, reject) => {
    worker.on('message', (m: { ready?: boolean; all?: number[]; slow?: ProbeWrite[] }) => {
      if (m.all && m.slow) resolve({ all: m.all, slow: m.slow });
    });
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`the disk probe's thread exited (${code})`)));
  });
  // Awaited by stop(); a thread that fails before then must not be an unhandled rejection meanwhile.
  done.catch(() => undefined);
  await new Promise<void>((resolve, reject) => {
    worker.once('message', () => resolve());
    worker.once('error', reject);
  });
  return {
    async stop() {
      worker.postMessage('stop');
      const { all, slow } = await done;
      await worker.terminate();
      all.sort((a, b) => a - b);
      const at = (q: number) => all[Math.min(all.length - 1, Math.floor(q * all.length))] ?? NaN;
      return {
        intervalMs,
        writes: all.length,
        p50Ms: at(0.5),
        p99Ms: at(0.99),
        maxMs: all.at(-1) ?? NaN,
        slow,
        slowMs,
      };
    },
  };
}

/**
 * The probe write that overlapped an answer (due at `dueMs` wall clock, answered `latencyMs` later) and was the
 * slowest of those that did; undefined when none of the slow probe writes overlapped it.
 */
export function overlappingStall(probe: DiskProbeResult, dueMs: number, latencyMs: number): ProbeWrite | undefined {
  let best: ProbeWrite | undefined;
  for (const w of probe.slow) {
    const [start, ms] = w;
    if (start <= dueMs + latencyMs && start + ms >= dueMs && (!best || ms > best[1])) best = w;
  }
  return best;
}
