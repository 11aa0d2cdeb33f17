/**
 * Refresh instead of logout: the provider's refresh token (given when offline_access was
 * asked for) is kept in the state backend, sealed, under the session's token id. A session
 * whose ID token is about to expire (or has expired) is renewed with it: the new ID token
 * becomes the new cookie. The refresh token is taken (read and removed in one step), so two
 * replicas never spend it twice; a refused refresh ends the session.
 */
import * as client from 'openid-client';
import { decodeJwt } from 'jose';
import type { Logger } from 'pino';
import type { StateBackend } from '../state/state.js';
import type { ProviderClient } from './client.js';
import { describeFailure } from '../lib/tls-fetch.js';
import type { Sealer } from '../lib/sealed.js';
import type { UserInfoGroups } from './userinfo-groups.js';
import type { SsoVerifier } from './sso-verifier.js';

const REFRESH_KEY = (tokenId: string): string => `sso:refresh:${tokenId}`;
/**
 * A session is renewed once its ID token has less than this left, or less than half its life
 * for short-lived tokens (else every request would renew them).
 */
export const REFRESH_BEFORE_MS = 5 * 60_000;

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

  async function keep(tokenId: string, refreshToken: string): Promise<void> {
    await deps.state.set(REFRESH_KEY(tokenId), deps.sealer().seal(refreshToken), { ttlMs: Math.max(1, Math.floor(deps.keepMs())) });
  }

  return {
    keep,
    due(token) {
      try {
        const { iss, exp, iat } = decodeJwt(token);
        if (iss !== provider.issuer || typeof exp !== 'number') return false;
        const before = typeof iat === 'number' ? Math.min(REFRESH_BEFORE_MS, ((exp - iat) * 1000) / 2) : REFRESH_BEFORE_MS;
        return exp * 1000 - deps.now() < before;
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
      if (await deps.isRevoked(claims.tokenId)) return undefined;
      const sealed = await deps.state.take(REFRESH_KEY(claims.tokenId));
      const refreshToken = sealed === null ? undefined : deps.sealer().open(sealed);
      if (refreshToken === undefined) return undefined;
      let tokens;
      try {
        tokens = await client.refreshTokenGrant(await deps.client.configuration(), refreshToken);
      } catch (err: unknown) {
        deps.log.info({ issuer: provider.issuer, sub: claims.sub, reason: describeFailure(err) }, 'the provider refused to renew an SSO session; it ends');
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
}
