/**
 * The OTLP exporter, made in the export thread (./export-thread.ts). The
 * exporter reads the endpoint, headers, timeout and compression from the standard variables
 * itself (a worker thread has a copy of the process's environment). http/json is built from the
 * same transport as the protobuf exporter, with the JSON serializer: exporter-trace-otlp-http pins
 * an older sdk-trace than the one used here.
 */
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { OTLPExporterBase } from '@opentelemetry/otlp-exporter-base';
import { convertLegacyHttpOptions, createOtlpHttpExportDelegate } from '@opentelemetry/otlp-exporter-base/node-http';
import { JsonTraceSerializer, TraceExporterMetricsHelper } from '@opentelemetry/otlp-transformer';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace';
import type { OtlpProtocol } from './config.js';

class OtlpJsonTraceExporter extends OTLPExporterBase<ReadableSpan[]> implements SpanExporter {
  constructor() {
    const options = convertLegacyHttpOptions({}, 'TRACES', 'v1/traces', { 'Content-Type': 'application/json' });
    super(createOtlpHttpExportDelegate(options, JsonTraceSerializer, 'otlp_http_json_span_exporter', TraceExporterMetricsHelper, undefined));
  }
}

export function otlpExporter(protocol: OtlpProtocol): SpanExporter {
  return protocol === 'http/json' ? new OtlpJsonTraceExporter() : new OTLPTraceExporter();
}
