/**
 * What the app's outer middleware does for every request (request-context.ts, the access line,
 * the metrics), for a request a feature answers on the raw server before Koa: the X-Request-Id
 * header, and at the end one observation under a route pattern and the debug access line
 * (logAccess, which the app and the extension gateway write with too). The access line is at
 * debug unless SVC_ACCESS_LOG=true asks for it at info (src/main/log.ts reads it once).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { CLIENT_GONE, type HttpMetrics } from './metrics.js';
import { requestIdFrom } from './request-id.js';

/** The level of the per-request line: debug, or info when the operator asked for an access log. */
export type AccessLogLevel = 'debug' | 'info';

export interface RawRequestDeps {
  readonly metrics: Pick<HttpMetrics, 'record'>;
  readonly log: Logger;
  readonly accessLogLevel?: AccessLogLevel;
}

/**
 * The access line of a request, from Koa's app or before it: one format everywhere.
 * Path only: query strings may carry codes or tokens.
 */
export function logAccess(log: Logger, requestId: string, method: string, path: string, status: number, seconds: number, level: AccessLogLevel = 'debug'): void {
  if (log.isLevelEnabled(level)) log[level]({ requestId, method, path, status, ms: Math.round(seconds * 10_000) / 10 }, 'request');
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
    logAccess(deps.log, requestId, method, path, status, seconds, deps.accessLogLevel);
  });
  return requestId;
}
