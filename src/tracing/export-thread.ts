/**
 * The export thread of one serving process: takes span records from the event loop
 * (./thread-span-processor.ts) and gives them to the SDK's BatchSpanProcessor and OTLP exporter,
 * so that batching, the queue's bound, the protobuf or JSON serialisation and the HTTP request
 * run here, not between two proxied requests. Messages: an array of records; `{ flush: id }`
 * answered `{ flushed: id }`; `{ shutdown: id }` answered `{ flushed: id }` once the last batch
 * has been sent.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace';
import { otlpExporter } from './exporter.js';
import { svcResource } from './resource.js';
import { fromRecord, Scopes, type SpanRecord } from './span-record.js';
import type { ExportThreadData } from './thread-span-processor.js';

const data = workerData as ExportThreadData;
const port = parentPort;
if (port === null) throw new Error('export-thread.ts runs as a worker thread');
const resource = svcResource(data.serviceName, data.version);
const scopes = new Scopes();
const waiting = new Int32Array(data.waiting);
const batches = new BatchSpanProcessor({
  exporter: otlpExporter(data.protocol),
  scheduledDelayMillis: data.scheduleDelayMs, maxExportBatchSize: data.maxExportBatchSize, maxQueueSize: data.maxQueueSize,
});

type Request = { readonly flush: number } | { readonly shutdown: number };

port.on('message', (message: readonly SpanRecord[] | Request) => {
  if (Array.isArray(message)) {
    const records = message as readonly SpanRecord[];
    for (const record of records) batches.onEnd(fromRecord(record, resource, scopes));
    Atomics.sub(waiting, 0, records.length);
    return;
  }
  const request = message as Request;
  const [id, done] = 'flush' in request ? [request.flush, batches.forceFlush()] : [request.shutdown, batches.shutdown()];
  const answer = (): void => port.postMessage({ flushed: id });
  done.then(answer, answer);
});
