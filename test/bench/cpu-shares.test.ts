// The bench's whole-machine CPU shares (/proc/stat): busy and the hypervisor's steal are shares of all the cores' time
// since the previous sample, and a throughput row names the steal of each run it pools.
import { availableParallelism } from 'node:os';
import { cpuShareSampler } from '../../bench/lib/machine';
import { runRates } from '../../bench/lib/report';
import type { ThroughputRun } from '../../bench/phases/throughput';

const onLinux = process.platform === 'linux' ? it : it.skip;

describe("the machine's CPU shares", () => {
  onLinux('counts a spin as busy, and busy and steal never exceed the cores’ time', () => {
    const sample = cpuShareSampler();
    const until = Date.now() + 300;
    let x = 0;
    while (Date.now() < until) x += Math.sqrt(x + 1);
    expect(x).toBeGreaterThan(0);
    const { busy, steal } = sample();
    // One core spun for the whole interval: at least its share of the machine's cores, less what was stolen from it.
    expect(busy).toBeGreaterThan(0.5 / Math.max(1, availableParallelism()) - steal);
    expect(busy).toBeLessThanOrEqual(1);
    expect(steal).toBeGreaterThanOrEqual(0);
    expect(busy + steal).toBeLessThanOrEqual(1 + 1e-9);
  });
});

describe("a throughput row's runs", () => {
  const row = (o: Partial<ThroughputRun>) => ({ perSecond: 20, ...o }) as ThroughputRun;

  it('names each run with the CPU the hypervisor took in it', () => {
    expect(runRates(row({ runsPerSecond: [23.24, 21.5], runsSteal: [0.004, 0.0123] }))).toBe(
      '23.2 and 21.5/s (the hypervisor took 0.4 and 1.2 % of the CPU)',
    );
    expect(runRates(row({ perSecond: 19.94, steal: 0 }))).toBe('19.9/s (the hypervisor took 0.0 % of the CPU)');
  });

  it('gives the rates alone for results from before steal was measured', () => {
    expect(runRates(row({ runsPerSecond: [30.4, 20, 18.66] }))).toBe('30.4, 20.0, 18.7/s');
  });
});
