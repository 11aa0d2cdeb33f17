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
 * dropped and counted), plus the batch being sent. An export with no answer within its timeout is
 * counted failed, but keeps its place until it ends: another export beside it would let a
 * collector that answers slowly hold a batch per timeout. A flush, and so a shutdown, waits at most
 * `flushTimeoutMs`. A failed export drops its batch (the exporter retries first). What is lost is
 * said by ./span-loss-log.ts; timers and exports run outside any request's context (NO_TRACE).
 */
import { context, TraceFlags } from '@opentelemetry/api';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace';
import { MAX_TIMER_MS } from '../lib/duration.js';
import { Batch, EncodedParts } from './encoded-batch.js';
import { NO_TRACE, SpanLossLog, type ExportLog } from './span-loss-log.js';

export type { ExportLog };

/** A batch ready to send: an ExportTraceServiceRequest's bytes. */
export interface EncodedBatch {
  readonly bytes: Uint8Array;
  readonly spanCount: number;
}

export interface EncodedBatchExporter {
  export(batch: EncodedBatch, done: (result: ExportResult) => void): void;
  shutdown(): Promise<void>;
}

export interface EncodingProcessorOptions {
  readonly exporter: EncodedBatchExporter;
  readonly scheduleDelayMs: number;
  readonly maxExportBatchSize: number;
  readonly maxQueueSize: number;
  /** How long one export may take before it is counted failed (it keeps its place until it ends). */
  readonly exportTimeoutMs: number;
  /** The longest a flush or a shutdown waits for batches to leave. */
  readonly flushTimeoutMs: number;
  readonly log: ExportLog;
}

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
  /** Spans of the export out, and spans ended while closing: counted in the shutdown's line. */
  private outSpans = 0;
  private endedWhileClosing = 0;
  private readonly loss: SpanLossLog;

  constructor(private readonly options: EncodingProcessorOptions) {
    this.loss = new SpanLossLog(options.log);
  }

  onStart(): void {}

  onEnd(span: ReadableSpan): void {
    if ((span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return;
    if (this.closing) {
      this.endedWhileClosing++;
      return;
    }
    if (this.waiting >= this.options.maxQueueSize) {
      this.loss.queueFull(this.options.maxQueueSize);
      return;
    }
    const batch = (this.open ??= new Batch(this.batchBytes));
    try {
      batch.add(span);
    } catch (err: unknown) {
      // Span.end() calls this on the request's path: a span that cannot be encoded is dropped, never thrown there.
      this.loss.cannotEncode(err, span.name);
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
    this.loss.shutDown(this.waiting + this.outSpans + this.endedWhileClosing, this.options.flushTimeoutMs);
    this.ready.length = 0;
    this.open = undefined;
    this.waiting = 0;
    // The batches let go count as ended: a later flush has nothing to wait for.
    this.ended = this.sealed;
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
    // Only the count and the bytes outlive this call: the closures below hold no batch.
    const spanCount = batch.spanCount;
    this.waiting -= spanCount;
    this.sending = true;
    this.outSpans = spanCount;
    let counted = false;
    /** Counts the export's outcome once: when it ends, or when its time is up. */
    const count = (result: ExportResult): void => {
      if (counted) return;
      counted = true;
      clearTimeout(guard);
      this.ended++;
      this.outSpans = 0;
      if (result.code === ExportResultCode.SUCCESS) this.loss.exportWorked(this.waiting > this.options.maxQueueSize / 2);
      else this.loss.exportFailed(result.error, spanCount);
      for (const flush of this.flushes.filter((f) => f.upTo <= this.ended)) {
        this.flushes.splice(this.flushes.indexOf(flush), 1);
        flush.resolve();
      }
    };
    let over = false;
    const end = (result: ExportResult): void => {
      if (over) return;
      over = true;
      count(result);
      this.sending = false;
      this.pump();
    };
    const guard = context.with(NO_TRACE, () => setTimeout(() => count({ code: ExportResultCode.FAILED, error: new Error('no answer in time') }), Math.min(this.options.exportTimeoutMs, MAX_TIMER_MS)).unref());
    let bytes: Uint8Array;
    try {
      bytes = batch.encode(this.parts);
    } catch (err: unknown) {
      end({ code: ExportResultCode.FAILED, error: err instanceof Error ? err : new Error(String(err)) });
      return;
    }
    context.with(NO_TRACE, () => {
      try {
        this.options.exporter.export({ bytes, spanCount }, end);
      } catch (err: unknown) {
        end({ code: ExportResultCode.FAILED, error: err instanceof Error ? err : new Error(String(err)) });
      }
    });
  }
}
