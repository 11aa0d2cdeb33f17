/**
 * Per-extension metrics: requests by status, latency, bytes in and out. Labels are configured
 * extension names only (unknown names are not recorded), so cardinality stays bounded.
 */
import type { Registry } from 'prom-client';
import { LocalCounter, LocalHistogram } from '../lib/local-metrics.js';

export { CLIENT_GONE } from '../http/metrics.js';

export interface ExtensionObservation {
  readonly extension: string;
  readonly status: number;
  readonly seconds: number;
  readonly bytesIn: number;
  readonly bytesOut: number;
}

export interface ExtensionMetrics {
  observe(observation: ExtensionObservation): void;
}

export function createExtensionMetrics(registry: Registry): ExtensionMetrics {
  const requests = new LocalCounter({
    name: 'svc_extension_requests_total',
    help: 'Extension proxy requests by extension and status (including those svc refused)',
    labelNames: ['extension', 'status'],
    registers: [registry],
  });
  const duration = new LocalHistogram({
    name: 'svc_extension_request_duration_seconds',
    help: 'Extension proxy request duration, until the last byte to the client',
    labelNames: ['extension'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const bytesIn = new LocalCounter({
    name: 'svc_extension_request_bytes_total',
    help: 'Request body bytes forwarded to extension backends',
    labelNames: ['extension'],
    registers: [registry],
  });
  const bytesOut = new LocalCounter({
    name: 'svc_extension_response_bytes_total',
    help: 'Response body bytes returned from extension backends',
    labelNames: ['extension'],
    registers: [registry],
  });
  return {
    observe({ extension, status, seconds, bytesIn: input, bytesOut: output }) {
      requests.labels(extension, String(status)).inc();
      duration.labels(extension).observe(seconds);
      if (input > 0) bytesIn.labels(extension).inc(input);
      if (output > 0) bytesOut.labels(extension).inc(output);
    },
  };
}
