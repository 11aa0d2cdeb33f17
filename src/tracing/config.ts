/**
 * Reads the standard OpenTelemetry variables into one TracingConfig, or none when tracing is off.
 * Opens nothing and loads no SDK (./start.ts does, only for a config). Tracing is on when an
 * OTLP endpoint is set (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT), unless
 * OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none. Every bad value is named, all at once,
 * and stops the start, as a bad SVC_TRUSTED_PROXIES does: a guessed sampler or protocol would
 * send more, or other, than the operator asked for.
 */

export type OtlpProtocol = 'http/protobuf' | 'http/json';

export type SamplerChoice =
  | { readonly kind: 'always_on' | 'always_off' }
  | { readonly kind: 'traceidratio'; readonly ratio: number };

export interface TracingConfig {
  readonly protocol: OtlpProtocol;
  /** The sampler of a trace svc starts; a trace a trusted proxy started follows its parent when `parentBased`. */
  readonly sampler: SamplerChoice;
  readonly parentBased: boolean;
  /** OTEL_SERVICE_NAME, else `svc`. */
  readonly serviceName: string;
  /** OTEL_BSP_SCHEDULE_DELAY: how long spans wait to be sent in a batch (ms). */
  readonly scheduleDelayMs: number;
  /** OTEL_BSP_MAX_EXPORT_BATCH_SIZE: the most spans one export sends; a full batch leaves at once. */
  readonly maxExportBatchSize: number;
  /** OTEL_BSP_MAX_QUEUE_SIZE: the most spans waiting; a span ended while it is full is dropped. */
  readonly maxQueueSize: number;
}

export const DEFAULT_SERVICE_NAME = 'svc';
/** The specification's default delay between two batches. */
export const DEFAULT_SCHEDULE_DELAY_MS = 5_000;
/**
 * Larger than the specification's 512: an export request, and the copy of the batch's encoded
 * spans into it, are paid a quarter as often under load (issue 55, docs/benchmarks.md).
 */
export const DEFAULT_MAX_EXPORT_BATCH_SIZE = 2_048;
/**
 * Four batches (the specification's 2048 is four of its 512): while one batch is on its way, a
 * worker at 10k requests per second (2–3 spans each) fills 2048 places in a tenth of a second and
 * would drop spans.
 */
export const DEFAULT_MAX_QUEUE_SIZE = 8_192;

export class TracingConfigInvalid extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`tracing: ${problems.join('; ')}`);
    this.name = 'TracingConfigInvalid';
  }
}

type Env = Readonly<Record<string, string | undefined>>;

const SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const;
const PROTOCOLS: readonly string[] = ['http/protobuf', 'http/json'] satisfies OtlpProtocol[];

const value = (env: Env, key: string): string | undefined => {
  const v = env[key]?.trim();
  return v === undefined || v === '' ? undefined : v;
};

/** The endpoint variable in force, or undefined when none is set. */
export function otlpEndpointOf(env: Env): { readonly key: string; readonly url: string } | undefined {
  for (const key of ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_ENDPOINT']) {
    const url = value(env, key);
    if (url !== undefined) return { key, url };
  }
  return undefined;
}

/** The config, undefined when tracing is off; throws TracingConfigInvalid naming every bad variable. */
export function readTracingConfig(env: Env): TracingConfig | undefined {
  if (value(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return undefined;
  const exporter = value(env, 'OTEL_TRACES_EXPORTER');
  if (exporter === 'none') return undefined;
  const endpoint = otlpEndpointOf(env);
  if (endpoint === undefined) return undefined;
  const problems: string[] = [];
  if (exporter !== undefined && exporter !== 'otlp') problems.push(`OTEL_TRACES_EXPORTER: '${exporter.slice(0, 40)}' is not supported; svc exports with 'otlp' (or 'none' for no traces)`);
  if (!isHttpUrl(endpoint.url)) problems.push(`${endpoint.key}: not an http:// or https:// URL`);
  const protocolKey = value(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') !== undefined ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = value(env, protocolKey) ?? 'http/protobuf';
  if (!PROTOCOLS.includes(protocol)) problems.push(`${protocolKey}: '${protocol.slice(0, 40)}' is not supported; give http/protobuf (the default) or http/json`);
  const samplerName = value(env, 'OTEL_TRACES_SAMPLER') ?? 'parentbased_always_on';
  if (!(SAMPLERS as readonly string[]).includes(samplerName)) problems.push(`OTEL_TRACES_SAMPLER: '${samplerName.slice(0, 40)}' is not one of ${SAMPLERS.join(', ')}`);
  const ratio = ratioOf(value(env, 'OTEL_TRACES_SAMPLER_ARG'), problems);
  const delay = value(env, 'OTEL_BSP_SCHEDULE_DELAY');
  const scheduleDelayMs = delay === undefined ? DEFAULT_SCHEDULE_DELAY_MS : Number(delay);
  if (!/^\d{1,7}$/.test(delay ?? '0') || scheduleDelayMs < 1) problems.push(`OTEL_BSP_SCHEDULE_DELAY: '${(delay ?? '').slice(0, 40)}' is not a whole number of milliseconds from 1`);
  const maxQueueSize = countOf(env, 'OTEL_BSP_MAX_QUEUE_SIZE', DEFAULT_MAX_QUEUE_SIZE, problems);
  const maxExportBatchSize = countOf(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', Math.min(DEFAULT_MAX_EXPORT_BATCH_SIZE, maxQueueSize), problems);
  if (maxExportBatchSize > maxQueueSize) problems.push(`OTEL_BSP_MAX_EXPORT_BATCH_SIZE: ${maxExportBatchSize} is more than OTEL_BSP_MAX_QUEUE_SIZE (${maxQueueSize}); a batch is taken from the queue`);
  if (problems.length > 0) throw new TracingConfigInvalid(problems);
  const base = samplerName.replace(/^parentbased_/, '');
  return {
    protocol: protocol as OtlpProtocol,
    sampler: base === 'traceidratio' ? { kind: 'traceidratio', ratio } : { kind: base as 'always_on' | 'always_off' },
    parentBased: samplerName.startsWith('parentbased_'),
    serviceName: value(env, 'OTEL_SERVICE_NAME') ?? DEFAULT_SERVICE_NAME,
    scheduleDelayMs,
    maxExportBatchSize,
    maxQueueSize,
  };
}

/** A count of spans from 1 to 1,000,000: `fallback` when unset. */
function countOf(env: Env, key: string, fallback: number, problems: string[]): number {
  const raw = value(env, key);
  if (raw === undefined) return fallback;
  const count = Number(raw);
  if (!/^\d{1,7}$/.test(raw) || count < 1 || count > 1_000_000) {
    problems.push(`${key}: '${raw.slice(0, 40)}' is not a whole number of spans from 1 to 1000000`);
    return fallback;
  }
  return count;
}

/** OTEL_TRACES_SAMPLER_ARG: a ratio from 0 to 1; 1 when unset. */
function ratioOf(raw: string | undefined, problems: string[]): number {
  if (raw === undefined) return 1;
  const ratio = Number(raw);
  if (!/^\d*\.?\d+$/.test(raw) || !(ratio >= 0 && ratio <= 1)) {
    problems.push(`OTEL_TRACES_SAMPLER_ARG: '${raw.slice(0, 40)}' is not a ratio from 0 to 1`);
    return 0;
  }
  return ratio;
}

function isHttpUrl(raw: string): boolean {
  try {
    const url = new URL(raw);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

/** The OTEL_ variables set while no endpoint is: tracing stays off, and start says so once. */
export function unusedTracingVariables(env: Env): string[] {
  if (otlpEndpointOf(env) !== undefined) return [];
  return Object.keys(env).filter((k) => k.startsWith('OTEL_') && value(env, k) !== undefined && k !== 'OTEL_SDK_DISABLED' && k !== 'OTEL_TRACES_EXPORTER').sort();
}
