/**
 * The OpenTelemetry SDK, set up from a TracingConfig: imported by ./start.ts only when tracing is
 * on, so that a process without an OTLP endpoint never loads it. Registers the tracer provider,
 * the AsyncLocalStorage context manager (the active span across awaits) and the W3C trace-context
 * propagator; ended spans go to an export thread (./thread-span-processor.ts), which sends them in
 * batches to the OTLP endpoint over http/protobuf or http/json (./exporter.ts).
 */
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider, type Sampler, type SpanProcessor } from '@opentelemetry/sdk-trace';
import type { TracingConfig } from './config.js';
import { svcResource } from './resource.js';
import { markTracingOn } from './spans.js';
import { ThreadSpanProcessor } from './thread-span-processor.js';

export interface RunningTracing {
  /** Sends the spans still waiting, then stops. */
  shutdown(): Promise<void>;
}

function samplerOf(config: TracingConfig): Sampler {
  const { sampler } = config;
  const root = sampler.kind === 'traceidratio' ? new TraceIdRatioBasedSampler(sampler.ratio) : sampler.kind === 'always_on' ? new AlwaysOnSampler() : new AlwaysOffSampler();
  return config.parentBased ? new ParentBasedSampler({ root }) : root;
}

/** Where ended spans go: to the export thread, which batches and sends them (./thread-span-processor.ts says why). */
export function spanProcessorFor(config: TracingConfig, version: string): SpanProcessor {
  return new ThreadSpanProcessor(config, version);
}

export function registerTracing(config: TracingConfig, version: string): RunningTracing {
  const provider = new TracerProvider({
    resource: svcResource(config.serviceName, version),
    sampler: samplerOf(config),
    spanProcessors: [spanProcessorFor(config, version)],
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
