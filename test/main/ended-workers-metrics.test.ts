/** What an ended worker leaves in the combined /metrics: its counters and histograms, summed series by series. */
import { expect } from 'chai';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { addCounters, countersOnly } from '../../src/main/ended-workers-metrics.js';

/** A worker's values as they arrive over IPC (copied, with getMetricsAsJSON()'s string types). */
async function workerValues(fill: (registry: Registry) => void) {
  const registry = new Registry();
  fill(registry);
  return JSON.parse(JSON.stringify(await registry.getMetricsAsJSON())) as Awaited<ReturnType<Registry['getMetricsAsJSON']>>;
}

describe('ended workers metrics', () => {
  it('countersOnly keeps counters and histograms combined by sum, and drops gauges and the rest', async () => {
    const values = await workerValues((registry) => {
      new Counter({ name: 'a_total', help: 'h', registers: [registry] }).inc();
      new Counter({ name: 'b_total', help: 'h', registers: [registry], aggregator: 'max' }).inc();
      new Gauge({ name: 'c', help: 'h', registers: [registry] }).set(3);
      new Histogram({ name: 'd_seconds', help: 'h', buckets: [1], registers: [registry] }).observe(2);
    });
    expect(countersOnly(values).map((m) => m.name)).to.deep.equal(['a_total', 'd_seconds']);
  });

  it('addCounters sums the same series, keeps series and metrics only one side has, and changes neither side', async () => {
    const a = await workerValues((registry) => {
      const c = new Counter({ name: 'req_total', help: 'h', labelNames: ['route', 'status'], registers: [registry] });
      c.inc({ route: '/x', status: '200' }, 2);
      c.inc({ route: '/y', status: '200' }, 1);
      new Histogram({ name: 'dur_seconds', help: 'h', buckets: [1], registers: [registry] }).observe(0.5);
    });
    const b = await workerValues((registry) => {
      const c = new Counter({ name: 'req_total', help: 'h', labelNames: ['status', 'route'], registers: [registry] });
      c.inc({ status: '200', route: '/x' }, 5); // the same series, labels in another order
      c.inc({ route: '/z', status: '500' }, 7);
      new Histogram({ name: 'dur_seconds', help: 'h', buckets: [1], registers: [registry] }).observe(4);
      new Counter({ name: 'only_b_total', help: 'h', registers: [registry] }).inc(9);
    });
    const aBefore = JSON.stringify(a);
    const bBefore = JSON.stringify(b);
    const sum = addCounters(a, b);
    expect(JSON.stringify(a), 'a unchanged').to.equal(aBefore);
    expect(JSON.stringify(b), 'b unchanged').to.equal(bBefore);

    const req = sum.find((m) => m.name === 'req_total')?.values.map((v) => [v.labels['route'], v.value]);
    expect(req).to.deep.equal([['/x', 7], ['/y', 1], ['/z', 7]]);
    const dur = sum.find((m) => m.name === 'dur_seconds')?.values.map((v) => [(v as { metricName?: string }).metricName, v.labels['le'], v.value]);
    expect(dur).to.deep.equal([
      ['dur_seconds_bucket', 1, 1],
      ['dur_seconds_bucket', '+Inf', 2],
      ['dur_seconds_sum', undefined, 4.5],
      ['dur_seconds_count', undefined, 2],
    ]);
    expect(sum.find((m) => m.name === 'only_b_total')?.values.map((v) => v.value)).to.deep.equal([9]);
    expect(addCounters(sum, []), 'adding nothing').to.deep.equal(sum);
  });
});
