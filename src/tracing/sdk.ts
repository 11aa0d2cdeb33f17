/**
 * The OpenTelemetry SDK, set up from a TracingConfig: imported by ./start.ts only when tracing is
 * on, so that a process without an OTLP endpoint never loads it. Registers the tracer provider,
 * the AsyncLocalStorage context manager (the active span across awaits) and the W3C trace-context
 * propagator; spans leave in batches to the OTLP endpoint over http/protobuf or http/json.
 *
 * The exporter reads the endpoint, headers, timeout and compression from the standard variables
 * itself. http/json is built from the same transport as the protobuf exporter, with the JSON
 * serializer: exporter-trace-otlp-http pins an older sdk-trace than the one used here.
 */
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { OTLPExporterBase } from '@opentelemetry/otlp-exporter-base';
import { convertLegacyHttpOptions, createOtlpHttpExportDelegate } from '@opentelemetry/otlp-exporter-base/node-http';
import { JsonTraceSerializer, TraceExporterMetricsHelper } from '@opentelemetry/otlp-transformer';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler, AlwaysOnSampler, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider,
  type ReadableSpan, type Sampler, type SpanExporter,
} from '@opentelemetry/sdk-trace';
import type { TracingConfig } from './config.js';
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

export function registerTracing(config: TracingConfig, version: string): RunningTracing {
  const exporter: SpanExporter = config.protocol === 'http/json' ? new OtlpJsonTraceExporter() : new OTLPTraceExporter();
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (envDetector) win over the defaults here.
  const resource = resourceFromAttributes({ 'service.name': config.serviceName, 'service.version': version, 'process.pid': process.pid }).merge(detectResources({ detectors: [envDetector] }));
  const provider = new TracerProvider({
    resource,
    sampler: samplerOf(config),
    spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: config.scheduleDelayMs, maxExportBatchSize: config.maxExportBatchSize, maxQueueSize: config.maxQueueSize })],
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
