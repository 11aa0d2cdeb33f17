/**
 * The counts of workers that ended, kept in the combined /metrics (cluster-metrics.ts): only
 * what may be summed across a worker's death. Counters and histograms (buckets, sums and counts)
 * stay; gauges say something about a live process and go with it; a metric combined other than
 * by sum (a counter set to aggregate by max, say) cannot be carried either.
 */
import type { MetricObjectWithValues, MetricValue } from 'prom-client';

type Metric = MetricObjectWithValues<MetricValue<string>>;
type Value = MetricValue<string> & { readonly metricName?: string };

/** Types as getMetricsAsJSON() writes them (strings, not the typings' enum). */
const SUMMED_TYPES: ReadonlySet<string> = new Set(['counter', 'histogram']);

/** The metrics of `values` that only go up and are combined by sum. */
export function countersOnly(values: readonly Metric[]): Metric[] {
  return values.filter((m) => SUMMED_TYPES.has(String(m.type)) && (m.aggregator ?? 'sum') === 'sum');
}

/** `a` plus `b`, series by series (name, sample name and labels); neither is changed. */
export function addCounters(a: readonly Metric[], b: readonly Metric[]): Metric[] {
  const byName = new Map<string, Metric>();
  for (const metric of [...a, ...b]) {
    const held = byName.get(metric.name);
    if (held === undefined) {
      byName.set(metric.name, { ...metric, values: metric.values.map((v) => ({ ...v })) });
      continue;
    }
    const at = new Map(held.values.map((v, i) => [seriesKey(v), i]));
    for (const value of metric.values) {
      const i = at.get(seriesKey(value));
      const same = i === undefined ? undefined : held.values[i];
      if (same === undefined) {
        at.set(seriesKey(value), held.values.length);
        held.values.push({ ...value });
      } else {
        same.value += value.value;
      }
    }
  }
  return [...byName.values()];
}

function seriesKey(value: Value): string {
  const labels = Object.entries(value.labels).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
  return JSON.stringify([value.metricName ?? '', labels]);
}
