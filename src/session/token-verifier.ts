/**
 * One issuer's tokens: svc's own (local-verifier.ts) and, from the SSO features on, the bundled
 * provider's and an external provider's ID tokens. A verifier checks what only it can (signature
 * against its keys, issuer, audience, time, and its own rules such as svc's account rules) and
 * gives the Principal; the authenticator (authenticate.ts) then applies what every issuer
 * shares: the revocation list and the principal cache the proxy's fast path reads.
 */
import type { Principal } from '../principal.js';

export interface TokenVerifier {
  /** The `iss` this verifier answers for; the authenticator routes unseen tokens by it. */
  readonly issuer: string;
  /**
   * The principal of a token this verifier accepted before, with every per-use rule checked again
   * (time, and svc's account rules): no await, the proxy's fast path. undefined for a token not
   * seen (or no longer cached); throws Unauthenticated when a rule now refuses it. The same
   * principal object for the same token, so callers may cache by identity.
   */
  known(token: string): Principal | undefined;
  /** Every check; throws Unauthenticated with the reason (or Unavailable when keys cannot be had). */
  verify(token: string): Promise<Principal>;
}
