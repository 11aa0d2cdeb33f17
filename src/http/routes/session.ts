/**
 * POST/DELETE /api/v1/session and GET /api/v1/session/userinfo (DESIGN §4). Thin: parse,
 * call one domain function, map the result.
 */
import Router from '@koa/router';
import type { LoginService } from '../../session/login.js';
import type { Principal } from '../../principal.js';
import type { Revocation } from '../../session/revocation.js';
import { readJson, requireString } from '../body.js';
import { clearSessionCookie, setSessionCookie } from '../cookies.js';
import type { AppState } from '../state.js';
import { auditSourceOf } from '../audit-source.js';
import { auditUserOf } from '../audit-caller.js';
import { NO_AUDIT, type AuditTrail } from '../../audit/trail.js';
import { parseTrustedProxies, type TrustedProxies } from '../client-address.js';

export interface SessionRouteDeps {
  readonly login: Pick<LoginService, 'withPassword'>;
  readonly revocation: Pick<Revocation, 'revoke'>;
  /** svc-cm `url` in force: an https url makes the cookie Secure (cookies.ts). */
  readonly configuredUrl: () => string;
  /** Whose X-Forwarded-For names the source address in the audit trail. */
  readonly trustedProxies?: TrustedProxies;
  /** logout (docs/audit.md). */
  readonly audit?: AuditTrail;
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

export function sessionRoutes({ login, revocation, configuredUrl, trustedProxies = parseTrustedProxies(undefined), audit = NO_AUDIT }: SessionRouteDeps): Router<AppState> {
  const router = new Router<AppState>({ prefix: '/api/v1/session' });

  router.post('/', async function createSession(ctx) {
    const body = await readJson(ctx);
    const { token, expiresAt } = await login.withPassword({
      username: requireString(body, 'username'),
      password: requireString(body, 'password'),
      requestId: ctx.state.requestId,
      client: ctx.req.socket.remoteAddress ?? '',
      source: auditSourceOf(ctx.req, ctx.state.requestId, trustedProxies),
    });
    setSessionCookie(ctx, token, expiresAt, configuredUrl());
    ctx.body = { token };
  });

  // Logout never fails for want of a valid token, and the cookie is cleared whatever happens
  // next (the error middleware keeps the header): this browser is logged out even when the
  // revocation cannot be recorded.
  router.delete('/', async function deleteSession(ctx) {
    const { principal } = ctx.state;
    clearSessionCookie(ctx, configuredUrl());
    // A failed shared write rejects with Unavailable saying why (session/logout-refusal.ts): 503, cookie cleared.
    if (principal !== undefined) {
      await revocation.revoke(principal.tokenId, principal.expiresAt);
      audit.record({ category: 'session', type: 'end', action: 'logout', outcome: 'success', user: auditUserOf(principal), source: auditSourceOf(ctx.req, ctx.state.requestId, trustedProxies), svc: { tokenId: principal.tokenId, tokenKind: principal.kind, issuer: principal.issuer } });
    }
    ctx.body = { revoked: principal !== undefined };
  });

  router.get('/userinfo', function showUserInfo(ctx) {
    ctx.body = userInfoView(ctx.state.principal);
  });

  return router;
}
