import type { LayerCpu, LayerName, LayerRun } from '../../bench/lib/ack-layer-names';
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

function run(layer: LayerName, cpuMain: number, p50: number, pass = 0): LayerRun {
  return {
    store: 'files',
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

const cpu = (layer: LayerName, usPerCallback: number): LayerCpu => ({
  store: 'files',
  layer,
  usPerCallback,
  allUs: 400,
  spread: [usPerCallback - 2, usPerCallback + 3],
  rounds: 7,
  perRound: 600,
});

describe('the acknowledgement layer table', () => {
  const runs = [
    run('all', 300, 2.0, 0),
    run('bare-route', 90, 0.8),
    run('token', 295, 2.0),
    run('request-log', 120, 1.6),
    run('store-write', 260, 0.4),
    run('forwarder', 250, 1.9),
    run('all', 320, 2.2, 1),
  ];
  // In one process: the request log costs 230 µs of a 2.1 ms acknowledgement (over 10 %), the token 4 µs.
  const measured = [cpu('token', 4), cpu('request-log', 230), cpu('store-write', 150)];

  it("takes each layer's cost from the in-process measure when there is one, else across processes", () => {
    const [files] = layerCosts({ runs, cpu: measured });
    expect(files!.all.cpuMain).toBe(310);
    expect(files!.noise.cpuMain).toBe(20);
    const byLayer = Object.fromEntries(files!.costs.map((c) => [c.layer, c]));
    expect(Object.keys(byLayer).sort()).toEqual(['forwarder', 'request-log', 'store-write', 'token']);
    expect(byLayer.token!.inProcessUs).toBe(4);
    expect(byLayer.token!.abUs).toBe(15);
    expect(byLayer['request-log']!.share).toBeCloseTo(230 / 2100, 5);
    // No in-process figure for the forwarder: its cost is the load runs' difference.
    expect(byLayer.forwarder!.inProcessUs).toBeUndefined();
    expect(byLayer.forwarder!.share).toBeCloseTo(60 / 2100, 5);
    expect(byLayer['store-write']!.floor).toBe(true);
  });

  it('names the layers over 10 %, never the durable write, and shows the floor', () => {
    expect(layersOverLimit({ runs, cpu: measured }).map((c) => c.layer)).toEqual(['request-log']);
    const text = layersSection({ runs, cpu: measured }).join('\n');
    expect(text).toContain('| request-log |');
    expect(text).toContain(`**${((230 / 2100) * 100).toFixed(1)} %**`);
    expect(text).toMatch(/Over 10 % of the acknowledgement's time at 500\/s: request-log on files/);
    expect(text).toContain('**The floor: the bare route**');
    expect(text).toContain('3.4x the bare route');
    expect(layersOverLimit({ runs, cpu: measured.filter((c) => c.layer !== 'request-log') })).toEqual([]);
  });

  it('has nothing to say without a load run of every layer', () => {
    expect(layersSection({ runs: runs.filter((r) => r.layer !== 'all'), cpu: measured })).toEqual([]);
  });
});
