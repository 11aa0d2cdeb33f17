/** The local metrics expose exactly what prom-client's own Counter and Histogram would for the same observations. */
import { expect } from 'chai';
import fc from 'fast-check';
import { Counter, Histogram, Registry } from 'prom-client';
import { LocalCounter, LocalHistogram } from '../../src/lib/local-metrics.js';

const BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1];

describe('local metrics (prom-client exposition, no per-observation hashing)', () => {
  it('renders the same text as prom-client for any observations', async () => {
    const observation = fc.record({
      route: fc.constantFrom('/a', '/b/:id', 'we"ird\\route'),
      status: fc.constantFrom('200', '404'),
      seconds: fc.oneof(fc.constantFrom(...BUCKETS), fc.double({ min: 0, max: 3, noNaN: true })),
      amount: fc.integer({ min: 0, max: 5000 }),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(observation, { maxLength: 60 }), async (observations) => {
        const [theirs, ours] = [new Registry(), new Registry()];
        const config = { name: 'x_requests_total', help: 'Requests', labelNames: ['route', 'status'] };
        const hist = { name: 'x_duration_seconds', help: 'Duration "quoted"', labelNames: ['route'], buckets: BUCKETS };
        const theirCounter = new Counter({ ...config, registers: [theirs] });
        const theirHistogram = new Histogram({ ...hist, registers: [theirs] });
        const ourCounter = new LocalCounter({ ...config, registers: [ours] });
        const ourHistogram = new LocalHistogram({ ...hist, registers: [ours] });
        for (const o of observations) {
          theirCounter.labels(o.route, o.status).inc(o.amount);
          theirHistogram.labels(o.route).observe(o.seconds);
          ourCounter.labels(o.route, o.status).inc(o.amount);
          ourHistogram.labels(o.route).observe(o.seconds);
        }
        expect(sortedLines(await ours.metrics())).to.deep.equal(sortedLines(await theirs.metrics()));
      }),
      { numRuns: 200 },
    );
  });

  it('refuses what prom-client refuses: wrong label count, a counter going down, a value that is not finite', () => {
    const registry = new Registry();
    const counter = new LocalCounter({ name: 'c_total', help: 'c', labelNames: ['a'], registers: [registry] });
    const histogram = new LocalHistogram({ name: 'h', help: 'h', labelNames: [], buckets: [1], registers: [registry] });
    expect(() => counter.labels()).to.throw(RangeError, /takes 1 label values \(a\), got 0/);
    expect(() => counter.labels('x').inc(-1)).to.throw(RangeError);
    expect(() => histogram.labels().observe(Number.NaN)).to.throw(RangeError);
    expect(() => new LocalHistogram({ name: 'h2', help: 'h', labelNames: [], buckets: [1, 1], registers: [] })).to.throw(RangeError, /distinct/);
  });

  it('is emptied by the registry reset, as prom-client metrics are', async () => {
    const registry = new Registry();
    new LocalCounter({ name: 'c_total', help: 'c', labelNames: ['a'], registers: [registry] }).labels('x').inc();
    expect(await registry.metrics()).to.include('c_total{a="x"} 1');
    registry.resetMetrics();
    expect(await registry.metrics()).not.to.include('c_total{a="x"}');
  });
});

/** Line order within a metric differs between implementations (series order); the set must not. */
function sortedLines(text: string): string[] {
  return text.split('\n').filter((l) => l !== '').sort();
}
