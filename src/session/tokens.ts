/**
 * The tokens svc issues itself (DESIGN §3): JWT, HS256, key = svc-secret `server.secretkey`,
 * claims iss "svc", sub `<name>:login` (session) or `<name>:apiKey` (API token), jti, iat,
 * nbf, exp (API tokens may have none), and for sessions `pwh`, which binds the session to the
 * password hash its login was checked against (see passwordBinding). This file only signs and
 * checks signature, issuer and time; whether the account still allows the token is validity.ts's job.
 */
import { createHmac } from 'node:crypto';
import { decodeJwt, errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import { Unauthenticated, Unavailable } from '../errors.js';
import { BoundedCache, UNUSED_TOKEN_MS } from '../lib/bounded-cache.js';

/**
 * Tokens whose signature was already checked, by token text and key. Signature checking was
 * about a third of the proxy's CPU per request (jose imports the HMAC key through WebCrypto on
 * every call); the same token text under the same key always verifies the same way, so only
 * the time rules are checked again on a hit. Bounded, so distinct tokens cannot grow it.
 */
const VERIFIED_CACHE_ENTRIES = 10_000;
/** Bindings by password hash: one per account in use, recomputed only after a password change. */
const BINDING_CACHE_ENTRIES = 1_000;
/** 16 base64url characters = 96 bits: a guess that matches a different hash is out of reach. */
const BINDING_LENGTH = 16;

export const ISSUER = 'svc';
export type TokenKind = 'login' | 'apiKey';

export interface TokenClaims {
  readonly username: string;
  readonly kind: TokenKind;
  readonly jti: string;
  /** Seconds since the epoch. */
  readonly iat: number;
  readonly exp: number | undefined;
  /** Sessions only: passwordBinding() of the hash the login checked. Absent in older tokens. */
  readonly pwh?: string;
}

export interface TokenSigner {
  sign(claims: TokenClaims): Promise<string>;
  /** Signature, issuer, algorithm and time; throws Unauthenticated with the reason. */
  verify(token: string): Promise<TokenClaims>;
  /**
   * The claims of a token already verified under the current key (so it is ours), with the time
   * rules checked again; undefined for a token not seen yet.
   */
  knownClaims(token: string): TokenClaims | undefined;
  /**
   * The `pwh` claim for a password hash: the first 16 characters of base64url
   * HMAC-SHA256(server.secretkey, hash). Keyed, so a token (readable by whoever holds it)
   * reveals nothing of the bcrypt hash and cannot be matched against a leaked one.
   */
  passwordBinding(passwordHash: string): string;
}

export interface TokenSignerDeps {
  /** Read on every call, so a rotated key applies at once (old tokens then fail). */
  readonly secretKey: () => string | undefined;
  readonly now: () => number;
}

export function createTokenSigner({ secretKey, now }: TokenSignerDeps): TokenSigner {
  const verified = new BoundedCache<string, { readonly key: string; readonly claims: TokenClaims }>(VERIFIED_CACHE_ENTRIES, { idle: { maxIdleMs: UNUSED_TOKEN_MS, now } });
  /**
   * Checked on every request with a session token, so cached by hash, with the key it was made
   * under (a rotated key recomputes). Keyed by the hash alone: the account's hash string is the
   * same object on every request, so the look-up builds no key string.
   */
  const bindings = new BoundedCache<string, { readonly key: string; readonly binding: string }>(BINDING_CACHE_ENTRIES);

  function key(): Uint8Array {
    return encodeKey(secretKey());
  }

  function encodeKey(text: string | undefined): Uint8Array {
    if (text === undefined || text === '') {
      throw new Unavailable('server.secretkey is missing from svc-secret: tokens cannot be issued or checked');
    }
    return new TextEncoder().encode(text);
  }

  return {
    async sign(claims) {
      const jwt = new SignJWT(claims.pwh !== undefined ? { pwh: claims.pwh } : {})
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setIssuer(ISSUER)
        .setSubject(`${claims.username}:${claims.kind}`)
        .setJti(claims.jti)
        .setIssuedAt(claims.iat)
        .setNotBefore(claims.iat);
      if (claims.exp !== undefined) jwt.setExpirationTime(claims.exp);
      return jwt.sign(key());
    },

    passwordBinding(passwordHash) {
      const keyText = secretKey();
      const hit = bindings.get(passwordHash);
      if (hit !== undefined && hit.key === keyText) return hit.binding;
      const binding = createHmac('sha256', key()).update(passwordHash).digest('base64url').slice(0, BINDING_LENGTH);
      if (keyText !== undefined) bindings.set(passwordHash, { key: keyText, binding });
      return binding;
    },

    knownClaims,

    async verify(token) {
      const known = knownClaims(token);
      if (known !== undefined) return known;
      const keyText = secretKey();
      const claims = await verifySignature(token, keyText);
      if (keyText !== undefined) verified.set(token, { key: keyText, claims });
      return claims;
    },
  };

  function knownClaims(token: string): TokenClaims | undefined {
    const hit = verified.get(token);
    return hit !== undefined && hit.key === secretKey() ? checkTimes(hit.claims, now()) : undefined;
  }

  async function verifySignature(token: string, keyText: string | undefined): Promise<TokenClaims> {
    let payload;
    try {
      ({ payload } = await jwtVerify(token, encodeKey(keyText), {
        issuer: ISSUER,
        algorithms: ['HS256'],
        currentDate: new Date(now()),
        requiredClaims: ['sub', 'jti', 'iat'],
      }));
    } catch (err: unknown) {
      throw verifyError(err);
    }
    const claims = claimsOf(payload.sub ?? '', payload.jti ?? '', payload.iat ?? 0, payload.exp);
    // jwtVerify checks nbf but not iat, and nbf may be absent or earlier: without this a token
    // "issued" in the future passed its first verification and failed only on later ones.
    return checkTimes(typeof payload['pwh'] === 'string' ? { ...claims, pwh: payload['pwh'] } : claims, now());
  }
}

/** The time rules jwtVerify applies (nbf is iat in our tokens), with the same messages. */
function checkTimes(claims: TokenClaims, nowMs: number): TokenClaims {
  const nowSeconds = Math.floor(nowMs / 1000);
  if (claims.exp !== undefined && claims.exp <= nowSeconds) throw new Unauthenticated('token has expired; log in again');
  if (claims.iat > nowSeconds) throw new Unauthenticated('token is not valid yet');
  return claims;
}

function claimsOf(sub: string, jti: string, iat: number, exp: number | undefined): TokenClaims {
  const at = sub.lastIndexOf(':');
  const kind = sub.slice(at + 1);
  if (at <= 0 || (kind !== 'login' && kind !== 'apiKey')) throw new Unauthenticated('token subject is not <name>:login or <name>:apiKey');
  return { username: sub.slice(0, at), kind, jti, iat, exp };
}

function verifyError(err: unknown): Error {
  if (err instanceof Unavailable) return err;
  if (err instanceof joseErrors.JWTExpired) return new Unauthenticated('token has expired; log in again');
  if (err instanceof joseErrors.JWTClaimValidationFailed && err.claim === 'nbf') return new Unauthenticated('token is not valid yet');
  // Every other reason (signature, algorithm, format, missing claim) says the same: never trust it.
  return new Unauthenticated('token is invalid');
}

/** The `iss` of a token without checking anything, to route it to the right verifier. */
export function unverifiedIssuer(token: string): string | undefined {
  try {
    const iss = decodeJwt(token).iss;
    return typeof iss === 'string' ? iss : undefined;
  } catch {
    return undefined;
  }
}
