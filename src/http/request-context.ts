/** Gives every request an id (kept from X-Request-Id when sane) and a child logger carrying it. */
import { randomUUID } from 'node:crypto';
import type Koa from 'koa';
import type { Logger } from 'pino';
import type { AppState } from './state.js';

const SANE_ID = /^[A-Za-z0-9._-]{1,64}$/;

export function requestContext(log: Logger): Koa.Middleware<AppState> {
  return async function assignRequestId(ctx, next) {
    const incoming = ctx.get('x-request-id');
    const requestId = SANE_ID.test(incoming) ? incoming : randomUUID();
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
