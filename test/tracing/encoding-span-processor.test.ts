import { expect } from 'chai';
import { setTimeout as sleep } from 'node:timers/promises';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { SamplingDecision, TracerProvider, type ReadableSpan, type Sampler, type SpanProcessor } from '@opentelemetry/sdk-trace';
import { EncodingSpanProcessor, type EncodedBatch, type EncodingProcessorOptions } from '../../src/tracing/encoding-span-processor.js';
import { fromProtobuf } from '../helpers/otlp-receiver.js';

interface Export {
  readonly names: string[];
  readonly batch: EncodedBatch;
  readonly done: (result: ExportResult) => void;
}

/** An exporter that holds each export until the test answers it, and the log lines written. */
function harness(options: Partial<Omit<EncodingProcessorOptions, 'exporter' | 'log'>> = {}, sampler?: Sampler) {
  const exports: Export[] = [];
  const lines: { level: 'warn' | 'info'; fields: object; message: string }[] = [];
  let shutdowns = 0;
  const processor = new EncodingSpanProcessor({
    exporter: {
      export: (batch, done) => exports.push({ names: fromProtobuf(Buffer.from(batch.bytes)).map((s) => s.name), batch, done }),
      shutdown: async () => void shutdowns++,
    },
    log: { warn: (fields, message) => lines.push({ level: 'warn', fields, message }), info: (fields, message) => lines.push({ level: 'info', fields, message }) },
    scheduleDelayMs: 60_000, maxExportBatchSize: 3, maxQueueSize: 100, exportTimeoutMs: 60_000, flushTimeoutMs: 60_000,
    ...options,
  });
  const provider = new TracerProvider({ resource: resourceFromAttributes({ 'service.name': 'svc' }), spanProcessors: [processor], ...(sampler === undefined ? {} : { sampler }) });
  const tracer = provider.getTracer('svc');
  const end = (...names: string[]): void => {
    for (const name of names) tracer.startSpan(name).end();
  };
  return { processor, exports, lines, end, tracer, shutdowns: () => shutdowns };
}

const OK: ExportResult = { code: ExportResultCode.SUCCESS };
const refused = (): ExportResult => ({ code: ExportResultCode.FAILED, error: Object.assign(new Error('connect ECONNREFUSED 10.0.0.9:4318 secret-looking text'), { code: 'ECONNREFUSED' }) });

describe('tracing: the processor that encodes spans as they end', function () {
  it('sends a batch as soon as it holds the batch size, one export at a time, in the order the spans ended', function () {
    const h = harness();
    h.end('a', 'b');
    expect(h.exports).to.have.length(0);
    h.end('c', 'd', 'e', 'f', 'g');
    expect(h.exports.map((e) => e.names)).to.deep.equal([['a', 'b', 'c']]);
    expect(h.exports[0]?.batch.spanCount).to.equal(3);
    h.exports[0]?.done(OK);
    expect(h.exports.map((e) => e.names)).to.deep.equal([['a', 'b', 'c'], ['d', 'e', 'f']]);
    h.exports[1]?.done(OK);
    expect(h.exports).to.have.length(2);
  });

  it('sends a batch that is not full the schedule delay after its first span', async function () {
    const h = harness({ scheduleDelayMs: 40 });
    h.end('a');
    await sleep(20);
    h.end('b');
    expect(h.exports).to.have.length(0);
    await sleep(60);
    expect(h.exports.map((e) => e.names)).to.deep.equal([['a', 'b']]);
    h.exports[0]?.done(OK);
    h.end('c');
    await sleep(80);
    expect(h.exports.map((e) => e.names)).to.deep.equal([['a', 'b'], ['c']]);
  });

  it('keeps at most the queue size waiting while an export is out, drops the rest, and says so once, then how many once spans leave again', async function () {
    const h = harness({ maxExportBatchSize: 2, maxQueueSize: 4 });
    h.end('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j');
    // a and b are out; c to f wait; g to j are dropped.
    expect(h.exports.map((e) => e.names)).to.deep.equal([['a', 'b']]);
    expect(h.lines).to.have.length(1);
    expect(h.lines[0]).to.include({ level: 'warn' });
    expect(h.lines[0]?.message).to.match(/dropped.*OTEL_BSP_MAX_QUEUE_SIZE/);
    expect(h.lines[0]?.fields).to.deep.equal({ maxQueueSize: 4 });
    h.exports[0]?.done(OK);
    h.exports[1]?.done(OK);
    h.exports[2]?.done(OK);
    expect(h.exports.map((e) => e.names)).to.deep.equal([['a', 'b'], ['c', 'd'], ['e', 'f']]);
    expect(h.lines.map((l) => [l.level, l.fields])).to.deep.equal([['warn', { maxQueueSize: 4 }], ['info', { droppedSpans: 4 }]]);
    await h.processor.forceFlush();
  });

  it('drops the batch of a failed export, warns once with the reason but not the error\'s words, and counts until an export works', async function () {
    const h = harness({ maxExportBatchSize: 2 });
    h.end('a', 'b');
    h.exports[0]?.done(refused());
    h.end('c', 'd');
    h.exports[1]?.done(refused());
    expect(h.lines).to.have.length(1);
    expect(h.lines[0]?.fields).to.deep.equal({ reason: 'Error ECONNREFUSED', droppedSpans: 2 });
    expect(JSON.stringify(h.lines)).not.to.include('secret-looking');
    h.end('e', 'f');
    h.exports[2]?.done(OK);
    expect(h.lines.map((l) => [l.level, l.fields])).to.deep.equal([['warn', { reason: 'Error ECONNREFUSED', droppedSpans: 2 }], ['info', { droppedSpans: 4 }]]);
    expect(h.exports.map((e) => e.names)).to.deep.equal([['a', 'b'], ['c', 'd'], ['e', 'f']]);
    await h.processor.forceFlush();
  });

  it('counts an export with no answer within the export timeout as failed, but sends the next batch only once it ends (one request out at a time)', async function () {
    const h = harness({ maxExportBatchSize: 1, exportTimeoutMs: 30 });
    h.end('a', 'b');
    expect(h.exports).to.have.length(1);
    const started = Date.now();
    while (h.lines.length === 0 && Date.now() - started < 2_000) await sleep(1);
    expect(Date.now() - started).to.be.at.least(25);
    expect(h.lines[0]?.fields).to.deep.equal({ reason: 'Error', droppedSpans: 1 });
    await sleep(60);
    expect(h.exports.map((e) => e.names), 'b waits while a is out').to.deep.equal([['a']]);
    // The late answer frees the place, and is not counted again.
    h.exports[0]?.done(OK);
    expect(h.exports.map((e) => e.names)).to.deep.equal([['a'], ['b']]);
    expect(h.lines).to.have.length(1);
    h.exports[1]?.done(OK);
    expect(h.lines.map((l) => [l.level, l.fields])).to.deep.equal([['warn', { reason: 'Error', droppedSpans: 1 }], ['info', { droppedSpans: 1 }]]);
  });

  it('keeps the export timeout within what a Node timer holds', async function () {
    const h = harness({ maxExportBatchSize: 1, exportTimeoutMs: 2 ** 40 });
    const warnings: string[] = [];
    const onWarning = (w: Error): void => void warnings.push(w.name);
    process.on('warning', onWarning);
    try {
      h.end('a', 'b');
      await sleep(30);
      expect(h.lines, 'no export counted failed at once').to.deep.equal([]);
      expect(warnings).to.not.include('TimeoutOverflowWarning');
      h.exports[0]?.done(OK);
      h.exports[1]?.done(OK);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('takes an exporter that throws as a failed export', function () {
    const lines: string[] = [];
    const processor = new EncodingSpanProcessor({
      exporter: { export: () => { throw new TypeError('boom'); }, shutdown: async () => undefined },
      log: { warn: (_f, m) => lines.push(m), info: (_f, m) => lines.push(m) },
      scheduleDelayMs: 60_000, maxExportBatchSize: 1, maxQueueSize: 10, exportTimeoutMs: 60_000, flushTimeoutMs: 60_000,
    });
    new TracerProvider({ spanProcessors: [processor] }).getTracer('svc').startSpan('a').end();
    expect(lines).to.have.length(1);
    expect(lines[0]).to.match(/export to the OTLP endpoint failed/);
  });

  it('drops a span it cannot encode, whole, without throwing into Span.end(), and says so once', async function () {
    const h = harness({ maxExportBatchSize: 2 });
    const tracer = new TracerProvider({ spanProcessors: [{ onStart: () => undefined, forceFlush: async () => undefined, shutdown: async () => undefined, onEnd: (span) => {
      // The status is written last but one: by then the span's ids, name, times and attributes are in the batch's bytes.
      const broken = Object.create(span, { status: { get: () => { throw new RangeError('cannot'); } } }) as typeof span;
      expect(() => h.processor.onEnd(broken)).not.to.throw();
      expect(() => h.processor.onEnd(broken)).not.to.throw();
    } }] }).getTracer('svc');
    tracer.startSpan('broken').end();
    h.end('a', 'b');
    expect(h.exports.map((e) => e.names)).to.deep.equal([['a', 'b']]);
    expect(h.lines.map((l) => [l.fields, l.message])).to.deep.equal([[{ reason: 'RangeError', span: 'broken' }, 'tracing: a span could not be encoded and is dropped; later ones that cannot are dropped without a word']]);
    h.exports[0]?.done(OK);
    expect(h.lines.map((l) => l.fields)).to.deep.include({ droppedSpans: 2 });
  });

  it('keeps filling the open batch while an export is out, instead of sending many small ones after it', async function () {
    const h = harness({ scheduleDelayMs: 20, maxExportBatchSize: 100 });
    h.end('a');
    await sleep(50);
    expect(h.exports.map((e) => e.names)).to.deep.equal([['a']]);
    h.end('b');
    await sleep(50);
    h.end('c');
    await sleep(50);
    expect(h.exports).to.have.length(1);
    h.exports[0]?.done(OK);
    expect(h.exports.map((e) => e.names)).to.deep.equal([['a'], ['b', 'c']]);
  });

  it('sends batch after batch to an exporter that answers at once, without growing the stack', async function () {
    const h = harness({ maxExportBatchSize: 1, maxQueueSize: 30_000 });
    h.end('first');
    const names = Array.from({ length: 20_000 }, (_, i) => `s${i}`);
    h.end(...names);
    expect(h.exports).to.have.length(1);
    const answered: Export[] = [];
    // From now on every export is answered while it is being handed over.
    h.exports.push = (...items: Export[]) => { for (const item of items) { answered.push(item); item.done(refused()); } return answered.length; };
    h.exports[0]?.done(OK);
    expect(answered).to.have.length(20_000);
    expect(answered.at(-1)?.names).to.deep.equal(['s19999']);
    await h.processor.forceFlush();
  });

  it('resolves a flush once the spans ended before it have left, while later spans keep coming', async function () {
    const h = harness({ maxExportBatchSize: 1 });
    h.end('a', 'b');
    let flushed = false;
    const flush = h.processor.forceFlush().then(() => (flushed = true));
    h.end('c');
    h.exports[0]?.done(OK);
    await sleep(1);
    expect(flushed).to.equal(false);
    h.exports[1]?.done(OK);
    await flush;
    expect(h.exports.map((e) => e.names)).to.deep.equal([['a'], ['b'], ['c']]);
  });

  it('shuts down within the flush timeout while the endpoint never answers, and says how many spans it dropped', async function () {
    const h = harness({ maxExportBatchSize: 1, flushTimeoutMs: 50 });
    h.end('a', 'b', 'c');
    const started = Date.now();
    const shut = h.processor.shutdown();
    h.end('after');
    await shut;
    expect(Date.now() - started).to.be.within(40, 1_000);
    expect(h.shutdowns()).to.equal(1);
    expect(h.exports.map((e) => e.names)).to.deep.equal([['a']]);
    // b and c waited, a was out, `after` ended while closing.
    expect(h.lines.map((l) => [l.level, l.fields])).to.deep.equal([['warn', { droppedSpans: 4, flushTimeoutMs: 50 }]]);
    const flushed = Date.now();
    await h.processor.forceFlush();
    expect(Date.now() - flushed, 'a flush after shutdown has nothing to wait for').to.be.below(40);
  });

  it('sends no empty request when the only span of a batch could not be encoded', async function () {
    const h = harness();
    let kept: ReadableSpan | undefined;
    const keep: SpanProcessor = { onStart: () => undefined, onEnd: (span) => void (kept = span), forceFlush: async () => undefined, shutdown: async () => undefined };
    new TracerProvider({ spanProcessors: [keep] }).getTracer('svc').startSpan('broken').end();
    h.processor.onEnd(Object.create(kept!, { status: { get: () => { throw new RangeError('cannot'); } } }) as ReadableSpan);
    await h.processor.forceFlush();
    expect(h.exports).to.have.length(0);
    expect(h.lines).to.have.length(1);
  });

  it('exports, and logs, outside the context of the request whose span filled or started a batch', async function () {
    const manager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(manager);
    try {
      const seen: (string | undefined)[] = [];
      const h = harness({ scheduleDelayMs: 10, maxExportBatchSize: 2 });
      const request = h.tracer.startSpan('request');
      context.with(trace.setSpan(context.active(), request), () => {
        h.end('a');
        h.exports.push = (...items: Export[]) => { seen.push(trace.getActiveSpan()?.spanContext().spanId ?? 'none'); items[0]?.done(refused()); return 0; };
      });
      await sleep(40);
      context.with(trace.setSpan(context.active(), request), () => h.end('b', 'c'));
      expect(seen).to.deep.equal(['none', 'none']);
      request.end();
    } finally {
      context.disable();
    }
  });

  it('sends only sampled spans (a span recorded but not sampled stays home)', async function () {
    const recordOnly: Sampler = { shouldSample: () => ({ decision: SamplingDecision.RECORD }), toString: () => 'record only' };
    const h = harness({}, recordOnly);
    h.end('a', 'b', 'c', 'd');
    await h.processor.forceFlush();
    expect(h.exports).to.have.length(0);
  });

  it('sends what waits on a flush and on shutdown, then stops taking spans', async function () {
    const h = harness();
    h.end('a');
    const flushed = h.processor.forceFlush();
    expect(h.exports.map((e) => e.names)).to.deep.equal([['a']]);
    let done = false;
    void flushed.then(() => (done = true));
    await sleep(5);
    expect(done).to.equal(false);
    h.exports[0]?.done(OK);
    await flushed;
    h.end('b');
    const shut = h.processor.shutdown();
    h.exports[1]?.done(OK);
    await shut;
    expect(h.shutdowns()).to.equal(1);
    h.end('c', 'd', 'e');
    await h.processor.forceFlush();
    expect(h.exports.map((e) => e.names)).to.deep.equal([['a'], ['b']]);
  });
});
