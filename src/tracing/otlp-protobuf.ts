/**
 * The OTLP protobuf encoding of spans (opentelemetry-proto, trace/v1/trace.proto and
 * collector/trace/v1/trace_service.proto), written one span at a time as each span ends
 * (./encoding-span-processor.ts), not a batch at a time.
 *
 * Why svc encodes spans itself (issue 55, docs/benchmarks.md "Tracing on and off"): the SDK's
 * serializer walks a whole batch twice (a size pass, then a write pass) when the batch leaves,
 * over 2,048 span objects that have aged out of the young generation and out of the CPU's
 * caches; a span encoded as it ends is read while it is still hot, then dropped young. The bytes
 * are the SDK serializer's (ProtobufTraceSerializer of @opentelemetry/otlp-transformer), field
 * for field, which test/tracing/otlp-protobuf.test.ts checks on generated spans.
 */
import type { Attributes, HrTime, Link, SpanContext, SpanStatus } from '@opentelemetry/api';
import type { InstrumentationScope } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import { ProtobufWriter } from './protobuf-writer.js';

const LENGTH_DELIMITED = 2;
const VARINT = 0;
const FIXED64 = 1;
const FIXED32 = 5;
/** SpanFlags: the context's is-remote bit is known (bit 8), and set (bit 9). */
const HAS_IS_REMOTE = 0x100;
const IS_REMOTE = 0x200;
const TWO_POW_32 = 4_294_967_296;
const MIN_INT64 = -(2 ** 63);
const MAX_INT64 = 2 ** 63;

/** Nanoseconds since the epoch as fixed64, from [seconds, nanoseconds], without a BigInt. */
function hrTimeFixed64(w: ProtobufWriter, time: HrTime): void {
  const [seconds, nanos] = time;
  const fromLow16 = (seconds & 0xffff) * 1e9;
  const fromHigh = ((seconds / 65_536) >>> 0) * 1e9;
  const lowSum = (fromLow16 >>> 0) + (((fromHigh & 0xffff) * 65_536) >>> 0) + nanos;
  const high = Math.floor(fromLow16 / TWO_POW_32) + ((fromHigh / 65_536) >>> 0) + Math.floor(lowSum / TWO_POW_32);
  w.fixed64(lowSum >>> 0, high >>> 0);
}

function anyValue(w: ProtobufWriter, value: unknown): void {
  if (typeof value === 'string') {
    w.tag(1, LENGTH_DELIMITED);
    w.string(value);
  } else if (typeof value === 'boolean') {
    w.tag(2, VARINT);
    w.varint(value ? 1 : 0);
  } else if (typeof value === 'number') {
    if (Number.isInteger(value) && value >= MIN_INT64 && value < MAX_INT64) {
      w.tag(3, VARINT);
      w.varint(value);
    } else {
      w.tag(4, FIXED64);
      w.double(value);
    }
  } else if (value instanceof Uint8Array) {
    w.tag(7, LENGTH_DELIMITED);
    w.bytesField(value);
  } else if (Array.isArray(value)) {
    w.tag(5, LENGTH_DELIMITED);
    const list = w.startLengthDelimited();
    for (const item of value) {
      w.tag(1, LENGTH_DELIMITED);
      const entry = w.startLengthDelimited();
      anyValue(w, item);
      w.finishLengthDelimited(entry);
    }
    w.finishLengthDelimited(list);
  } else if (typeof value === 'object' && value !== null) {
    w.tag(6, LENGTH_DELIMITED);
    const list = w.startLengthDelimited();
    for (const [key, item] of Object.entries(value)) {
      w.tag(1, LENGTH_DELIMITED);
      keyValue(w, key, item);
    }
    w.finishLengthDelimited(list);
  }
}

/** A KeyValue message, its length first (the caller wrote the tag). */
function keyValue(w: ProtobufWriter, key: string, value: unknown): void {
  const kv = w.startLengthDelimited();
  w.tag(1, LENGTH_DELIMITED);
  w.string(key);
  w.tag(2, LENGTH_DELIMITED);
  const any = w.startLengthDelimited();
  anyValue(w, value);
  w.finishLengthDelimited(any);
  w.finishLengthDelimited(kv);
}

function attributes(w: ProtobufWriter, attrs: Attributes, field: number): void {
  for (const key in attrs) {
    if (!Object.prototype.hasOwnProperty.call(attrs, key)) continue;
    w.tag(field, LENGTH_DELIMITED);
    keyValue(w, key, attrs[key]);
  }
}

function spanFlags(traceFlags: number, isRemote: boolean | undefined): number {
  return (traceFlags & 0xff) | HAS_IS_REMOTE | (isRemote === true ? IS_REMOTE : 0);
}

/** A span's or a link's trace id, span id and trace state: fields 1 to 3 of both messages. */
function writeIds(w: ProtobufWriter, ids: SpanContext): void {
  w.tag(1, LENGTH_DELIMITED);
  w.hexBytes(ids.traceId);
  w.tag(2, LENGTH_DELIMITED);
  w.hexBytes(ids.spanId);
  const traceState = ids.traceState?.serialize();
  if (traceState) {
    w.tag(3, LENGTH_DELIMITED);
    w.string(traceState);
  }
}

/** A Span.Event message, tag and length first, as field 11 of a Span. */
function writeEvent(w: ProtobufWriter, event: ReadableSpan['events'][number]): void {
  w.tag(11, LENGTH_DELIMITED);
  const start = w.startLengthDelimited();
  w.tag(1, FIXED64);
  hrTimeFixed64(w, event.time);
  w.tag(2, LENGTH_DELIMITED);
  w.string(event.name);
  if (event.attributes) attributes(w, event.attributes, 3);
  w.tag(4, VARINT);
  w.varint(event.droppedAttributesCount ?? 0);
  w.finishLengthDelimited(start);
}

/** A Span.Link message, tag and length first, as field 13 of a Span. */
function writeLink(w: ProtobufWriter, link: Link): void {
  w.tag(13, LENGTH_DELIMITED);
  const start = w.startLengthDelimited();
  writeIds(w, link.context);
  if (link.attributes) attributes(w, link.attributes, 4);
  w.tag(5, VARINT);
  w.varint(link.droppedAttributesCount ?? 0);
  w.tag(6, FIXED32);
  w.fixed32(spanFlags(link.context.traceFlags, link.context.isRemote));
  w.finishLengthDelimited(start);
}

/** A Status message, tag and length first, as field 15 of a Span. */
function writeStatus(w: ProtobufWriter, status: SpanStatus): void {
  w.tag(15, LENGTH_DELIMITED);
  const start = w.startLengthDelimited();
  if (status.message) {
    w.tag(2, LENGTH_DELIMITED);
    w.string(status.message);
  }
  w.tag(3, VARINT);
  w.varint(status.code);
  w.finishLengthDelimited(start);
}

/** One Span message, its tag and length first, as field 2 of a ScopeSpans. */
export function writeSpan(w: ProtobufWriter, span: ReadableSpan): void {
  w.tag(2, LENGTH_DELIMITED);
  const start = w.startLengthDelimited();
  const ids = span.spanContext();
  writeIds(w, ids);
  const parent = span.parentSpanContext;
  if (parent?.spanId) {
    w.tag(4, LENGTH_DELIMITED);
    w.hexBytes(parent.spanId);
  }
  w.tag(5, LENGTH_DELIMITED);
  w.string(span.name);
  // The API's SpanKind starts at INTERNAL = 0; the proto's at UNSPECIFIED = 0.
  w.tag(6, VARINT);
  w.varint(span.kind + 1);
  w.tag(7, FIXED64);
  hrTimeFixed64(w, span.startTime);
  w.tag(8, FIXED64);
  hrTimeFixed64(w, span.endTime);
  attributes(w, span.attributes, 9);
  w.tag(10, VARINT);
  w.varint(span.droppedAttributesCount);
  for (const event of span.events) writeEvent(w, event);
  w.tag(12, VARINT);
  w.varint(span.droppedEventsCount);
  for (const link of span.links) writeLink(w, link);
  w.tag(14, VARINT);
  w.varint(span.droppedLinksCount);
  writeStatus(w, span.status);
  w.tag(16, FIXED32);
  w.fixed32(spanFlags(ids.traceFlags, parent?.isRemote));
  w.finishLengthDelimited(start);
}

/** The Resource message as field 1 of a ResourceSpans, tag included. */
export function encodeResource(resource: Resource): Buffer {
  const w = new ProtobufWriter(256);
  w.tag(1, LENGTH_DELIMITED);
  const start = w.startLengthDelimited();
  attributes(w, resource.attributes, 1);
  w.tag(2, VARINT);
  w.varint(0);
  w.finishLengthDelimited(start);
  return Buffer.from(w.bytes());
}

/** The InstrumentationScope message as field 1 of a ScopeSpans, tag included. */
export function encodeScope(scope: InstrumentationScope & { readonly attributes?: Attributes; readonly droppedAttributesCount?: number }): Buffer {
  const w = new ProtobufWriter(256);
  w.tag(1, LENGTH_DELIMITED);
  const start = w.startLengthDelimited();
  w.tag(1, LENGTH_DELIMITED);
  w.string(scope.name);
  if (scope.version) {
    w.tag(2, LENGTH_DELIMITED);
    w.string(scope.version);
  }
  if (scope.attributes) attributes(w, scope.attributes, 3);
  if (scope.droppedAttributesCount) {
    w.tag(4, VARINT);
    w.varint(scope.droppedAttributesCount);
  }
  w.finishLengthDelimited(start);
  return Buffer.from(w.bytes());
}

/** The spans of one instrumentation scope, each already a ScopeSpans field 2 (writeSpan). */
export interface EncodedScope {
  /** encodeScope's bytes. */
  readonly scope: Uint8Array;
  readonly schemaUrl: string | undefined;
  readonly spans: Uint8Array;
}

/** The spans of one resource. */
export interface EncodedResource {
  /** encodeResource's bytes. */
  readonly resource: Uint8Array;
  readonly schemaUrl: string | undefined;
  readonly scopes: readonly EncodedScope[];
}

/** An ExportTraceServiceRequest: the resources' ResourceSpans around spans already encoded. */
export function encodeExportRequest(resources: readonly EncodedResource[]): Uint8Array {
  let size = 64;
  for (const r of resources) {
    size += r.resource.length + 32 + (r.schemaUrl?.length ?? 0) * 3;
    for (const s of r.scopes) size += s.scope.length + s.spans.length + 32 + (s.schemaUrl?.length ?? 0) * 3;
  }
  const w = new ProtobufWriter(size);
  for (const r of resources) {
    w.tag(1, LENGTH_DELIMITED);
    const resourceSpans = w.startLengthDelimited();
    w.raw(r.resource);
    for (const s of r.scopes) {
      w.tag(2, LENGTH_DELIMITED);
      const scopeSpans = w.startLengthDelimited();
      w.raw(s.scope);
      w.raw(s.spans);
      if (s.schemaUrl) {
        w.tag(3, LENGTH_DELIMITED);
        w.string(s.schemaUrl);
      }
      w.finishLengthDelimited(scopeSpans);
    }
    if (r.schemaUrl) {
      w.tag(3, LENGTH_DELIMITED);
      w.string(r.schemaUrl);
    }
    w.finishLengthDelimited(resourceSpans);
  }
  return w.bytes();
}
