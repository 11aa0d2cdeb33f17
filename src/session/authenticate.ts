/**
 * Token -> Principal. svc's own tokens are checked here (signature, then every validity rule);
 * tokens of another issuer (SSO) go to the verifiers registered for it, so the SSO feature can
 * plug in without this file knowing about OIDC.
 */
import type { AccountSettings } from '../accounts/config.js';
import { Unauthenticated } from '../errors.js';
import type { Principal } from './principal.js';
import type { Revocation } from './revocation.js';
import { ISSUER, unverifiedIssuer, type TokenSigner } from './tokens.js';
import { checkValidity } from './validity.js';

/** Verifies a token of a foreign issuer; undefined means "not mine". Throws Unauthenticated. */
export type ExternalVerifier = (token: string, issuer: string) => Promise<Principal | undefined>;

export interface AuthenticatorDeps {
  readonly signer: TokenSigner;
  readonly accounts: () => ReadonlyMap<string, AccountSettings>;
  readonly revocation: Revocation;
  readonly external?: readonly ExternalVerifier[];
}

export type Authenticate = (token: string) => Promise<Principal>;

export function createAuthenticator(deps: AuthenticatorDeps): Authenticate {
  return async function authenticate(token) {
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
    return {
      username: claims.username,
      groups: [],
      issuer: ISSUER,
      kind: claims.kind === 'login' ? 'session' : 'apiKey',
      tokenId: claims.jti,
      expiresAt: claims.exp,
    };
  };
}

async function authenticateExternal(token: string, issuer: string, verifiers: readonly ExternalVerifier[]): Promise<Principal> {
  for (const verify of verifiers) {
    const principal = await verify(token, issuer);
    if (principal !== undefined) return principal;
  }
  throw new Unauthenticated('token issuer is not accepted');
}
