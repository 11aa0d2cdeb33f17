/**
 * A token issuer of the tests' own, registered as one more TokenVerifier: HS256 JWTs with
 * `iss` TEST_ISSUER, `sub`, `groups`, `jti` and `exp`. It stands for the SSO issuers (the bundled
 * provider, an external one) to prove that any verifier registered with the server gets the
 * same treatment as svc's own tokens: accepted by the API and the proxy, revoked by logout on
 * every replica, served from the fast path once seen.
 */
import { randomUUID } from 'node:crypto';
import { jwtVerify, SignJWT } from 'jose';
import YAML from 'yaml';
import { Unauthenticated } from '../../src/errors.js';
import type { Principal } from '../../src/principal.js';
import type { TokenVerifier } from '../../src/session/token-verifier.js';

/** Rights for the tests' tokens: members of `sso-team` may use the extension `echo`. */
export const SSO_POLICY = 'p, role:echo, extensions, *, */echo, allow\ng, sso-team, role:echo\n';

/** extension.config with one extension `echo` in front of `url`. */
export const echoExtension = (url: string): string => YAML.stringify({ extensions: [{ name: 'echo', enabled: true, backend: { services: [{ url }] } }] });

export const TEST_ISSUER = 'https://issuer.test.invalid';
const KEY = new TextEncoder().encode('test-issuer-key-0123456789abcdef');

export function mintTestToken(subject: string, groups: readonly string[], lifetimeSeconds = 3600): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ groups: [...groups] })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(TEST_ISSUER)
    .setSubject(subject)
    .setJti(randomUUID())
    .setIssuedAt(now)
    .setExpirationTime(now + lifetimeSeconds)
    .sign(KEY);
}

/** Counts signature checks, so a test can see the fast path at work. */
export function createTestVerifier(): TokenVerifier & { readonly verifications: () => number } {
  const seen = new Map<string, Principal>();
  let verifications = 0;
  return {
    issuer: TEST_ISSUER,
    verifications: () => verifications,
    known(token) {
      const principal = seen.get(token);
      if (principal !== undefined && principal.expiresAt !== undefined && principal.expiresAt * 1000 <= Date.now()) throw new Unauthenticated('token has expired');
      return principal;
    },
    async verify(token) {
      verifications++;
      let payload;
      try {
        ({ payload } = await jwtVerify(token, KEY, { issuer: TEST_ISSUER, algorithms: ['HS256'], requiredClaims: ['sub', 'jti', 'exp'] }));
      } catch {
        throw new Unauthenticated('token is invalid');
      }
      const groups = Array.isArray(payload['groups']) ? payload['groups'].filter((g): g is string => typeof g === 'string') : [];
      const principal: Principal = { username: payload.sub ?? '', groups, issuer: TEST_ISSUER, kind: 'sso', tokenId: payload.jti ?? '', expiresAt: payload.exp, ...(payload.iat !== undefined ? { issuedAt: payload.iat } : {}) };
      seen.set(token, principal);
      return principal;
    },
  };
}
