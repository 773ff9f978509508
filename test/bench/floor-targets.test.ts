// The report's floor of a durable acknowledgement (bench/bare-server.ts with BARE_STORE): a target row the API missed
// names the floor measured in the same run and whether the API is within 3x of it, and one row per store says whether
// every missed row is.
import { headlineOf } from '../../bench/lib/regression';
import { targets, type Results } from '../../bench/lib/report';

const summary = (p99: number, max = p99 * 2) => ({ p50: p99 / 4, p95: p99 / 2, p99, p999: max, max, n: 1000 });
const run = (p99: number, max?: number) => ({ latencyMs: summary(p99, max), ok: 1000, scheduled: 1000 });

function results(o: { p99: number; floorP99?: number; burstP99: number; floorBurstP99?: number }): Results {
  const level = (rate: number) => ({
    store: 'postgres',
    temporal: 'up',
    rate,
    api: run(rate === 500 ? o.p99 : 5, 20),
    bare: run(1.9),
    ...(o.floorP99 !== undefined ? { floor: run(o.floorP99, 30) } : {}),
  });
  return {
    webhook: { levels: [level(500), level(1000)], probes: [] },
    burst: {
      runs: [
        {
          store: 'postgres',
          temporal: 'up',
          size: 200,
          bursts: [{}],
          pooled: summary(o.burstP99),
          bare: summary(20),
          ...(o.floorBurstP99 !== undefined ? { floor: summary(o.floorBurstP99) } : {}),
          ok: 200,
          sent: 200,
        },
      ],
    },
    errors: [],
  } as unknown as Results;
}

const row = (r: Results, starts: string) => targets(r).rows.find((x) => x.target.startsWith(starts));

describe('the floor of a durable acknowledgement in the report', () => {
  it('names the floor of a missed row and finds the API within 3x of it', () => {
    const r = results({ p99: 37.5, floorP99: 15, burstP99: 113.7, floorBurstP99: 60 });
    expect(row(r, 'Webhook ack p99 < 10 ms at 500/s')?.verdict).toMatch(
      /its floor in this run \(the bare route with one durable write\) 15\.0 ms: the API 2\.5x it, within 3x$/,
    );
    expect(row(r, 'Burst of 200 simultaneous')?.verdict).toMatch(/the API 1\.9x it, within 3x$/);
    const all = row(r, 'Every acknowledgement target missed is at most 3x');
    expect(all?.figure).toBe(
      'the farthest 2.5x: 500/s p99 37.5 ms vs 15.0 ms = 2.5x; bursts p99 113.7 ms vs 60.0 ms = 1.9x',
    );
    expect(all?.verdict).toBe('**met**');
    // Compared with the last committed report by its farthest ratio.
    expect(headlineOf(all!.target, all!.figure)).toEqual({ value: 2.5, unit: 'x' });
  });

  it('misses where a missed row is over 3x its floor', () => {
    const r = results({ p99: 37.5, floorP99: 5, burstP99: 80, floorBurstP99: 60 });
    expect(row(r, 'Webhook ack p99 < 10 ms at 500/s')?.verdict).toMatch(/the API 7\.5x it, over 3x$/);
    expect(row(r, 'Every acknowledgement target missed is at most 3x')?.verdict).toBe('**missed**: 500/s p99 7.5x');
  });

  it('is met with none missed, and absent where the run measured no floor', () => {
    const met = results({ p99: 8, floorP99: 5, burstP99: 80, floorBurstP99: 60 });
    expect(row(met, 'Every acknowledgement target missed is at most 3x')).toMatchObject({
      figure: 'none missed',
      verdict: '**met**',
    });
    expect(row(met, 'Webhook ack p99 < 10 ms at 500/s')?.verdict).toBe('**met**');
    const none = results({ p99: 37.5, burstP99: 113.7 });
    expect(row(none, 'Every acknowledgement target missed is at most 3x')).toBeUndefined();
    expect(row(none, 'Webhook ack p99 < 10 ms at 500/s')?.verdict).not.toMatch(/floor/);
  });
});
