/**
 * Workload tokens (tokens.ts) as a TokenVerifier, so the authenticator applies the same
 * revocation list and fast path to them as to every other token. On every use the issuer entry
 * that admitted the token must still be configured: removing an entry from workload.config
 * ends its workloads' tokens at once. The principal carries `iat`: a logout revokes a workload
 * token in the state backend alone, so one issued before the record of revocations was lost is
 * refused (session/revocations-epoch.ts) and the workload exchanges again.
 */
import { Unauthenticated } from '../errors.js';
import { reservedExternalName, type Principal } from '../principal.js';
import type { TokenVerifier } from '../session/token-verifier.js';
import type { WorkloadIssuer } from './config.js';
import { WORKLOAD_TOKEN_ISSUER, type WorkloadTokenClaims, type WorkloadTokens } from './tokens.js';

export interface WorkloadVerifierDeps {
  readonly tokens: WorkloadTokens;
  readonly issuers: () => readonly WorkloadIssuer[];
  /** The local accounts in force: a group named like one added after the exchange is dropped at use. */
  readonly localAccounts: () => ReadonlyMap<string, unknown>;
}

export function createWorkloadVerifier(deps: WorkloadVerifierDeps): TokenVerifier {
  /** One principal per claims object, rebuilt when the entry's issuer or the accounts change. */
  const principals = new WeakMap<WorkloadTokenClaims, { readonly principal: Principal; readonly accounts: ReadonlyMap<string, unknown> }>();

  function principalOf(claims: WorkloadTokenClaims): Principal {
    const entry = deps.issuers().find((e) => e.name === claims.entry);
    if (entry === undefined) throw new Unauthenticated(`the workload issuer '${claims.entry}' is no longer configured; its tokens are refused`);
    const accounts = deps.localAccounts();
    const cached = principals.get(claims);
    if (cached !== undefined && cached.accounts === accounts && cached.principal.issuer === entry.issuer) return cached.principal;
    const groups = claims.groups.filter((g) => reservedExternalName(g, accounts) === undefined);
    const principal: Principal = { username: claims.username, groups, issuer: entry.issuer, kind: 'workload', tokenId: claims.jti, expiresAt: claims.exp, issuedAt: claims.iat };
    principals.set(claims, { principal, accounts });
    return principal;
  }

  return {
    issuer: WORKLOAD_TOKEN_ISSUER,
    known(token) {
      const claims = deps.tokens.known(token);
      return claims === undefined ? undefined : principalOf(claims);
    },
    async verify(token) {
      return principalOf(await deps.tokens.verify(token));
    },
  };
}
