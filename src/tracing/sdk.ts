/**
 * The OpenTelemetry SDK, set up from a TracingConfig: imported by ./start.ts only when tracing is
 * on, so that a process without an OTLP endpoint never loads it. Registers the tracer provider,
 * the AsyncLocalStorage context manager (the active span across awaits) and the W3C trace-context
 * propagator; spans leave in batches to the OTLP endpoint over http/protobuf or http/json.
 *
 * The exporter reads the endpoint, headers, timeout and compression from the standard variables
 * itself. http/protobuf sends the batches ./encoding-span-processor.ts encodes as spans end (the
 * SDK's BatchSpanProcessor and serializer cost a traced proxy a quarter of its throughput, issue
 * 55); http/json keeps the SDK's processor and JSON serializer, on the same transport:
 * exporter-trace-otlp-http pins an older sdk-trace than the one used here.
 */
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPExporterBase } from '@opentelemetry/otlp-exporter-base';
import { convertLegacyHttpOptions, createOtlpHttpExportDelegate } from '@opentelemetry/otlp-exporter-base/node-http';
import { JsonTraceSerializer, ProtobufTraceSerializer, TraceExporterMetricsHelper } from '@opentelemetry/otlp-transformer';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler, AlwaysOnSampler, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider,
  type ReadableSpan, type Sampler, type SpanExporter, type SpanProcessor,
} from '@opentelemetry/sdk-trace';
import type { TracingConfig } from './config.js';
import { EncodingSpanProcessor, type EncodedBatch, type ExportLog } from './encoding-span-processor.js';
import { markTracingOn } from './spans.js';

export interface RunningTracing {
  /** Sends the spans still waiting, then stops. */
  shutdown(): Promise<void>;
}

function samplerOf(config: TracingConfig): Sampler {
  const { sampler } = config;
  const root = sampler.kind === 'traceidratio' ? new TraceIdRatioBasedSampler(sampler.ratio) : sampler.kind === 'always_on' ? new AlwaysOnSampler() : new AlwaysOffSampler();
  return config.parentBased ? new ParentBasedSampler({ root }) : root;
}

class OtlpJsonTraceExporter extends OTLPExporterBase<ReadableSpan[]> implements SpanExporter {
  constructor() {
    const options = convertLegacyHttpOptions({}, 'TRACES', 'v1/traces', { 'Content-Type': 'application/json' });
    super(createOtlpHttpExportDelegate(options, JsonTraceSerializer, 'otlp_http_json_span_exporter', TraceExporterMetricsHelper, undefined));
  }
}

/** The transport of the protobuf exporter, sending bytes already encoded; the collector's answer is read as the SDK reads it. */
class OtlpEncodedBatchExporter extends OTLPExporterBase<EncodedBatch> {
  /** OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT as the exporter read it: it ends a silent request, not one answered slowly. */
  readonly timeoutMs: number;

  constructor() {
    const options = convertLegacyHttpOptions({}, 'TRACES', 'v1/traces', { 'Content-Type': 'application/x-protobuf' });
    const serializer = { serializeRequest: (batch: EncodedBatch) => batch.bytes, deserializeResponse: ProtobufTraceSerializer.deserializeResponse };
    super(createOtlpHttpExportDelegate(options, serializer, 'otlp_http_span_exporter', { name: 'span', countItems: (batch: EncodedBatch) => batch.spanCount }, undefined));
    this.timeoutMs = options.timeoutMillis;
  }
}

/** A shutdown sends what waits within this; the workers' own grace (serve.ts) is 10 s, closing included. */
const FLUSH_TIMEOUT_MS = 5_000;
/** An export is counted failed this long after the exporter's own timeout (a collector that answers slowly passes it). */
const EXPORT_TIMEOUT_MARGIN_MS = 5_000;

function processorOf(config: TracingConfig, log: ExportLog): SpanProcessor {
  const batching = { scheduledDelayMillis: config.scheduleDelayMs, maxExportBatchSize: config.maxExportBatchSize, maxQueueSize: config.maxQueueSize };
  if (config.protocol === 'http/json') return new BatchSpanProcessor({ exporter: new OtlpJsonTraceExporter(), ...batching });
  const exporter = new OtlpEncodedBatchExporter();
  return new EncodingSpanProcessor({
    exporter,
    scheduleDelayMs: config.scheduleDelayMs,
    maxExportBatchSize: config.maxExportBatchSize,
    maxQueueSize: config.maxQueueSize,
    exportTimeoutMs: exporter.timeoutMs + EXPORT_TIMEOUT_MARGIN_MS,
    flushTimeoutMs: FLUSH_TIMEOUT_MS,
    log,
  });
}

export function registerTracing(config: TracingConfig, version: string, log: ExportLog): RunningTracing {
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (envDetector) win over the defaults here.
  const resource = resourceFromAttributes({ 'service.name': config.serviceName, 'service.version': version, 'process.pid': process.pid }).merge(detectResources({ detectors: [envDetector] }));
  const provider = new TracerProvider({
    resource,
    sampler: samplerOf(config),
    spanProcessors: [processorOf(config, log)],
  });
  const contextManager = new AsyncLocalStorageContextManager();
  context.setGlobalContextManager(contextManager.enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  markTracingOn();
  return {
    async shutdown() {
      await provider.shutdown();
    },
  };
}
