// The bench reads the API's garbage-collector pauses from its /metrics (prom-client's nodejs_gc_duration_seconds,
// every kind summed) and says them per level: how many, their time against the level's, the longest bucket.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { apiFigures, diff, fmtGc, type ApiFigures } from '../../bench/lib/api-metrics';

/** The exposition of the GC histogram, kind by kind: cumulative counts per bound, and each kind's sum. */
const exposition = (gc: Record<string, { buckets: Record<string, number>; sum: number }>) =>
  Object.entries(gc)
    .flatMap(([kind, { buckets, sum }]) => [
      // As prom-client writes it: the bound first.
      ...Object.entries(buckets).map(([le, n]) => `nodejs_gc_duration_seconds_bucket{le="${le}",kind="${kind}"} ${n}`),
      `nodejs_gc_duration_seconds_sum{kind="${kind}"} ${sum}`,
      `nodejs_gc_duration_seconds_count{kind="${kind}"} ${buckets['+Inf']}`,
    ])
    .join('\n');

describe("the bench's GC figures", () => {
  let server: Server;
  let url: string;
  let text = '';

  beforeAll(async () => {
    server = createServer((_req, res) => res.end(`# HELP nodejs_gc_duration_seconds GC\n${text}\n`));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const scrape = async (gc: Parameters<typeof exposition>[0], at: number): Promise<ApiFigures> => {
    text = exposition(gc);
    return { ...(await apiFigures(url)), at };
  };

  it('sums the kinds, takes the difference over a level and names the longest bucket', async () => {
    const before = await scrape(
      {
        minor: { buckets: { '0.001': 10, '0.01': 10, '0.1': 10, '+Inf': 10 }, sum: 0.004 },
        major: { buckets: { '0.001': 0, '0.01': 1, '0.1': 1, '+Inf': 1 }, sum: 0.006 },
      },
      1_000,
    );
    const after = await scrape(
      {
        minor: { buckets: { '0.001': 300, '0.01': 310, '0.1': 310, '+Inf': 310 }, sum: 0.204 },
        major: { buckets: { '0.001': 0, '0.01': 1, '0.1': 3, '+Inf': 3 }, sum: 0.086 },
      },
      9_000,
    );
    const d = diff(after, before);
    expect(d.gcPauses).toBe(302);
    expect(d.gcSeconds).toBeCloseTo(0.28, 6);
    // 280 ms of GC in a level of 8 s; the two major pauses between 10 and 100 ms, 10 minor ones between 1 and 10.
    expect(fmtGc(d)).toBe('302 pauses, 280 ms (3.5 %), longest ≤ 100 ms (12 over 1 ms)');
  });

  it('says none for a level without pauses and – for results that never had the figure', async () => {
    const same = await scrape({ minor: { buckets: { '0.001': 5, '+Inf': 5 }, sum: 0.002 } }, 1_000);
    expect(fmtGc(diff({ ...same, at: 2_000 }, same))).toBe('none');
    const { gc: _gc, gcPauses: _p, gcSeconds: _s, ...older } = same;
    expect(fmtGc(diff(older, older))).toBe('–');
  });
});
