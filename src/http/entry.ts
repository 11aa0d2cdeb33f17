/**
 * What every way in does around dispatch, one reading each (docs/request-paths.md maps the
 * four: the Koa app, the extension gateway before Koa, the provider's raw handler, WebSocket
 * upgrades). The contract each way in keeps:
 *
 * 1. Request id (requestIdOf): kept from X-Request-Id when sane, else a fresh one; every answer
 *    carries it, error replies included, and every log line of the request names it.
 * 2. Metrics series and access line (recordRequest): at close, one svc_http_requests_total
 *    observation under a route pattern (never the raw path: the label set stays bounded), with
 *    CLIENT_GONE when nothing was sent, and one access line, at debug or with SVC_ACCESS_LOG=true at info (path only: a query string may
 *    carry codes or tokens).
 * 3. Error reply (failRequest): an error that escapes becomes the JSON reply of errors.ts, or,
 *    when the answer has started, a cut connection and a warning.
 * 4. What runs before dispatch (BeforeDispatch: the SSO renewal, sso-renewal.ts) may rewrite the
 *    request's `svc.token` cookie and set a `Set-Cookie` on the response. That cookie is part of
 *    the answer whoever writes it: Koa and the provider keep what is set on the response; a way
 *    in that writes its head from someone else's headers (the proxy, a backend's) must add
 *    heldSetCookies(res) to them (extensions/forward.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { errorReply, sendErrorReply } from './errors.js';
import { CLIENT_GONE, type HttpMetrics } from './metrics.js';
import { requestIdFrom } from './request-id.js';
import { nameRoute } from '../tracing/spans.js';

/**
 * Work a feature does before any request is dispatched (to the raw handlers or Koa): undefined
 * when it has none for this request (the usual case, so the proxy's fast path waits on nothing),
 * else a promise to wait for. It may replace the request's `svc.token` cookie and add Set-Cookie
 * headers to `res`, which every way in then keeps (point 4 above).
 */
export type BeforeDispatch = (req: IncomingMessage, res: ServerResponse) => Promise<void> | undefined;

/** The level of the per-request line: debug, or info when the operator asked for an access log (SVC_ACCESS_LOG=true). */
export type AccessLogLevel = 'debug' | 'info';

export interface RawRequestDeps {
  readonly metrics: Pick<HttpMetrics, 'record'>;
  readonly log: Logger;
  readonly accessLogLevel?: AccessLogLevel;
}

/** The request's id: its X-Request-Id when sane, else a fresh one. */
export function requestIdOf(req: IncomingMessage): string {
  return requestIdFrom(req.headers['x-request-id']);
}

/**
 * The access line of a request, from Koa's app or before it: one format everywhere.
 * Path only: query strings may carry codes or tokens.
 */
export function logAccess(log: Logger, requestId: string, method: string, path: string, status: number, seconds: number, level: AccessLogLevel = 'debug'): void {
  if (log.isLevelEnabled(level)) log[level]({ requestId, method, path, status, ms: Math.round(seconds * 10_000) / 10 }, 'request');
}

/** The status to record for a response at close: CLIENT_GONE when nothing was sent (res.statusCode would still say 200). */
export function closeStatus(res: ServerResponse): number {
  return res.headersSent ? res.statusCode : CLIENT_GONE;
}

/** One observation of a finished request under its route pattern, and its access line. */
export function recordRequest(deps: RawRequestDeps, route: string, requestId: string, method: string, path: string, status: number, seconds: number): void {
  deps.metrics.record(route, method, status, seconds);
  logAccess(deps.log, requestId, method, path, status, seconds, deps.accessLogLevel);
}

/** Sets the request id on the response and observes the request when it ends; returns the id. */
export function observeRawRequest(req: IncomingMessage, res: ServerResponse, route: string, path: string, deps: RawRequestDeps): string {
  const requestId = requestIdOf(req);
  const start = performance.now();
  nameRoute(req.method ?? 'GET', route);
  res.setHeader('X-Request-Id', requestId);
  // 'close' comes once per response, also when the client leaves first.
  res.on('close', () => {
    recordRequest(deps, route, requestId, req.method ?? 'GET', path, closeStatus(res), (performance.now() - start) / 1000);
  });
  return requestId;
}

/**
 * An error that escaped a way in's own handling: the error reply, as the app's error middleware
 * writes it; a response already started is cut instead (`log` should name the request id;
 * `who`, when given, starts the warning: `identity provider: `).
 */
export function failRequest(res: ServerResponse, err: unknown, requestId: string, log: Logger, path: string, method: string | undefined, who = ''): void {
  if (res.headersSent) {
    log.warn({ err }, `${who}error after the response started; connection closed`);
    res.destroy();
    return;
  }
  if (res.destroyed) return;
  sendErrorReply(res, errorReply(err, requestId, log, path), requestId, method);
}

/** The Set-Cookie values set on the response before dispatch (a renewed session), which the answer must carry. */
export function heldSetCookies(res: ServerResponse): readonly string[] | undefined {
  const held = res.getHeader('set-cookie');
  if (held === undefined) return undefined;
  return Array.isArray(held) ? held : [String(held)];
}
