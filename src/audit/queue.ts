/**
 * The audit sink: a bounded queue in front of a writer. record() only pushes the event and its
 * time; a drain serialises the queued events (ecs.ts) and hands them to the writer one write at a
 * time. A writer that stalls (a full pipe, a FIFO nobody reads, a slow disk) stalls the drain
 * only: once the queue holds `capacity` events, new ones are dropped and counted
 * (svc_audit_events_dropped_total) and a warning is logged at most once a minute while it lasts.
 * A request never waits for the trail.
 *
 * Each write is at most PIPE_BUF bytes cut at line ends: on a pipe (stdout) and on a file opened
 * in append mode by several workers, such a write lands whole, so lines never interleave with the
 * operational log's or another worker's.
 */
import { toEcs, type AuditService } from './ecs.js';
import type { AuditEvent, AuditTrail } from './trail.js';

/** Where lines go: one text of whole lines per call; the promise settles when it is written. */
export interface AuditWriter {
  write(text: string): Promise<void>;
  close(): Promise<void>;
}

export interface AuditSink extends AuditTrail {
  /** Events dropped since start because the queue was full. */
  dropped(): number;
  /** Resolves once every event recorded so far is written (or dropped). */
  flush(): Promise<void>;
  /** Flushes, then closes the writer. */
  close(): Promise<void>;
}

/** The operational log lines the sink writes about itself. */
export interface AuditSinkLog {
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
  info(fields: object, message: string): void;
}

export interface AuditSinkOptions {
  readonly writer: AuditWriter;
  readonly service: AuditService;
  readonly log: Pick<AuditSinkLog, 'warn' | 'error'>;
  /** Events held while the writer is busy; more are dropped. */
  readonly capacity?: number;
  readonly now?: () => number;
}

/** About 10 s of a flood of refusals on one core: a stall shorter than that loses nothing. */
export const DEFAULT_AUDIT_QUEUE = 10_000;
/** Linux's PIPE_BUF: writes up to this size to a pipe are atomic. */
export const ATOMIC_WRITE_BYTES = 4096;
const DROP_WARNING_EVERY_MS = 60_000;

export function createAuditSink(options: AuditSinkOptions): AuditSink {
  const capacity = options.capacity ?? DEFAULT_AUDIT_QUEUE;
  const now = options.now ?? Date.now;
  const { writer, service, log } = options;
  let events: AuditEvent[] = [];
  let times: number[] = [];
  let dropped = 0;
  let droppedSinceWarning = 0;
  let lastWarning = -Infinity;
  let draining: Promise<void> | undefined;

  function warnDrops(): void {
    const at = now();
    if (at - lastWarning < DROP_WARNING_EVERY_MS) return;
    lastWarning = at;
    log.warn({ dropped: droppedSinceWarning, droppedTotal: dropped, capacity }, `audit sink is not keeping up: ${droppedSinceWarning} audit event(s) dropped since the last warning (svc_audit_events_dropped_total); check the disk or the reader of the audit log`);
    droppedSinceWarning = 0;
  }

  async function drain(): Promise<void> {
    while (events.length > 0) {
      const batch = events;
      const at = times;
      events = [];
      times = [];
      for (const chunk of chunks(batch, at, service)) {
        try {
          await writer.write(chunk);
        } catch (err: unknown) {
          // A lost write is counted as dropped: the operator sees it in the same counter.
          const lost = chunk.split('\n').length - 1;
          dropped += lost;
          droppedSinceWarning += lost;
          log.error({ err, lost }, 'audit sink could not write; the events are counted as dropped');
        }
      }
    }
    draining = undefined;
  }

  return {
    record(event) {
      if (events.length >= capacity) {
        dropped++;
        droppedSinceWarning++;
        warnDrops();
        return;
      }
      events.push(event);
      times.push(now());
      draining ??= new Promise<void>((resolve) => setImmediate(resolve)).then(drain);
    },
    dropped: () => dropped,
    async flush() {
      while (draining !== undefined) await draining;
    },
    async close() {
      while (draining !== undefined) await draining;
      await writer.close();
    },
  };
}

/** The queued events as texts of whole lines, each at most ATOMIC_WRITE_BYTES (a longer line goes alone). */
function* chunks(batch: readonly AuditEvent[], at: readonly number[], service: AuditService): Generator<string> {
  let text = '';
  let bytes = 0;
  for (let i = 0; i < batch.length; i++) {
    const line = `${JSON.stringify(toEcs(batch[i] as AuditEvent, at[i] ?? 0, service))}\n`;
    const size = Buffer.byteLength(line);
    if (text !== '' && bytes + size > ATOMIC_WRITE_BYTES) {
      yield text;
      text = '';
      bytes = 0;
    }
    text += line;
    bytes += size;
  }
  if (text !== '') yield text;
}
