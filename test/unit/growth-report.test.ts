// `npm run bench:growth`'s pure parts (bench/lib/growth-report.ts): how a figure's growth between two steps is named,
// and the markdown the run renders and splices between its markers.
import {
  classifyGrowth,
  GROWTH_BEGIN,
  GROWTH_END,
  growthBetween,
  renderGrowthSection,
  renderGrowthSvgs,
  renderGrowthTable,
  renderStepsTable,
  renderWakeTable,
  withGrowthSection,
  type GrowthRun,
  type GrowthStep,
  type Latency,
} from '../../bench/lib/growth-report';
import { reminderOfHistory } from '../../bench/lib/growth-wave';

const MiB = 2 ** 20;
const lat = (p50: number, p99 = p50 * 2): Latency => ({ n: 20, p50, p99 });

/** A step whose figures grow as given with the journeys: bytes linear, the first page constant, the listing linear. */
function step(journeys: number, o: { listAllMs?: number; firstMs?: number; rss?: number } = {}): GrowthStep {
  return {
    target: journeys,
    journeys,
    parkedNow: journeys / 2,
    parkSeconds: journeys / 2 / 25,
    apiStart: { ...lat(40), refused: 0 },
    bytes: {
      total: 10 * MiB + journeys * 30_000,
      byDatabase: { temporal: journeys * 25_000, temporal_visibility: journeys * 5_000 },
      largest: [{ table: 'temporal.history_node', bytes: journeys * 20_000 }],
      baseline: 10 * MiB,
    },
    list: { first: lat(o.firstMs ?? 12), deep: { ...lat(15), page: 5, pageSize: 100 } },
    count: { byClinic: { ...lat(8), value: journeys }, byStage: { ...lat(9), value: journeys } },
    ops: {
      query: "WorkflowType = 'patientJourney' AND (JourneyStage = 'awaiting_consultation')",
      dryRun: lat(60),
      listAll: { ms: o.listAllMs ?? journeys * 0.5, matched: journeys, pages: Math.ceil(journeys / 1000) },
    },
    workerRss: [o.rss ?? 600 * MiB],
    at: '2026-11-29T07:00:00.000Z',
  };
}

describe('classifyGrowth', () => {
  it('names a figure that grows in proportion to the journeys linear', () => {
    expect(classifyGrowth(1000, 100, 10_000, 1000)).toEqual({ growth: 'linear', exponent: 1 });
    expect(classifyGrowth(10_000, 100, 30_000, 330)?.growth).toBe('linear');
  });

  it('names a figure that does not move, or falls, constant', () => {
    expect(classifyGrowth(1000, 100, 10_000, 100)).toEqual({ growth: 'constant', exponent: 0 });
    expect(classifyGrowth(1000, 100, 10_000, 80)?.growth).toBe('constant');
    // 10x the journeys, 1.3x the figure: an exponent of 0.11.
    expect(classifyGrowth(1000, 100, 10_000, 130)?.growth).toBe('constant');
  });

  it('takes a change within the noise as constant, whatever its ratio', () => {
    // 2 ms to 6 ms is three times as much, but within 5 ms of noise.
    expect(classifyGrowth(1000, 2, 10_000, 6, 5)?.growth).toBe('constant');
    expect(classifyGrowth(1000, 2, 10_000, 6, 0)?.growth).toBe('slower than linear');
  });

  it('names a figure that grows with the square of the journeys faster than linear', () => {
    const v = classifyGrowth(1000, 10, 10_000, 1000);
    expect(v?.growth).toBe('faster than linear');
    expect(v?.exponent).toBeCloseTo(2, 10);
  });

  it('names the growth in between slower than linear', () => {
    // 10x the journeys, about 3.2x the figure (the square root).
    expect(classifyGrowth(1000, 100, 10_000, 316)?.growth).toBe('slower than linear');
  });

  it('has nothing to compare without more journeys or with a figure missing', () => {
    expect(classifyGrowth(1000, 100, 1000, 200)).toBeUndefined();
    expect(classifyGrowth(0, 100, 1000, 200)).toBeUndefined();
    expect(classifyGrowth(1000, NaN, 10_000, 200)).toBeUndefined();
    expect(classifyGrowth(1000, 0, 10_000, 200)).toBeUndefined();
  });
});

describe('growthBetween', () => {
  it('compares consecutive steps in journey order, figure by figure', () => {
    const g = growthBetween([step(10_000), step(1000), step(30_000)]);
    const bytes = g.find((x) => x.figure.name === 'PostgreSQL bytes (all tables)')!;
    expect(bytes.changes.map((c) => [c.from, c.to])).toEqual([
      [1000, 10_000],
      [10_000, 30_000],
    ]);
    expect(bytes.changes.map((c) => c.verdict?.growth)).toEqual(['linear', 'linear']);
    const first = g.find((x) => x.figure.name === 'List, first page p50')!;
    expect(first.changes.map((c) => c.verdict?.growth)).toEqual(['constant', 'constant']);
    const listing = g.find((x) => x.figure.name === 'ops batch listing (all pages)')!;
    expect(listing.changes.map((c) => c.verdict?.growth)).toEqual(['linear', 'linear']);
  });

  it('keeps the worker within its noise constant', () => {
    const g = growthBetween([step(1000, { rss: 600 * MiB }), step(10_000, { rss: 620 * MiB })]);
    expect(g.find((x) => x.figure.name === 'Worker RSS')!.changes[0]!.verdict?.growth).toBe('constant');
  });
});

describe('rendering', () => {
  const steps = [step(1000), step(10_000, { listAllMs: 5000, firstMs: 12 }), step(100_000, { listAllMs: 500_000 })];

  it('renders one row per step, with the growth of each figure after the first', () => {
    const table = renderStepsTable(steps).split('\n');
    expect(table).toHaveLength(2 + steps.length);
    expect(table[0]).toMatch(/^\| Journeys parked \|/);
    expect(table[2]).toMatch(/^\| 1,000 \|/);
    expect(table[2]).not.toContain('*linear*');
    expect(table[3]).toMatch(/^\| 10,000 \|/);
    expect(table[3]).toContain('*constant*');
    expect(table[3]).toContain('*linear*');
    // 10,000 -> 100,000 with the listing from 5 s to 500 s: the square of the journeys.
    expect(table[4]).toContain('*faster than linear*');
    // Bytes per journey, and over the empty tables.
    expect(table[2]).toContain('38.6 MiB: 39.5 KiB (29.3 KiB over the empty tables)');
    const columns = (line: string) => line.split('|').length;
    expect(new Set(table.map(columns)).size).toBe(1);
  });

  it('renders the growth table one row per figure, one column per change of step', () => {
    const table = renderGrowthTable(steps).split('\n');
    expect(table[0]).toBe('| Figure | 1,000 → 10,000 | 10,000 → 100,000 |');
    const bytes = table.find((l) => l.startsWith('| PostgreSQL bytes'))!;
    expect(bytes).toBe(
      '| PostgreSQL bytes (all tables) | 28.6 MiB → 286.1 MiB: linear (1.00) | 286.1 MiB → 2.79 GiB: linear (1.00) |',
    );
    expect(table.find((l) => l.startsWith('| ops batch listing'))).toContain('faster than linear (2.00)');
    expect(renderGrowthTable([step(1000)])).toBe('');
  });

  it('renders the whole section between its markers, the errors listed', () => {
    const run: GrowthRun = {
      began: '2026-11-29T06:40:00.000Z',
      machine: 'AMD EPYC, 2 cores',
      loadBefore: '0.10 / 0.20 / 0.30',
      database: 'single',
      workers: 1,
      clinicId: 'demo-clinic',
      options: { steps: [1000, 10_000, 100_000], apiStarts: 200, apiConcurrency: 4, samples: 20, deepPages: 50 },
      steps,
      errors: ['step 100000: not every journey parked in time'],
    };
    const section = renderGrowthSection(run);
    expect(section.startsWith(GROWTH_BEGIN)).toBe(true);
    expect(section.endsWith(GROWTH_END)).toBe(true);
    expect(section).toContain('2026-11-29 06:40 UTC');
    expect(section).toContain('**Errors in this run:**');
    expect(section).toContain('temporal.history_node');
  });
});

describe('withGrowthSection', () => {
  const section = `${GROWTH_BEGIN}\nnew\n${GROWTH_END}`;

  it('replaces the section between the markers and keeps the rest', () => {
    const doc = `# Performance\n\nbefore\n\n${GROWTH_BEGIN}\nold\n${GROWTH_END}\n\nafter\n`;
    expect(withGrowthSection(doc, section)).toBe(`# Performance\n\nbefore\n\n${section}\n\nafter\n`);
  });

  it('appends the section to a file without it', () => {
    expect(withGrowthSection('# Performance\n\ntext\n', section)).toBe(`# Performance\n\ntext\n\n${section}\n`);
  });

  it('refuses a section without its markers', () => {
    expect(() => withGrowthSection('', 'no markers')).toThrow(/markers/);
  });
});

describe('reminderOfHistory', () => {
  const ts = (ms: number) => ({ seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 });
  const at = (ms: number) => ({ eventTime: ts(ms) });
  const started = (id: number, ms: number, fireIn: number) => ({
    eventId: id,
    ...at(ms),
    timerStartedEventAttributes: { timerId: String(id), startToFireTimeout: ts(fireIn) },
  });
  const fired = (id: number, ms: number, startedId: number) => ({
    eventId: id,
    ...at(ms),
    timerFiredEventAttributes: { timerId: String(startedId), startedEventId: startedId },
  });
  const scheduled = (id: number, ms: number, type: string) => ({
    eventId: id,
    ...at(ms),
    activityTaskScheduledEventAttributes: { activityType: { name: type } },
  });

  it('reads when the fired timer was due, when it fired and when the resend was scheduled', () => {
    const t = 1_800_000_000_000;
    const events = [
      scheduled(5, t, 'createInvite'),
      // A timer started and replaced before it fired: the one that fired counts.
      started(7, t + 100, 600_000),
      started(9, t + 200, 60_000),
      fired(12, t + 60_450, 9),
      scheduled(15, t + 60_700, 'resendInvite'),
    ];
    expect(reminderOfHistory(events as never)).toEqual({ due: t + 60_200, fired: t + 60_450, scheduled: t + 60_700 });
  });

  it('finds nothing before the reminder fired, or when what followed was not a resend', () => {
    const t = 1_800_000_000_000;
    expect(reminderOfHistory([started(7, t, 60_000)] as never)).toBeUndefined();
    expect(
      reminderOfHistory([
        started(7, t, 60_000),
        fired(8, t + 60_000, 7),
        scheduled(9, t + 60_100, 'cancelInvite'),
      ] as never),
    ).toBeUndefined();
  });
});

describe('the wake-ups and the charts', () => {
  const lat = (p50: number, p99: number, max: number) => ({ n: 100, p50, p99, max });
  const withWake = (journeys: number, lastMs: number): GrowthStep => ({
    ...step(journeys),
    ops: { ...step(journeys).ops, listAll: { ms: 900, matched: journeys, pages: 1, page: lat(400, 900, 900) } },
    temporalRss: [300 * MiB],
    wal: { perJourney: 96 * 1024, perCallback: 40 * 1024 },
    cpu: { perJourney: { worker: 20, temporal: 15.5, api: 0, postgres: NaN }, perCallback: { worker: 4, temporal: 3 } },
    wave: {
      journeys: journeys / 10,
      fired: journeys / 10,
      dueAt: '2026-11-29T07:00:00.000Z',
      dueSpreadMs: 900,
      timerLate: lat(5, 40, 60),
      sentLate: lat(30, lastMs / 2, lastMs),
      passedMs: lastMs + 900,
    },
    wake: {
      journeys: 200,
      not200: 0,
      applied: 200,
      ack: { n: 200, p50: 3, p99: 9 },
      appliedAfter: lat(800, 2000, 2100),
      perSecond: 95.2,
    },
  });

  it('renders a row per step with the wave, the callbacks and the server memory', () => {
    const table = renderWakeTable([withWake(10_000, 4000), step(1000)]).split('\n');
    expect(table).toHaveLength(4);
    expect(table[2]).toBe('| 1,000 | – | – | – | – | – |');
    expect(table[3]).toContain('1,000 of 1,000 fired');
    expect(table[3]).toContain('**4.00 s**');
    // 1,000 reminders passed in 4.9 s.
    expect(table[3]).toContain('passed in 4.90 s (204.1 reminders/s)');
    expect(table[3]).toContain('**95.2/s**');
    expect(table[3]).toContain('| 300 MiB |');
    expect(table[3]).toContain('96.0 KiB per journey parked, 40.0 KiB per callback applied');
    expect(table[3]).toContain(
      'per journey parked: worker 20.0, temporal 15.5, api 0.0; per callback: worker 4.0, temporal 3.0 |',
    );
  });

  it('follows the wave and the callbacks as figures, a rate by its inverse', () => {
    const g = growthBetween([withWake(1000, 1000), withWake(10_000, 10_000)]);
    expect(g.find((x) => x.figure.name === 'Reminder wave: the last, late by')!.changes[0]!.verdict?.growth).toBe(
      'linear',
    );
    const wake = g.find((x) => x.figure.name === 'Wake: time per callback applied')!.changes[0]!;
    expect(wake.fa).toBeCloseTo(1000 / 95.2, 6);
    expect(wake.verdict?.growth).toBe('constant');
  });

  it('draws each figure against the journeys parked, with the 1 s line', () => {
    const run: GrowthRun = {
      began: '2026-11-29T06:40:00.000Z',
      machine: 'AMD EPYC, 2 cores',
      loadBefore: '0.10 / 0.20 / 0.30',
      database: 'single',
      workers: 1,
      clinicId: 'demo-clinic',
      options: { steps: [1000, 10_000], apiStarts: 200, apiConcurrency: 4, samples: 20, deepPages: 50 },
      steps: [withWake(1000, 900), withWake(10_000, 3000)],
      errors: [],
    };
    const { latency, size } = renderGrowthSvgs(run);
    expect(latency.startsWith('<svg')).toBe(true);
    expect(latency).toContain('1 s: a query at most');
    expect(latency).toContain('reminder wave, the last late by');
    // Eight series, two points each: a path per series.
    expect(latency.match(/<path /g)).toHaveLength(8);
    expect(size).toContain('Temporal server RSS');
    expect(size.match(/<path /g)).toHaveLength(3);
  });
});
