/**
 * A finished span as a flat array of plain values, the form in which spans leave the event loop
 * for the export thread (./export-thread.ts): structured cloning copies it in one native pass,
 * and the SDK's span object (with its processor, limits, resource and clock) is released at once
 * rather than held in a queue for seconds, where it outlives the young generation and costs the
 * old one's collections (issue 55, docs/benchmarks.md).
 *
 * Links lose their tracestate (a class instance does not survive cloning); svc makes no links.
 */
import type { Attributes, HrTime, Link, SpanContext, SpanKind } from '@opentelemetry/api';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan, TimedEvent } from '@opentelemetry/sdk-trace';

type InstrumentationScope = ReadableSpan['instrumentationScope'];

export type SpanRecord = readonly [
  traceId: string, spanId: string, traceFlags: number, traceState: string,
  parentSpanId: string, parentIsRemote: boolean,
  name: string, kind: SpanKind, startTime: HrTime, endTime: HrTime,
  attributes: Attributes, droppedAttributesCount: number,
  statusCode: number, statusMessage: string,
  events: readonly TimedEvent[], droppedEventsCount: number,
  links: readonly Link[], droppedLinksCount: number,
  scopeName: string, scopeVersion: string,
];

const NO_EVENTS: readonly TimedEvent[] = [];
const NO_LINKS: readonly Link[] = [];

export function toRecord(span: ReadableSpan): SpanRecord {
  const ids = span.spanContext();
  const parent = span.parentSpanContext;
  const scope = span.instrumentationScope;
  return [
    ids.traceId, ids.spanId, ids.traceFlags, ids.traceState?.serialize() ?? '',
    parent?.spanId ?? '', parent?.isRemote === true,
    span.name, span.kind, span.startTime, span.endTime,
    span.attributes, span.droppedAttributesCount,
    span.status.code, span.status.message ?? '',
    span.events.length === 0 ? NO_EVENTS : span.events, span.droppedEventsCount,
    span.links.length === 0 ? NO_LINKS : span.links.map(clonableLink), span.droppedLinksCount,
    scope.name, scope.version ?? '',
  ];
}

function clonableLink(link: Link): Link {
  const { traceId, spanId, traceFlags, isRemote } = link.context;
  return { ...link, context: { traceId, spanId, traceFlags, ...(isRemote !== undefined ? { isRemote } : {}) } };
}

/** Serialises the same as the SDK's `TraceState` for the one value it carries here. */
class RecordedTraceState {
  constructor(private readonly value: string) {}
  serialize(): string {
    return this.value;
  }
}

/** Scopes by name and version, one object each, so that the exporter groups spans by identity as it does the SDK's. */
export class Scopes {
  private readonly known = new Map<string, InstrumentationScope>();

  of(name: string, version: string): InstrumentationScope {
    const key = `${name}\n${version}`;
    let scope = this.known.get(key);
    if (scope === undefined) {
      scope = version === '' ? { name } : { name, version };
      if (this.known.size >= 100) this.known.clear();
      this.known.set(key, scope);
    }
    return scope;
  }
}

/** The span the exporters read, back from its record (the SDK's exporters and serializers take a ReadableSpan). */
export function fromRecord(record: SpanRecord, resource: Resource, scopes: Scopes): ReadableSpan {
  const [traceId, spanId, traceFlags, traceState, parentSpanId, parentIsRemote, name, kind, startTime, endTime,
    attributes, droppedAttributesCount, statusCode, statusMessage, events, droppedEventsCount, links, droppedLinksCount,
    scopeName, scopeVersion] = record;
  const ids: SpanContext = traceState === ''
    ? { traceId, spanId, traceFlags }
    : { traceId, spanId, traceFlags, traceState: new RecordedTraceState(traceState) as unknown as NonNullable<SpanContext['traceState']> };
  const parentSpanContext: SpanContext | undefined = parentSpanId === '' ? undefined : { traceId, spanId: parentSpanId, traceFlags, isRemote: parentIsRemote };
  return {
    name, kind, startTime, endTime, attributes, droppedAttributesCount, droppedEventsCount, droppedLinksCount, resource,
    spanContext: () => ids,
    ...(parentSpanContext !== undefined ? { parentSpanContext } : {}),
    status: statusMessage === '' ? { code: statusCode } : { code: statusCode, message: statusMessage },
    events: events as TimedEvent[],
    links: links as Link[],
    duration: hrDiff(endTime, startTime),
    ended: true,
    instrumentationScope: scopes.of(scopeName, scopeVersion),
  };
}

function hrDiff(end: HrTime, start: HrTime): HrTime {
  let seconds = end[0] - start[0];
  let nanos = end[1] - start[1];
  if (nanos < 0) {
    seconds -= 1;
    nanos += 1e9;
  }
  return [seconds, nanos];
}
