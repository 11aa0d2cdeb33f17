/**
 * Counters and histograms for the request path, exposed through a prom-client Registry.
 *
 * prom-client builds a label object, validates it and hashes it on every inc()/observe(), even
 * on a child from labels(): about 6 % of a proxied request's CPU for the five observations it
 * makes. Here a child is a plain record made once per label combination and an observation is
 * arithmetic on it; the registry reads the values only when /metrics is scraped. The exposition
 * is prom-client's own (registerMetric + get()), so the text format, HELP/TYPE lines and label
 * escaping stay the library's.
 */
import type { Registry } from 'prom-client';

type Labels = Record<string, string>;

interface ExposedValue {
  readonly metricName?: string;
  readonly labels: Readonly<Record<string, string | number>>;
  readonly value: number;
}

/** What prom-client's Registry reads from a registered metric's get(). */
interface Exposed {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'histogram';
  readonly values: readonly ExposedValue[];
  readonly aggregator: 'sum';
}

interface MetricConfig {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  readonly registers: readonly Registry[];
}

export interface CounterChild {
  inc(amount?: number): void;
}

export interface HistogramChild {
  observe(value: number): void;
}

/** Children by label value, one Map level per label (the last level holds the child). */
type Level<Child> = Map<string, Level<Child> | Child>;

abstract class LocalMetric<Child> {
  readonly name: string;
  readonly help: string;
  protected readonly labelNames: readonly string[];
  /** Every series, in the order it was first used: what get() exposes. */
  protected readonly series: { readonly labels: Labels; readonly child: Child }[] = [];
  private index: Level<Child> = new Map();

  constructor(config: MetricConfig) {
    this.name = config.name;
    this.help = config.help;
    this.labelNames = config.labelNames;
    for (const registry of config.registers) registry.registerMetric(this as never);
  }

  /**
   * The child for these label values (in labelNames order), made on first use. Called on every
   * observation of the request path, so a hit is one Map look-up per label and builds nothing.
   */
  labels(...values: string[]): Child {
    if (values.length !== this.labelNames.length) {
      throw new RangeError(`${this.name} takes ${this.labelNames.length} label values (${this.labelNames.join(', ')}), got ${values.length}`);
    }
    let level = this.index;
    const last = values.length - 1;
    for (let i = 0; i < last; i++) {
      const value = values[i] as string;
      let next = level.get(value) as Level<Child> | undefined;
      if (next === undefined) {
        next = new Map();
        level.set(value, next);
      }
      level = next;
    }
    const leafKey = values[last] ?? ''; // no labels: one series under ''
    let child = level.get(leafKey) as Child | undefined;
    if (child === undefined) {
      const labels: Labels = {};
      this.labelNames.forEach((name, i) => (labels[name] = values[i] as string));
      child = this.newChild();
      level.set(leafKey, child);
      this.series.push({ labels, child });
    }
    return child;
  }

  reset(): void {
    this.series.length = 0;
    this.index = new Map();
  }

  protected abstract newChild(): Child;
}

class CounterSeries implements CounterChild {
  value = 0;

  inc(amount = 1): void {
    if (!(amount >= 0) || !Number.isFinite(amount)) throw new RangeError(`a counter only goes up by a finite amount, not ${amount}`);
    this.value += amount;
  }
}

export class LocalCounter extends LocalMetric<CounterSeries> {
  protected newChild(): CounterSeries {
    return new CounterSeries();
  }

  get(): Promise<Exposed> {
    const values = this.series.map(({ labels, child }) => ({ labels, value: child.value }));
    return Promise.resolve({ name: this.name, help: this.help, type: 'counter', values, aggregator: 'sum' });
  }
}

class HistogramSeries implements HistogramChild {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(private readonly upperBounds: readonly number[]) {
    this.counts = new Float64Array(upperBounds.length);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) throw new RangeError(`a histogram observes finite values, not ${value}`);
    const bounds = this.upperBounds;
    // Few buckets: a scan beats a binary search. Past the last bound only +Inf (= count) grows.
    for (let i = 0; i < bounds.length; i++) {
      if (value <= (bounds[i] as number)) {
        this.counts[i] = (this.counts[i] as number) + 1;
        break;
      }
    }
    this.sum += value;
    this.count += 1;
  }
}

export class LocalHistogram extends LocalMetric<HistogramSeries> {
  private readonly upperBounds: readonly number[];

  constructor(config: MetricConfig & { readonly buckets: readonly number[] }) {
    super(config);
    const sorted = [...config.buckets].sort((a, b) => a - b);
    if (sorted.length === 0 || sorted.some((b, i) => !Number.isFinite(b) || (i > 0 && b === sorted[i - 1]))) {
      throw new RangeError(`${config.name}: buckets must be distinct finite numbers`);
    }
    this.upperBounds = sorted;
  }

  protected newChild(): HistogramSeries {
    return new HistogramSeries(this.upperBounds);
  }

  /** Cumulative buckets, then +Inf, sum and count per series: prom-client's Histogram shape. */
  get(): Promise<Exposed> {
    const values: ExposedValue[] = [];
    for (const { labels, child } of this.series) {
      let cumulative = 0;
      this.upperBounds.forEach((bound, i) => {
        cumulative += child.counts[i] as number;
        values.push({ metricName: `${this.name}_bucket`, labels: { le: bound, ...labels }, value: cumulative });
      });
      values.push({ metricName: `${this.name}_bucket`, labels: { le: '+Inf', ...labels }, value: child.count });
      values.push({ metricName: `${this.name}_sum`, labels, value: child.sum });
      values.push({ metricName: `${this.name}_count`, labels, value: child.count });
    }
    return Promise.resolve({ name: this.name, help: this.help, type: 'histogram', values, aggregator: 'sum' });
  }
}
