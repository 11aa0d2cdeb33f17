/** One prom-client registry per server, so tests can run several servers in one process. */
import type Koa from 'koa';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { LocalCounter, LocalHistogram } from '../lib/local-metrics.js';
import type { AppState } from './state.js';

/** The status recorded when the client left before any answer (nginx's convention). */
export const CLIENT_GONE = 499;

export interface HttpMetrics {
  readonly registry: Registry;
  readonly middleware: Koa.Middleware<AppState>;
  /** For requests answered outside Koa (the extension gateway); `route` is a pattern, never a raw path. */
  record(route: string, method: string, status: number, seconds: number): void;
}

export function createHttpMetrics(): HttpMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requests = new LocalCounter({
    name: 'svc_http_requests_total',
    help: 'HTTP requests by route, method and status',
    labelNames: ['route', 'method', 'status'],
    registers: [registry],
  });
  const duration = new LocalHistogram({
    name: 'svc_http_request_duration_seconds',
    help: 'HTTP request duration by route',
    labelNames: ['route', 'method'],
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
    registers: [registry],
  });
  function record(route: string, method: string, status: number, seconds: number): void {
    requests.labels(route, method, String(status)).inc();
    duration.labels(route, method).observe(seconds);
  }
  return {
    registry,
    record,
    middleware: async function countRequests(ctx, next) {
      const start = process.hrtime.bigint();
      try {
        await next();
      } finally {
        // The matched route pattern, never the raw path: paths carry names and would explode cardinality.
        const route = typeof ctx._matchedRoute === 'string' ? ctx._matchedRoute : 'unmatched';
        const seconds = Number(process.hrtime.bigint() - start) / 1e9;
        record(route, ctx.method, ctx.status, seconds);
      }
    },
  };
}
