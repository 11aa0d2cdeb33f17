/** The only place an error code becomes an HTTP status, and the middleware that writes error bodies. */
import type { ServerResponse } from 'node:http';
import type Koa from 'koa';
import type { Logger } from 'pino';
import { RateLimited, SecondFactorRequired, SvcError, TooManyAttempts, type ErrorCode } from '../errors.js';
import type { AppState } from './state.js';
import { auditRefusal, type RefusalAudit } from './refusal-audit.js';

export const STATUS = {
  invalid_request: 400,
  invalid_credentials: 401,
  second_factor_required: 401,
  unauthenticated: 401,
  permission_denied: 403,
  second_factor_enrolment_required: 403,
  application_not_found: 403,
  not_found: 404,
  account_not_found: 404,
  extension_not_found: 404,
  no_backend: 404,
  conflict: 409,
  backend_idle: 408,
  too_many_attempts: 429,
  rate_limited: 429,
  backend_unreachable: 502,
  backend_tls: 502,
  too_many_requests: 503,
  unavailable: 503,
  backend_timeout: 504,
} as const satisfies Record<ErrorCode, number>;

/** What a client is told about a failed request: status, JSON body and extra headers. */
export interface ErrorReply {
  readonly status: number;
  readonly body: { readonly error: string; readonly message: string; readonly challenge?: string; readonly factors?: readonly string[] };
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * The reply for an error thrown while handling a request, for the Koa app and the extension
 * gateway alike: typed errors by STATUS, Koa's exposed 4xx as they are, anything else a 500
 * that names only the request id (and is logged with the error).
 */
export function errorReply(err: unknown, requestId: string, log: Logger, path: string): ErrorReply {
  if (!(err instanceof SvcError)) {
    const koaStatus = koaClientErrorStatus(err);
    if (koaStatus !== undefined) return { status: koaStatus, body: { error: 'invalid_request', message: (err as Error).message }, headers: {} };
    log.error({ err, requestId, path }, 'unhandled error');
    return { status: 500, body: { error: 'internal', message: `internal error (request ${requestId})` }, headers: {} };
  }
  const headers = err instanceof TooManyAttempts || err instanceof RateLimited ? { 'Retry-After': String(err.retryAfterSeconds) } : {};
  // The one error whose body says more: the second step needs the challenge and the factors.
  const more = err instanceof SecondFactorRequired ? { challenge: err.challenge, factors: err.factors } : {};
  return { status: STATUS[err.code], body: { error: err.code, message: err.message, ...more }, headers };
}

/** Writes an error reply on a raw response (code that runs before Koa), as Koa would write it. */
export function sendErrorReply(res: ServerResponse, reply: ErrorReply, requestId: string, method: string | undefined): void {
  const body = JSON.stringify(reply.body);
  res.writeHead(reply.status, {
    ...reply.headers,
    'X-Request-Id': requestId,
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(method === 'HEAD' ? undefined : body);
}

/** `audit`: where rights refusals are recorded (refusal-audit.ts); none in tests of the middleware alone. */
export function errorMiddleware(log: Logger, audit?: RefusalAudit): Koa.Middleware<AppState> {
  return async function mapErrors(ctx, next) {
    try {
      await next();
    } catch (err: unknown) {
      if (ctx.res.headersSent) {
        log.warn({ err, requestId: ctx.state.requestId }, 'error after the response started; connection closed');
        ctx.res.destroy();
        return;
      }
      auditRefusal(audit, err, ctx.req, ctx.state.requestId, 'api');
      const reply = errorReply(err, ctx.state.requestId, log, ctx.path);
      ctx.set(reply.headers);
      ctx.status = reply.status;
      ctx.body = reply.body;
    }
  };
}

/** Koa's own `ctx.throw(4xx)` errors (for example a body too large) are safe to show as they are. */
function koaClientErrorStatus(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const { status, expose } = err as { status?: unknown; expose?: unknown };
  return typeof status === 'number' && status >= 400 && status < 500 && expose === true ? status : undefined;
}
