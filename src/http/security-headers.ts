/**
 * The headers every HTML page of svc carries: its own login and account pages (src/web/) and the
 * bundled identity provider's pages (src/idp/). Scripts and styles come from svc's own origin
 * only (no inline script or style, so an injected tag runs nothing), no page may be framed
 * (clickjacking), and no page leaks its URL (which may carry a return_url or an interaction id)
 * to another site in a Referer. Pages are never cached: they show who is logged in.
 *
 * `form-action` is left out of the provider's policy: its password form is answered with a
 * redirect to the relying party (the CLI on 127.0.0.1:8085, say), and a SAML connector posts the
 * browser on to the upstream identity provider; Chromium applies form-action to both.
 */
export type PageKind = 'svc' | 'idp';

const COMMON = ["default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"];

const POLICY: Readonly<Record<PageKind, string>> = {
  svc: [...COMMON, "form-action 'self'"].join('; '),
  idp: COMMON.join('; '),
};

/**
 * The headers for an HTML page of the given kind, as name/value pairs. `imageOrigin`: one more
 * origin images may come from (the logo of the application a login is for).
 */
export function pageHeaders(kind: PageKind, imageOrigin?: string): Readonly<Record<string, string>> {
  const policy = imageOrigin === undefined ? POLICY[kind] : POLICY[kind].replace("img-src 'self'", `img-src 'self' ${imageOrigin}`);
  return {
    'Content-Security-Policy': policy,
    'X-Frame-Options': 'DENY',
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'Cross-Origin-Opener-Policy': 'same-origin',
    'Cache-Control': 'no-store',
  };
}

/** Sets pageHeaders(kind) through a Koa-style `set`. */
export function setPageHeaders(ctx: { set(field: Readonly<Record<string, string>>): void }, kind: PageKind, imageOrigin?: string): void {
  ctx.set(pageHeaders(kind, imageOrigin));
}

/**
 * HSTS, on every response (pages, API, the identity provider, proxied extensions unless the
 * backend sends its own) when svc's `url` is https: a browser that once reached svc keeps to
 * https for a year, so a network attacker cannot strip TLS from a later visit and read the
 * session cookie or a login. One year, as browsers' preload lists ask; no `includeSubDomains`:
 * svc does not own the hosts under its own. Browsers ignore the header over plain http, and with
 * an http `url` it is not sent (a local setup must stay reachable over http).
 */
export const STRICT_TRANSPORT_SECURITY = 'max-age=31536000';

/** The Strict-Transport-Security value for svc's `url`, or undefined for an http one. */
export function transportSecurityFor(url: string): string | undefined {
  return url.startsWith('https:') ? STRICT_TRANSPORT_SECURITY : undefined;
}
