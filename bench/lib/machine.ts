// What the figures were measured on: CPU, cores, memory (from /proc), kernel, Node.js and Temporal versions, load.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { getHeapStatistics } from 'node:v8';
import { ROOT } from '../../scripts/lib/processes';

export interface Machine {
  cpuModel: string;
  cores: number;
  memTotalGiB: number;
  memAvailableGiB: number;
  kernel: string;
  node: string;
  temporalCli: string;
  temporalSdk: string;
  fastify: string;
  hostname: string;
  /** The heap limit Node.js sizes itself to on this host, with no memory limit of its own (older results: absent). */
  heapLimitBytes?: number;
}

function meminfo(field: string): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync('/proc/meminfo', 'utf8'));
  return m ? Number(m[1]) / 1024 / 1024 : NaN;
}

function pkgVersion(name: string): string {
  try {
    return (
      JSON.parse(readFileSync(path.join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }
    ).version;
  } catch {
    return 'unknown';
  }
}

export function describeMachine(): Machine {
  const cpuinfo = readFileSync('/proc/cpuinfo', 'utf8');
  const model = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1]?.trim() ?? os.cpus()[0]?.model ?? 'unknown';
  const cores = (cpuinfo.match(/^processor\s*:/gm) ?? []).length || os.cpus().length;
  let temporalCli = 'unknown';
  try {
    temporalCli = execFileSync(path.join(ROOT, '.tools/bin/temporal'), ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    // reported as unknown
  }
  return {
    cpuModel: model,
    cores,
    memTotalGiB: meminfo('MemTotal'),
    memAvailableGiB: meminfo('MemAvailable'),
    kernel: `${os.type()} ${os.release()}`,
    node: process.version,
    temporalCli,
    temporalSdk: pkgVersion('@temporalio/worker'),
    fastify: pkgVersion('fastify'),
    hostname: os.hostname(),
    heapLimitBytes: getHeapStatistics().heap_size_limit,
  };
}

/** The 1, 5 and 15 minute load averages, and how many processes are runnable right now. */
export function loadAverage(): { one: number; five: number; fifteen: number; running: string } {
  const [one, five, fifteen, running] = readFileSync('/proc/loadavg', 'utf8').trim().split(/\s+/);
  return { one: Number(one), five: Number(five), fifteen: Number(fifteen), running: running ?? '' };
}

/** The whole machine's CPU since the previous call, as shares of all its cores' time (from /proc/stat). */
export interface CpuShares {
  /** Running anything: user, nice, system, interrupts. */
  busy: number;
  /**
   * Taken by the hypervisor for other machines while this one had work to run (steal): time the engine's processes
   * lost that no figure of theirs shows, the usual cause of a run slower than its neighbours on a shared host.
   */
  steal: number;
}

export function cpuShareSampler(): () => CpuShares {
  const read = () => {
    // user nice system idle iowait irq softirq steal (guest time is counted in user and nice already)
    const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = readFileSync(
      '/proc/stat',
      'utf8',
    )
      .split('\n')[0]!
      .trim()
      .split(/\s+/)
      .slice(1, 9)
      .map(Number);
    const busy = user + nice + system + irq + softirq;
    return { busy, steal, total: busy + idle + iowait + steal };
  };
  let last = read();
  return () => {
    const now = read();
    const dt = now.total - last.total;
    const shares =
      dt > 0 ? { busy: (now.busy - last.busy) / dt, steal: (now.steal - last.steal) / dt } : { busy: 0, steal: 0 };
    last = now;
    return shares;
  };
}

/** Whole-machine CPU busy share since the previous call (steal not counted: cpuShareSampler). */
export function cpuBusySampler(): () => number {
  const sample = cpuShareSampler();
  return () => sample().busy;
}
