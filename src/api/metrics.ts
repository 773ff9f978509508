// The API's Prometheus series, on prom-client (the callback path's own from inbox/metrics.ts). One registry per app (tests build several apps in one process); the
// Node process figures (CPU, memory, event loop, GC) come from one process-wide registry merged in at scrape time.
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { callbackSeries } from '../inbox/metrics';

/** Figures read at each scrape (the /metrics route refreshes them). */
export interface ScrapeFigures {
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
export function createApiMetrics() {
  const scraped: ScrapeFigures = { journeysNeedingAttention: Number.NaN };
  const registry = new Registry();
  const registers = [registry];
  const metrics = {
    registry,
    scraped,
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
    ...callbackSeries(registers),
    journeysNeedingAttention: new Gauge({
      name: 'journey_api_journeys_needing_attention',
      help: 'Running journeys that need a person (NeedsAttention), counted in Temporal visibility at each scrape',
      registers,
      collect() {
        this.set(scraped.journeysNeedingAttention);
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
