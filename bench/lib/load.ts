// Runs the open-loop generator (bench/loadgen.ts) as a child process and reads its results.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { LevelResult, LoadSpec } from '../loadgen';
import { startProcess, tsx } from '../../scripts/lib/processes';

let runs = 0;

export async function runLoad(
  spec: LoadSpec,
  workDir: string,
  logDir: string,
  timeoutMs: number,
): Promise<LevelResult[]> {
  const n = ++runs;
  const specFile = path.join(workDir, `load-${n}.spec.json`);
  const resultFile = path.join(workDir, `load-${n}.result.json`);
  await writeFile(specFile, JSON.stringify(spec));
  const child = startProcess({ name: `loadgen-${n}`, ...tsx('bench/loadgen.ts', [specFile, resultFile]), logDir });
  const timer = setTimeout(() => void child.stop(2_000), timeoutMs);
  const { code } = await child.exited;
  clearTimeout(timer);
  if (code !== 0) throw new Error(`the load generator failed (exit ${code}); see ${child.logFile}`);
  return JSON.parse(await readFile(resultFile, 'utf8')) as LevelResult[];
}

/** One rate held open-loop over 128 keep-alive connections: an unrecorded warm-up, then `seconds` measured. */
export function rateSpec(
  origin: string,
  targets: LoadSpec['targets'],
  rate: number,
  o: { warmupMs: number; seconds: number },
): LoadSpec {
  return {
    origin,
    targets,
    levels: [
      { name: 'warm-up', rate, durationMs: o.warmupMs, record: false },
      { name: `${rate}/s`, rate, durationMs: o.seconds * 1000, record: true },
    ],
    connections: 128,
    timeoutMs: 15_000,
    keepAlive: true,
  };
}

/** Bursts a generator sends the bare route before it is measured (LoadSpec.warmBursts). */
export const GENERATOR_WARM_BURSTS = 5;

/**
 * A burst: `targets.length` requests all due at the same instant, over as many connections (a fresh generator):
 * established beforehand (`warm`: a GET /healthz on each, then a pause) or opened by the burst itself. With
 * `warmOrigin` (the bare route), the generator first sends it GENERATOR_WARM_BURSTS unrecorded bursts of the same
 * requests, so its own code is compiled, as a sender that has been running is.
 */
export function burstSpec(
  origin: string,
  targets: LoadSpec['targets'],
  collect: boolean,
  warm: boolean,
  warmOrigin?: string,
): LoadSpec {
  return {
    ...(warmOrigin ? { warmBursts: { origin: warmOrigin, count: GENERATOR_WARM_BURSTS } } : {}),
    origin,
    targets,
    levels: [
      {
        name: `burst of ${targets.length}`,
        rate: targets.length,
        durationMs: 1000,
        burst: targets.length,
        record: true,
        ...(warm ? { pauseBeforeMs: 300 } : {}),
      },
    ],
    ...(warm ? { warmPath: '/healthz' } : {}),
    connections: targets.length,
    timeoutMs: 15_000,
    keepAlive: true,
    collect,
    keepSamples: true,
  };
}
