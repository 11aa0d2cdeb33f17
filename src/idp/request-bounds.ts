/**
 * What anonymous requests may make the provider keep (docs/idp.md "Bounds"):
 * - the size of an authorization or device authorization request (its query or form body),
 *   which is what an interaction or device code stores: MAX_AUTHORIZATION_REQUEST_BYTES;
 * - the bytes pending logins may hold, per source address and in all (./storage/pending-bound.ts:
 *   interactions and device codes in the adapter, connector transactions in the login flow);
 * - no session for a view of the device page: oidc-provider keeps the page's CSRF secret in a
 *   new session (24 h in the state backend per anonymous GET). svc serves that page itself,
 *   with its CSRF secret derived from a random value in a cookie (`svc.device`, path-scoped),
 *   and hands the same secret to oidc-provider's own check when the form is posted
 *   (withDeviceXsrf): a forged post without the cookie has no secret and is refused as before.
 *   Its page is svc's (CSP, no inline script), also when the link carries `user_code`, where
 *   oidc-provider answered with an auto-submitting form and an inline script.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type Provider from 'oidc-provider';
import type { KoaContextWithOIDC } from 'oidc-provider';
import { setPageHeaders } from '../http/security-headers.js';
import { readInt, type Env, type WarnLog } from '../session/limits.js';
import { deviceInputPage, errorPage, escapeHtml } from './login/pages.js';
import type { PendingLimits } from './storage/pending-bound.js';

/** Far above what svc's clients send (under 1 KB), far below oidc-provider's 56 KB body cap. */
export const MAX_AUTHORIZATION_REQUEST_BYTES = 4096;
/**
 * Bytes of pending logins (interactions, device codes, connector transactions) all sources
 * together may hold: 32 MiB as charged, about 50 MiB of a replica's heap with the memory state
 * (docs/idp.md), well inside the 512 MiB the deployment gives svc; 20,000 pending logins of a
 * usual size, 5,900 of the largest request taken.
 */
export const DEFAULT_PENDING_BYTES = 32 * 1024 * 1024;
/** Bytes one source address (an IPv6 /64) may hold: about 1,300 usual pending logins at once. */
export const DEFAULT_PENDING_BYTES_PER_SOURCE = 2 * 1024 * 1024;

/** The bound on pending logins, from SVC_IDP_PENDING_BYTES and SVC_IDP_PENDING_BYTES_PER_SOURCE. */
export function readPendingLimits(env: Env, log: WarnLog): PendingLimits {
  const totalBytes = readInt(env, log, 'SVC_IDP_PENDING_BYTES', DEFAULT_PENDING_BYTES, 64 * 1024);
  const perSourceBytes = readInt(env, log, 'SVC_IDP_PENDING_BYTES_PER_SOURCE', DEFAULT_PENDING_BYTES_PER_SOURCE, 16 * 1024);
  if (perSourceBytes > totalBytes) {
    log.warn({ variable: 'SVC_IDP_PENDING_BYTES_PER_SOURCE', value: perSourceBytes, total: totalBytes },
      `SVC_IDP_PENDING_BYTES_PER_SOURCE=${perSourceBytes} is above SVC_IDP_PENDING_BYTES=${totalBytes}; one source may hold the whole bound`);
  }
  return { totalBytes, perSourceBytes };
}

export const DEVICE_COOKIE = 'svc.device';
/** A user code a link may carry: oidc-provider's codes are 8-9 characters; anything longer is not one. */
const MAX_USER_CODE_LENGTH = 64;

type Next = () => Promise<void>;

/** Refuses an authorization request (GET or POST) or device authorization request that is too large to keep. */
export function limitRequestSize(ctx: KoaContextWithOIDC, next: Next): Promise<void> {
  const isAuth = ctx.path === '/auth';
  const isDevice = ctx.path === '/device/auth';
  if (!isAuth && !isDevice) return next();
  const length = ctx.method === 'POST' ? Number(ctx.get('content-length') || Number.NaN) : Buffer.byteLength(ctx.querystring);
  if (!(length <= MAX_AUTHORIZATION_REQUEST_BYTES)) {
    const description = `the ${isDevice ? 'device authorization' : 'authorization'} request is over ${MAX_AUTHORIZATION_REQUEST_BYTES} bytes (or has no Content-Length)`;
    ctx.status = ctx.method === 'POST' ? 413 : 414;
    ctx.set('Connection', 'close');
    if (isDevice) {
      ctx.body = { error: 'invalid_request', error_description: description };
      return Promise.resolve();
    }
    ctx.type = 'html';
    setPageHeaders(ctx, 'idp');
    ctx.body = errorPage('Login failed', `The login request is too large: ${description}. Go back to the application and try again.`);
    return Promise.resolve();
  }
  return next();
}

const xsrfOf = (key: string, nonce: string): string => createHmac('sha256', key).update(`idp device xsrf:${nonce}`).digest('hex');

/** GET /device: svc's page, with no session behind it. */
export function serveDevicePage(issuer: string, key: string, secure: boolean) {
  return async function devicePage(ctx: KoaContextWithOIDC, next: Next): Promise<void> {
    if (ctx.method !== 'GET' || ctx.path !== '/device') return next();
    const nonce = randomBytes(24).toString('base64url');
    ctx.cookies.set(DEVICE_COOKIE, nonce, { httpOnly: true, sameSite: 'lax', secure, path: new URL(`${issuer}/device`).pathname, signed: false, overwrite: true });
    const raw = ctx.query['user_code'];
    const code = typeof raw === 'string' && raw.length <= MAX_USER_CODE_LENGTH ? raw : '';
    // The provider's form as oidc-provider writes it, which pages.ts relabels.
    const form = `<form id="op.deviceInputForm" novalidate method="post" action="${escapeHtml(`${issuer}/device`)}">
<input type="hidden" name="xsrf" value="${xsrfOf(key, nonce)}"/>
<input type="text" name="user_code" value="${escapeHtml(code)}"/>
</form>`;
    ctx.status = 200;
    ctx.type = 'html';
    setPageHeaders(ctx, 'idp');
    ctx.body = deviceInputPage(form, undefined);
  };
}

/**
 * A posted device form's CSRF secret, from its cookie, where oidc-provider looks for it (the
 * session's `state`). Without the cookie the secret is a random one of the request, which no
 * form carries: the post is refused, as a post without the provider's session was. The state
 * is fixed for the request: oidc-provider's error page writes a new random secret there, which
 * would not match the cookie; and a session never stored is not "persisted" after an error
 * (oidc-provider would throw for it and answer 500).
 */
export function withDeviceXsrf(provider: Provider, key: string): void {
  const Session = provider.Session;
  const get = Session.get.bind(Session);
  Session.get = async function getWithDeviceXsrf(ctx) {
    const session = await get(ctx);
    if (ctx.method !== 'POST' || ctx.path !== '/device') return session;
    const nonce = ctx.cookies.get(DEVICE_COOKIE);
    const state = { secret: nonce === undefined || nonce === '' ? randomBytes(24).toString('hex') : xsrfOf(key, nonce) };
    Object.defineProperty(session, 'state', { configurable: true, enumerable: true, get: () => state, set: () => undefined });
    const persist = session.persist.bind(session);
    Object.defineProperty(session, 'persist', { configurable: true, value: async () => (typeof session.exp === 'number' ? persist() : undefined) });
    return session;
  };
}
