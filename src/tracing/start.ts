/**
 * The one seam where the OpenTelemetry SDK enters: each serving process (the single process, or
 * each cluster worker: every worker exports its own spans) calls startTracing() before it opens
 * anything. With no OTLP endpoint set, nothing is imported and every span call stays a no-op.
 */
import type { Logger } from 'pino';
import { readTracingConfig, unusedTracingVariables } from './config.js';

export interface Tracing {
  readonly on: boolean;
  /** Sends the spans still waiting; call after the server closed. */
  shutdown(): Promise<void>;
}

const OFF: Tracing = { on: false, shutdown: async () => undefined };

/** A cluster primary's check, before its workers start: throws for a bad variable, warns once about unused ones. */
export function checkTracingEnvironment(env: Readonly<Record<string, string | undefined>>, log: Pick<Logger, 'warn'>): void {
  if (readTracingConfig(env) !== undefined) return;
  warnUnused(env, log);
}

function warnUnused(env: Readonly<Record<string, string | undefined>>, log: Pick<Logger, 'warn'>): void {
  const unused = unusedTracingVariables(env);
  if (unused.length > 0) log.warn({ variables: unused }, `${unused.join(', ')} set but no OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT): tracing stays off`);
}

/** Throws TracingConfigInvalid for a bad variable; `quiet` for a worker whose primary already said what is unused. */
export async function startTracing(env: Readonly<Record<string, string | undefined>>, log: Pick<Logger, 'info' | 'warn'>, version: string, quiet = false): Promise<Tracing> {
  const config = readTracingConfig(env);
  if (config === undefined) {
    if (!quiet) warnUnused(env, log);
    return OFF;
  }
  const { registerTracing } = await import('./sdk.js');
  const running = registerTracing(config, version, log);
  if (!quiet) log.info({ protocol: config.protocol, sampler: config.sampler.kind, parentBased: config.parentBased, serviceName: config.serviceName }, 'tracing on: spans go to the OTLP endpoint');
  return { on: true, shutdown: () => running.shutdown() };
}
