/**
 * POST/DELETE /api/v1/session, GET /api/v1/session/userinfo and POST
 * /api/v1/session/webauthn-options (DESIGN §4). Thin: parse, call one domain function, map the
 * result. A body with `challenge` is a login's second step (second-factor/second-step.ts).
 */
import type Router from '@koa/router';
import { allow, declaredRouter } from '../route-access.js';
import { InvalidRequest } from '../../errors.js';
import type { PasskeyLogin } from '../../second-factor/passkey-login.js';
import type { CompleteSecondStep } from '../../second-factor/second-step.js';
import type { LoginService } from '../../session/login.js';
import type { Principal } from '../../principal.js';
import type { Logout } from '../../session/logout.js';
import { auditSourceOf } from '../audit-source.js';
import type { TrustedProxies } from '../client-address.js';
import { optionalString, readJson, requireString, type JsonObject } from '../body.js';
import { clearSessionCookie, setSessionCookie } from '../cookies.js';
import type { RecordLogin } from './record-login.js';
import { ISSUER } from '../../session/tokens.js';
import type { AppState } from '../state.js';

export interface SessionRouteDeps {
  readonly login: Pick<LoginService, 'withPassword'>;
  /** Ends the token sent, by its kind (session/logout.ts). */
  readonly logout: Pick<Logout, 'logout'>;
  readonly recordLogin: RecordLogin;
  readonly trustedProxies: TrustedProxies;
  /** svc-cm `url` in force: an https url makes the cookie Secure (cookies.ts). */
  readonly configuredUrl: () => string;
  /** A login's second step; absent: no account can have a second factor (tests of the password step alone). */
  readonly secondStep?: CompleteSecondStep;
  readonly passkeyLogin?: Pick<PasskeyLogin, 'options'>;
}

export type UserInfo =
  | { readonly loggedIn: false }
  | {
      readonly loggedIn: true;
      /** The rights subject: a local account's name, an SSO user's `sub`. */
      readonly username: string;
      /** An SSO user's readable name (preferred_username, email or name), when the token has one. */
      readonly displayName?: string;
      readonly iss: string;
      readonly groups: readonly string[];
      /** When the presented token ends, in seconds since the epoch; null for an API token without expiry. */
      readonly expiresAt: number | null;
    };

export function userInfoView(principal: Principal | undefined): UserInfo {
  if (principal === undefined) return { loggedIn: false };
  const shown = principal.displayName !== undefined ? { displayName: principal.displayName } : {};
  return { loggedIn: true, username: principal.username, ...shown, iss: principal.issuer, groups: principal.groups, expiresAt: principal.expiresAt ?? null };
}

export function sessionRoutes({ login, logout, recordLogin, trustedProxies, configuredUrl, secondStep, passkeyLogin }: SessionRouteDeps): Router<AppState> {
  const router = declaredRouter('/api/v1/session');

  router.post('/', allow('anyone', 'a password, or a login\'s challenge and its second factor'), async function createSession(ctx) {
    const body = await readJson(ctx);
    const challenge = optionalString(body, 'challenge');
    if (challenge !== undefined && secondStep !== undefined) {
      const done = await secondStep({ challenge, answer: secondFactorAnswer(body), source: auditSourceOf(ctx.req, ctx.state.requestId, trustedProxies) });
      await recordLogin(ctx.req, { id: done.tokenId, account: done.username, kind: 'local', issuer: ISSUER, expiresAt: done.expiresAt }, false);
      setSessionCookie(ctx, done.token, done.expiresAt, configuredUrl());
      ctx.body = { token: done.token };
      return;
    }
    const username = requireString(body, 'username');
    const { token, tokenId, expiresAt } = await login.withPassword({
      username,
      password: requireString(body, 'password'),
      requestId: ctx.state.requestId,
      client: ctx.req.socket.remoteAddress ?? '',
      source: auditSourceOf(ctx.req, ctx.state.requestId, trustedProxies),
    });
    await recordLogin(ctx.req, { id: tokenId, account: username, kind: 'local', issuer: ISSUER, expiresAt }, false);
    setSessionCookie(ctx, token, expiresAt, configuredUrl());
    ctx.body = { token };
  });

  // Logout never fails for want of a valid token, and the cookie is cleared whatever happens
  // next (the error middleware keeps the header): this browser is logged out even when the
  // revocation cannot be recorded.
  router.delete('/', allow('anyone', 'ends the token sent, if any'), async function deleteSession(ctx) {
    const { principal } = ctx.state;
    clearSessionCookie(ctx, configuredUrl());
    // A failed shared write rejects with Unavailable saying why (session/logout-refusal.ts): 503,
    // cookie cleared. An API token's record is deleted from the config store (session/logout.ts).
    if (principal !== undefined) await logout.logout(principal, auditSourceOf(ctx.req, ctx.state.requestId, trustedProxies));
    ctx.body = { revoked: principal !== undefined };
  });

  if (passkeyLogin !== undefined) {
    router.post('/webauthn-options', allow('anyone', 'a login\'s challenge'), async function webauthnOptions(ctx) {
      const body = await readJson(ctx);
      ctx.set('Cache-Control', 'no-store');
      ctx.body = await passkeyLogin.options(requireString(body, 'challenge'));
    });
  }

  router.get('/userinfo', allow('anyone', 'shows the token sent, if any'), function showUserInfo(ctx) {
    ctx.body = userInfoView(ctx.state.principal);
  });

  return router;
}

/** `{code}` or `{webauthn}`, exactly one. */
function secondFactorAnswer(body: JsonObject): { readonly code: string } | { readonly webauthn: unknown } {
  const code = optionalString(body, 'code');
  const webauthn = body['webauthn'];
  if ((code === undefined) === (webauthn === undefined || webauthn === null)) {
    throw new InvalidRequest("a second step sends 'challenge' with exactly one of 'code' (an authenticator or recovery code) and 'webauthn' (a passkey's answer)");
  }
  return code !== undefined ? { code } : { webauthn };
}
