/** Gives every request an id (kept from X-Request-Id when sane) and a child logger carrying it (state.ts). */
import type Koa from 'koa';
import type { Logger } from 'pino';
import { requestIdOf } from './entry.js';
import { RequestState, type AppState } from './state.js';

export function requestContext(log: Logger): Koa.Middleware<AppState> {
  return async function assignRequestId(ctx, next) {
    const requestId = requestIdOf(ctx.req);
    ctx.state = new RequestState(requestId, log);
    ctx.set('X-Request-Id', requestId);
    await next();
  };
}
