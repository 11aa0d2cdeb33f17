import { expect } from 'chai';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, TraceFlags } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { AlwaysOnSampler, InMemorySpanExporter, SimpleSpanProcessor, TracerProvider, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { svcResource } from '../../src/tracing/resource.js';
import { fromRecord, Scopes, toRecord } from '../../src/tracing/span-record.js';

describe('span records (a span on its way to the export thread)', function () {
  const resource = svcResource('svc', '9.9.9');

  async function endedSpans(): Promise<ReadableSpan[]> {
    const exporter = new InMemorySpanExporter();
    const provider = new TracerProvider({ resource, sampler: new AlwaysOnSampler(), spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    const tracer = provider.getTracer('svc', '1.2.3');
    const remote = trace.setSpanContext(ROOT_CONTEXT, {
      traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: TraceFlags.SAMPLED, isRemote: true, traceState: new TraceState('vendor=a'),
    });
    const server = tracer.startSpan('GET /api/v1/session', { kind: SpanKind.SERVER, attributes: { 'http.request.method': 'GET', 'http.response.status_code': 503, 'svc.list': ['a', 'b'], 'svc.flag': true, 'svc.ratio': 0.5 } }, remote);
    server.addEvent('retry', { 'svc.attempt': 2 });
    server.setStatus({ code: SpanStatusCode.ERROR, message: 'backend_timeout' });
    // A link's tracestate is not carried (a class does not survive cloning; svc makes no links): this one has none.
    const { traceId, spanId, traceFlags } = server.spanContext();
    const child = provider.getTracer('other').startSpan('ldap.bind', { kind: SpanKind.CLIENT, links: [{ context: { traceId, spanId, traceFlags }, attributes: { 'svc.why': 'x' } }] }, trace.setSpan(ROOT_CONTEXT, server));
    child.end();
    server.end();
    await provider.forceFlush();
    return exporter.getFinishedSpans();
  }

  it('serialises, once cloned to another thread and read back, to the same OTLP protobuf and JSON as the span itself', async function () {
    const spans = await endedSpans();
    expect(spans.map((s) => s.name)).to.deep.equal(['ldap.bind', 'GET /api/v1/session']);
    const scopes = new Scopes();
    const back = spans.map((span) => fromRecord(structuredClone(toRecord(span)), resource, scopes));
    expect(Buffer.from(ProtobufTraceSerializer.serializeRequest(back) ?? [])).to.deep.equal(Buffer.from(ProtobufTraceSerializer.serializeRequest(spans) ?? []));
    expect(new TextDecoder().decode(JsonTraceSerializer.serializeRequest(back))).to.equal(new TextDecoder().decode(JsonTraceSerializer.serializeRequest(spans)));
    expect(back[1]?.spanContext().traceState?.serialize()).to.equal('vendor=a');
    expect(back[1]?.parentSpanContext).to.deep.include({ spanId: 'b7ad6b7169203331', isRemote: true });
    expect(back[0]?.instrumentationScope).to.deep.equal({ name: 'other' });
    expect(back[1]?.instrumentationScope).to.deep.equal({ name: 'svc', version: '1.2.3' });
  });
});
