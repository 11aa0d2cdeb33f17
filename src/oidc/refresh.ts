/**
 * Refresh instead of logout: the provider's refresh token (given when offline_access was
 * asked for) is kept in the state backend, sealed, under the session's token id. A session
 * whose ID token is about to expire (or has expired), or whose groups were last read from the
 * provider more than `users.sso.groupsRecheck` ago, is renewed with it: the new ID token, with
 * the groups the provider (or the bundled provider's connector) gives now, becomes the new
 * cookie. The refresh token is taken (read and removed in one step), so two replicas never
 * spend it twice.
 *
 * A refresh the provider refuses (`invalid_grant`: the user removed upstream, the grant
 * revoked) ends the session at once: its token id is revoked on every replica. A provider that
 * cannot answer (down, `temporarily_unavailable`, a connector's directory down) ends nothing:
 * the refresh token is kept again, the session goes on with the groups of its last check, and
 * it is tried again at most every RETRY_MS (never on every request).
 */
import * as client from 'openid-client';
import { decodeJwt } from 'jose';
import type { Logger } from 'pino';
import type { StateBackend } from '../state/state.js';
import type { ProviderClient } from './client.js';
import { describeFailure } from '../lib/tls-fetch.js';
import type { Sealer } from '../lib/sealed.js';
import type { AuditTrail } from '../audit/trail.js';
import { BoundedCache } from '../lib/bounded-cache.js';
import type { UserInfoGroups } from './userinfo-groups.js';
import type { SsoVerifier } from './sso-verifier.js';

const REFRESH_KEY = (tokenId: string): string => `sso:refresh:${tokenId}`;
/**
 * A session is renewed once its ID token has less than this left, or less than half its life
 * for short-lived tokens (else every request would renew them).
 */
export const REFRESH_BEFORE_MS = 5 * 60_000;
/** After a renewal that could not be made (or had nothing to renew with), no new try before this. */
export const RETRY_MS = 30_000;
const TRIES_REMEMBERED = 10_000;

export interface SessionRefreshDeps {
  readonly client: ProviderClient;
  readonly verifier: SsoVerifier;
  readonly state: StateBackend;
  readonly sealer: () => Sealer;
  /** How long a kept refresh token may serve: svc's session duration. */
  readonly keepMs: () => number;
  readonly userInfo: UserInfoGroups | undefined;
  /** The revocation list: a logged-out session is never renewed, whoever holds its token. */
  readonly isRevoked: (tokenId: string) => Promise<boolean>;
  /** Ends a session the provider refused to renew, on every replica. */
  readonly revoke: (tokenId: string, expiresAt: number) => Promise<void>;
  /** `users.sso.groupsRecheck`: a session older than this is renewed to read its groups again. */
  readonly recheckMs: () => number;
  readonly audit: AuditTrail;
  readonly log: Pick<Logger, 'info' | 'warn'>;
  readonly now: () => number;
  /** The session registry follows the session to its new token (registry.ts `renewed`). */
  readonly onRenewed?: (sub: string, oldTokenId: string, next: { readonly id: string; readonly exp: number }) => Promise<void>;
}

export interface Renewed {
  readonly idToken: string;
  readonly expiresAt: number;
}

export interface SessionRefresh {
  keep(tokenId: string, refreshToken: string): Promise<void>;
  /** Whether this token is the provider's and due for renewal (no signature check yet). */
  due(token: string): boolean;
  /** The renewed session; undefined when there is nothing to renew with or the provider refused. */
  renew(token: string): Promise<Renewed | undefined>;
  /** At logout: the session cannot be renewed any more. */
  forget(tokenId: string): Promise<void>;
}

export function createSessionRefresh(deps: SessionRefreshDeps): SessionRefresh {
  const { provider } = deps.client;
  /** Tokens whose renewal was tried, and when: a failed one is not tried again on every request. */
  const tried = new BoundedCache<string, number>(TRIES_REMEMBERED);

  async function keep(tokenId: string, refreshToken: string): Promise<void> {
    await deps.state.set(REFRESH_KEY(tokenId), deps.sealer().seal(refreshToken), { ttlMs: Math.max(1, Math.floor(deps.keepMs())) });
  }

  return {
    keep,
    due(token) {
      try {
        const { iss, exp, iat } = decodeJwt(token);
        if (iss !== provider.issuer || typeof exp !== 'number') return false;
        const now = deps.now();
        const before = typeof iat === 'number' ? Math.min(REFRESH_BEFORE_MS, ((exp - iat) * 1000) / 2) : REFRESH_BEFORE_MS;
        const expiring = exp * 1000 - now < before;
        const recheck = typeof iat === 'number' && now - iat * 1000 >= deps.recheckMs();
        if (!expiring && !recheck) return false;
        const last = tried.get(token);
        return last === undefined || now - last >= RETRY_MS;
      } catch {
        return false;
      }
    },
    async renew(token) {
      let claims;
      try {
        claims = await deps.verifier.verifyIgnoringExpiry(token);
      } catch {
        return undefined;
      }
      // Only the provider's own tokens are remembered: forged ones cannot fill the memory.
      tried.set(token, deps.now());
      if (await deps.isRevoked(claims.tokenId)) return undefined;
      const sealed = await deps.state.take(REFRESH_KEY(claims.tokenId));
      const refreshToken = sealed === null ? undefined : deps.sealer().open(sealed);
      if (refreshToken === undefined) return undefined;
      let tokens;
      try {
        tokens = await client.refreshTokenGrant(await deps.client.configuration(), refreshToken);
      } catch (err: unknown) {
        if (err instanceof client.ResponseBodyError && err.error === 'invalid_grant') {
          await refused(claims, describeFailure(err));
          return undefined;
        }
        // Not the user's fault: keep the refresh token for the next try; the session keeps its last groups.
        await keep(claims.tokenId, refreshToken);
        deps.log.warn({ issuer: provider.issuer, sub: claims.sub, reason: describeFailure(err) }, `an SSO session could not be renewed now; it keeps the groups of its last check and is tried again in ${RETRY_MS / 1000}s`);
        return undefined;
      }
      if (tokens.id_token === undefined) return undefined;
      const next = await deps.verifier.verifyIgnoringExpiry(tokens.id_token);
      if (next.sub !== claims.sub) return undefined;
      if (deps.userInfo !== undefined) await deps.userInfo.remember(next, tokens.access_token);
      await keep(next.tokenId, tokens.refresh_token ?? refreshToken);
      await deps.onRenewed?.(claims.sub, claims.tokenId, { id: next.tokenId, exp: next.exp });
      return { idToken: tokens.id_token, expiresAt: next.exp };
    },
    forget: (tokenId) => deps.state.delete(REFRESH_KEY(tokenId)),
  };

  async function refused(claims: { readonly sub: string; readonly tokenId: string; readonly exp: number }, reason: string): Promise<void> {
    deps.log.info({ issuer: provider.issuer, sub: claims.sub, reason }, 'the provider refused to renew an SSO session; it ends');
    await deps.revoke(claims.tokenId, claims.exp);
    deps.audit.record({
      category: 'session', type: 'end', action: 'sso-identity-refused', outcome: 'success', reason: `the provider refused to renew the session: ${reason}`,
      user: { id: claims.sub, domain: provider.issuer }, svc: { issuer: provider.issuer, tokenId: claims.tokenId },
    });
  }
}
