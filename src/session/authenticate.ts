/**
 * Token -> Principal, for every issuer alike. The verifier of the token's issuer (token-verifier.ts)
 * checks signature, time and its own rules; then the same revocation check applies to every
 * token, svc's own and SSO ones, so a logout holds whoever issued the token.
 *
 * Two entry points: `authenticate` (any token, may await a signature check, a verifier's key
 * fetch or a state-backend look-up) and `known` (synchronous, for the proxy's hot path: a token
 * a verifier has already accepted, whose revocation this replica can answer from memory;
 * undefined when it cannot, and the caller then awaits `authenticate`). Both apply the same
 * rules in the same order.
 *
 * Then the revocations epoch (revocations-epoch.ts): a session token issued before the record of
 * revocations was lost is refused, since nothing says it was not revoked. A comparison on a value
 * held in memory, on both paths.
 */
import { Unauthenticated } from '../errors.js';
import type { Principal } from '../principal.js';
import type { Revocation } from './revocation.js';
import type { RevocationsEpoch } from './revocations-epoch.js';
import { unverifiedIssuer } from './tokens.js';
import { REVOKED } from './validity.js';
import type { TokenVerifier } from './token-verifier.js';

export interface AuthenticatorDeps {
  /** svc's own first: it answers most requests, and `known` asks each in order. */
  readonly verifiers: readonly TokenVerifier[];
  readonly revocation: Pick<Revocation, 'isRevoked' | 'revokedNow' | 'onRevoked'>;
  /** Session tokens issued before the record of revocations began are refused. */
  readonly epoch: Pick<RevocationsEpoch, 'refusal' | 'onMoved'>;
}

export type Authenticate = (token: string) => Promise<Principal>;

export interface Authenticator {
  readonly authenticate: Authenticate;
  /** The principal without awaiting anything, or undefined when that needs a look-up; throws Unauthenticated. */
  known(token: string): Principal | undefined;
  /** Each token id this replica learns is revoked (revocation.ts), for what a token keeps open. */
  onRevoked(listener: (tokenId: string) => void): () => void;
  /** Each time the record of revocations is found lost while running: every open token must be checked again. */
  onCutoffMoved(listener: () => void): () => void;
}

export function createAuthenticator(deps: AuthenticatorDeps): Authenticator {
  const verifiers = deps.verifiers;
  const byIssuer = new Map<string, TokenVerifier>();
  for (const verifier of verifiers) {
    if (byIssuer.has(verifier.issuer)) throw new Error(`two token verifiers for issuer '${verifier.issuer}'`);
    byIssuer.set(verifier.issuer, verifier);
  }

  /** A token some verifier accepted before: no issuer decoding (it costs as much as the rest of a cached check). */
  function knownPrincipal(token: string): Principal | undefined {
    for (let i = 0; i < verifiers.length; i++) {
      const principal = (verifiers[i] as TokenVerifier).known(token);
      if (principal !== undefined) return principal;
    }
    return undefined;
  }

  function sinceEpoch(principal: Principal): Principal {
    const refused = deps.epoch.refusal(principal);
    if (refused !== undefined) throw new Unauthenticated(refused);
    return principal;
  }

  return {
    async authenticate(token) {
      let principal = knownPrincipal(token);
      if (principal === undefined) {
        const issuer = unverifiedIssuer(token);
        if (issuer === undefined) throw new Unauthenticated('token is invalid');
        const verifier = byIssuer.get(issuer);
        if (verifier === undefined) throw new Unauthenticated('token issuer is not accepted');
        principal = await verifier.verify(token);
      }
      if (await deps.revocation.isRevoked(principal.tokenId)) throw new Unauthenticated(REVOKED);
      return sinceEpoch(principal);
    },

    known(token) {
      const principal = knownPrincipal(token);
      if (principal === undefined) return undefined;
      const revoked = deps.revocation.revokedNow(principal.tokenId);
      if (revoked === undefined) return undefined;
      if (revoked) throw new Unauthenticated(REVOKED);
      return sinceEpoch(principal);
    },

    onRevoked: (listener) => deps.revocation.onRevoked(listener),
    onCutoffMoved: (listener) => deps.epoch.onMoved(listener),
  };
}
