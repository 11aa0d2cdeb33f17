/**
 * Who is calling: the one reading of the caller, used by the Koa app (auth.ts), the proxy
 * gateway (extensions/gateway.ts) and WebSocket handshakes (extensions/websocket.ts). It knows
 * no transport: it takes a method, the request headers and the protocol the connection came
 * over, and gives the principal, the token it came from, or the reason a sent token was refused.
 *
 * - The token: `Authorization: Bearer <token>`, else the `svc.token` cookie.
 * - The cookie's origin rule (same-origin.ts): on a plain request it signs in a method that may
 *   change something only from svc's own origin (else 401); on a WebSocket handshake, always
 *   only from svc's own origin (else 403), since browsers send cookies on cross-site handshakes
 *   and the Same-Origin Policy does not cover them. A bearer token cannot be planted by another
 *   page, so it needs no check.
 *
 * - The recheck of an SSO session's groups (sso-renewal.ts `tokenRecheck`) applies to the token
 *   however it came: as a bearer, as a cookie, on a handshake. A token due for it is read as the
 *   session's renewed (or latest) token, so no way of sending it keeps the groups of its login.
 *
 * Synchronous when the authenticator already knows the token (the proxy's fast path makes no
 * promise then); a promise otherwise. A refusal is data (authError), not a throw: public routes
 * still work with a stale cookie, and routes that need a caller answer with the reason. Any
 * other failure (the state backend is down) is thrown or rejects, for a 503.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { PermissionDenied, Unauthenticated, type SvcError } from '../errors.js';
import { printable } from '../lib/printable.js';
import type { Principal } from '../principal.js';
import { sessionCookieOf } from './cookies.js';
import { cookieRefusal, isOwnOrigin, isSafeMethod, type RequestOrigin } from './same-origin.js';

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** The token of a well-formed `Authorization: Bearer <token>` header. */
export function bearerToken(authorization: string | undefined): string | undefined {
  return authorization === undefined || authorization === '' ? undefined : BEARER.exec(authorization)?.[1];
}

/** The token a request presents, and how: the bearer header first, then the svc.token cookie. */
export function presentedToken(headers: IncomingHttpHeaders): { readonly token: string; readonly via: 'bearer' | 'cookie' } | undefined {
  const bearer = bearerToken(headers.authorization);
  if (bearer !== undefined) return { token: bearer, via: 'bearer' };
  const cookie = sessionCookieOf(headers.cookie);
  return cookie === undefined ? undefined : { token: cookie, via: 'cookie' };
}

export interface CallerRequest {
  readonly method: string | undefined;
  readonly headers: IncomingHttpHeaders;
  /** 'http' or 'https', as the connection came (no X-Forwarded-Proto is trusted). */
  readonly protocol: string;
  /** The connection, whose peer address is read only when a session is first seen (session-usage.ts). */
  readonly socket?: { readonly remoteAddress?: string | undefined };
}

/** 'request' for plain HTTP; 'handshake' for a WebSocket upgrade, whose cookie rule is stricter. */
export type CallerKind = 'request' | 'handshake';

export interface Caller {
  readonly principal: Principal | undefined;
  /** The token the principal came from (for logout); undefined when none was accepted. */
  readonly token: string | undefined;
  /** Where that token came from: a replaced session is set as a cookie only when it came as one. */
  readonly via: 'bearer' | 'cookie' | undefined;
  /** Why a token that was sent gives no principal; undefined when none was sent or it was accepted. */
  readonly authError: SvcError | undefined;
}

/**
 * An accepted SSO principal's token due for its recheck: the promise of the token to read the
 * caller from instead (renewed, the session's latest, or the same one when none can be made
 * now); undefined, without a promise, when none is due.
 */
export type TokenRecheck = (token: string) => Promise<string> | undefined;

export type ReadCaller = (request: CallerRequest, kind: CallerKind) => Caller | Promise<Caller>;

export interface CallerDeps {
  /** session/authenticate.ts's, named here so the HTTP edge imports no feature. */
  readonly authenticator: {
    authenticate(token: string): Promise<Principal>;
    /** The principal without awaiting anything, or undefined when that needs a look-up; throws Unauthenticated. */
    known(token: string): Principal | undefined;
  };
  /** svc's configured `url`, read per request: its origin is svc's own. */
  readonly configuredUrl: () => string;
  /** The SSO sessions' recheck (sso-renewal.ts), for a principal of kind `sso`; read per request, as the SSO feature sets it after this is made. */
  readonly recheck?: () => TokenRecheck | undefined;
  /** Told of every accepted caller (session-usage.ts: the session's last use); must not throw or await. */
  readonly onUse?: (principal: Principal, request: CallerRequest, via: 'bearer' | 'cookie') => void;
}

const ANONYMOUS: Caller = { principal: undefined, token: undefined, via: undefined, authError: undefined };

export function createReadCaller(deps: CallerDeps): ReadCaller {
  return function readCaller(request, kind) {
    const headers = request.headers;
    // presentedToken() inlined: this runs on every proxied request, and its result object would be one more allocation.
    const bearer = bearerToken(headers.authorization);
    const token = bearer ?? sessionCookieOf(headers.cookie);
    if (token === undefined) return ANONYMOUS;
    const via = bearer === undefined ? 'cookie' : 'bearer';
    if (via === 'cookie') {
      const refusal = cookieOriginRefusal(request, kind, deps.configuredUrl());
      if (refusal !== undefined) return { principal: undefined, token: undefined, via: undefined, authError: refusal };
    }
    let principal: Principal | undefined;
    try {
      principal = deps.authenticator.known(token);
    } catch (err: unknown) {
      return refused(err);
    }
    if (principal !== undefined) return accepted(principal, token);
    return deps.authenticator.authenticate(token).then((found) => accepted(found, token), refused);

    /** The caller of an accepted token, or, when it is due for its recheck, of the token the recheck gives. */
    function accepted(found: Principal, used: string): Caller | Promise<Caller> {
      const rechecked = found.kind === 'sso' ? deps.recheck?.()?.(used) : undefined;
      if (rechecked !== undefined) {
        // Authenticated again even when the token stays: a refused renewal has just revoked it.
        return rechecked.then((current) => deps.authenticator.authenticate(current).then((now) => caller(now, current))).catch(refused);
      }
      return caller(found, used);
    }

    function caller(found: Principal, used: string): Caller {
      deps.onUse?.(found, request, via);
      return { principal: found, token: used, via, authError: undefined };
    }
  };
}

function cookieOriginRefusal(request: CallerRequest, kind: CallerKind, configuredUrl: string): SvcError | undefined {
  // Most cookie requests are GETs: no Origin to weigh, nothing to allocate on the proxy's path.
  if (kind === 'request' && isSafeMethod(request.method)) return undefined;
  const origin = request.headers.origin;
  const where: RequestOrigin = { host: hostOf(request.headers), protocol: request.protocol };
  if (kind === 'request') return cookieRefusal(request.method, origin, where, configuredUrl);
  if (isOwnOrigin(origin, where, configuredUrl)) return undefined;
  return new PermissionDenied(`a WebSocket signed in with the svc.token cookie must come from svc's own origin, not '${printable(origin ?? '')}'`);
}

function refused(err: unknown): Caller {
  if (err instanceof Unauthenticated) return { principal: undefined, token: undefined, via: undefined, authError: err };
  throw err;
}

/** As Koa reads ctx.host without a trusted proxy: the Host header (HTTP/2's :authority first), up to a comma. */
export function hostOf(headers: IncomingHttpHeaders): string {
  const host = (headers[':authority'] as string | undefined) ?? headers.host ?? '';
  const comma = host.indexOf(',');
  return comma === -1 ? host : host.slice(0, comma).trim();
}

/** As Koa reads ctx.protocol without a trusted proxy: the connection's own. */
export function protocolOf(socket: unknown): string {
  return (socket as { encrypted?: boolean } | null)?.encrypted === true ? 'https' : 'http';
}
