/**
 * The personal API tokens of SSO users: JWT, HS256, `iss` "svc:sso-token", `sub` the user's
 * stable id at the provider, a random `jti`, `iat`/`nbf`, and an `exp` always.
 *
 * Never mistaken for a local account's token, both ways: another issuer (the authenticator
 * routes by it, and svc's own verifier accepts only "svc"), and another key, HMAC-derived from
 * `server.secretkey` for this use only, so neither verifier can accept the other's tokens
 * whatever their claims say. An SSO `sub` named like a local account thus never reaches the
 * local account rules, and principal.ts keeps it out of that account's rights.
 */
import { createHmac } from 'node:crypto';
import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import { Unauthenticated, Unavailable } from '../errors.js';
import { BoundedCache, UNUSED_TOKEN_MS } from '../lib/bounded-cache.js';

export const SSO_TOKEN_ISSUER = 'svc:sso-token';
const VERIFIED_CACHE_ENTRIES = 10_000;

export interface SsoTokenClaims {
  readonly sub: string;
  readonly jti: string;
  readonly iat: number;
  readonly exp: number;
}

export interface SsoTokenFormat {
  sign(claims: SsoTokenClaims): Promise<string>;
  /** Signature, issuer, algorithm, time; throws Unauthenticated with the reason. */
  verify(token: string): Promise<SsoTokenClaims>;
  /** The claims of a token verified before under the current key, time checked again; undefined when not seen. */
  knownClaims(token: string): SsoTokenClaims | undefined;
}

export interface SsoTokenFormatDeps {
  readonly secretKey: () => string | undefined;
  readonly now: () => number;
}

/** The signing key of this token kind: HMAC-SHA256(server.secretkey, a label of its own). */
export function ssoTokenKey(secretKey: string): Uint8Array {
  return createHmac('sha256', secretKey).update('svc personal API tokens of SSO users v1').digest();
}

export function createSsoTokenFormat({ secretKey, now }: SsoTokenFormatDeps): SsoTokenFormat {
  const verified = new BoundedCache<string, { readonly key: string; readonly claims: SsoTokenClaims }>(VERIFIED_CACHE_ENTRIES, { idle: { maxIdleMs: UNUSED_TOKEN_MS, now } });
  const keyText = (): string => {
    const text = secretKey();
    if (text === undefined || text === '') throw new Unavailable('server.secretkey is missing from svc-secret: personal API tokens cannot be issued or checked');
    return text;
  };

  function knownClaims(token: string): SsoTokenClaims | undefined {
    const hit = verified.get(token);
    return hit !== undefined && hit.key === secretKey() ? checkTimes(hit.claims, now()) : undefined;
  }

  return {
    sign(claims) {
      return new SignJWT({})
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setIssuer(SSO_TOKEN_ISSUER)
        .setSubject(claims.sub)
        .setJti(claims.jti)
        .setIssuedAt(claims.iat)
        .setNotBefore(claims.iat)
        .setExpirationTime(claims.exp)
        .sign(ssoTokenKey(keyText()));
    },
    knownClaims,
    async verify(token) {
      const known = knownClaims(token);
      if (known !== undefined) return known;
      const key = keyText();
      let payload;
      try {
        ({ payload } = await jwtVerify(token, ssoTokenKey(key), {
          issuer: SSO_TOKEN_ISSUER, algorithms: ['HS256'], currentDate: new Date(now()), requiredClaims: ['sub', 'jti', 'iat', 'exp'],
        }));
      } catch (err: unknown) {
        throw err instanceof joseErrors.JWTExpired ? new Unauthenticated('token has expired; make a new one') : new Unauthenticated('token is invalid');
      }
      const claims = checkTimes({ sub: payload.sub ?? '', jti: payload.jti ?? '', iat: payload.iat ?? 0, exp: payload.exp ?? 0 }, now());
      verified.set(token, { key, claims });
      return claims;
    },
  };
}

function checkTimes(claims: SsoTokenClaims, nowMs: number): SsoTokenClaims {
  const nowSeconds = Math.floor(nowMs / 1000);
  if (claims.exp <= nowSeconds) throw new Unauthenticated('token has expired; make a new one');
  if (claims.iat > nowSeconds) throw new Unauthenticated('token is not valid yet');
  return claims;
}
