// A small Prometheus registry (text exposition format 0.0.4): counters, gauges and histograms with labels. Enough
// for the API's handful of series without a dependency.
type Labels = Record<string, string>;

function labelKey(labels: Labels): string {
  return Object.keys(labels)
    .sort()
    .map((k) => `${k}="${String(labels[k]).replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`)
    .join(',');
}

function line(name: string, key: string, value: number): string {
  return `${name}${key ? `{${key}}` : ''} ${Number.isFinite(value) ? value : value > 0 ? '+Inf' : '-Inf'}`;
}

interface Metric {
  render(): string[];
}

export class Counter implements Metric {
  readonly #values = new Map<string, number>();
  constructor(
    readonly name: string,
    readonly help: string,
  ) {}
  inc(labels: Labels = {}, by = 1): void {
    const key = labelKey(labels);
    this.#values.set(key, (this.#values.get(key) ?? 0) + by);
  }
  get(labels: Labels = {}): number {
    return this.#values.get(labelKey(labels)) ?? 0;
  }
  render(): string[] {
    const out = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`];
    if (this.#values.size === 0) out.push(line(this.name, '', 0));
    for (const [key, v] of this.#values) out.push(line(this.name, key, v));
    return out;
  }
}

export class Gauge implements Metric {
  readonly #values = new Map<string, number>();
  constructor(
    readonly name: string,
    readonly help: string,
    private readonly collect?: () => number,
  ) {}
  set(value: number, labels: Labels = {}): void {
    this.#values.set(labelKey(labels), value);
  }
  render(): string[] {
    const out = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} gauge`];
    if (this.collect) out.push(line(this.name, '', this.collect()));
    else for (const [key, v] of this.#values) out.push(line(this.name, key, v));
    return out;
  }
}

export class Histogram implements Metric {
  readonly #series = new Map<string, { counts: number[]; sum: number; count: number }>();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly buckets: number[],
  ) {}
  observe(value: number, labels: Labels = {}): void {
    const key = labelKey(labels);
    let s = this.#series.get(key);
    if (!s) this.#series.set(key, (s = { counts: this.buckets.map(() => 0), sum: 0, count: 0 }));
    this.buckets.forEach((le, i) => {
      if (value <= le) s.counts[i]! += 1;
    });
    s.sum += value;
    s.count += 1;
  }
  render(): string[] {
    const out = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    for (const [key, s] of this.#series) {
      const sep = key ? `${key},` : '';
      this.buckets.forEach((le, i) => out.push(`${this.name}_bucket{${sep}le="${le}"} ${s.counts[i]}`));
      out.push(`${this.name}_bucket{${sep}le="+Inf"} ${s.count}`);
      out.push(line(`${this.name}_sum`, key, s.sum));
      out.push(line(`${this.name}_count`, key, s.count));
    }
    return out;
  }
}

export class MetricsRegistry {
  readonly #metrics: Metric[] = [];
  register<M extends Metric>(metric: M): M {
    this.#metrics.push(metric);
    return metric;
  }
  render(): string {
    return `${this.#metrics.flatMap((m) => m.render()).join('\n')}\n`;
  }
}

/** The inbox's figures as last read (the /metrics route refreshes them before each scrape). */
export interface InboxGauges {
  depth: number;
  oldestAgeSeconds: number;
  deadLetters: number;
}

/** The API's series. Labels carry ids and outcomes only, never patient data. */
export function createApiMetrics(inbox: InboxGauges = { depth: 0, oldestAgeSeconds: 0, deadLetters: 0 }) {
  const registry = new MetricsRegistry();
  return {
    registry,
    inbox,
    journeysStarted: registry.register(
      new Counter('journey_api_journeys_started_total', 'Journeys started through the API, by clinic and scenario'),
    ),
    journeyStartReplays: registry.register(
      new Counter(
        'journey_api_journey_start_replays_total',
        'Starts answered from an earlier one (same Idempotency-Key)',
      ),
    ),
    callbacks: registry.register(
      new Counter(
        'journey_api_callbacks_total',
        'Exam-service callbacks by event and outcome (accepted, held, dead_lettered, refused, replayed_*)',
      ),
    ),
    ackSeconds: registry.register(
      new Histogram(
        'journey_api_webhook_ack_seconds',
        'Time from receiving a callback to answering it',
        [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 1, 2.5],
      ),
    ),
    inboxAppendBatch: registry.register(
      new Histogram(
        'journey_api_inbox_append_batch_size',
        'Callbacks stored by one inbox write (group commit)',
        [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000],
      ),
    ),
    inboxFailures: registry.register(
      new Counter(
        'journey_api_inbox_failures_total',
        'Callbacks the inbox could not store (answered 503), by what failed (inbox, dead_letters)',
      ),
    ),
    forwarded: registry.register(
      new Counter('journey_api_callbacks_forwarded_total', 'Inbox entries signalled to their journeys'),
    ),
    forwardDelaySeconds: registry.register(
      new Histogram(
        'journey_api_callback_forward_delay_seconds',
        'From receiving a callback to its journey accepting the signal',
        [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600],
      ),
    ),
    forwardFailures: registry.register(
      new Counter(
        'journey_api_forward_failures_total',
        'Signals the forwarder will retry, by kind (unreachable: Temporal did not answer; refused)',
      ),
    ),
    deadLettered: registry.register(
      new Counter('journey_api_callbacks_dead_lettered_total', 'Callbacks kept as dead letters, by reason'),
    ),
    inboxDepth: registry.register(
      new Gauge('journey_api_inbox_depth', 'Callbacks waiting in the inbox for their signal', () => inbox.depth),
    ),
    inboxOldestAge: registry.register(
      new Gauge(
        'journey_api_inbox_oldest_age_seconds',
        'Age of the oldest callback waiting in the inbox (0 when empty)',
        () => inbox.oldestAgeSeconds,
      ),
    ),
    deadLetterCount: registry.register(
      new Gauge('journey_api_dead_letters', 'Dead letters waiting for an operator', () => inbox.deadLetters),
    ),
    httpRequests: registry.register(
      new Counter('journey_api_http_requests_total', 'HTTP requests by route, method and status code'),
    ),
  };
}
export type ApiMetrics = ReturnType<typeof createApiMetrics>;
