/**
 * SSO users' personal API tokens as a TokenVerifier (issuer "svc:sso-token"). On every use, in
 * order: signature and time (token-format.ts); the token still listed in its user's record
 * (deleted: refused); the user's upstream check (recheck.ts: at most once per interval, the
 * synchronous path only reads the check in force); the rule `tokens, create, self` still
 * granted to the user with the token's groups (removed: refused). The principal's groups are
 * the token's own (those of its making) that the last check still confirms: a group removed
 * upstream takes its rights away, a group added later gives the token nothing.
 */
import { Unauthenticated } from '../errors.js';
import { BoundedCache } from '../lib/bounded-cache.js';
import type { Principal } from '../principal.js';
import type { TokenVerifier } from '../session/token-verifier.js';
import type { Confirmed, Recheck } from './recheck.js';
import { recordKeyOf, type IndexedUser, type SsoTokenRecord } from './records.js';
import { SSO_TOKEN_ISSUER, type SsoTokenClaims, type SsoTokenFormat } from './token-format.js';

export const TOKENS_RESOURCE = 'tokens';
export const TOKENS_ACTION = 'create';
export const TOKENS_OBJECT = 'self';

export interface SsoTokenVerifierDeps {
  readonly format: SsoTokenFormat;
  readonly users: () => ReadonlyMap<string, IndexedUser>;
  readonly recheck: Pick<Recheck, 'fresh' | 'current'>;
  /** The provider's issuer: the principal's, as its SSO sessions have. */
  readonly providerIssuer: string;
  /** Whether `tokens, create, self` is granted to this principal now. */
  readonly allowed: (principal: Principal) => boolean;
}

interface Built {
  readonly record: SsoTokenRecord;
  readonly confirmed: Confirmed;
  readonly principal: Principal;
}

export function createSsoTokenVerifier(deps: SsoTokenVerifierDeps): TokenVerifier {
  /** One principal per (token record, check): the same object while neither changes, as TokenVerifier asks. */
  const built = new BoundedCache<string, Built>(10_000);

  /** The record key per verified claims (one object per token in the format's cache): no hash per request. */
  const keys = new WeakMap<SsoTokenClaims, string>();
  function keyOf(claims: SsoTokenClaims): string {
    let key = keys.get(claims);
    if (key === undefined) keys.set(claims, (key = recordKeyOf(claims.sub)));
    return key;
  }

  function listed(claims: SsoTokenClaims): { user: IndexedUser; record: SsoTokenRecord } {
    const user = deps.users().get(keyOf(claims));
    const record = user?.sub === claims.sub ? user.byJti.get(claims.jti) : undefined;
    if (user === undefined || record === undefined) throw new Unauthenticated('this personal API token was deleted');
    return { user, record };
  }

  function principalOf(claims: SsoTokenClaims, user: IndexedUser, record: SsoTokenRecord, confirmed: Confirmed): Principal {
    const hit = built.get(claims.jti);
    if (hit !== undefined && hit.record === record && hit.confirmed === confirmed) return hit.principal;
    const upstream = new Set(confirmed.groups);
    const principal: Principal = {
      username: user.sub,
      ...(user.name !== '' ? { displayName: user.name } : {}),
      groups: record.groups.filter((g) => upstream.has(g)),
      issuer: deps.providerIssuer,
      kind: 'ssoApiKey',
      tokenId: claims.jti,
      apiTokenId: record.id,
      expiresAt: claims.exp,
    };
    built.set(claims.jti, { record, confirmed, principal });
    return principal;
  }

  function granted(principal: Principal): Principal {
    if (!deps.allowed(principal)) {
      throw new Unauthenticated(`no rule grants '${TOKENS_RESOURCE}, ${TOKENS_ACTION}, ${TOKENS_OBJECT}' to this token's user any more, so their personal API tokens do not work`);
    }
    return principal;
  }

  return {
    issuer: SSO_TOKEN_ISSUER,
    known(token) {
      const claims = deps.format.knownClaims(token);
      if (claims === undefined) return undefined;
      const { user, record } = listed(claims);
      const confirmed = deps.recheck.fresh(user);
      if (confirmed === undefined) return undefined;
      return granted(principalOf(claims, user, record, confirmed));
    },
    async verify(token) {
      const claims = await deps.format.verify(token);
      const confirmed = await deps.recheck.current(listed(claims).user);
      // Read again: the check may have deleted the user's tokens, or another replica this one.
      const again = listed(claims);
      return granted(principalOf(claims, again.user, again.record, confirmed));
    },
  };
}
