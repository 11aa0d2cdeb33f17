/**
 * POST /login: the login page's password form, posted as a plain form. The page's script
 * normally sends it as JSON to /api/v1/session and never lets the form submit itself; this is
 * where the form goes when the script does not (it failed after showing the form, or was
 * blocked), so that the password travels in a POST body and never in a URL, a log line or the
 * history, as a form without `method="post"` would put it.
 *
 * The same login as POST /api/v1/session (throttle, lockout, cookie). A form can be posted by
 * any site without a preflight, so one from elsewhere could log the browser in as someone else
 * (login CSRF): the form is taken only from svc's own origin (same-origin.ts), and a request
 * without Origin is refused (the page sets `referrer same-origin`, so browsers send it). The
 * answer is a redirect either way, never a page holding the password: on success to the
 * page's return_url (safeReturnUrl: no open redirect), else back to /login saying why.
 */
import type Router from '@koa/router';
import { allow, declaredRouter } from '../route-access.js';
import type Koa from 'koa';
import { InvalidRequest, PermissionDenied, SvcError } from '../../errors.js';
import { FormTooLarge, readForm } from '../../idp/login/form-body.js';
import { safeReturnUrl } from '../../oidc/return-url.js';
import type { LoginService } from '../../session/login.js';
import { setSessionCookie } from '../cookies.js';
import type { RecordLogin } from './record-login.js';
import { ISSUER } from '../../session/tokens.js';
import { isOwnOrigin } from '../same-origin.js';
import { auditSourceOf } from '../audit-source.js';
import { parseTrustedProxies, type TrustedProxies } from '../client-address.js';
import type { AppState } from '../state.js';

export interface LoginFormRouteDeps {
  readonly login: Pick<LoginService, 'withPassword'>;
  readonly recordLogin: RecordLogin;
  /** svc-cm `url` in force: the origin forms are taken from, and the cookie's Secure flag. */
  readonly configuredUrl: () => string;
  /** Whose X-Forwarded-For names the source address in the audit trail. */
  readonly trustedProxies?: TrustedProxies;
}

/** A username, a password, a return URL and a little more: far below this. */
const MAX_FORM_BYTES = 8 * 1024;

/** Refusals the login page explains itself (web/src/login.ts); anything else is an error answer. */
const SHOWN_ON_PAGE = new Set(['invalid_credentials', 'too_many_attempts', 'too_many_requests', 'invalid_request', 'second_factor_required']);

export function loginFormRoutes({ login, recordLogin, configuredUrl, trustedProxies = parseTrustedProxies(undefined) }: LoginFormRouteDeps): Router<AppState> {
  const router = declaredRouter();

  router.post('/login', allow('anyone', 'a password'), async function postLoginForm(ctx) {
    const origin = ctx.get('origin');
    if (!isOwnOrigin(origin === '' ? undefined : origin, { host: ctx.host, protocol: ctx.protocol }, configuredUrl())) {
      throw new PermissionDenied("the login form is taken only from svc's own login page: open /login and log in there");
    }
    const form = await readLoginForm(ctx);
    const returnUrl = safeReturnUrl(form.get('return_url') ?? undefined, configuredUrl());
    ctx.set('Cache-Control', 'no-store');
    ctx.status = 303;   // the browser leaves the POST behind: a reload does not post the password again
    try {
      const username = form.get('username') ?? '';
      const { token, tokenId, expiresAt } = await login.withPassword({
        username,
        password: form.get('password') ?? '',
        requestId: ctx.state.requestId,
        client: ctx.req.socket.remoteAddress ?? '',
        source: auditSourceOf(ctx.req, ctx.state.requestId, trustedProxies),
      });
      await recordLogin(ctx.req, { id: tokenId, account: username, kind: 'local', issuer: ISSUER, expiresAt }, true);
      setSessionCookie(ctx, token, expiresAt, configuredUrl());
      ctx.redirect(returnUrl);
    } catch (err: unknown) {
      if (!(err instanceof SvcError) || !SHOWN_ON_PAGE.has(err.code)) throw err;
      ctx.redirect(`/login?${new URLSearchParams({ error: err.code, return_url: returnUrl }).toString()}`);
    }
  });

  return router;
}

async function readLoginForm(ctx: Koa.ParameterizedContext<AppState>): Promise<URLSearchParams> {
  if (!ctx.is('application/x-www-form-urlencoded')) throw new InvalidRequest('the login form must be posted as application/x-www-form-urlencoded');
  try {
    return await readForm(ctx.req, MAX_FORM_BYTES);
  } catch (err: unknown) {
    if (err instanceof FormTooLarge) throw new InvalidRequest(`the login form is larger than ${MAX_FORM_BYTES} bytes`, { cause: err });
    throw err;
  }
}
