/** The primary's collection of the workers' metrics and a worker's side of it, over in-process channels. */
import { expect } from 'chai';
import { EventEmitter } from 'node:events';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { createMetricsCollector, workerMetrics, type MetricsFromPrimary, type WorkerEnd } from '../../src/main/cluster-metrics.js';

/** A worker with its own registry, wired to `collector` as cluster IPC would be. */
function fakeWorker(id: number, collector: () => ReturnType<typeof createMetricsCollector>, count: number, problems: number) {
  const registry = new Registry();
  const counter = new Counter({ name: 'svc_test_total', help: 'h', registers: [registry] });
  counter.inc(count);
  new Gauge({ name: 'svc_test_problems', help: 'h', registers: [registry], aggregator: 'max' }).set(problems);
  const toWorker = new EventEmitter();
  const end: WorkerEnd = { id, send: (m: MetricsFromPrimary) => setImmediate(() => toWorker.emit('message', m)) };
  const side = workerMetrics(registry, {
    // Copied as cluster IPC does: prom-client's values are its live objects.
    send: (m) => setImmediate(() => collector().handle(end, JSON.parse(JSON.stringify(m)) as unknown)),
    on: (e, l) => toWorker.on(e, l),
    off: (e, l) => toWorker.off(e, l),
  });
  return { end, side, registry, counter };
}

describe('cluster metrics', () => {
  it('answers a scrape taken by one worker with every worker combined, each metric by its aggregator', async () => {
    const workers: ReturnType<typeof fakeWorker>[] = [];
    const collector = createMetricsCollector({ workers: () => workers.map((w) => w.end) });
    workers.push(fakeWorker(1, () => collector, 4, 0), fakeWorker(2, () => collector, 46, 2));
    const text = await (workers[0]?.side.text() ?? Promise.reject(new Error('no worker')));
    expect(text).to.include('svc_test_total 50\n');
    expect(text).to.include('svc_test_problems 2\n');
  });

  it('fails the scrape when a worker does not answer, rather than leave its counts out', async () => {
    const silent: WorkerEnd = { id: 7, send: () => undefined };
    const collector = createMetricsCollector({ workers: () => [silent], timeoutMs: 50 });
    const err = await collector.collect().catch((e: unknown) => e);
    expect((err as Error).message).to.equal('worker 7 did not send its metrics within 50 ms');
  });

  it('leaves out a worker that exits while asked, and answers with the others', async () => {
    const workers: ReturnType<typeof fakeWorker>[] = [];
    const gone: WorkerEnd = { id: 9, send: () => undefined };
    const collector = createMetricsCollector({ workers: () => [...workers.map((w) => w.end), gone], timeoutMs: 2000 });
    workers.push(fakeWorker(1, () => collector, 3, 0));
    const text = collector.collect();
    collector.forget(9);
    expect(await text).to.include('svc_test_total 3\n');
  });

  it('keeps the counters and histograms of a worker that ended in every later sum, and drops its gauges', async () => {
    const workers: ReturnType<typeof fakeWorker>[] = [];
    const collector = createMetricsCollector({ workers: () => workers.map((w) => w.end) });
    const one = fakeWorker(1, () => collector, 4, 0);
    const two = fakeWorker(2, () => collector, 46, 2);
    const timings = new Histogram({ name: 'svc_test_seconds', help: 'h', buckets: [1], registers: [two.registry] });
    timings.observe(0.5);
    timings.observe(3);
    workers.push(one, two);
    const before = await collector.collect();
    expect(before).to.include('svc_test_total 50\n');
    expect(before).to.include('svc_test_problems 2\n');

    two.counter.inc(10); // counted after its last answer: lost with it, never shown, so never a drop
    workers.splice(1, 1);
    collector.forget(2);
    const three = fakeWorker(3, () => collector, 1, 0); // its replacement, from zero
    workers.push(three);
    const after = await collector.collect();
    expect(after, 'the ended worker\'s last 46 stay in the sum').to.include('svc_test_total 51\n');
    expect(after, 'its gauge went with it').to.include('svc_test_problems 0\n');
    expect(after).to.include('svc_test_seconds_bucket{le="1"} 1\n');
    expect(after).to.include('svc_test_seconds_bucket{le="+Inf"} 2\n');
    expect(after).to.include('svc_test_seconds_sum 3.5\n');
    expect(after).to.include('svc_test_seconds_count 2\n');

    one.counter.inc(5);
    expect(await collector.collect()).to.include('svc_test_total 56\n');
    workers.splice(0, 1);
    collector.forget(1);
    collector.forget(1); // a second exit event for the same worker adds nothing
    expect(await collector.collect(), 'two ended workers and the live one').to.include('svc_test_total 56\n');
  });

  it('counts a worker that ends during a collection it already answered once, not twice', async () => {
    const workers: ReturnType<typeof fakeWorker>[] = [];
    const late: WorkerEnd = { id: 5, send: () => undefined };
    const collector = createMetricsCollector({ workers: () => [...workers.map((w) => w.end), late], timeoutMs: 2000 });
    const one = fakeWorker(1, () => collector, 7, 0);
    workers.push(one);
    // Worker 1's previous answer, so that the primary holds its last values.
    const first = collector.collect();
    await new Promise((r) => setTimeout(r, 20));
    collector.forget(5);
    expect(await first).to.include('svc_test_total 7\n');
    const second = collector.collect();
    await new Promise((r) => setTimeout(r, 20)); // worker 1 has answered; the late one has not
    workers.splice(0, 1);
    collector.forget(1);
    collector.forget(5);
    expect(await second).to.include('svc_test_total 7\n');
  });
});
