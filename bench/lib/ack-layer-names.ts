// The names and results of the acknowledgement's layers (bench/ack-layers.ts measures them; bench/lib/layers-report.ts
// renders them): apart from the harness, so the report and its tests load no part that starts servers.
import type { InboxStore } from './stack';
import type { Summary } from './stats';

/** Each layer a callback passes on its way to its 200, and how it is left out. */
export const ACK_LAYERS = {
  all: 'nothing left out: the API as deployed',
  'bare-route':
    'everything: the bare route (bench/bare-server.ts, the same Fastify route shape answering at once, nothing stored), the floor of this machine and its Node.js',
  token: "the URL token's check (an HMAC of the journey id compared in constant time)",
  reading:
    "reading the body into the interface's event (nesting scan, JSON parse, the layouts' schemas): each distinct body read once",
  'patient-sealing': "each callback sealed under its journey's patient's data key (PATIENT_KEY_STORE=off)",
  'payload-sealing': "the inbox's entries sealed under the payload keys (the inbox given a sealer without keys)",
  audit: 'the audit trail (no AUDIT_FILE): the webhook writes no audit record, so this should cost nothing',
  'request-log':
    "the request log at LOG_LEVEL info (LOG_LEVEL=warn): callbacks get no request lines, so what is left is each request's logger",
  pressure: "the acknowledgement-pressure bookkeeping after each 200 (the answer's time recorded)",
  'response-schema': 'the answer serialized by its response schema (a string written by hand instead)',
  'store-write': 'the durable write (an inbox in memory: nothing stored, the floor of the path without storage)',
  forwarder:
    'the forwarder beside the webhook: its claims, the opening of each entry, the signal handed on and the settle ' +
    '(left out: not started, the callbacks stay in the inbox)',
  standby: 'the synchronous standby (postgres only: a lone server, a commit waits for its own flush only)',
} as const;
export type LayerName = keyof typeof ACK_LAYERS;

export interface LayerRun {
  store: InboxStore;
  /** Left out in this run (`all`: nothing). */
  layer: LayerName;
  /** Which pass: `all` runs first (0) and last (1). */
  pass: number;
  rate: number;
  latencyMs: Summary;
  /** CPU of the API process per callback at the rate (µs): its main thread, and every thread. */
  cpuUsPerCallback: { main: number; total: number };
  /** Bursts of 200 on connections the burst opens, pooled. */
  burstMs: Summary;
  /** Callbacks answered 200 over the run, of those sent. */
  accepted: number;
  sent: number;
  /** The event loop's longest delay during the rate (monitorEventLoopDelay, through prom-client); not for the bare route. */
  loopDelayMaxMs?: number;
}

/** The whole phase: the load runs (A/B across processes) and the CPU each layer costs measured in one process. */
export interface AckLayerResults {
  runs: LayerRun[];
  cpu: LayerCpu[];
}

/**
 * A layer's CPU on the webhook's event loop per callback, measured in one process: the API with every layer and the
 * API without this one, both built in the same process, take the same callbacks (Fastify's inject: the route, its
 * hooks, the inbox's durable write; no socket), in alternating rounds; the cost is the median over the rounds of the
 * main thread's CPU per callback with every layer less without it. Far steadier than across processes, where the
 * run-to-run noise is larger than most layers.
 */
export interface LayerCpu {
  store: InboxStore;
  layer: LayerName;
  /** Median over the rounds, µs per callback. */
  usPerCallback: number;
  /** Every layer on, µs per callback (median over the rounds). */
  allUs: number;
  /** The rounds' differences, lowest and highest (µs). */
  spread: [number, number];
  rounds: number;
  perRound: number;
}
