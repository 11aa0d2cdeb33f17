/**
 * One batch of the http/protobuf export (./encoding-span-processor.ts): its spans already encoded
 * (./otlp-protobuf.ts), grouped by resource and instrumentation scope as the OTLP request nests
 * them, in the order each group's first span ended (the SDK's serializer groups the same way).
 */
import type { InstrumentationScope } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import { encodeExportRequest, encodeResource, encodeScope, writeSpan, type EncodedResource } from './otlp-protobuf.js';
import { ProtobufWriter } from './protobuf-writer.js';

interface ScopeSpans {
  readonly scope: InstrumentationScope;
  readonly writer: ProtobufWriter;
}

export class Batch {
  spanCount = 0;
  private readonly resources = new Map<Resource, Map<InstrumentationScope, ScopeSpans>>();

  /** `initialBytes`: the first buffer's size (a buffer grows to twice its size when it is full). */
  constructor(private readonly initialBytes: number) {}

  /** Encodes `span` into the batch, whole or not at all (a throw leaves the batch as it was). */
  add(span: ReadableSpan): void {
    let scopes = this.resources.get(span.resource);
    if (scopes === undefined) {
      scopes = new Map();
      this.resources.set(span.resource, scopes);
    }
    let spans = scopes.get(span.instrumentationScope);
    if (spans === undefined) {
      // The last batch's size is a guess for its main scope (svc has one); any other starts small.
      spans = { scope: span.instrumentationScope, writer: new ProtobufWriter(this.spanCount === 0 ? this.initialBytes : 1_024) };
      scopes.set(span.instrumentationScope, spans);
    }
    const before = spans.writer.length;
    try {
      writeSpan(spans.writer, span);
    } catch (err: unknown) {
      spans.writer.truncate(before);
      throw err;
    }
    this.spanCount++;
  }

  /** The spans' bytes alone. */
  get spanBytes(): number {
    let bytes = 0;
    for (const scopes of this.resources.values()) for (const s of scopes.values()) bytes += s.writer.length;
    return bytes;
  }

  /** The ExportTraceServiceRequest of the batch. */
  encode(parts: EncodedParts): Uint8Array {
    const resources: EncodedResource[] = [];
    for (const [resource, scopes] of this.resources) {
      const encodedScopes = [...scopes.values()].filter((s) => s.writer.length > 0).map((s) => ({ scope: parts.scope(s.scope), schemaUrl: s.scope.schemaUrl, spans: s.writer.bytes() }));
      if (encodedScopes.length > 0) resources.push({ resource: parts.resource(resource), schemaUrl: resource.schemaUrl, scopes: encodedScopes });
    }
    return encodeExportRequest(resources);
  }
}

/**
 * The resource's and scopes' messages, encoded once each: they are the same objects for the
 * process's life. The resource is read as it is when its first span leaves: svc builds it from
 * attributes and the environment only (./sdk.ts), so none of its attributes is still pending.
 */
export class EncodedParts {
  readonly resource = encodedOnce(encodeResource);
  readonly scope = encodedOnce(encodeScope);
}

/** `encode`, remembered per object (the objects live as long as the provider). */
function encodedOnce<K extends object>(encode: (key: K) => Buffer): (key: K) => Buffer {
  const encoded = new WeakMap<K, Buffer>();
  return (key) => {
    let bytes = encoded.get(key);
    if (bytes === undefined) {
      bytes = encode(key);
      encoded.set(key, bytes);
    }
    return bytes;
  };
}
