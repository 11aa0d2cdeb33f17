/**
 * What the rest of svc knows of tracing: start a span, name the request's route, read the ids
 * for a log line or an audit event, carry the context to a backend. Everything goes through
 * @opentelemetry/api, whose calls are no-ops until the SDK registers a provider (./start.ts,
 * only when an OTLP endpoint is set); the hot paths (proxy, Redis) also check `tracingOn()`
 * first, so that with tracing off they make no span object at all.
 *
 * The API keeps its provider and the active context in process-wide state: that is the seam
 * OpenTelemetry gives libraries, and the active span follows the request across awaits
 * (AsyncLocalStorage, inside the SDK). Passing a tracer through every factory's deps was
 * rejected: it would touch every connector and store for something that changes no decision.
 *
 * Attributes are chosen here and at each call, never copied from a request: no header, query,
 * body, cookie, token, code or password ever becomes an attribute (docs/operations.md, Tracing).
 */
import { context, INVALID_SPAN_CONTEXT, isSpanContextValid, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span, type Tracer } from '@opentelemetry/api';

export { SpanKind, type Span, type Attributes, type Context };

/** The instrumentation scope of every svc span. */
export const TRACER_NAME = 'svc';

let on = false;
/** svc's tracer, taken once the SDK is registered: asking the API for it on each span builds its cache key each time. */
let svcTracer: Tracer | undefined;

/** Set once, by ./sdk.ts, when the SDK is registered. */
export function markTracingOn(): void {
  on = true;
  svcTracer = trace.getTracer(TRACER_NAME);
}

/** Whether spans are recorded at all in this process. */
export function tracingOn(): boolean {
  return on;
}

const tracer = (): Tracer => svcTracer ?? trace.getTracer(TRACER_NAME);
/** What `work` gets with tracing off: a span that records nothing, made once. */
const NOT_RECORDED = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/** Runs `work` inside a new span, child of the active one; the span ends when `work` settles, with an error status when it throws. */
export async function inSpan<T>(name: string, attributes: Attributes, work: (span: Span) => Promise<T>, kind: SpanKind = SpanKind.INTERNAL): Promise<T> {
  if (!on) return work(NOT_RECORDED);
  return tracer().startActiveSpan(name, { kind, attributes }, async (span) => {
    try {
      return await work(span);
    } catch (err: unknown) {
      failSpan(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/** A span started now and ended by the caller; undefined when tracing is off. */
export function startSpan(name: string, attributes: Attributes, kind: SpanKind, parent: Context = context.active()): Span | undefined {
  if (!on) return undefined;
  return tracer().startSpan(name, { kind, attributes }, parent);
}

/**
 * Marks the span failed with the error's class name only: an error's message may quote what a
 * peer sent (recordException would copy it, and its stack, into the span).
 */
export function failSpan(span: Span, err: unknown): void {
  span.setStatus({ code: SpanStatusCode.ERROR });
  span.setAttribute('error.type', err instanceof Error ? err.constructor.name : typeof err);
}

/** Names the active request's server span after the route as matched (`GET /api/v1/session`). */
export function nameRoute(method: string, route: string): void {
  if (!on) return;
  const span = trace.getActiveSpan();
  if (span === undefined) return;
  span.updateName(`${method} ${route}`);
  span.setAttribute('http.route', route);
}

/** The ECS ids of the active span, for a log line or an audit event; undefined outside a trace. */
export function activeTraceIds(): { readonly traceId: string; readonly spanId: string } | undefined {
  if (!on) return undefined;
  const span = trace.getActiveSpan();
  if (span === undefined) return undefined;
  const ids = span.spanContext();
  return isSpanContextValid(ids) ? { traceId: ids.traceId, spanId: ids.spanId } : undefined;
}

/**
 * The W3C headers (`traceparent`, and `tracestate` when there is one) that carry `span` on to a
 * peer, written from its ids as W3CTraceContextPropagator writes them. The propagator itself was
 * taken per proxied request before (issue 55): a new context, the global propagator's lookup and a
 * setter for two strings; svc registers no other propagator.
 */
export function traceHeaders(span: Span): Record<string, string> {
  const ids = span.spanContext();
  if (!isSpanContextValid(ids)) return {};
  const flags = (ids.traceFlags & 0xff).toString(16).padStart(2, '0');
  const headers: Record<string, string> = { traceparent: `00-${ids.traceId}-${ids.spanId}-${flags}` };
  const state = ids.traceState?.serialize();
  if (state !== undefined && state !== '') headers['tracestate'] = state;
  return headers;
}

/** Runs `fn` with `span` active (its children are made under it). */
export function withSpan<T>(span: Span, fn: () => T): T {
  return context.with(trace.setSpan(context.active(), span), fn);
}
