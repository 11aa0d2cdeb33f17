import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, TraceFlags } from '@opentelemetry/api';
import { AlwaysOnSampler, TracerProvider, type SpanProcessor } from '@opentelemetry/sdk-trace';
import { readTracingConfig } from '../../src/tracing/config.js';
import { svcResource } from '../../src/tracing/resource.js';
import { spanProcessorFor } from '../../src/tracing/sdk.js';
import { SPAN_KIND, startOtlpReceiver, type OtlpReceiver } from '../helpers/otlp-receiver.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

describe('the span processor of a serving process (export thread)', function () {
  let receiver: OtlpReceiver;
  let processor: SpanProcessor;
  let provider: TracerProvider;
  const saved = process.env['OTEL_EXPORTER_OTLP_ENDPOINT'];

  /** A processor as svc-server makes it, from these variables (the thread reads the endpoint from its copy of the environment). */
  function start(env: Record<string, string> = {}): void {
    process.env['OTEL_EXPORTER_OTLP_ENDPOINT'] = receiver.endpoint;
    const config = readTracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, ...env });
    if (config === undefined) throw new Error('tracing off');
    processor = spanProcessorFor(config, '9.9.9');
    provider = new TracerProvider({ resource: svcResource('svc', '9.9.9'), sampler: new AlwaysOnSampler(), spanProcessors: [processor] });
  }

  beforeEach(async function () {
    receiver = await startOtlpReceiver();
  });
  afterEach(async function () {
    await provider.shutdown();
    await receiver.close();
    if (saved === undefined) delete process.env['OTEL_EXPORTER_OTLP_ENDPOINT'];
    else process.env['OTEL_EXPORTER_OTLP_ENDPOINT'] = saved;
  });

  it('exports each sampled span with its trace, parent, kind, attributes and the resource; an unsampled one is not exported', async function () {
    start();
    const tracer = provider.getTracer('svc');
    const server = tracer.startSpan('GET /api/v1/extensions/:name', { kind: SpanKind.SERVER, attributes: { 'http.request.method': 'GET', 'http.route': '/api/v1/extensions/:name' } }, ROOT_CONTEXT);
    const backend = tracer.startSpan('GET', { kind: SpanKind.CLIENT, attributes: { 'server.port': 8080, 'svc.extension': 'tools' } }, trace.setSpan(ROOT_CONTEXT, server));
    backend.setStatus({ code: SpanStatusCode.ERROR });
    backend.end();
    server.end();
    processor.onEnd({ ...(backend as unknown as object), spanContext: () => ({ ...backend.spanContext(), spanId: '1111111111111111', traceFlags: TraceFlags.NONE }) } as never);
    await processor.forceFlush();
    expect(receiver.spans).to.have.length(2);
    const [first, second] = receiver.spans;
    expect(first).to.deep.include({ name: 'GET', kind: SPAN_KIND.client, traceId: server.spanContext().traceId, spanId: backend.spanContext().spanId, parentSpanId: server.spanContext().spanId });
    expect(first?.attributes).to.deep.equal({ 'server.port': 8080, 'svc.extension': 'tools' });
    expect(second).to.deep.include({ name: 'GET /api/v1/extensions/:name', kind: SPAN_KIND.server, parentSpanId: '' });
    expect(second?.resource).to.deep.include({ 'service.name': 'svc', 'service.version': '9.9.9', 'process.pid': process.pid });
  });

  it('lets go of each ended span object once its chunk has left for the thread, rather than holding it until its batch is sent', async function () {
    start(); // batches leave every 5 s by default: a processor that queued the span objects would still hold them
    const tracer = provider.getTracer('svc');
    let ended: WeakRef<object> | undefined;
    (() => {
      const span = tracer.startSpan('GET', {}, ROOT_CONTEXT);
      span.end();
      ended = new WeakRef(span);
    })();
    await sleep(150); // the chunk's delay (50 ms) passes
    gc();
    expect(ended?.deref()).to.equal(undefined);
    await processor.forceFlush();
    expect(receiver.spans.map((s) => s.name)).to.deep.equal(['GET']);
  });

  it('sends the spans ended before shutdown, with no flush asked', async function () {
    start();
    const tracer = provider.getTracer('svc');
    for (let i = 0; i < 3; i++) tracer.startSpan(`span ${i}`, {}, ROOT_CONTEXT).end();
    await provider.shutdown();
    expect(receiver.spans.map((s) => s.name)).to.deep.equal(['span 0', 'span 1', 'span 2']);
  });

  it('drops the spans ended while OTEL_BSP_MAX_QUEUE_SIZE spans wait for the thread, keeping the first ones', async function () {
    start({ OTEL_BSP_MAX_QUEUE_SIZE: '10', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '5' });
    const tracer = provider.getTracer('svc');
    for (let i = 0; i < 25; i++) tracer.startSpan(`span ${i}`, {}, ROOT_CONTEXT).end(); // one turn: the thread takes none meanwhile
    await processor.forceFlush();
    expect(receiver.spans.map((s) => s.name)).to.deep.equal(Array.from({ length: 10 }, (_, i) => `span ${i}`));
  });

  it('exports over http/json from the thread when OTEL_EXPORTER_OTLP_PROTOCOL says so', async function () {
    start({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
    provider.getTracer('svc').startSpan('POST', { attributes: { 'server.address': 'idp.example' } }, ROOT_CONTEXT).end();
    await processor.forceFlush();
    expect(receiver.contentTypes).to.deep.equal(['application/json']);
    expect(receiver.spans[0]?.attributes).to.deep.equal({ 'server.address': 'idp.example' });
  });
});
