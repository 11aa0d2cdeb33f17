import type Router from '@koa/router';
import { allow, declaredRouter } from '../route-access.js';
import type { AppState } from '../state.js';

export interface ReadinessReport {
  readonly ready: boolean;
  /** Each check: `ok`, or why not; `state` is `ok` or `degraded: …` and never makes `ready` false. */
  readonly checks: { readonly configuration: string; readonly store: string; readonly state: string };
}

/** Whether this replica should get traffic; built by the composition root. */
export type Readiness = () => Promise<ReadinessReport>;

/** Where /metrics comes from: this server's registry, or (a cluster worker) every worker's combined. */
export interface MetricsExposition {
  readonly contentType: string;
  text(): Promise<string>;
}

export interface HealthOptions {
  readonly metrics: MetricsExposition;
  readonly readiness: Readiness;
  /** False when /metrics has its own listener (--metrics-listen): then the public one has none. */
  readonly publicMetrics: boolean;
}

export function healthRoutes(options: HealthOptions): Router<AppState> {
  const router = declaredRouter();
  router.get('/healthz', allow('anyone'), function healthz(ctx) {
    ctx.body = 'ok';
  });
  router.get('/readyz', allow('anyone'), async function readyz(ctx) {
    const report = await options.readiness();
    ctx.status = report.ready ? 200 : 503;
    ctx.body = { status: report.ready ? 'ready' : 'not ready', checks: report.checks };
  });
  if (options.publicMetrics) {
    router.get('/metrics', allow('anyone', 'off when --metrics-listen serves it elsewhere'), async function metrics(ctx) {
      const text = await options.metrics.text();
      ctx.type = options.metrics.contentType;
      ctx.body = text;
    });
  }
  return router;
}
