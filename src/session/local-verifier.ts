/**
 * svc's own tokens (iss "svc", DESIGN §3) as a TokenVerifier: the signature and time rules of
 * tokens.ts, then the account rules of validity.ts, on every use. Revocation is the
 * authenticator's, as for every issuer.
 */
import { hasSecondFactor } from '../accounts/account.js';
import type { AccountSettings } from '../accounts/config.js';
import type { Principal } from '../principal.js';
import { ISSUER, type TokenClaims, type TokenSigner } from './tokens.js';
import { checkAccount } from './validity.js';
import type { TokenVerifier } from './token-verifier.js';

export interface LocalVerifierDeps {
  readonly signer: TokenSigner;
  readonly accounts: () => ReadonlyMap<string, AccountSettings>;
  /** When an account was last seen disabled (account-cutoffs.ts): its older tokens stay refused. */
  readonly disabledAt: (name: string) => number | undefined;
  /** `users.mfa.required` in force: a session of an account without a second factor may only enrol. */
  readonly mfaRequired?: () => boolean;
}

export function createLocalVerifier(deps: LocalVerifierDeps): TokenVerifier {
  /** One principal per verified claims object (the signer caches those per token), not one per request. */
  const principals = new WeakMap<TokenClaims, Principal>();
  const confined = new WeakMap<Principal, Principal>();

  /** Decided on every use, so that confirming a factor (or turning the switch off) frees the same session at once. */
  function principalFor(claims: TokenClaims, account: AccountSettings): Principal {
    const principal = principalOf(claims);
    if (claims.kind !== 'login' || deps.mfaRequired?.() !== true || hasSecondFactor(account)) return principal;
    let narrowed = confined.get(principal);
    if (narrowed === undefined) {
      narrowed = { ...principal, enrolmentOnly: true };
      confined.set(principal, narrowed);
    }
    return narrowed;
  }

  function principalOf(claims: TokenClaims): Principal {
    let principal = principals.get(claims);
    if (principal === undefined) {
      principal = {
        username: claims.username,
        groups: [],
        issuer: ISSUER,
        kind: claims.kind === 'login' ? 'session' : 'apiKey',
        tokenId: claims.jti,
        expiresAt: claims.exp,
        issuedAt: claims.iat,
      };
      principals.set(claims, principal);
    }
    return principal;
  }

  return {
    issuer: ISSUER,
    known(token) {
      const claims = deps.signer.knownClaims(token);
      if (claims === undefined) return undefined;
      return principalFor(claims, checkAccount(claims, deps));
    },
    async verify(token) {
      const claims = await deps.signer.verify(token);
      return principalFor(claims, checkAccount(claims, deps));
    },
  };
}
