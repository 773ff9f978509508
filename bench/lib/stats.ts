// Percentiles of recorded samples (all of them kept: a 10 s level at 1000/s is 10,000 numbers).

export interface Summary {
  count: number;
  mean: number;
  p50: number;
  p90: number;
  p95: number;
  p99: number;
  p999: number;
  max: number;
}

/** Nearest-rank percentile of sorted values (q in 0..1). */
export function percentile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank]!;
}

export function summarize(values: number[]): Summary {
  const sorted = Float64Array.from(values).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    count: sorted.length,
    mean: sorted.length ? sum / sorted.length : NaN,
    p50: percentile(sorted, 0.5),
    p90: percentile(sorted, 0.9),
    p95: percentile(sorted, 0.95),
    p99: percentile(sorted, 0.99),
    p999: percentile(sorted, 0.999),
    max: sorted.length ? sorted[sorted.length - 1]! : NaN,
  };
}

export function fmtMs(v: number | undefined, digits = 1): string {
  if (v === undefined || !Number.isFinite(v)) return '–';
  if (v >= 1000) return `${(v / 1000).toFixed(2)} s`;
  return `${v.toFixed(v < 10 ? Math.max(digits, 1) : digits === 0 ? 0 : 1)} ms`;
}

export function fmtBytes(v: number | undefined): string {
  if (v === undefined || !Number.isFinite(v)) return '–';
  if (v >= 1024 ** 3) return `${(v / 1024 ** 3).toFixed(2)} GiB`;
  return `${(v / 1024 ** 2).toFixed(0)} MiB`;
}
