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
 *
 * A renewed token is not forgotten: its session's newer token is kept (sealed, under the old
 * token's id) as its successor. A token used after its session was renewed, by a browser tab
 * still on it or by anyone who copied it (as a cookie that drops our Set-Cookie, or as a bearer,
 * which cannot be given one), is due at once and is answered with its session's latest token:
 * it never serves again with the groups of a check its session has moved past. The rejected
 * alternative, revoking the old token at renewal, fails the browser's requests already in flight.
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
import type { SsoVerifier, VerifiedClaims } from './sso-verifier.js';

const REFRESH_KEY = (tokenId: string): string => `sso:refresh:${tokenId}`;
/** A renewed token's successor: its session's next token, sealed. */
const SUCCESSOR_KEY = (tokenId: string): string => `sso:renewed:${tokenId}`;
/**
 * The most renewals a token may be behind its session's latest: a browser is never more than
 * one behind, and a copy kept longer is ended (revoked) rather than followed without bound.
 */
export const MAX_RENEWALS_BEHIND = 16;
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

interface SessionToken {
  readonly token: string;
  readonly claims: VerifiedClaims;
}

export interface Renewed {
  readonly idToken: string;
  readonly expiresAt: number;
}

export interface SessionRefresh {
  keep(tokenId: string, refreshToken: string): Promise<void>;
  /** Whether this token is the provider's and due for renewal (no signature check yet). */
  due(token: string): boolean;
  /**
   * The session's token to go on with: the renewed one, or the latest of a session renewed since
   * this token; undefined when there is nothing to renew with, the provider refused (the token
   * is then revoked) or cannot answer now.
   */
  renew(token: string): Promise<Renewed | undefined>;
  /** At logout: the session cannot be renewed any more. */
  forget(tokenId: string): Promise<void>;
}

export function createSessionRefresh(deps: SessionRefreshDeps): SessionRefresh {
  const { provider } = deps.client;
  /** Tokens whose renewal was tried, and when: a failed one is not tried again on every request. */
  const tried = new BoundedCache<string, number>(TRIES_REMEMBERED);
  /** Renewed tokens and their session's newer token (SUCCESSOR_KEY, read through this replica's memory). */
  const successors = new BoundedCache<string, string>(TRIES_REMEMBERED);

  async function keep(tokenId: string, refreshToken: string): Promise<void> {
    await deps.state.set(REFRESH_KEY(tokenId), deps.sealer().seal(refreshToken), { ttlMs: Math.max(1, Math.floor(deps.keepMs())) });
  }

  return {
    keep,
    due(token) {
      // A token whose session was renewed since is due at once, whatever its age or last try.
      if (successors.get(token) !== undefined) return true;
      try {
        const { iss, exp, iat } = decodeJwt(token);
        if (iss !== provider.issuer || !timeDue(iat, exp)) return false;
        const last = tried.get(token);
        return last === undefined || deps.now() - last >= RETRY_MS;
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
      const latest = await latestOf({ token, claims });
      if (latest === undefined) {
        deps.log.info({ issuer: provider.issuer, sub: claims.sub }, `an SSO session token more than ${MAX_RENEWALS_BEHIND} renewals behind its session was used; it ends`);
        await deps.revoke(claims.tokenId, claims.exp);
        return undefined;
      }
      if (latest.token === token) return refreshed(latest, []);
      // Renewed since: the request goes on with the session's latest token, itself renewed first when due.
      successors.set(token, latest.token);
      const current: Renewed = { idToken: latest.token, expiresAt: latest.claims.exp };
      if (!timeDue(latest.claims.payload.iat, latest.claims.exp)) return current;
      tried.set(latest.token, deps.now());
      return (await refreshed(latest, [{ token, claims }])) ?? current;
    },
    forget: (tokenId) => deps.state.delete(REFRESH_KEY(tokenId)),
  };

  /** Near (or past) its expiry, or its groups older than users.sso.groupsRecheck. */
  function timeDue(iat: unknown, exp: unknown): boolean {
    if (typeof exp !== 'number') return false;
    const now = deps.now();
    const before = typeof iat === 'number' ? Math.min(REFRESH_BEFORE_MS, ((exp - iat) * 1000) / 2) : REFRESH_BEFORE_MS;
    return exp * 1000 - now < before || (typeof iat === 'number' && now - iat * 1000 >= deps.recheckMs());
  }

  /** The successor kept for a renewed token: in this replica's memory, else in the state backend. */
  async function successorOf(at: SessionToken): Promise<string | undefined> {
    const known = successors.get(at.token);
    if (known !== undefined) return known;
    const sealed = await deps.state.get(SUCCESSOR_KEY(at.claims.tokenId));
    return sealed === null ? undefined : deps.sealer().open(sealed);
  }

  /** The session's latest token from `from` on; undefined when it is more than MAX_RENEWALS_BEHIND behind. */
  async function latestOf(from: SessionToken): Promise<SessionToken | undefined> {
    let current = from;
    for (let hops = 0; hops <= MAX_RENEWALS_BEHIND; hops++) {
      const next = await successorOf(current);
      if (next === undefined) return current;
      current = { token: next, claims: await deps.verifier.verifyIgnoringExpiry(next) };
    }
    return undefined;
  }

  /**
   * The refresh grant for `latest`, its session's latest token. On success the new token is the
   * successor of `latest` and of `behind` (older tokens of the session that led here), kept as
   * long as a refresh token is: longer than any of them can be used.
   */
  async function refreshed(latest: SessionToken, behind: readonly SessionToken[]): Promise<Renewed | undefined> {
    const { claims } = latest;
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
    for (const old of [latest, ...behind]) {
      successors.set(old.token, tokens.id_token);
      await deps.state.set(SUCCESSOR_KEY(old.claims.tokenId), deps.sealer().seal(tokens.id_token), { ttlMs: Math.max(1, Math.floor(deps.keepMs())) });
    }
    await deps.onRenewed?.(claims.sub, claims.tokenId, { id: next.tokenId, exp: next.exp });
    return { idToken: tokens.id_token, expiresAt: next.exp };
  }

  async function refused(claims: { readonly sub: string; readonly tokenId: string; readonly exp: number }, reason: string): Promise<void> {
    deps.log.info({ issuer: provider.issuer, sub: claims.sub, reason }, 'the provider refused to renew an SSO session; it ends');
    await deps.revoke(claims.tokenId, claims.exp);
    deps.audit.record({
      category: 'session', type: 'end', action: 'sso-identity-refused', outcome: 'success', reason: `the provider refused to renew the session: ${reason}`,
      user: { id: claims.sub, domain: provider.issuer }, svc: { issuer: provider.issuer, tokenId: claims.tokenId },
    });
  }
}
