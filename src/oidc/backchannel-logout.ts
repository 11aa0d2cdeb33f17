/**
 * Back-channel logout as a relying party: a verified logout token (logout-token.ts) ends every
 * svc session the provider's session `sid` gave, or, when the token names only `sub`, every
 * session of that user from this provider (registry.ts: revoked at once on every replica, the
 * refresh token forgotten with it). Knows nothing of HTTP.
 */
import type { AuditSource } from '../audit/trail.js';
import type { SessionRegistry } from '../session/registry.js';
import { verifyLogoutToken, type LogoutTokenDeps } from './logout-token.js';

export interface BackchannelLogoutDeps {
  readonly token: LogoutTokenDeps;
  readonly sessions: Pick<SessionRegistry, 'endBySid' | 'endFromIssuer'>;
}

export interface BackchannelResult {
  readonly ended: number;
  readonly sub?: string;
  readonly sid?: string;
}

/** Throws LogoutTokenRefused (a 400) or Unavailable (keys or state cannot be read). */
export async function backchannelLogout(deps: BackchannelLogoutDeps, logoutToken: string, source: AuditSource): Promise<BackchannelResult> {
  const request = await verifyLogoutToken(deps.token, logoutToken);
  const context = { via: 'backchannel', source } as const;
  const issuer = deps.token.issuer;
  const ended = request.sid !== undefined
    ? await deps.sessions.endBySid(issuer, request.sid, context)
    : await deps.sessions.endFromIssuer(request.sub as string, issuer, context);
  return { ended, ...(request.sub !== undefined ? { sub: request.sub } : {}), ...(request.sid !== undefined ? { sid: request.sid } : {}) };
}
