/**
 * Optional authentication for every request: when a token is sent (`Authorization: Bearer`,
 * else the `svc.token` cookie) and valid, ctx.state.principal and .token are set. A token that
 * is sent but refused only leaves its reason in ctx.state.authError: public routes (login,
 * settings, userinfo) still work with a stale cookie, and routes that need a caller answer 401
 * with that reason through requirePrincipal(). The cookie signs in a request that may change
 * something only from svc's own origin (same-origin.ts). Nothing here wraps downstream errors.
 */
import type Koa from 'koa';
import { Unauthenticated } from '../errors.js';
import type { Principal } from '../session/principal.js';
import type { Authenticate } from '../session/authenticate.js';
import { sessionCookieOf } from './cookies.js';
import { cookieRefusal } from './same-origin.js';
import type { AppState } from './state.js';

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** The token of a well-formed `Authorization: Bearer <token>` header. */
export function bearerToken(authorization: string | undefined): string | undefined {
  return authorization === undefined || authorization === '' ? undefined : BEARER.exec(authorization)?.[1];
}

/** `configuredUrl`: svc's own origin for the cookie rule of same-origin.ts. */
export function authMiddleware(authenticate: Authenticate, configuredUrl: () => string): Koa.Middleware<AppState> {
  return async function readToken(ctx, next) {
    const bearer = bearerToken(ctx.get('authorization'));
    const token = bearer ?? sessionCookieOf(ctx.get('cookie'));
    const refusal = token === undefined || bearer !== undefined ? undefined : cookieRefusal(ctx.method, ctx.get('origin') || undefined, { host: ctx.get('host'), protocol: ctx.protocol }, configuredUrl());
    if (refusal !== undefined) {
      ctx.state.authError = refusal;
    } else if (token !== undefined) {
      try {
        ctx.state.principal = await authenticate(token);
        ctx.state.token = token;
      } catch (err: unknown) {
        if (!(err instanceof Unauthenticated)) throw err;
        ctx.state.authError = err;
      }
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
