/**
 * SSO session renewal before a request is dispatched, for every request: the Koa app's and the
 * ones the extension proxy answers before Koa (a browser that only talks to an extension keeps
 * its session too). A cookie whose ID token is the provider's and close to (or past) its expiry
 * is renewed with the kept refresh token: the request goes on with the new token in its Cookie
 * header, and the browser gets it as a new `svc.token` cookie on whatever answers (the proxy
 * keeps it beside a backend's own cookies, see extensions/forward.ts).
 *
 * Every other request pays one synchronous check (`due`: a decode of the cookie's token, no
 * signature) and gets `undefined` back, so the proxy's fast path does not wait on a promise.
 *
 * The same recheck for every token however it is sent (`tokenRecheck`): the reading of the
 * caller (caller.ts) applies it to a bearer token and to a WebSocket handshake's token, which no
 * cookie can be set for. The request then goes on with the session's renewed (or latest) token,
 * so a bearer copied from a browser session gets the groups of now, and a user the provider no
 * longer has is refused, within one recheck interval, as the cookie is.
 */
import { TLSSocket } from 'node:tls';
import type { Logger } from 'pino';
import { describeFailure } from '../lib/tls-fetch.js';
import { presentedToken } from './caller.js';
import { SESSION_COOKIE, sessionCookieHeader } from './cookies.js';
import type { TokenRecheck } from './caller.js';
import type { BeforeDispatch } from './entry.js';

/** What the renewal needs of oidc/refresh.ts's SessionRefresh, named here so the HTTP edge imports no feature. */
export interface SessionRenewer {
  /** Whether this token is the provider's and due for renewal (no signature check yet). */
  due(token: string): boolean;
  /** The session's token to go on with (renewed, or its latest); undefined when there is nothing to renew with or the provider refused. */
  renew(token: string): Promise<{ readonly idToken: string; readonly expiresAt: number } | undefined>;
}

/**
 * A Feature's `beforeDispatch`: the renewal to finish first, or undefined when none is due (the
 * usual case). What it changes is the BeforeDispatch contract of entry.ts: the request's
 * `svc.token` cookie replaced, and the new cookie set on the response for every way in to keep.
 */
export function ssoRenewal(refresh: SessionRenewer, log: Pick<Logger, 'warn'>, configuredUrl: () => string): BeforeDispatch {
  return (req, res) => {
    const presented = presentedToken(req.headers);
    const token = presented?.via === 'cookie' ? presented.token : undefined;
    if (token === undefined || !refresh.due(token)) return undefined;
    return renew(token);

    async function renew(due: string): Promise<void> {
      // A renewal that cannot be made now (provider or state backend down) is no reason to fail
      // the request: it goes on with the token it came with.
      const renewed = await refresh.renew(due).catch((err: unknown) => {
        log.warn({ err: describeFailure(err) }, 'an SSO session could not be renewed now');
        return undefined;
      });
      if (renewed === undefined) return;
      const secure = req.socket instanceof TLSSocket || configuredUrl().startsWith('https:');
      res.appendHeader('set-cookie', sessionCookieHeader(renewed.idToken, renewed.expiresAt, secure));
      req.headers.cookie = replaceSessionCookie(req.headers.cookie ?? '', renewed.idToken);
    }
  };
}

/**
 * The recheck of caller.ts, for a token however it came: undefined when none is due (no
 * promise, as above), else the token to read the caller from. A renewal that cannot be made now
 * leaves the token as it is, as for the cookie; one the provider refused has revoked it.
 */
export function tokenRecheck(refresh: SessionRenewer, log: Pick<Logger, 'warn'>): TokenRecheck {
  return (token) => {
    if (!refresh.due(token)) return undefined;
    return refresh.renew(token).then(
      (renewed) => renewed?.idToken ?? token,
      (err: unknown) => {
        log.warn({ err: describeFailure(err) }, 'an SSO session could not be renewed now');
        return token;
      },
    );
  };
}

function replaceSessionCookie(header: string, token: string): string {
  const others = header.split(';').map((c) => c.trim()).filter((c) => c !== '' && !c.startsWith(`${SESSION_COOKIE}=`));
  return [...others, `${SESSION_COOKIE}=${token}`].join('; ');
}
