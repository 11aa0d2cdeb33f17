/**
 * Back-channel logout as a relying party: a verified logout token (logout-token.ts) ends every
 * svc session the provider's session `sid` gave, or, when the token names only `sub`, every
 * session of that user from this provider (registry.ts: revoked at once on every replica, the
 * refresh token forgotten with it). With the bundled provider, a token from one of its upstream
 * `oidc` connectors is taken too (`upstream`): its unverified `iss` and `aud` only choose whose
 * keys and rules verify it, and an issuer svc does not know is refused. Knows nothing of HTTP.
 */
import { decodeJwt, type JWTPayload } from 'jose';
import type { AuditSource } from '../audit/trail.js';
import type { UpstreamLogout } from '../idp/upstream-logout.js';
import type { SessionRegistry } from '../session/registry.js';
import { LogoutTokenRefused, verifyLogoutToken, type LogoutTokenDeps } from './logout-token.js';

export interface BackchannelLogoutDeps {
  readonly token: LogoutTokenDeps;
  readonly sessions: Pick<SessionRegistry, 'endBySid' | 'endFromIssuer'>;
  /** The bundled provider's upstream connector for a token's issuer and audiences, if any. */
  readonly upstream?: (issuer: string, audiences: readonly string[]) => UpstreamLogout | undefined;
}

export interface BackchannelResult {
  /** The issuer whose token it was. */
  readonly issuer: string;
  readonly ended: number;
  readonly sub?: string;
  readonly sid?: string;
}

/** Throws LogoutTokenRefused (a 400) or Unavailable (keys or state cannot be read). */
export async function backchannelLogout(deps: BackchannelLogoutDeps, logoutToken: string, source: AuditSource): Promise<BackchannelResult> {
  const context = { via: 'backchannel', source } as const;
  const claimed = deps.upstream === undefined ? undefined : unverifiedClaims(logoutToken);
  const issuer = deps.token.issuer;
  // Not a JWT at all: the provider's own rules refuse it, as without upstream connectors.
  if (claimed === undefined || claimed.iss === issuer || deps.upstream === undefined) {
    const request = await verifyLogoutToken(deps.token, logoutToken);
    const ended = request.sid !== undefined
      ? await deps.sessions.endBySid(issuer, request.sid, context)
      : await deps.sessions.endFromIssuer(request.sub as string, issuer, context);
    return { issuer, ended, ...named(request) };
  }
  const upstream = typeof claimed.iss === 'string' ? deps.upstream(claimed.iss, audiencesOf(claimed)) : undefined;
  if (upstream === undefined) throw new LogoutTokenRefused('the logout token\'s issuer and audience are not a provider svc takes logout tokens from');
  const { issuer: upstreamIssuer, clientId, keys } = upstream.source;
  const request = await verifyLogoutToken({ issuer: upstreamIssuer, clientId, keys: () => keys(), state: deps.token.state, now: deps.token.now }, logoutToken);
  return { issuer: upstreamIssuer, ended: await upstream.end(request, context), ...named(request) };
}

/** Only to choose the verifier: nothing here is trusted. */
function unverifiedClaims(token: string): JWTPayload | undefined {
  try {
    return decodeJwt(token);
  } catch {
    return undefined;
  }
}

function audiencesOf(payload: JWTPayload): readonly string[] {
  const aud = payload.aud;
  if (typeof aud === 'string') return [aud];
  return Array.isArray(aud) ? aud.filter((a): a is string => typeof a === 'string') : [];
}

function named(request: { readonly sub?: string; readonly sid?: string }): { sub?: string; sid?: string } {
  return { ...(request.sub !== undefined ? { sub: request.sub } : {}), ...(request.sid !== undefined ? { sid: request.sid } : {}) };
}
