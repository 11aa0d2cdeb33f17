/**
 * POST/DELETE /api/v1/session and GET /api/v1/session/userinfo (DESIGN §4). Thin: parse,
 * call one domain function, map the result.
 */
import Router from '@koa/router';
import type { LoginService } from '../../session/login.js';
import type { Principal } from '../../session/principal.js';
import type { Revocation } from '../../session/revocation.js';
import { readJson, requireString } from '../body.js';
import { clearSessionCookie, setSessionCookie } from '../cookies.js';
import type { AppState } from '../state.js';

export interface SessionRouteDeps {
  readonly login: Pick<LoginService, 'withPassword'>;
  readonly revocation: Pick<Revocation, 'revoke'>;
}

export type UserInfo =
  | { readonly loggedIn: false }
  | { readonly loggedIn: true; readonly username: string; readonly iss: string; readonly groups: readonly string[] };

export function userInfoView(principal: Principal | undefined): UserInfo {
  if (principal === undefined) return { loggedIn: false };
  return { loggedIn: true, username: principal.username, iss: principal.issuer, groups: principal.groups };
}

export function sessionRoutes({ login, revocation }: SessionRouteDeps): Router<AppState> {
  const router = new Router<AppState>({ prefix: '/api/v1/session' });

  router.post('/', async function createSession(ctx) {
    const body = await readJson(ctx);
    const { token, expiresAt } = await login.withPassword({
      username: requireString(body, 'username'),
      password: requireString(body, 'password'),
    });
    setSessionCookie(ctx, token, expiresAt);
    ctx.body = { token };
  });

  // Logout never fails for want of a valid token: the cookie is cleared either way.
  router.delete('/', async function deleteSession(ctx) {
    const { principal } = ctx.state;
    if (principal !== undefined) await revocation.revoke(principal.tokenId, principal.expiresAt);
    clearSessionCookie(ctx);
    ctx.body = { revoked: principal !== undefined };
  });

  router.get('/userinfo', function showUserInfo(ctx) {
    ctx.body = userInfoView(ctx.state.principal);
  });

  return router;
}
