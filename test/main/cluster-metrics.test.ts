/** The primary's collection of the workers' metrics and a worker's side of it, over in-process channels. */
import { expect } from 'chai';
import { EventEmitter } from 'node:events';
import { Counter, Gauge, Registry } from 'prom-client';
import { createMetricsCollector, workerMetrics, type MetricsFromPrimary, type WorkerEnd } from '../../src/main/cluster-metrics.js';

/** A worker with its own registry, wired to `collector` as cluster IPC would be. */
function fakeWorker(id: number, collector: () => ReturnType<typeof createMetricsCollector>, count: number, problems: number) {
  const registry = new Registry();
  new Counter({ name: 'svc_test_total', help: 'h', registers: [registry] }).inc(count);
  new Gauge({ name: 'svc_test_problems', help: 'h', registers: [registry], aggregator: 'max' }).set(problems);
  const toWorker = new EventEmitter();
  const end: WorkerEnd = { id, send: (m: MetricsFromPrimary) => setImmediate(() => toWorker.emit('message', m)) };
  const side = workerMetrics(registry, {
    send: (m) => setImmediate(() => collector().handle(end, m)),
    on: (e, l) => toWorker.on(e, l),
    off: (e, l) => toWorker.off(e, l),
  });
  return { end, side };
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
});
