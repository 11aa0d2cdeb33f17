/**
 * Assembles the Koa app from middleware, routers and mounted sub-apps built elsewhere (src/main/
 * wires them).
 * Extension requests never get here: the server hands them to src/extensions/gateway.ts first.
 * No X-Forwarded-* header is trusted (Koa's `proxy` stays off), as in the gateway.
 */
import type Router from '@koa/router';
import Koa from 'koa';
import type { Logger } from 'pino';
import { NotFound } from '../errors.js';
import { errorMiddleware } from './errors.js';
import type { HttpMetrics } from './metrics.js';
import { logAccess, type AccessLogLevel } from './entry.js';
import { requestContext } from './request-context.js';
import type { AppState } from './state.js';
import type { RefusalAudit } from './refusal-audit.js';
import { sealRoutes } from './route-access.js';
import { nameRoute, tracingOn } from '../tracing/spans.js';

export interface AppDeps {
  readonly log: Logger;
  readonly metrics: HttpMetrics;
  /** The level of the per-request line (debug unless SVC_ACCESS_LOG=true). */
  readonly accessLogLevel?: AccessLogLevel;
  /** Runs before the routers: reads a token when one is sent and sets ctx.state.principal. */
  readonly authenticate: Koa.Middleware<AppState>;
  readonly routers: readonly Router<AppState>[];
  /** Where rights refusals are recorded. */
  readonly audit?: RefusalAudit;
}

export function createApp(deps: AppDeps): Koa<AppState> {
  // Before any request: a route without an access declaration refuses everyone (route-access.ts).
  for (const route of sealRoutes(deps.routers)) {
    deps.log.error({ path: route.path, methods: route.methods }, `route ${route.methods.join(',')} ${route.path} declares no access; it refuses every caller until it does (docs/routes.md)`);
  }
  const app = new Koa<AppState>();
  app.use(requestContext(deps.log));
  app.use(accessLog(deps.log, deps.accessLogLevel ?? 'debug'));
  // Outside the error middleware, so that a request that failed is counted with the status the
  // client got (401, 404, 500), not the 404 Koa holds while the error is on its way.
  app.use(deps.metrics.middleware);
  if (tracingOn()) app.use(nameTraceSpan);
  app.use(errorMiddleware(deps.log, deps.audit));
  app.use(deps.authenticate);
  for (const router of deps.routers) {
    app.use(router.routes());
    app.use(router.allowedMethods());
  }
  app.use(noRoute);
  // Koa logs errors itself unless told otherwise; ours are already logged with the request id.
  app.silent = true;
  return app;
}

/** Reached only when no router answered: a JSON 404 like every other error. */
function noRoute(ctx: Koa.ParameterizedContext<AppState>): void {
  if (ctx.status !== 404 || ctx.body !== undefined) return;
  throw new NotFound(`no route for ${ctx.method} ${ctx.path}`);
}

/** The request's server span takes the route as matched (the metrics' label), after the routers ran. */
async function nameTraceSpan(ctx: Koa.ParameterizedContext<AppState>, next: Koa.Next): Promise<void> {
  try {
    await next();
  } finally {
    nameRoute(ctx.method, typeof ctx._matchedRoute === 'string' ? ctx._matchedRoute : 'unmatched');
  }
}

function accessLog(log: Logger, level: AccessLogLevel): Koa.Middleware<AppState> {
  return async function logRequest(ctx, next) {
    // Checked once per request, so a level that hides the line pays nothing for it.
    if (!log.isLevelEnabled(level)) return next();
    const start = performance.now();
    try {
      await next();
    } finally {
      logAccess(log, ctx.state.requestId, ctx.method, ctx.path, ctx.status, (performance.now() - start) / 1000, level);
    }
  };
}
