// The API's own counters (GET /metrics, Prometheus text): how callbacks were handed off, the spool's depth.

export interface HandOff {
  signalled: number;
  spooled: number;
  deadLettered: number;
  forwarded: number;
  spoolDepth: number;
  /** The API's own ack histogram (request received to answered): cumulative count per upper bound (seconds). */
  ackBuckets: Record<string, number>;
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

export async function handOff(apiUrl: string): Promise<HandOff> {
  const res = await fetch(`${apiUrl}/metrics`, { signal: AbortSignal.timeout(5_000) });
  const m = parseMetrics(await res.text());
  return {
    signalled: sumOf(m, 'journey_api_callbacks_total', 'outcome="signalled"'),
    spooled: sumOf(m, 'journey_api_callbacks_total', 'outcome="spooled"'),
    deadLettered: sumOf(m, 'journey_api_callbacks_total', 'outcome="dead_lettered"'),
    forwarded: sumOf(m, 'journey_api_callbacks_forwarded_total'),
    spoolDepth: sumOf(m, 'journey_api_spool_depth'),
    ackBuckets: Object.fromEntries(
      [...m].flatMap(([key, v]) => {
        const b = /^journey_api_webhook_ack_seconds_bucket\{.*le="([^"]+)"/.exec(key);
        return b ? [[b[1]!, v] as const] : [];
      }),
    ),
  };
}

/** The smallest bucket bound holding the q-quantile of the API's own ack times (a bound, not a point). */
export function serverAckQuantile(h: HandOff, q: number): string {
  const entries = Object.entries(h.ackBuckets)
    .map(([le, n]) => [le === '+Inf' ? Infinity : Number(le), n] as const)
    .sort((a, b) => a[0] - b[0]);
  const total = entries.at(-1)?.[1] ?? 0;
  if (total === 0) return '–';
  for (const [le, n] of entries) if (n >= q * total) return le === Infinity ? '> 2.5 s' : `≤ ${le * 1000} ms`;
  return '–';
}

export function diff(after: HandOff, before: HandOff): HandOff {
  return {
    signalled: after.signalled - before.signalled,
    spooled: after.spooled - before.spooled,
    deadLettered: after.deadLettered - before.deadLettered,
    forwarded: after.forwarded - before.forwarded,
    spoolDepth: after.spoolDepth,
    ackBuckets: Object.fromEntries(
      Object.entries(after.ackBuckets).map(([le, n]) => [le, n - (before.ackBuckets[le] ?? 0)]),
    ),
  };
}
