import { expect } from 'chai';
import fc from 'fast-check';
import { context, SpanStatusCode, trace, TraceFlags, type AttributeValue, type Attributes, type Link, type SpanContext } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { TracerProvider, type ReadableSpan, type SpanProcessor } from '@opentelemetry/sdk-trace';
import { EncodingSpanProcessor, type EncodedBatch } from '../../src/tracing/encoding-span-processor.js';

/** Spans made by the SDK itself, kept as they end. */
function provider(): { readonly provider: TracerProvider; readonly ended: ReadableSpan[] } {
  const ended: ReadableSpan[] = [];
  const keep: SpanProcessor = { onStart: () => undefined, onEnd: (span) => ended.push(span), forceFlush: async () => undefined, shutdown: async () => undefined };
  const resource = resourceFromAttributes({ 'service.name': 'svc', 'service.version': '1.2.3', 'process.pid': 4242, 'deployment.environment.name': 'prüfung' });
  return { provider: new TracerProvider({ resource, spanProcessors: [keep] }), ended };
}

/** What svc's processor sends for `spans`, in one batch. */
async function encoded(spans: readonly ReadableSpan[]): Promise<Uint8Array> {
  const sent: EncodedBatch[] = [];
  const log = { warn: () => undefined, info: () => undefined };
  const processor = new EncodingSpanProcessor({
    exporter: { export: (batch, done) => { sent.push(batch); done({ code: 0 }); }, shutdown: async () => undefined },
    scheduleDelayMs: 60_000, maxExportBatchSize: 100_000, maxQueueSize: 100_000, exportTimeoutMs: 60_000, flushTimeoutMs: 60_000, log,
  });
  for (const span of spans) processor.onEnd(span);
  await processor.forceFlush();
  expect(sent).to.have.length(1);
  expect(sent[0]?.spanCount).to.equal(spans.length);
  return sent[0]!.bytes;
}

const hex = (length: number): fc.Arbitrary<string> => fc.stringMatching(new RegExp(`^[0-9a-f]{${length}}$`)).filter((id) => !/^0+$/.test(id));
const text = fc.oneof(fc.string({ maxLength: 20 }), fc.string({ unit: 'binary', maxLength: 40 }), fc.string({ minLength: 120, maxLength: 300 }));
const scalar: fc.Arbitrary<string | number | boolean> = fc.oneof(text, fc.integer(), fc.maxSafeInteger(), fc.double({ noNaN: true }), fc.boolean());
const value: fc.Arbitrary<AttributeValue> = fc.oneof(scalar, fc.array(fc.string({ maxLength: 10 }), { maxLength: 4 }), fc.array(fc.integer(), { maxLength: 4 }));
const attributes: fc.Arbitrary<Attributes> = fc.dictionary(fc.string({ minLength: 1, maxLength: 30 }), value, { maxKeys: 6 });
const spanContext: fc.Arbitrary<SpanContext> = fc.record({
  traceId: hex(32), spanId: hex(16), traceFlags: fc.constantFrom(TraceFlags.SAMPLED, TraceFlags.NONE), isRemote: fc.boolean(),
  traceState: fc.option(fc.constantFrom('vendor=a', 'a=1,b=2'), { nil: undefined }).map((s) => (s === undefined ? undefined : new TraceState(s))),
}).map(({ traceState, ...ids }) => (traceState === undefined ? ids : { ...ids, traceState }));
const recipe = fc.record({
  name: text,
  kind: fc.integer({ min: 0, max: 4 }),
  scope: fc.integer({ min: 0, max: 2 }),
  attributes,
  events: fc.array(fc.record({ name: text, attributes: fc.option(attributes, { nil: undefined }) }), { maxLength: 2 }),
  links: fc.array(fc.record({ context: spanContext, attributes: fc.option(attributes, { nil: undefined }) }), { maxLength: 2 }),
  status: fc.record({ code: fc.constantFrom(SpanStatusCode.UNSET, SpanStatusCode.OK, SpanStatusCode.ERROR), message: fc.option(text, { nil: undefined }) }),
  parent: fc.oneof(fc.constant(undefined), fc.constant('local' as const), spanContext),
  startSeconds: fc.integer({ min: 0, max: 2 ** 34 }),
  startNanos: fc.integer({ min: 0, max: 999_999_999 }),
  durationNanos: fc.integer({ min: 0, max: 10 ** 12 }),
});

describe('tracing: the OTLP protobuf encoding of spans', function () {
  it('writes the bytes of the SDK\'s serializer for the same spans: any attributes, events, links, status, parents, times, scopes', async function () {
    this.timeout(60_000);
    await fc.assert(fc.asyncProperty(fc.array(recipe, { minLength: 1, maxLength: 12 }), async (recipes) => {
      const { provider: made, ended } = provider();
      const tracers = [made.getTracer('svc'), made.getTracer('svc', '2.0.0'), made.getTracer('other', '1', { schemaUrl: 'https://opentelemetry.io/schemas/1.30.0' })];
      let local: ReturnType<typeof trace.wrapSpanContext> | undefined;
      for (const r of recipes) {
        const parentContext = r.parent === undefined ? context.active()
          : r.parent === 'local' ? (local === undefined ? context.active() : trace.setSpan(context.active(), local))
            : trace.setSpanContext(context.active(), r.parent);
        const links: Link[] = r.links.map((l) => (l.attributes === undefined ? { context: l.context } : { context: l.context, attributes: l.attributes }));
        const span = tracers[r.scope]!.startSpan(r.name, { kind: r.kind, attributes: r.attributes, links, startTime: [r.startSeconds, r.startNanos] }, parentContext);
        for (const e of r.events) span.addEvent(e.name, e.attributes, [r.startSeconds, r.startNanos]);
        span.setStatus(r.status.message === undefined ? { code: r.status.code } : { code: r.status.code, message: r.status.message });
        const endNanos = r.startNanos + r.durationNanos;
        span.end([r.startSeconds + Math.floor(endNanos / 1e9), endNanos % 1e9]);
        local = span;
      }
      const sampled = ended.filter((s) => (s.spanContext().traceFlags & TraceFlags.SAMPLED) !== 0);
      if (sampled.length === 0) return;
      expect(Buffer.from(await encoded(sampled)).toString('hex')).to.equal(Buffer.from(ProtobufTraceSerializer.serializeRequest(sampled)!).toString('hex'));
    }), { numRuns: 200 });
  });

  it('writes a length of two and three bytes (a span over 127 and over 16,383 bytes) where the SDK does', async function () {
    const { provider: made, ended } = provider();
    const tracer = made.getTracer('svc');
    for (const size of [100, 200, 20_000, 3_000_000]) tracer.startSpan('GET', { attributes: { 'a': 'x'.repeat(size), 'ü': 'é'.repeat(size / 4) } }).end();
    const bytes = await encoded(ended);
    expect(bytes.length).to.be.greaterThan(3_000_000);
    expect(Buffer.from(bytes).equals(Buffer.from(ProtobufTraceSerializer.serializeRequest(ended)!))).to.equal(true);
  });
});
