// The callback path's Prometheus series: what the webhook acknowledged and how fast, what the inbox stored, what the
// forwarder signalled or dead-lettered, and the inbox's gauges. Registered in the registry the caller gives (the API's).
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** The inbox's figures as last read (refreshed before each scrape: CallbackPath.refreshGauges). */
export interface InboxGauges {
  depth: number;
  oldestAgeSeconds: number;
  deadLetters: number;
}

/** The series, registered in `registers`. Labels carry ids and outcomes only, never patient data. */
export function callbackSeries(registers: Registry[]) {
  const gauges: InboxGauges = { depth: 0, oldestAgeSeconds: 0, deadLetters: 0 };
  const series = {
    inbox: gauges,
    callbacks: new Counter({
      name: 'journey_api_callbacks_total',
      help: 'Exam-service callbacks by event and outcome (accepted, held, dead_lettered, refused, replayed_*)',
      labelNames: ['event', 'outcome'] as const,
      registers,
    }),
    droppedErased: new Counter({
      name: 'journey_api_callbacks_dropped_erased_total',
      help: "Callbacks of an erased patient's journey dropped unread (on arrival, or waiting in the inbox at its claim)",
      registers,
    }),
    ackSeconds: new Histogram({
      name: 'journey_api_webhook_ack_seconds',
      help: 'Time from receiving a callback the webhook took (answered 200) to answering it; refusals are not counted',
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
        this.set(gauges.depth);
      },
    }),
    inboxOldestAge: new Gauge({
      name: 'journey_api_inbox_oldest_age_seconds',
      help: 'Age of the oldest callback waiting in the inbox (0 when empty)',
      registers,
      collect() {
        this.set(gauges.oldestAgeSeconds);
      },
    }),
    deadLetterCount: new Gauge({
      name: 'journey_api_dead_letters',
      help: 'Dead letters waiting for an operator',
      registers,
      collect() {
        this.set(gauges.deadLetters);
      },
    }),
  };
  // Series of a fixed label set start at 0, so a rate or an alert has them before the first failure.
  for (const kind of ['unreachable', 'refused']) series.forwardFailures.inc({ kind }, 0);
  for (const store of ['inbox', 'dead_letters']) series.inboxFailures.inc({ store }, 0);
  return series;
}
export type CallbackSeries = ReturnType<typeof callbackSeries>;
