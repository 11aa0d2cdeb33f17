/**
 * Optional authentication for every request of the Koa app: caller.ts reads the caller, and
 * this leaves it on ctx.state (principal and token, or the reason a sent token was refused in
 * authError). Public routes (login, settings, userinfo) still work with a stale cookie, and
 * routes that need a caller answer 401 with that reason through requirePrincipal(). Who may call
 * a route, a session confined to enrolment included, is the route's own declaration
 * (route-access.ts). Nothing here wraps downstream errors.
 */
import type Koa from 'koa';
import { Unauthenticated } from '../errors.js';
import type { Principal } from '../principal.js';
import type { ReadCaller } from './caller.js';
import type { AppState } from './state.js';

export function authMiddleware(readCaller: ReadCaller): Koa.Middleware<AppState> {
  return async function readToken(ctx, next) {
    const caller = await readCaller({ method: ctx.method, headers: ctx.req.headers, protocol: ctx.protocol, socket: ctx.req.socket }, 'request');
    const { principal, token, via, authError } = caller;
    if (principal !== undefined && token !== undefined) {
      ctx.state.principal = principal;
      ctx.state.token = token;
      ctx.state.tokenFromCookie = via === 'cookie';
    } else if (authError !== undefined) {
      ctx.state.authError = authError;
    }
    await next();
  };
}

/** The caller, or Unauthenticated: the reason its token was refused, or that none was sent. */
export function requirePrincipal(ctx: { readonly state: AppState }): Principal {
  const { principal, authError } = ctx.state;
  if (principal !== undefined) return principal;
  throw authError ?? new Unauthenticated();
}
