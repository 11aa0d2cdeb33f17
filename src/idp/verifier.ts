/**
 * The bundled provider's ID tokens as a TokenVerifier: RS256 against the provider's own public
 * keys (read in process from the keys svc-secret holds, never over HTTP), issuer
 * `<url>/api/idp`, audience one of svc's clients, time with a small skew. The principal follows
 * DESIGN §3: the RBAC subject of an SSO user is its `sub`, plus its groups.
 */
import { createHash } from 'node:crypto';
import { createLocalJWKSet, jwtVerify, type JWTPayload } from 'jose';
import { Unauthenticated } from '../errors.js';
import { BoundedCache } from '../lib/bounded-cache.js';
import type { Principal } from '../principal.js';
import type { TokenVerifier } from '../session/verifier.js';
import { CLIENT_IDS } from './clients.js';
import { publicJwks, type SigningKey } from './keys.js';

export const CLOCK_SKEW_S = 30;
const MAX_KNOWN_TOKENS = 10_000;

export interface IdpVerifierDeps {
  readonly issuer: string;
  /** The keys in force; read on each verification so a rotation applies at once. */
  readonly keys: () => readonly SigningKey[];
  /** Milliseconds since the epoch. */
  readonly now: () => number;
}

export function createIdpVerifier(deps: IdpVerifierDeps): TokenVerifier {
  const known = new BoundedCache<string, Principal>(MAX_KNOWN_TOKENS);
  let keySet: { of: readonly SigningKey[]; jwks: ReturnType<typeof createLocalJWKSet> } | undefined;
  function jwks(): ReturnType<typeof createLocalJWKSet> {
    const keys = deps.keys();
    if (keySet?.of !== keys) keySet = { of: keys, jwks: createLocalJWKSet(publicJwks(keys)) };
    return keySet.jwks;
  }
  function checkTime(principal: Principal): Principal {
    if (principal.expiresAt !== undefined && principal.expiresAt + CLOCK_SKEW_S <= deps.now() / 1000) throw new Unauthenticated('token has expired');
    return principal;
  }

  return {
    issuer: deps.issuer,
    known(token) {
      const principal = known.get(token);
      return principal === undefined ? undefined : checkTime(principal);
    },
    async verify(token) {
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, jwks(), {
          issuer: deps.issuer, audience: [...CLIENT_IDS], algorithms: ['RS256'], clockTolerance: CLOCK_SKEW_S,
          currentDate: new Date(deps.now()), requiredClaims: ['sub', 'exp'],
        }));
      } catch (err: unknown) {
        const code = (err as { code?: unknown }).code;
        throw new Unauthenticated(code === 'ERR_JWT_EXPIRED' ? 'token has expired' : 'token is invalid');
      }
      const principal = principalOf(token, payload, deps.issuer);
      known.set(token, principal);
      return principal;
    },
  };
}

function principalOf(token: string, payload: JWTPayload, issuer: string): Principal {
  const groups = Array.isArray(payload['groups']) ? payload['groups'].filter((g): g is string => typeof g === 'string') : [];
  return {
    username: payload.sub as string,
    groups,
    issuer,
    kind: 'sso',
    // oidc-provider's ID tokens carry no jti: a hash names the token for revocation, never the token itself.
    tokenId: payload.jti ?? createHash('sha256').update(token).digest('base64url'),
    expiresAt: payload.exp,
  };
}
