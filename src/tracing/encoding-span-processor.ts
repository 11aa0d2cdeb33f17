/**
 * The span processor of the http/protobuf export: each sampled span is encoded as it ends
 * (./otlp-protobuf.ts) into the open batch's bytes, and the span object is dropped; a batch leaves
 * when it holds OTEL_BSP_MAX_EXPORT_BATCH_SIZE spans or OTEL_BSP_SCHEDULE_DELAY after its first
 * span, one export at a time, as the SDK's BatchSpanProcessor sends them. It replaces that
 * processor for http/protobuf only (issue 55, docs/benchmarks.md "Tracing on and off"): the
 * SDK's keeps every ended span object until its batch is serialized, cold, seconds later.
 *
 * Bounds, as the SDK's: at most OTEL_BSP_MAX_QUEUE_SIZE spans wait (a span ended while they are
 * that many is dropped and counted), plus the one batch being sent. A failed export drops its
 * batch (the SDK retries within the exporter first). Both say so in one log line when it starts,
 * and one when spans leave again, with the count dropped meanwhile.
 */
import { TraceFlags } from '@opentelemetry/api';
import { ExportResultCode, type ExportResult, type InstrumentationScope } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace';
import { encodeExportRequest, encodeResource, encodeScope, ProtobufWriter, writeSpan, type EncodedResource } from './otlp-protobuf.js';

/** A batch ready to send: an ExportTraceServiceRequest's bytes. */
export interface EncodedBatch {
  readonly bytes: Uint8Array;
  readonly spanCount: number;
}

export interface EncodedBatchExporter {
  export(batch: EncodedBatch, done: (result: ExportResult) => void): void;
  shutdown(): Promise<void>;
}

export interface ExportLog {
  warn(fields: object, message: string): void;
  info(fields: object, message: string): void;
}

export interface EncodingProcessorOptions {
  readonly exporter: EncodedBatchExporter;
  readonly scheduleDelayMs: number;
  readonly maxExportBatchSize: number;
  readonly maxQueueSize: number;
  /** How long one export may take before its batch is given up (the SDK's exportTimeoutMillis). */
  readonly exportTimeoutMs: number;
  readonly log: ExportLog;
}

/** The SDK's default exportTimeoutMillis. */
export const DEFAULT_EXPORT_TIMEOUT_MS = 30_000;

interface ScopeSpans {
  readonly scope: InstrumentationScope;
  readonly writer: ProtobufWriter;
}

/** The spans of one batch, encoded, grouped by resource and scope as the OTLP request nests them. */
class Batch {
  spanCount = 0;
  private readonly resources = new Map<Resource, Map<InstrumentationScope, ScopeSpans>>();

  constructor(private readonly initialBytes: number) {}

  add(span: ReadableSpan): void {
    let scopes = this.resources.get(span.resource);
    if (scopes === undefined) {
      scopes = new Map();
      this.resources.set(span.resource, scopes);
    }
    let spans = scopes.get(span.instrumentationScope);
    if (spans === undefined) {
      spans = { scope: span.instrumentationScope, writer: new ProtobufWriter(this.initialBytes) };
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

  /** The spans' bytes alone: the next batch starts with a buffer this large. */
  get spanBytes(): number {
    let bytes = 0;
    for (const scopes of this.resources.values()) for (const s of scopes.values()) bytes += s.writer.length;
    return bytes;
  }

  encode(encoded: EncodedParts): Uint8Array {
    const resources: EncodedResource[] = [];
    for (const [resource, scopes] of this.resources) {
      resources.push({
        resource: encoded.resource(resource),
        schemaUrl: resource.schemaUrl,
        scopes: [...scopes.values()].map((s) => ({ scope: encoded.scope(s.scope), schemaUrl: s.scope.schemaUrl, spans: s.writer.bytes() })),
      });
    }
    return encodeExportRequest(resources);
  }
}

/** The resource's and scopes' messages, encoded once each: they are the same objects for the process's life. */
class EncodedParts {
  private readonly resources = new WeakMap<Resource, Buffer>();
  private readonly scopes = new WeakMap<InstrumentationScope, Buffer>();

  resource(resource: Resource): Buffer {
    let bytes = this.resources.get(resource);
    if (bytes === undefined) {
      bytes = encodeResource(resource);
      this.resources.set(resource, bytes);
    }
    return bytes;
  }

  scope(scope: InstrumentationScope): Buffer {
    let bytes = this.scopes.get(scope);
    if (bytes === undefined) {
      bytes = encodeScope(scope);
      this.scopes.set(scope, bytes);
    }
    return bytes;
  }
}

const FIRST_BATCH_BYTES = 65_536;

export class EncodingSpanProcessor implements SpanProcessor {
  private open: Batch | undefined;
  private readonly ready: Batch[] = [];
  /** Spans in `open` and `ready`: the queue OTEL_BSP_MAX_QUEUE_SIZE bounds. */
  private waiting = 0;
  private sending = false;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private batchBytes = FIRST_BATCH_BYTES;
  private readonly parts = new EncodedParts();
  private readonly idle: (() => void)[] = [];
  /** Spans dropped (full queue, failed export) since they were last said to be sent again; `failing` and `full` say a warning was logged. */
  private dropped = 0;
  private failing = false;
  private full = false;
  private unencodable = false;

  constructor(private readonly options: EncodingProcessorOptions) {}

  onStart(): void {}

  onEnd(span: ReadableSpan): void {
    if (this.closed || (span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return;
    if (this.waiting >= this.options.maxQueueSize) {
      this.dropped++;
      if (!this.full) {
        this.full = true;
        this.options.log.warn({ maxQueueSize: this.options.maxQueueSize }, 'tracing: spans end faster than they can be sent; spans are dropped until an export works (OTEL_BSP_MAX_QUEUE_SIZE)');
      }
      return;
    }
    const batch = (this.open ??= new Batch(this.batchBytes));
    try {
      batch.add(span);
    } catch (err: unknown) {
      // Span.end() calls this on the request's path: a span that cannot be encoded is dropped, never thrown there.
      this.dropped++;
      if (!this.unencodable) {
        this.unencodable = true;
        this.options.log.warn({ reason: reasonOf(err instanceof Error ? err : undefined), span: span.name.slice(0, 80) }, 'tracing: a span could not be encoded and is dropped; later ones that cannot are dropped without a word');
      }
      return;
    }
    this.waiting++;
    if (batch.spanCount >= this.options.maxExportBatchSize) {
      this.seal();
      this.sendNext();
    } else if (this.timer === undefined) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.seal();
        this.sendNext();
      }, this.options.scheduleDelayMs).unref();
    }
  }

  /** Sends every span ended so far; resolves once they have left (or failed to). */
  forceFlush(): Promise<void> {
    this.seal();
    this.sendNext();
    if (!this.sending) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  async shutdown(): Promise<void> {
    if (this.closed) return;
    await this.forceFlush();
    this.closed = true;
    await this.options.exporter.shutdown();
  }

  private seal(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.open === undefined) return;
    this.batchBytes = Math.max(FIRST_BATCH_BYTES, this.open.spanBytes);
    this.ready.push(this.open);
    this.open = undefined;
  }

  private sendNext(): void {
    if (this.sending) return;
    const batch = this.ready.shift();
    if (batch === undefined) {
      for (const resolve of this.idle.splice(0)) resolve();
      return;
    }
    this.waiting -= batch.spanCount;
    this.sending = true;
    let settled = false;
    const finish = (result: ExportResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(guard);
      this.sending = false;
      this.report(result, batch.spanCount);
      this.sendNext();
    };
    const guard = setTimeout(() => finish({ code: ExportResultCode.FAILED, error: new Error(`no answer within ${this.options.exportTimeoutMs} ms`) }), this.options.exportTimeoutMs).unref();
    try {
      this.options.exporter.export({ bytes: batch.encode(this.parts), spanCount: batch.spanCount }, finish);
    } catch (err: unknown) {
      finish({ code: ExportResultCode.FAILED, error: err instanceof Error ? err : new Error(String(err)) });
    }
  }

  private report(result: ExportResult, spanCount: number): void {
    if (result.code === ExportResultCode.SUCCESS) {
      this.failing = false;
      // Under a lasting overload the queue stays over half full: one line for the whole of it.
      if (this.full && this.waiting > this.options.maxQueueSize / 2) return;
      this.full = false;
      if (this.dropped > 0) this.options.log.info({ droppedSpans: this.dropped }, 'tracing: spans are sent again');
      this.dropped = 0;
      return;
    }
    this.dropped += spanCount;
    if (this.failing) return;
    this.failing = true;
    this.options.log.warn({ reason: reasonOf(result.error), droppedSpans: spanCount }, 'tracing: an export to the OTLP endpoint failed; its spans are dropped, and so are those of every export that fails until one works');
  }
}

/**
 * What failed, without the error's message: an exporter's message may quote the collector's
 * answer. A network error's code (ECONNREFUSED) or an HTTP status, else the error's class.
 */
function reasonOf(error: Error | undefined): string {
  if (error === undefined) return 'unknown';
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' || typeof code === 'number') return `${error.name} ${String(code)}`;
  return error.name;
}
