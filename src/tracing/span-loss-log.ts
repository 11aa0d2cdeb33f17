/**
 * What the log says about spans that were not sent (./encoding-span-processor.ts): one warning
 * when a kind of loss starts (a failed export, a full queue), one line with the count once an
 * export works again, and one warning for the first span that cannot be encoded. A collector that
 * fails and works by turns gets at most one warning a minute, not one per export; a warning held
 * back is not marked said, so a lasting outage is still said once the minute has passed.
 *
 * Lines are written outside any request's context (suppressTracing(ROOT_CONTEXT)): a loss belongs
 * to no request, and the request whose span happened to fill a batch must not lend it its trace
 * ids. No line holds an error's message: an exporter's may quote the collector's answer.
 */
import { context, ROOT_CONTEXT } from '@opentelemetry/api';
import { suppressTracing } from '@opentelemetry/core';

export interface ExportLog {
  warn(fields: object, message: string): void;
  info(fields: object, message: string): void;
}

export const NO_TRACE = suppressTracing(ROOT_CONTEXT);
/** The least time between two warnings of export failures or a full queue. */
export const WARNING_INTERVAL_MS = 60_000;

export class SpanLossLog {
  /** Spans dropped since spans were last said to be sent again. */
  private dropped = 0;
  /** A warning was logged since the last "sent again" line. */
  private warned = false;
  private lastWarningAt = Number.NEGATIVE_INFINITY;
  private failing = false;
  private full = false;
  private unencodable = false;

  constructor(private readonly log: ExportLog, private readonly now: () => number = Date.now) {}

  queueFull(maxQueueSize: number): void {
    this.dropped++;
    if (this.full || !this.mayWarn()) return;
    this.full = true;
    this.warnLimited({ maxQueueSize }, 'tracing: spans end faster than they can be sent; spans are dropped until an export works (OTEL_BSP_MAX_QUEUE_SIZE)');
  }

  cannotEncode(err: unknown, spanName: string): void {
    this.dropped++;
    if (this.unencodable) return;
    this.unencodable = true;
    this.warn({ reason: reasonOf(err), span: spanName.slice(0, 80) }, 'tracing: a span could not be encoded and is dropped; later ones that cannot are dropped without a word');
  }

  exportFailed(err: unknown, spanCount: number): void {
    this.dropped += spanCount;
    if (this.failing || !this.mayWarn()) return;
    this.failing = true;
    this.warnLimited({ reason: reasonOf(err), droppedSpans: spanCount }, 'tracing: an export to the OTLP endpoint failed; its spans are dropped, and so are those of every export that fails until one works');
  }

  /** `queueStillFull`: the queue is over half full, so the full-queue warning still holds (one line for a lasting overload). */
  exportWorked(queueStillFull: boolean): void {
    this.failing = false;
    if (this.full && queueStillFull) return;
    this.full = false;
    if (!this.warned || this.dropped === 0) return;
    this.info({ droppedSpans: this.dropped }, 'tracing: spans are sent again');
    this.dropped = 0;
    this.warned = false;
  }

  /** At shutdown: every span dropped and not yet counted in a line, with `notSent` (waiting, being sent, or ended while closing). */
  shutDown(notSent: number, flushTimeoutMs: number): void {
    const total = this.dropped + notSent;
    this.dropped = 0;
    if (total > 0) this.warn({ droppedSpans: total, flushTimeoutMs }, 'tracing: shut down with spans never sent (dropped since spans were last said to be sent, or not sent within the flush timeout)');
  }

  private mayWarn(): boolean {
    return this.now() - this.lastWarningAt >= WARNING_INTERVAL_MS;
  }

  private warnLimited(fields: object, message: string): void {
    this.lastWarningAt = this.now();
    this.warn(fields, message);
  }

  private warn(fields: object, message: string): void {
    this.warned = true;
    context.with(NO_TRACE, () => this.log.warn(fields, message));
  }

  private info(fields: object, message: string): void {
    context.with(NO_TRACE, () => this.log.info(fields, message));
  }
}

/** A network error's code (ECONNREFUSED) or an HTTP status after the error's class; else the class alone. */
function reasonOf(error: unknown): string {
  if (!(error instanceof Error)) return 'unknown';
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' || typeof code === 'number') return `${error.name} ${String(code)}`;
  return error.name;
}
