/**
 * The span processor of the event loop: each sampled span, once ended, becomes a record
 * (./span-record.ts) in a small chunk, and chunks go to the export thread (./export-thread.ts),
 * which batches, serialises and sends them with the SDK's BatchSpanProcessor and OTLP exporter.
 *
 * Why not the SDK's BatchSpanProcessor here, as before: it keeps every ended span object until its
 * batch is exported (seconds under load; long enough to be promoted to the old generation), then
 * serialises the batch of 2048 on the event loop, about 8 ms at once between two requests. The
 * SDK has no processor that hands spans to another thread; OpenTelemetry's own answer is an
 * agent or collector process, which still needs the spans serialised here.
 *
 * Bounded as the SDK's queue is: spans handed over but not yet taken by the thread count against
 * OTEL_BSP_MAX_QUEUE_SIZE, and a span ended while that many wait is dropped, not queued.
 */
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { TraceFlags, type Context } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace';
import type { OtlpProtocol, TracingConfig } from './config.js';
import { toRecord, type SpanRecord } from './span-record.js';

/** What the export thread is started with. */
export interface ExportThreadData {
  readonly protocol: OtlpProtocol;
  readonly serviceName: string;
  readonly version: string;
  readonly scheduleDelayMs: number;
  readonly maxExportBatchSize: number;
  readonly maxQueueSize: number;
  /** One Int32: records posted and not yet taken by the thread's batch processor. */
  readonly waiting: SharedArrayBuffer;
}

/** Records per message to the thread: a message costs about as much as a few dozen records to clone. */
export const CHUNK_RECORDS = 256;
/** The longest a record waits for its chunk to fill before it is posted anyway (ms); at most the schedule delay. */
export const CHUNK_DELAY_MS = 50;

/** The thread's module: compiled, its .js sibling; run from source (tsx), its .ts one. */
const THREAD_ENTRY = fileURLToPath(new URL(import.meta.url.endsWith('.ts') ? './export-thread.ts' : './export-thread.js', import.meta.url));

export class ThreadSpanProcessor implements SpanProcessor {
  private readonly thread: Worker;
  private readonly waiting: Int32Array;
  private readonly maxQueueSize: number;
  private readonly chunkDelayMs: number;
  private chunk: SpanRecord[] = [];
  private timer: NodeJS.Timeout | undefined;
  private nextId = 0;
  private readonly answers = new Map<number, () => void>();
  private stopped = false;

  constructor(config: TracingConfig, version: string) {
    const waiting = new SharedArrayBuffer(4);
    this.waiting = new Int32Array(waiting);
    this.maxQueueSize = config.maxQueueSize;
    this.chunkDelayMs = Math.min(CHUNK_DELAY_MS, config.scheduleDelayMs);
    const data: ExportThreadData = {
      protocol: config.protocol, serviceName: config.serviceName, version, scheduleDelayMs: config.scheduleDelayMs,
      maxExportBatchSize: config.maxExportBatchSize, maxQueueSize: config.maxQueueSize, waiting,
    };
    this.thread = new Worker(THREAD_ENTRY, { workerData: data, name: 'otlp-export' });
    this.thread.unref();
    this.thread.on('message', (message: { readonly flushed: number }) => {
      this.answers.get(message.flushed)?.();
      this.answers.delete(message.flushed);
    });
    // A thread that fails takes no more spans; serving goes on without them.
    this.thread.on('error', () => this.stop());
    this.thread.on('exit', () => this.stop());
  }

  onStart(_span: Span, _parentContext: Context): void {}

  onEnd(span: ReadableSpan): void {
    if (this.stopped || (span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return;
    if (Atomics.load(this.waiting, 0) + this.chunk.length >= this.maxQueueSize) return; // full: dropped, as the SDK's queue drops
    this.chunk.push(toRecord(span));
    if (this.chunk.length >= CHUNK_RECORDS) this.post();
    else if (this.timer === undefined) this.timer = setTimeout(() => this.post(), this.chunkDelayMs).unref();
  }

  /** Posts the records waiting, then waits until the thread has exported everything it holds. */
  async forceFlush(): Promise<void> {
    await this.ask('flush');
  }

  async shutdown(): Promise<void> {
    if (this.stopped) return;
    await this.ask('shutdown');
    this.stop();
    await this.thread.terminate();
  }

  private post(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.chunk.length === 0 || this.stopped) return;
    Atomics.add(this.waiting, 0, this.chunk.length);
    this.thread.postMessage(this.chunk);
    this.chunk = [];
  }

  private ask(what: 'flush' | 'shutdown'): Promise<void> {
    this.post();
    if (this.stopped) return Promise.resolve();
    const id = this.nextId++;
    // Held while we wait: an unreferenced thread would let the process exit before its last batch leaves.
    this.thread.ref();
    return new Promise<void>((resolve) => {
      this.answers.set(id, () => {
        this.thread.unref();
        resolve();
      });
      this.thread.postMessage(what === 'flush' ? { flush: id } : { shutdown: id });
    });
  }

  private stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.chunk = [];
    for (const answer of this.answers.values()) answer();
    this.answers.clear();
  }
}
