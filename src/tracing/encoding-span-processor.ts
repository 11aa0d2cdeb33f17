/**
 * The span processor of the http/protobuf export: each sampled span is encoded as it ends
 * (./otlp-protobuf.ts) into the open batch's bytes (./encoded-batch.ts), and the span object is
 * let go. It replaces the SDK's BatchSpanProcessor for http/protobuf only (issue 55,
 * docs/benchmarks.md "Tracing on and off"): that one keeps every ended span object until its
 * batch is serialized, cold, seconds later.
 *
 * When a batch leaves, as the SDK's: when it holds OTEL_BSP_MAX_EXPORT_BATCH_SIZE spans, or
 * OTEL_BSP_SCHEDULE_DELAY after its first span; one export at a time. While an export is out the
 * open batch keeps filling (a slow endpoint makes full batches, not many small ones).
 *
 * Bounds: at most OTEL_BSP_MAX_QUEUE_SIZE spans wait (a span ended while they are that many is
 * dropped and counted), plus the batch being sent; an export with no answer within its timeout is
 * given up; a flush, and so a shutdown, waits at most `flushTimeoutMs`. A failed export drops its
 * batch (the exporter retries first). Each kind of loss is said in one log line, and one line says
 * how many spans were dropped once spans are sent again.
 *
 * Timers and exports run outside any request's context (suppressTracing(ROOT_CONTEXT)): the span
 * that happened to fill a batch must not lend its trace ids to the export's log lines, nor keep
 * its request's context alive.
 */
import { context, ROOT_CONTEXT, TraceFlags } from '@opentelemetry/api';
import { ExportResultCode, suppressTracing, type ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace';
import { Batch, EncodedParts } from './encoded-batch.js';

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
  /** How long one export may take before its batch is given up: longer than the exporter's own timeout. */
  readonly exportTimeoutMs: number;
  /** The longest a flush or a shutdown waits for batches to leave. */
  readonly flushTimeoutMs: number;
  readonly log: ExportLog;
}

const NO_TRACE = suppressTracing(ROOT_CONTEXT);
const FIRST_BATCH_BYTES = 16_384;
/** A batch's first buffer is the size the last one ended at (a full batch then never grows), but not under this. */
const MIN_BATCH_BYTES = 1_024;

interface Flush {
  /** Resolved once this many batches have been sent (or failed to). */
  readonly upTo: number;
  readonly resolve: () => void;
}

export class EncodingSpanProcessor implements SpanProcessor {
  private open: Batch | undefined;
  /** The open batch's delay has passed: it leaves as soon as no export is out. */
  private openDue = false;
  private readonly ready: Batch[] = [];
  /** Spans in `open` and `ready`: the queue OTEL_BSP_MAX_QUEUE_SIZE bounds. */
  private waiting = 0;
  private sending = false;
  /** pump() is running: an export answered at once makes its loop go on, not recurse. */
  private pumping = false;
  private timer: NodeJS.Timeout | undefined;
  private closing = false;
  private batchBytes = FIRST_BATCH_BYTES;
  private readonly parts = new EncodedParts();
  /** Batches sealed, and batches whose export ended, since the start. */
  private sealed = 0;
  private ended = 0;
  private readonly flushes: Flush[] = [];
  /** Spans dropped since spans were last said to be sent again; each flag: that kind of loss was said. */
  private dropped = 0;
  private failing = false;
  private full = false;
  private unencodable = false;

  constructor(private readonly options: EncodingProcessorOptions) {}

  onStart(): void {}

  onEnd(span: ReadableSpan): void {
    if (this.closing || (span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return;
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
        this.options.log.warn({ reason: reasonOf(err), span: span.name.slice(0, 80) }, 'tracing: a span could not be encoded and is dropped; later ones that cannot are dropped without a word');
      }
      return;
    }
    this.waiting++;
    if (batch.spanCount >= this.options.maxExportBatchSize) {
      this.seal();
      this.pump();
    } else if (this.timer === undefined && !this.openDue) {
      this.timer = context.with(NO_TRACE, () => setTimeout(() => {
        this.timer = undefined;
        this.openDue = true;
        this.pump();
      }, this.options.scheduleDelayMs).unref());
    }
  }

  /** Sends the spans ended so far; resolves once they have been sent (or failed to), or after flushTimeoutMs. */
  forceFlush(): Promise<void> {
    this.seal();
    const upTo = this.sealed;
    this.pump();
    if (this.ended >= upTo) return Promise.resolve();
    return new Promise((resolve) => {
      const flush: Flush = { upTo, resolve: () => { clearTimeout(deadline); resolve(); } };
      const deadline = context.with(NO_TRACE, () => setTimeout(() => {
        this.flushes.splice(this.flushes.indexOf(flush), 1);
        resolve();
      }, this.options.flushTimeoutMs).unref());
      this.flushes.push(flush);
    });
  }

  /** Takes no span from now on, sends what waits within flushTimeoutMs, and drops (and says) what is left. */
  async shutdown(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    const started = Date.now();
    await this.forceFlush();
    const left = this.waiting;
    if (left > 0) this.options.log.warn({ droppedSpans: left, flushTimeoutMs: this.options.flushTimeoutMs }, 'tracing: shut down with spans not sent in time; they are dropped');
    this.ready.length = 0;
    this.open = undefined;
    this.waiting = 0;
    const rest = Math.max(0, this.options.flushTimeoutMs - (Date.now() - started));
    let stop: NodeJS.Timeout | undefined;
    await Promise.race([this.options.exporter.shutdown(), new Promise((resolve) => (stop = setTimeout(resolve, rest).unref()))]);
    clearTimeout(stop);
  }

  private seal(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    this.openDue = false;
    const batch = this.open;
    this.open = undefined;
    if (batch === undefined || batch.spanCount === 0) return;
    this.batchBytes = Math.max(MIN_BATCH_BYTES, batch.spanBytes);
    this.ready.push(batch);
    this.sealed++;
  }

  /** Sends the batches ready, one at a time, while no export is out. */
  private pump(): void {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (!this.sending) {
        if (this.ready.length === 0 && this.openDue) this.seal();
        const batch = this.ready.shift();
        if (batch === undefined) break;
        this.send(batch);
      }
    } finally {
      this.pumping = false;
    }
  }

  private send(batch: Batch): void {
    this.waiting -= batch.spanCount;
    let settled = false;
    const finish = (result: ExportResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(guard);
      this.sending = false;
      this.ended++;
      this.report(result, batch.spanCount);
      for (const flush of this.flushes.filter((f) => f.upTo <= this.ended)) {
        this.flushes.splice(this.flushes.indexOf(flush), 1);
        flush.resolve();
      }
      this.pump();
    };
    const guard = context.with(NO_TRACE, () => setTimeout(() => finish({ code: ExportResultCode.FAILED, error: new Error('no answer in time') }), this.options.exportTimeoutMs).unref());
    this.sending = true;
    try {
      const bytes = batch.encode(this.parts);
      context.with(NO_TRACE, () => this.options.exporter.export({ bytes, spanCount: batch.spanCount }, finish));
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
function reasonOf(error: unknown): string {
  if (!(error instanceof Error)) return 'unknown';
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' || typeof code === 'number') return `${error.name} ${String(code)}`;
  return error.name;
}
