/**
 * Token -> Principal. svc's own tokens are checked here (signature, then every validity rule);
 * tokens of another issuer (SSO) go to the verifiers registered for it, so the SSO feature can
 * plug in without this file knowing about OIDC.
 *
 * Two entry points: `authenticate` (any token, may await the signature check, an SSO verifier or
 * a state-backend look-up) and `known` (synchronous, for the proxy's hot path: a token already
 * verified whose revocation this replica can answer from memory; undefined when it cannot, and
 * the caller then awaits `authenticate`). Both apply the same rules in the same order.
 */
import type { AccountSettings } from '../accounts/config.js';
import { Unauthenticated } from '../errors.js';
import type { Principal } from './principal.js';
import type { Revocation } from './revocation.js';
import { ISSUER, unverifiedIssuer, type TokenClaims, type TokenSigner } from './tokens.js';
import { checkAccount, checkValidity, REVOKED } from './validity.js';

/** Verifies a token of a foreign issuer; undefined means "not mine". Throws Unauthenticated. */
export type ExternalVerifier = (token: string, issuer: string) => Promise<Principal | undefined>;

export interface AuthenticatorDeps {
  readonly signer: TokenSigner;
  readonly accounts: () => ReadonlyMap<string, AccountSettings>;
  readonly revocation: Revocation;
  /** When an account was last seen disabled (account-cutoffs.ts). */
  readonly disabledAt: (name: string) => number | undefined;
  readonly external?: readonly ExternalVerifier[];
}

export type Authenticate = (token: string) => Promise<Principal>;

export interface Authenticator {
  readonly authenticate: Authenticate;
  /** The principal without awaiting anything, or undefined when that needs a look-up; throws Unauthenticated. */
  known(token: string): Principal | undefined;
  /** Each token id this replica learns is revoked (revocation.ts), for what a token keeps open. */
  onRevoked(listener: (tokenId: string) => void): () => void;
}

export function createAuthenticator(deps: AuthenticatorDeps): Authenticator {
  /** One principal per verified claims object (the signer caches those per token), not one per request. */
  const principals = new WeakMap<TokenClaims, Principal>();
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
      };
      principals.set(claims, principal);
    }
    return principal;
  }

  return {
    async authenticate(token) {
      // A token verified before under the current key is ours: no issuer decoding (it costs as
      // much as the rest of a cached check) and one cache look-up, not two.
      const known = deps.signer.knownClaims(token);
      if (known === undefined) {
        const issuer = unverifiedIssuer(token);
        if (issuer === undefined) throw new Unauthenticated('token is invalid');
        if (issuer !== ISSUER) return authenticateExternal(token, issuer, deps.external ?? []);
      }
      const claims = known ?? (await deps.signer.verify(token));
      await checkValidity(claims, deps);
      return principalOf(claims);
    },

    known(token) {
      const claims = deps.signer.knownClaims(token);
      if (claims === undefined) return undefined;
      checkAccount(claims, deps);
      const revoked = deps.revocation.revokedNow(claims.jti);
      if (revoked === undefined) return undefined;
      if (revoked) throw new Unauthenticated(REVOKED);
      return principalOf(claims);
    },

    onRevoked: (listener) => deps.revocation.onRevoked(listener),
  };
}

async function authenticateExternal(token: string, issuer: string, verifiers: readonly ExternalVerifier[]): Promise<Principal> {
  for (const verify of verifiers) {
    const principal = await verify(token, issuer);
    if (principal !== undefined) return principal;
  }
  throw new Unauthenticated('token issuer is not accepted');
}
