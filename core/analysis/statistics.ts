/**
 * Per-pass statistics of a measurement. Run time varies with inputs and the worst case matters,
 * so a measurement is shown as a distribution, not one number. Pure: the CLI uses it too.
 */
export interface Distribution {
  count: number;
  min: number;
  max: number;
  mean: number;
  median: number;
  /** Population standard deviation (the passes are all there is). */
  stddev: number;
  total: number;
  histogram: HistogramBin[];
}

export interface HistogramBin {
  /** Inclusive lower and exclusive upper bound (the last bin includes `max`). */
  from: number;
  to: number;
  count: number;
}

export function distribution(values: readonly number[], bins = 10): Distribution | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const count = sorted.length;
  const total = sorted.reduce((s, v) => s + v, 0);
  const mean = total / count;
  const mid = Math.floor(count / 2);
  const median = count % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  const variance = sorted.reduce((s, v) => s + (v - mean) ** 2, 0) / count;
  return {
    count,
    min: sorted[0]!,
    max: sorted[count - 1]!,
    mean,
    median,
    stddev: Math.sqrt(variance),
    total,
    histogram: histogram(sorted, bins),
  };
}

function histogram(sorted: number[], bins: number): HistogramBin[] {
  const min = sorted[0]!;
  const max = sorted[sorted.length - 1]!;
  if (min === max) return [{ from: min, to: max, count: sorted.length }];
  const n = Math.min(bins, sorted.length);
  const width = (max - min) / n;
  const out: HistogramBin[] = Array.from({ length: n }, (_, i) => ({
    from: min + i * width,
    to: i === n - 1 ? max : min + (i + 1) * width,
    count: 0,
  }));
  for (const v of sorted) out[Math.min(n - 1, Math.floor((v - min) / width))]!.count++;
  return out;
}

/** A text histogram for hovers and tooltips: one bar per bin. */
export function histogramBars(d: Distribution, width = 24): string[] {
  const peak = Math.max(...d.histogram.map((b) => b.count));
  return d.histogram.map((b) => {
    const bar = '█'.repeat(Math.max(b.count > 0 ? 1 : 0, Math.round((b.count / peak) * width)));
    return `${formatCount(b.from).padStart(10)} – ${formatCount(b.to).padEnd(10)} ${bar} ${b.count}`;
  });
}

/** A count in a few characters (`12.3 k`); a value that rounds to zero reads "0", never "-0". */
export function formatCount(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (Math.abs(v) >= 1e9) return `${(v / 1e9).toFixed(2)} G`;
  if (Math.abs(v) >= 1e6) return `${(v / 1e6).toFixed(2)} M`;
  if (Math.abs(v) >= 1e4) return `${(v / 1e3).toFixed(1)} k`;
  const text = Number.isInteger(v) ? String(v) : v.toFixed(1);
  return /^-0(\.0+)?$/.test(text) ? text.slice(1) : text;
}
