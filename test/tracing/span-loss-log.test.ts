import { expect } from 'chai';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { SpanLossLog, WARNING_INTERVAL_MS } from '../../src/tracing/span-loss-log.js';

function logged() {
  const lines: { level: 'warn' | 'info'; fields: object; message: string; activeSpan: string | undefined }[] = [];
  const at = (level: 'warn' | 'info') => (fields: object, message: string): void => void lines.push({ level, fields, message, activeSpan: trace.getActiveSpan()?.spanContext().spanId });
  let now = 1_000_000;
  const loss = new SpanLossLog({ warn: at('warn'), info: at('info') }, () => now);
  return { loss, lines, advance: (ms: number) => void (now += ms) };
}

const refused = Object.assign(new Error('connect ECONNREFUSED 10.0.0.9:4318'), { code: 'ECONNREFUSED' });

describe('tracing: what the log says of spans not sent', function () {
  it('gives a collector that fails and works by turns one warning and one line a minute, not one per export', function () {
    const { loss, lines, advance } = logged();
    for (let i = 0; i < 50; i++) {
      loss.exportFailed(refused, 10);
      advance(100);
      loss.exportWorked(false);
      advance(100);
    }
    expect(lines.map((l) => [l.level, l.fields])).to.deep.equal([['warn', { reason: 'Error ECONNREFUSED', droppedSpans: 10 }], ['info', { droppedSpans: 10 }]]);
    advance(WARNING_INTERVAL_MS);
    loss.exportFailed(refused, 10);
    loss.exportWorked(false);
    // Every span dropped since the last line is counted in the next one.
    expect(lines.slice(2).map((l) => [l.level, l.fields])).to.deep.equal([['warn', { reason: 'Error ECONNREFUSED', droppedSpans: 10 }], ['info', { droppedSpans: 500 }]]);
  });

  it('still says a lasting outage that begins within a minute of the last warning, once the minute has passed', function () {
    const { loss, lines, advance } = logged();
    loss.exportFailed(refused, 1);
    loss.exportWorked(false);
    advance(10_000);
    loss.exportFailed(refused, 1);
    advance(20_000);
    loss.exportFailed(refused, 1);
    expect(lines).to.have.length(2);
    advance(WARNING_INTERVAL_MS);
    loss.exportFailed(refused, 1);
    loss.exportFailed(refused, 1);
    expect(lines.map((l) => l.level)).to.deep.equal(['warn', 'info', 'warn']);
  });

  it('says a full queue once for a lasting overload, and the count once the queue is under half full again', function () {
    const { loss, lines } = logged();
    for (let i = 0; i < 5; i++) loss.queueFull(8);
    loss.exportWorked(true);
    for (let i = 0; i < 5; i++) loss.queueFull(8);
    expect(lines.map((l) => [l.level, l.fields])).to.deep.equal([['warn', { maxQueueSize: 8 }]]);
    loss.exportWorked(false);
    expect(lines.map((l) => [l.level, l.fields])).to.deep.equal([['warn', { maxQueueSize: 8 }], ['info', { droppedSpans: 10 }]]);
  });

  it('says a span that cannot be encoded once for the process, with the error\'s class and the span\'s name only', function () {
    const { loss, lines, advance } = logged();
    loss.cannotEncode(new RangeError('Invalid array length with a secret'), 'GET /api/v1/session');
    advance(WARNING_INTERVAL_MS * 2);
    loss.cannotEncode(new RangeError('again'), 'GET /x');
    expect(lines.map((l) => l.fields)).to.deep.equal([{ reason: 'RangeError', span: 'GET /api/v1/session' }]);
  });

  it('counts at shutdown every span dropped and not yet said, with those never sent, and says nothing when none was lost', function () {
    const quiet = logged();
    quiet.loss.shutDown(0, 5_000);
    expect(quiet.lines).to.deep.equal([]);
    const { loss, lines } = logged();
    loss.exportFailed(refused, 7);
    loss.shutDown(3, 5_000);
    expect(lines.map((l) => [l.level, l.fields])).to.deep.equal([['warn', { reason: 'Error ECONNREFUSED', droppedSpans: 7 }], ['warn', { droppedSpans: 10, flushTimeoutMs: 5_000 }]]);
  });

  it('writes its lines outside the context of the request that is active when a loss happens', function () {
    const manager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(manager);
    try {
      const { loss, lines, advance } = logged();
      const request = trace.wrapSpanContext({ traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1 });
      context.with(trace.setSpan(context.active(), request), () => {
        expect(trace.getActiveSpan()?.spanContext().spanId).to.equal('b7ad6b7169203331');
        loss.queueFull(1);
        advance(WARNING_INTERVAL_MS);
        loss.exportFailed(refused, 1);
        loss.cannotEncode(new Error('x'), 'GET');
        loss.exportWorked(false);
      });
      expect(lines).to.have.length(4);
      expect(lines.map((l) => l.activeSpan)).to.deep.equal([undefined, undefined, undefined, undefined]);
    } finally {
      context.disable();
    }
  });
});
