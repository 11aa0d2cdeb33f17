/** The only place an error code becomes an HTTP status, and the middleware that writes error bodies. */
import type Koa from 'koa';
import type { Logger } from 'pino';
import { SvcError, TooManyAttempts, type ErrorCode } from '../errors.js';
import type { AppState } from './state.js';

export const STATUS = {
  invalid_request: 400,
  invalid_credentials: 401,
  unauthenticated: 401,
  permission_denied: 403,
  application_not_found: 403,
  not_found: 404,
  account_not_found: 404,
  extension_not_found: 404,
  no_backend: 404,
  conflict: 409,
  backend_idle: 408,
  too_many_attempts: 429,
  backend_unreachable: 502,
  backend_tls: 502,
  too_many_requests: 503,
  unavailable: 503,
  backend_timeout: 504,
} as const satisfies Record<ErrorCode, number>;

export function errorMiddleware(log: Logger): Koa.Middleware<AppState> {
  return async function mapErrors(ctx, next) {
    try {
      await next();
    } catch (err: unknown) {
      if (ctx.res.headersSent) {
        log.warn({ err, requestId: ctx.state.requestId }, 'error after the response started; connection closed');
        ctx.res.destroy();
        return;
      }
      if (!(err instanceof SvcError)) {
        const koaStatus = koaClientErrorStatus(err);
        if (koaStatus !== undefined) {
          ctx.status = koaStatus;
          ctx.body = { error: 'invalid_request', message: (err as Error).message };
          return;
        }
        log.error({ err, requestId: ctx.state.requestId, path: ctx.path }, 'unhandled error');
        ctx.status = 500;
        ctx.body = { error: 'internal', message: `internal error (request ${ctx.state.requestId})` };
        return;
      }
      if (err instanceof TooManyAttempts) ctx.set('Retry-After', String(err.retryAfterSeconds));
      ctx.status = STATUS[err.code];
      ctx.body = { error: err.code, message: err.message };
    }
  };
}

/** Koa's own `ctx.throw(4xx)` errors (for example a body too large) are safe to show as they are. */
function koaClientErrorStatus(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const { status, expose } = err as { status?: unknown; expose?: unknown };
  return typeof status === 'number' && status >= 400 && status < 500 && expose === true ? status : undefined;
}
