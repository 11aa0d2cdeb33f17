/** Gives every request an id (kept from X-Request-Id when sane) and a child logger carrying it. */
import type Koa from 'koa';
import type { Logger } from 'pino';
import { requestIdFrom } from './request-id.js';
import type { AppState } from './state.js';

export function requestContext(log: Logger): Koa.Middleware<AppState> {
  return async function assignRequestId(ctx, next) {
    const requestId = requestIdFrom(ctx.req.headers['x-request-id']);
    ctx.state.requestId = requestId;
    // Made on first use: most requests (proxied ones above all) never log, and a pino child
    // per request was a measurable share of the proxy's CPU.
    let child: Logger | undefined;
    Object.defineProperty(ctx.state, 'log', {
      get: () => (child ??= log.child({ requestId })),
      enumerable: true,
      configurable: true,
    });
    ctx.set('X-Request-Id', requestId);
    await next();
  };
}
