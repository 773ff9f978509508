// The API's Prometheus series, on prom-client. One registry per app (tests build several apps in one process); the
// Node process figures (CPU, memory, event loop, GC) come from one process-wide registry merged in at scrape time.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** The inbox's figures as last read (the /metrics route refreshes them before each scrape). */
export interface InboxGauges {
  depth: number;
  oldestAgeSeconds: number;
  deadLetters: number;
  /** Running journeys whose NeedsAttention search attribute is set; NaN when the visibility store was not read. */
  journeysNeedingAttention: number;
}

let processRegistry: Registry | undefined;
/** Default process metrics, collected once per process whatever the number of apps (each collector has a cost). */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/** The API's series. Labels carry ids and outcomes only, never patient data. */
export function createApiMetrics(
  inbox: InboxGauges = { depth: 0, oldestAgeSeconds: 0, deadLetters: 0, journeysNeedingAttention: Number.NaN },
) {
  const registry = new Registry();
  const registers = [registry];
  const metrics = {
    registry,
    inbox,
    journeysStarted: new Counter({
      name: 'journey_api_journeys_started_total',
      help: 'Journeys started through the API, by clinic and scenario',
      labelNames: ['clinic', 'scenario'] as const,
      registers,
    }),
    journeyStartReplays: new Counter({
      name: 'journey_api_journey_start_replays_total',
      help: 'Starts answered from an earlier one (same Idempotency-Key)',
      labelNames: ['clinic'] as const,
      registers,
    }),
    callbacks: new Counter({
      name: 'journey_api_callbacks_total',
      help: 'Exam-service callbacks by event and outcome (accepted, held, dead_lettered, refused, replayed_*)',
      labelNames: ['event', 'outcome'] as const,
      registers,
    }),
    ackSeconds: new Histogram({
      name: 'journey_api_webhook_ack_seconds',
      help: 'Time from receiving a callback to answering it',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    }),
    inboxAppendBatch: new Histogram({
      name: 'journey_api_inbox_append_batch_size',
      help: 'Callbacks stored by one inbox write (group commit)',
      buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000],
      registers,
    }),
    inboxWriteSeconds: new Histogram({
      name: 'journey_api_inbox_write_seconds',
      help: 'Time of one durable inbox write (a group commit), from its start to stored: the log write and its sync, or the INSERT committed',
      buckets: [0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25, 1],
      registers,
    }),
    inboxFailures: new Counter({
      name: 'journey_api_inbox_failures_total',
      help: 'Callbacks the inbox could not store (answered 503), by what failed (inbox, dead_letters)',
      labelNames: ['store'] as const,
      registers,
    }),
    forwarded: new Counter({
      name: 'journey_api_callbacks_forwarded_total',
      help: 'Inbox entries signalled to their journeys',
      registers,
    }),
    forwardDelaySeconds: new Histogram({
      name: 'journey_api_callback_forward_delay_seconds',
      help: 'Apply lag: from acknowledging a callback (its inbox append) to its journey accepting the signal',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600],
      registers,
    }),
    forwardFailures: new Counter({
      name: 'journey_api_forward_failures_total',
      help: 'Signals the forwarder will retry, by kind (unreachable: Temporal did not answer; refused)',
      labelNames: ['kind'] as const,
      registers,
    }),
    deadLettered: new Counter({
      name: 'journey_api_callbacks_dead_lettered_total',
      help: 'Callbacks kept as dead letters, by reason',
      labelNames: ['reason'] as const,
      registers,
    }),
    inboxDepth: new Gauge({
      name: 'journey_api_inbox_depth',
      help: 'Callbacks waiting in the inbox for their signal',
      registers,
      collect() {
        this.set(inbox.depth);
      },
    }),
    inboxOldestAge: new Gauge({
      name: 'journey_api_inbox_oldest_age_seconds',
      help: 'Age of the oldest callback waiting in the inbox (0 when empty)',
      registers,
      collect() {
        this.set(inbox.oldestAgeSeconds);
      },
    }),
    deadLetterCount: new Gauge({
      name: 'journey_api_dead_letters',
      help: 'Dead letters waiting for an operator',
      registers,
      collect() {
        this.set(inbox.deadLetters);
      },
    }),
    journeysNeedingAttention: new Gauge({
      name: 'journey_api_journeys_needing_attention',
      help: 'Running journeys that need a person (NeedsAttention), counted in Temporal visibility at each scrape',
      registers,
      collect() {
        this.set(inbox.journeysNeedingAttention);
      },
    }),
    httpRequests: new Counter({
      name: 'journey_api_http_requests_total',
      help: 'HTTP requests by route, method and status code',
      labelNames: ['method', 'route', 'status'] as const,
      registers,
    }),
    /** The exposition (text format 0.0.4): this app's series and the process's. */
    async render(): Promise<string> {
      return Registry.merge([processMetrics(), registry]).metrics();
    },
    contentType: registry.contentType,
  };
  // Series of a fixed label set start at 0, so a rate or an alert has them before the first failure.
  for (const kind of ['unreachable', 'refused']) metrics.forwardFailures.inc({ kind }, 0);
  for (const store of ['inbox', 'dead_letters']) metrics.inboxFailures.inc({ store }, 0);
  return metrics;
}
export type ApiMetrics = ReturnType<typeof createApiMetrics>;

/** The value of one series of a counter or gauge (0 when it has none), e.g. for tests and operators' checks. */
export async function seriesValue(
  metric: Counter<string> | Gauge<string>,
  labels: Record<string, string> = {},
): Promise<number> {
  const { values } = await metric.get();
  const wanted = Object.entries(labels);
  const found = values.find(
    (v) =>
      Object.keys(v.labels).length === wanted.length && wanted.every(([k, value]) => String(v.labels[k]) === value),
  );
  return found?.value ?? 0;
}
