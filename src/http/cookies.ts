/**
 * The session cookie `svc.token`: HttpOnly (scripts never read it), SameSite=Lax (not sent on
 * cross-site POSTs), Secure when the request came over https (directly, or through a trusted
 * proxy's X-Forwarded-Proto), path `/`, expiring with the token. A JWT of ours is far below
 * the 4 KB cookie limit, so no chunking (Argo CD needs it for IdP tokens in the cookie).
 */
import type Koa from 'koa';

export const SESSION_COOKIE = 'svc.token';

export function setSessionCookie(ctx: Koa.Context, token: string, expiresAt: number): void {
  ctx.cookies.set(SESSION_COOKIE, token, {
    httpOnly: true,
    sameSite: 'lax',
    secure: ctx.secure,
    path: '/',
    expires: new Date(expiresAt * 1000),
    overwrite: true,
  });
}

export function clearSessionCookie(ctx: Koa.Context): void {
  ctx.cookies.set(SESSION_COOKIE, '', {
    httpOnly: true,
    sameSite: 'lax',
    secure: ctx.secure,
    path: '/',
    expires: new Date(0),
    overwrite: true,
  });
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
