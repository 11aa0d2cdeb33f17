/**
 * GET /auth/login, /auth/callback (and /pkce/verify, the same for a public client),
 * POST /auth/logout (its confirmation page, GET, is svc's own page: src/web/routes.ts; the renewal
 * of an SSO session is in ../sso-renewal.ts).
 * Thin: cookies and redirects here, everything else in src/oidc/.
 */
import type { LoginOutcomes } from '../../session/login-outcomes.js';
import type Router from '@koa/router';
import { allow, declaredRouter } from '../route-access.js';
import type Koa from 'koa';
import type { Authenticator } from '../../session/authenticate.js';
import type { Logout } from '../../session/logout.js';
import { auditSourceOf } from '../audit-source.js';
import type { TrustedProxies } from '../client-address.js';
import type { RecordLogin } from './record-login.js';
import { PermissionDenied, Unauthenticated } from '../../errors.js';
import { isClaimRuleRefused } from '../../claims/evaluate.js';
import { finishLogin, ReservedSubject, type CallbackDeps, type FinishedLogin } from '../../oidc/callback.js';
import { LOGIN_STATE_COOKIE, LOGIN_STATE_TTL_MS, openLoginState, redirectUri, startLogin, type LoginStartDeps, type LoginState } from '../../oidc/login-start.js';
import { logoutRedirect } from '../../oidc/logout.js';
import type { SessionRefresh } from '../../oidc/refresh.js';
import { clearSessionCookie, setSessionCookie } from '../cookies.js';
import { isOwnOrigin } from '../same-origin.js';
import { printable } from '../../lib/printable.js';
import type { AppState } from '../state.js';

export interface SsoRouteDeps {
  readonly login: LoginStartDeps;
  readonly callback: CallbackDeps;
  readonly refresh: SessionRefresh;
  readonly authenticator: Pick<Authenticator, 'authenticate'>;
  /** Ends the token sent, by its kind (session/logout.ts). */
  readonly logout: Pick<Logout, 'logout'>;
  readonly recordLogin: RecordLogin;
  readonly trustedProxies: TrustedProxies;
  readonly logoutURL: () => string | undefined;
  /** Counts each callback's outcome (svc_login_outcomes_total, method sso). */
  readonly outcomes?: LoginOutcomes;
}

/** A connector id as idp.config allows it; anything else is not passed on. */
const CONNECTOR_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/**
 * A browser that navigated here (it asks for HTML) and whose login was refused gets the login
 * page with a message instead of a JSON error; API clients (and tests with fetch) keep the 401.
 */
function wantsPage(ctx: Koa.ParameterizedContext<AppState>, err: unknown): boolean {
  return err instanceof Unauthenticated && ctx.accepts('json', 'html') === 'html';
}

/** /login?error=<why>&return_url=<where the login was going>: the page says what happened (docs/ui.md). */
function backToLoginPage(ctx: Koa.ParameterizedContext<AppState>, error: 'sso_failed' | 'sso_expired' | 'sso_reserved_name', returnUrl: string | undefined): void {
  const query = new URLSearchParams({ error, ...(returnUrl !== undefined ? { return_url: returnUrl } : {}) });
  ctx.set('Cache-Control', 'no-store');
  ctx.redirect(`/login?${query.toString()}`);
}

export function ssoRoutes(deps: SsoRouteDeps): Router<AppState> {
  const router = declaredRouter();

  router.get('/auth/login', allow('anyone'), async function beginSsoLogin(ctx) {
    const returnUrl = typeof ctx.query['return_url'] === 'string' ? ctx.query['return_url'] : undefined;
    const connector = ctx.query['connector_id'];
    const start = await startLogin(deps.login, returnUrl, typeof connector === 'string' && CONNECTOR_ID.test(connector) ? connector : undefined);
    ctx.cookies.set(LOGIN_STATE_COOKIE, start.cookie, {
      httpOnly: true, sameSite: 'lax', secure: ctx.secure, path: '/', maxAge: LOGIN_STATE_TTL_MS, overwrite: true,
    });
    ctx.redirect(start.authorizationUrl);
  });

  async function callback(ctx: Koa.ParameterizedContext<AppState>): Promise<void> {
    let login: LoginState;
    try {
      login = openLoginState(deps.login, ctx.cookies.get(LOGIN_STATE_COOKIE));
    } catch (err: unknown) {
      ctx.state.log.info({ reason: (err as Error).message }, 'SSO login failed');
      deps.outcomes?.record('sso', '', 'expired', { detail: (err as Error).message, source: { requestId: ctx.state.requestId }, issuer: deps.callback.client.provider.issuer });
      if (!wantsPage(ctx, err)) throw err;
      return backToLoginPage(ctx, 'sso_expired', undefined);
    }
    // The URL as the provider was told it (svc's configured url), not as this request reached us.
    const url = new URL(`${redirectUri(deps.login.serverUrl(), deps.callback.client.provider.redirectPath)}?${ctx.querystring}`);
    ctx.cookies.set(LOGIN_STATE_COOKIE, '', { httpOnly: true, sameSite: 'lax', secure: ctx.secure, path: '/', expires: new Date(0), overwrite: true });
    let done: FinishedLogin;
    try {
      done = await finishLogin(deps.callback, login, url);
    } catch (err: unknown) {
      // Once, at info, however the answer goes (a page or a JSON error); the request id is in the logger.
      if (err instanceof ReservedSubject) ctx.state.log.warn({ sub: printable(err.sub), issuer: err.issuer, reason: err.reason }, err.message);
      else if (isClaimRuleRefused(err)) ctx.state.log.info({ reason: err.reason, issuer: deps.callback.client.provider.issuer }, `SSO login refused by oidc.config's claim rules: ${err.message}`);
      else ctx.state.log.info({ reason: (err as Error).message, issuer: deps.callback.client.provider.issuer }, 'SSO login failed');
      const refused = err instanceof ReservedSubject || isClaimRuleRefused(err);
      const detail = isClaimRuleRefused(err) ? `${err.message} (${err.reason})` : (err as Error).message;
      deps.outcomes?.record('sso', '', refused ? 'refused' : err instanceof Unauthenticated ? 'invalid-token' : 'other', { detail, source: { requestId: ctx.state.requestId }, issuer: deps.callback.client.provider.issuer });
      if (!wantsPage(ctx, err)) throw err;
      return backToLoginPage(ctx, err instanceof ReservedSubject ? 'sso_reserved_name' : 'sso_failed', login.returnUrl);
    }
    await deps.recordLogin(ctx.req, { id: done.tokenId, account: done.subject, kind: 'sso', issuer: done.issuer, expiresAt: done.expiresAt, ...(done.sid !== undefined ? { sid: done.sid } : {}) }, true);
    setSessionCookie(ctx, done.idToken, done.expiresAt, deps.login.serverUrl());
    ctx.state.log.info({ sub: done.subject, username: done.username, name: done.displayName, issuer: deps.callback.client.provider.issuer }, 'SSO login');
    deps.outcomes?.record('sso', '', 'ok', { user: done.displayName ?? done.username, userId: done.subject, source: { requestId: ctx.state.requestId }, issuer: deps.callback.client.provider.issuer });
    ctx.redirect(done.returnUrl);
  }
  router.get('/auth/callback', allow('anyone', 'the login\'s state cookie from the browser that started it'), callback);
  router.get('/pkce/verify', allow('anyone', 'the login\'s state cookie from the browser that started it'), callback);

  // As DELETE /api/v1/session: the cookie is cleared whatever happens, the token revoked on
  // every replica until it expires, and it can no longer be renewed. A POST from svc's own origin
  // only (issue 21): a GET, or a form another site posts, would let any page log the user out.
  // Refused outright, not merely without the cookie's identity, since clearing the cookie is
  // itself the harm.
  router.post('/auth/logout', allow('anyone', 'ends the token sent, if any'), async function ssoLogout(ctx) {
    const origin = ctx.get('origin');
    if (!isOwnOrigin(origin === '' ? undefined : origin, { host: ctx.host, protocol: ctx.protocol }, deps.login.serverUrl())) {
      throw new PermissionDenied("logging out takes a POST from svc's own pages: open /auth/logout and confirm");
    }
    const { principal, token } = ctx.state;
    clearSessionCookie(ctx, deps.login.serverUrl());
    let idToken: string | undefined;
    if (token !== undefined) {
      if (principal !== undefined) {
        await deps.refresh.forget(principal.tokenId);
        const source = auditSourceOf(ctx.req, ctx.state.requestId, deps.trustedProxies);
        await deps.logout.logout(principal, source);
        if (principal.kind === 'sso' && principal.issuer === deps.callback.client.provider.issuer) idToken = token;
      }
    }
    // 303: the browser leaves the POST behind on its way to the provider's logout page.
    ctx.status = 303;
    ctx.redirect(logoutRedirect({ logoutURL: deps.logoutURL(), serverUrl: deps.login.serverUrl(), idToken }));
  });

  return router;
}
