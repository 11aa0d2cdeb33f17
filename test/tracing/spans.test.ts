import { expect } from 'chai';
import { context, ROOT_CONTEXT, trace, TraceFlags, type SpanContext } from '@opentelemetry/api';
import { TraceState, W3CTraceContextPropagator } from '@opentelemetry/core';
import { traceHeaders } from '../../src/tracing/spans.js';

/** What the W3C propagator writes for `ids`: traceHeaders writes the same without it. */
function propagated(ids: SpanContext): Record<string, string> {
  const carrier: Record<string, string> = {};
  new W3CTraceContextPropagator().inject(trace.setSpanContext(ROOT_CONTEXT, ids), carrier, { set: (c, k, v) => (c[k] = v) });
  return carrier;
}

describe('traceHeaders (the traceparent a backend gets)', function () {
  const traceId = '0af7651916cd43dd8448eb211c80319c';
  const spanId = 'b7ad6b7169203331';

  it('writes what the W3C propagator writes, sampled or not, with and without a tracestate', function () {
    for (const ids of [
      { traceId, spanId, traceFlags: TraceFlags.SAMPLED },
      { traceId, spanId, traceFlags: TraceFlags.NONE },
      { traceId, spanId, traceFlags: TraceFlags.SAMPLED, traceState: new TraceState('vendor=a,other=b') },
    ]) {
      const headers = traceHeaders(trace.wrapSpanContext(ids));
      expect(headers).to.deep.equal(propagated(ids));
      expect(headers['traceparent']).to.match(/^00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0[01]$/);
    }
    expect(traceHeaders(trace.wrapSpanContext({ traceId, spanId, traceFlags: 1, traceState: new TraceState('vendor=a') }))).to.deep.equal({
      traceparent: `00-${traceId}-${spanId}-01`, tracestate: 'vendor=a',
    });
    // The propagator would send `tracestate:` empty; an empty list is the same as none (W3C).
    expect(traceHeaders(trace.wrapSpanContext({ traceId, spanId, traceFlags: 1, traceState: new TraceState('') }))).to.deep.equal({ traceparent: `00-${traceId}-${spanId}-01` });
  });

  it('writes nothing for a span that is not valid (no trace to join), whatever the active context', function () {
    const invalid = trace.wrapSpanContext({ traceId: '0'.repeat(32), spanId: '0'.repeat(16), traceFlags: 1 });
    expect(traceHeaders(invalid)).to.deep.equal({});
    context.with(trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId, traceFlags: 1 }), () => expect(traceHeaders(invalid)).to.deep.equal({}));
  });
});
