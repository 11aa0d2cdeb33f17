/**
 * The session cookie `svc.token`: HttpOnly (scripts never read it), SameSite=Lax (not sent on
 * cross-site POSTs), path `/`, expiring with the token. Secure when svc's configured `url` is
 * https or the request came over TLS: behind an ingress that ends TLS, svc sees plain http,
 * and X-Forwarded-Proto is never trusted (anyone can send it), so the configured `url` is what
 * says browsers reach svc over https. A JWT of ours is far below the 4 KB cookie limit, so no
 * chunking (Argo CD needs it for IdP tokens in the cookie).
 */
import type Koa from 'koa';

export const SESSION_COOKIE = 'svc.token';

/** `configuredUrl`: the `url` of svc-cm in force. */
export function setSessionCookie(ctx: Koa.Context, token: string, expiresAt: number, configuredUrl: string): void {
  ctx.cookies.set(SESSION_COOKIE, token, {
    httpOnly: true,
    sameSite: 'lax',
    secure: isSecure(ctx, configuredUrl),
    path: '/',
    expires: new Date(expiresAt * 1000),
    overwrite: true,
  });
}

/**
 * The Set-Cookie value of `setSessionCookie`, for a response answered outside Koa (a renewal
 * before the extension proxy): the same attributes, in the `cookies` module's spelling.
 */
export function sessionCookieHeader(token: string, expiresAt: number, secure: boolean): string {
  return `${SESSION_COOKIE}=${token}; path=/; expires=${new Date(expiresAt * 1000).toUTCString()}; samesite=lax${secure ? '; secure' : ''}; httponly`;
}

export function clearSessionCookie(ctx: Koa.Context, configuredUrl: string): void {
  ctx.cookies.set(SESSION_COOKIE, '', {
    httpOnly: true,
    sameSite: 'lax',
    secure: isSecure(ctx, configuredUrl),
    path: '/',
    expires: new Date(0),
    overwrite: true,
  });
}

/**
 * Koa's `cookies` refuses to set a Secure cookie on a request it sees as plain http, so the
 * cookie jar is told the connection is secure when the configured url says browsers use https.
 */
function isSecure(ctx: Koa.Context, configuredUrl: string): boolean {
  if (ctx.secure) return true;
  if (!configuredUrl.startsWith('https:')) return false;
  ctx.cookies.secure = true;
  return true;
}

/** As the `cookies` module reads an unsigned cookie (Koa's ctx.cookies), so both paths agree. */
const SESSION_COOKIE_PATTERN = /(?:^|;) *svc\.token=([^;]*)/;

/** The session token in a Cookie header; undefined when absent or empty. */
export function sessionCookieOf(header: string | undefined): string | undefined {
  if (header === undefined || header === '') return undefined;
  let value = SESSION_COOKIE_PATTERN.exec(header)?.[1];
  if (value?.startsWith('"') === true) value = value.slice(1, -1);
  return value === undefined || value === '' ? undefined : value;
}
