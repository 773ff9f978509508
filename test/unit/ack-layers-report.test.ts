import type { LayerName, LayerRun } from '../../bench/ack-layers';
import { layerCosts, layersOverLimit, layersSection } from '../../bench/lib/layers-report';
import type { Summary } from '../../bench/lib/stats';

const lat = (p50: number, p99: number): Summary => ({
  count: 3000,
  mean: p50,
  p50,
  p90: p50,
  p95: p50,
  p99,
  p999: p99,
  max: p99 * 1.5,
});

function run(
  layer: LayerName,
  cpuMain: number,
  p50: number,
  pass = 0,
  store: 'files' | 'postgres' = 'files',
): LayerRun {
  return {
    store,
    layer,
    pass,
    rate: 500,
    latencyMs: lat(p50, p50 * 4),
    cpuUsPerCallback: { main: cpuMain, total: cpuMain * 1.3 },
    burstMs: lat(40, 60),
    accepted: 4000,
    sent: 4000,
  };
}

describe('the acknowledgement layer table', () => {
  const runs = [
    run('all', 300, 2.0, 0),
    run('token', 295, 2.0),
    run('request-log', 90, 1.6),
    run('store-write', 260, 0.4),
    run('all', 320, 2.2, 1),
  ];

  it("gives each layer's cost as the CPU with every layer on less without it, against the ack's p50", () => {
    const [files] = layerCosts(runs);
    expect(files!.all.cpuMain).toBe(310);
    expect(files!.noise.cpuMain).toBe(20);
    const byLayer = Object.fromEntries(files!.costs.map((c) => [c.layer, c]));
    expect(byLayer.token!.cpuUs).toBe(15);
    expect(byLayer['request-log']!.cpuUs).toBe(220);
    // 220 µs of a 2.1 ms acknowledgement
    expect(byLayer['request-log']!.share).toBeCloseTo(220 / 2100, 5);
    expect(byLayer['store-write']!.floor).toBe(true);
  });

  it('names the layers over 10 %, never the durable write', () => {
    expect(layersOverLimit(runs).map((c) => c.layer)).toEqual(['request-log']);
    const text = layersSection(runs).join('\n');
    expect(text).toContain('| request-log |');
    expect(text).toContain('**9.0 %**'.replace('9.0', ((220 / 2100) * 100).toFixed(1)));
    expect(text).toMatch(/Over 10 % of the acknowledgement's time at 500\/s: request-log on files/);
    expect(layersOverLimit(runs.filter((r) => r.layer !== 'request-log'))).toEqual([]);
  });

  it('has nothing to say without a run of every layer', () => {
    expect(layersSection(runs.filter((r) => r.layer !== 'all'))).toEqual([]);
  });
});
