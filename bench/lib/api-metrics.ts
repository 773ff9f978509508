// The API's own figures (GET /metrics, Prometheus text): what the webhook accepted, what the callback inbox holds,
// how its group commit batched the appends, what the forwarder signalled and how late.

/** Cumulative count per upper bound (`le`), as the exposition gives it. */
export type Buckets = Record<string, number>;

export interface ApiFigures {
  /** Callbacks durably in the inbox and answered 200. */
  accepted: number;
  deadLettered: number;
  /** Answered 503: the inbox could not store them. */
  refused: number;
  inboxFailures: number;
  /** Inbox entries signalled to their journeys. */
  forwarded: number;
  /** Signals the forwarder will retry: Temporal did not answer, or refused. */
  forwardUnreachable: number;
  forwardRefused: number;
  /** Gauges as of this scrape. */
  inboxDepth: number;
  inboxOldestAgeSeconds: number;
  deadLetters: number;
  /** The API's own ack histogram (request received to answered, seconds). */
  ack: Buckets;
  /** Callbacks per inbox write (group commit). */
  batch: Buckets;
  batchWrites: number;
  batchCallbacks: number;
  /** Time of each inbox write (seconds): the log record synced, or the INSERT committed. */
  write: Buckets;
  /** From receipt to the journey accepting the signal (seconds). */
  forwardDelay: Buckets;
  /** The event loop's longest delay since the previous scrape (prom-client's default metric; seconds), a gauge. */
  loopDelayMax: number;
  /**
   * The garbage collector's pauses of the main thread (prom-client's `nodejs_gc_duration_seconds`, every kind): each
   * pause by duration (seconds, cumulative per bound), how many, and their time in all. Absent from older runs.
   */
  gc?: Buckets;
  gcPauses?: number;
  gcSeconds?: number;
  /** When this scrape was taken (performance.now()). */
  at: number;
}

export function parseMetrics(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

function sumOf(m: Map<string, number>, name: string, labelPart = ''): number {
  let sum = 0;
  for (const [key, v] of m) {
    if ((key === name || key.startsWith(`${name}{`)) && key.includes(labelPart)) sum += v;
  }
  return sum;
}

function bucketsOf(m: Map<string, number>, name: string): Buckets {
  const out: Buckets = {};
  // The bound may come first or last among the labels (prom-client puts it first for a labelled histogram).
  const re = new RegExp(`^${name}_bucket\\{(?:.*,)?le="([^"]+)"(?:,.*)?\\}$`);
  for (const [key, v] of m) {
    const b = re.exec(key);
    if (b) out[b[1]!] = (out[b[1]!] ?? 0) + v;
  }
  return out;
}

export async function apiFigures(apiUrl: string): Promise<ApiFigures> {
  const res = await fetch(`${apiUrl}/metrics`, { signal: AbortSignal.timeout(10_000) });
  const m = parseMetrics(await res.text());
  return {
    accepted: sumOf(m, 'journey_api_callbacks_total', 'outcome="accepted"'),
    deadLettered: sumOf(m, 'journey_api_callbacks_total', 'outcome="dead_lettered"'),
    refused: sumOf(m, 'journey_api_callbacks_total', 'outcome="refused"'),
    inboxFailures: sumOf(m, 'journey_api_inbox_failures_total'),
    forwarded: sumOf(m, 'journey_api_callbacks_forwarded_total'),
    forwardUnreachable: sumOf(m, 'journey_api_forward_failures_total', 'kind="unreachable"'),
    forwardRefused: sumOf(m, 'journey_api_forward_failures_total', 'kind="refused"'),
    inboxDepth: sumOf(m, 'journey_api_inbox_depth'),
    inboxOldestAgeSeconds: sumOf(m, 'journey_api_inbox_oldest_age_seconds'),
    deadLetters: sumOf(m, 'journey_api_dead_letters'),
    ack: bucketsOf(m, 'journey_api_webhook_ack_seconds'),
    batch: bucketsOf(m, 'journey_api_inbox_append_batch_size'),
    batchWrites: sumOf(m, 'journey_api_inbox_append_batch_size_count'),
    batchCallbacks: sumOf(m, 'journey_api_inbox_append_batch_size_sum'),
    write: bucketsOf(m, 'journey_api_inbox_write_seconds'),
    forwardDelay: bucketsOf(m, 'journey_api_callback_forward_delay_seconds'),
    loopDelayMax: m.get('nodejs_eventloop_lag_max_seconds') ?? NaN,
    gc: bucketsOf(m, 'nodejs_gc_duration_seconds'),
    gcPauses: sumOf(m, 'nodejs_gc_duration_seconds_count'),
    gcSeconds: sumOf(m, 'nodejs_gc_duration_seconds_sum'),
    at: performance.now(),
  };
}

const diffBuckets = (a: Buckets, b: Buckets): Buckets =>
  Object.fromEntries(Object.entries(a).map(([le, n]) => [le, n - (b[le] ?? 0)]));

/** What happened between two scrapes of the same API process (gauges: as of the later one). */
export function diff(after: ApiFigures, before: ApiFigures): ApiFigures {
  return {
    accepted: after.accepted - before.accepted,
    deadLettered: after.deadLettered - before.deadLettered,
    refused: after.refused - before.refused,
    inboxFailures: after.inboxFailures - before.inboxFailures,
    forwarded: after.forwarded - before.forwarded,
    forwardUnreachable: after.forwardUnreachable - before.forwardUnreachable,
    forwardRefused: after.forwardRefused - before.forwardRefused,
    inboxDepth: after.inboxDepth,
    inboxOldestAgeSeconds: after.inboxOldestAgeSeconds,
    deadLetters: after.deadLetters,
    ack: diffBuckets(after.ack, before.ack),
    batch: diffBuckets(after.batch, before.batch),
    batchWrites: after.batchWrites - before.batchWrites,
    batchCallbacks: after.batchCallbacks - before.batchCallbacks,
    write: diffBuckets(after.write, before.write),
    forwardDelay: diffBuckets(after.forwardDelay, before.forwardDelay),
    loopDelayMax: after.loopDelayMax,
    ...(after.gc && before.gc
      ? {
          gc: diffBuckets(after.gc, before.gc),
          gcPauses: (after.gcPauses ?? 0) - (before.gcPauses ?? 0),
          gcSeconds: (after.gcSeconds ?? 0) - (before.gcSeconds ?? 0),
        }
      : {}),
    at: after.at - before.at,
  };
}

function sorted(b: Buckets): [number, number][] {
  return Object.entries(b)
    .map(([le, n]) => [le === '+Inf' ? Infinity : Number(le), n] as [number, number])
    .sort((x, y) => x[0] - y[0]);
}

/** The smallest bucket bound holding the q-quantile (a bound, not a point); undefined without observations. */
export function bucketBound(b: Buckets, q: number): number | undefined {
  const entries = sorted(b);
  const total = entries.at(-1)?.[1] ?? 0;
  if (total === 0) return undefined;
  for (const [le, n] of entries) if (n >= q * total) return le;
  return Infinity;
}

/**
 * The bucket bound just below the q-quantile: the quantile is above it (0 when it is in the first bucket); with
 * bucketBound, the range it lies in.
 */
export function bucketFloor(b: Buckets, q: number): number | undefined {
  const entries = sorted(b);
  const total = entries.at(-1)?.[1] ?? 0;
  if (total === 0) return undefined;
  let below = 0;
  for (const [le, n] of entries) {
    if (n >= q * total) return below;
    below = le;
  }
  return below;
}

/** The largest finite bound below which nothing fell above: "max ≤ x" (Infinity when the top bucket was used). */
export function bucketMax(b: Buckets): number | undefined {
  const entries = sorted(b);
  const total = entries.at(-1)?.[1] ?? 0;
  if (total === 0) return undefined;
  for (const [le, n] of entries) if (n >= total) return le;
  return Infinity;
}

/** "≤ 5 ms" for an ack or delay histogram (seconds). */
export function fmtBoundSeconds(v: number | undefined): string {
  if (v === undefined) return '–';
  if (!Number.isFinite(v)) return '> top bucket';
  return v >= 1 ? `≤ ${v} s` : `≤ ${+(v * 1000).toFixed(1)} ms`;
}

/**
 * The garbage collector's pauses over a diff of two scrapes: "312 pauses, 410 ms (5.1 %), longest ≤ 10 ms (3 over
 * 1 ms)"; '–' for results without them.
 */
export function fmtGc(d: ApiFigures): string {
  if (!d.gc || d.gcPauses === undefined || d.gcSeconds === undefined) return '–';
  if (d.gcPauses === 0) return 'none';
  const share = d.at > 0 ? ` (${((d.gcSeconds * 1000 * 100) / d.at).toFixed(1)} %)` : '';
  const over1 = d.gcPauses - (d.gc['0.001'] ?? 0);
  return (
    `${d.gcPauses} pauses, ${Math.round(d.gcSeconds * 1000)} ms${share}, longest ${fmtBoundSeconds(bucketMax(d.gc))}` +
    (over1 > 0 ? ` (${over1} over 1 ms)` : '')
  );
}

export interface BatchSummary {
  /** Inbox writes (group commits). */
  writes: number;
  callbacks: number;
  mean: number;
  /** Bucket bounds of the batch size histogram. */
  p50: number | undefined;
  p99: number | undefined;
  max: number | undefined;
  /** Each write's own time (the write histogram): bucket bounds, seconds; absent from results of older versions. */
  writeSeconds?: { p50: number | undefined; p99: number | undefined; max: number | undefined };
}

export function batchSummary(d: ApiFigures): BatchSummary {
  return {
    writes: d.batchWrites,
    callbacks: d.batchCallbacks,
    mean: d.batchWrites > 0 ? d.batchCallbacks / d.batchWrites : NaN,
    p50: bucketBound(d.batch, 0.5),
    p99: bucketBound(d.batch, 0.99),
    max: bucketMax(d.batch),
    writeSeconds: { p50: bucketBound(d.write, 0.5), p99: bucketBound(d.write, 0.99), max: bucketMax(d.write) },
  };
}

export function fmtBatch(b: BatchSummary | undefined): string {
  if (!b || b.writes === 0) return '–';
  const bound = (v: number | undefined) => (v === undefined ? '–' : Number.isFinite(v) ? `≤ ${v}` : '> 1000');
  const w = b.writeSeconds;
  const time =
    w && w.p50 !== undefined
      ? `; each write p50 ${fmtBoundSeconds(w.p50)}, p99 ${fmtBoundSeconds(w.p99)}, max ${fmtBoundSeconds(w.max)}`
      : '';
  return `${b.writes} writes, mean ${b.mean.toFixed(1)} (p50 ${bound(b.p50)}, p99 ${bound(b.p99)}, max ${bound(b.max)}${time})`;
}
