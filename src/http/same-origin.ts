/**
 * Cross-site request forgery. Browsers attach the `svc.token` cookie (SameSite=Lax) to requests
 * sent by pages of the same site: sibling subdomains (`evil.example.com` next to
 * `svc.example.com`) and other ports of the same host. So the cookie signs in a request that may
 * change something (any method but GET, HEAD, OPTIONS and TRACE) only when it comes from svc's
 * own origin: the configured `url`, or the scheme and host the request was sent to. Browsers send `Origin`
 * on every such request (fetch, forms); one without it, or from elsewhere, gets no identity from
 * the cookie and so a 401 wherever a caller is needed. Not refusing outright keeps public
 * endpoints working for a browser that happens to hold a cookie (a login form posted from an
 * identity provider on a sibling subdomain, say). A bearer token cannot be planted by another
 * page, so it needs no check. WebSocket handshakes (GETs) have their own, stricter rule
 * (src/extensions/websocket.ts).
 */
import { Unauthenticated } from '../errors.js';
import { printable } from '../lib/printable.js';

export function isSafeMethod(method: string | undefined): boolean {
  return method === 'GET' || method === 'HEAD' || method === 'OPTIONS' || method === 'TRACE';
}

/** Where a request was sent: its Host header and the protocol it came over ('http' or 'https'). */
export interface RequestOrigin {
  readonly host: string | undefined;
  readonly protocol: string;
}

/**
 * Whether an Origin header names svc itself: the configured url's origin, or the scheme and Host
 * the request came with. The scheme counts: a page on http://svc.example.com is not svc on https
 * (another server on port 80, or a network attacker's injection). Behind a proxy that ends TLS,
 * svc sees http, so such setups rely on the configured `url`, as SSO redirects do anyway.
 */
export function isOwnOrigin(origin: string | undefined, request: RequestOrigin, configuredUrl: string): boolean {
  if (origin === undefined || !URL.canParse(origin)) return false;
  const parsed = new URL(origin);
  if (parsed.origin === new URL(configuredUrl).origin) return true;
  return request.host !== undefined && parsed.protocol === `${request.protocol}:` && parsed.host === request.host.toLowerCase();
}

/** Why the cookie does not sign in this request (see the module comment); undefined when it does. */
export function cookieRefusal(method: string | undefined, origin: string | undefined, request: RequestOrigin, configuredUrl: string): Unauthenticated | undefined {
  if (isSafeMethod(method) || isOwnOrigin(origin, request, configuredUrl)) return undefined;
  const from = origin === undefined || origin === '' ? 'a request without Origin' : `origin '${printable(origin)}'`;
  return new Unauthenticated(`the svc.token cookie does not sign in a ${printable(method ?? '')} from ${from}: send it from svc's own pages, or send a bearer token`);
}
