/**
 * What the app's outer middleware does for every request (request-context.ts, the access line,
 * the metrics), for a request a feature answers on the raw server before Koa: the X-Request-Id
 * header, and at the end one observation under a route pattern and the debug access line.
 * The extension gateway does the same inline, with its own metrics beside these.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { CLIENT_GONE, type HttpMetrics } from './metrics.js';
import { requestIdFrom } from './request-id.js';

export interface RawRequestDeps {
  readonly metrics: Pick<HttpMetrics, 'record'>;
  readonly log: Logger;
}

/** Sets the request id on the response and observes the request when it ends; returns the id. */
export function observeRawRequest(req: IncomingMessage, res: ServerResponse, route: string, path: string, deps: RawRequestDeps): string {
  const requestId = requestIdFrom(req.headers['x-request-id']);
  const start = performance.now();
  res.setHeader('X-Request-Id', requestId);
  // 'close' comes once per response, also when the client leaves first.
  res.on('close', () => {
    // Nothing sent: the client left first. res.statusCode would still say its default 200.
    const status = res.headersSent ? res.statusCode : CLIENT_GONE;
    const seconds = (performance.now() - start) / 1000;
    const method = req.method ?? 'GET';
    deps.metrics.record(route, method, status, seconds);
    if (deps.log.isLevelEnabled('debug')) {
      // Path only: query strings may carry codes or tokens.
      deps.log.debug({ requestId, method, path, status, ms: Math.round(seconds * 10_000) / 10 }, 'request');
    }
  });
  return requestId;
}
