/**
 * The svc tokens a token exchange issues: JWT, HS256, iss `svc:workload`, sub
 * `workload:<entry>:<subject>`, `grp` the groups, `wle` the issuer entry, jti, iat, nbf, exp.
 * Signed with a key derived from server.secretkey for this purpose only (HMAC of a fixed
 * label), so a workload token can never pass for a local session (iss `svc`) or the other way
 * round, even if a check were missed: the signatures differ. A rotated server.secretkey ends
 * every workload token at once, as it ends every session.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import { Unauthenticated, Unavailable } from '../errors.js';
import { BoundedCache, UNUSED_TOKEN_MS } from '../lib/bounded-cache.js';
import { WORKLOAD_PREFIX } from './identify.js';

export const WORKLOAD_TOKEN_ISSUER = 'svc:workload';
const KEY_LABEL = 'svc workload token key v1';
const VERIFIED_CACHE_ENTRIES = 10_000;

export interface WorkloadTokenClaims {
  readonly username: string;
  readonly groups: readonly string[];
  /** The workload.config entry that admitted it. */
  readonly entry: string;
  readonly jti: string;
  readonly iat: number;
  readonly exp: number;
}

export interface WorkloadTokens {
  issue(claims: Omit<WorkloadTokenClaims, 'jti'>): Promise<{ readonly token: string; readonly jti: string }>;
  /** Signature, issuer, time; throws Unauthenticated with the reason. */
  verify(token: string): Promise<WorkloadTokenClaims>;
  /** The claims of a token verified before under the current key, times checked again; undefined when not seen. */
  known(token: string): WorkloadTokenClaims | undefined;
}

export interface WorkloadTokensDeps {
  readonly secretKey: () => string | undefined;
  readonly now: () => number;
}

export function createWorkloadTokens(deps: WorkloadTokensDeps): WorkloadTokens {
  const verified = new BoundedCache<string, { readonly secret: string; readonly claims: WorkloadTokenClaims }>(VERIFIED_CACHE_ENTRIES, { idle: { maxIdleMs: UNUSED_TOKEN_MS, now: deps.now } });
  let derivedFor: string | undefined;
  let derived: Uint8Array | undefined;

  function key(): Uint8Array {
    const secret = deps.secretKey();
    if (secret === undefined || secret === '') throw new Unavailable('server.secretkey is missing from svc-secret: workload tokens cannot be issued or checked');
    if (secret !== derivedFor || derived === undefined) {
      derived = createHmac('sha256', secret).update(KEY_LABEL).digest();
      derivedFor = secret;
    }
    return derived;
  }

  function checkTimes(claims: WorkloadTokenClaims): WorkloadTokenClaims {
    const now = Math.floor(deps.now() / 1000);
    if (claims.exp <= now) throw new Unauthenticated('token has expired; exchange a new workload token');
    if (claims.iat > now) throw new Unauthenticated('token is not valid yet');
    return claims;
  }

  function known(token: string): WorkloadTokenClaims | undefined {
    const hit = verified.get(token);
    return hit !== undefined && hit.secret === deps.secretKey() ? checkTimes(hit.claims) : undefined;
  }

  return {
    async issue(claims) {
      const jti = randomUUID();
      const token = await new SignJWT({ grp: [...claims.groups], wle: claims.entry })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setIssuer(WORKLOAD_TOKEN_ISSUER)
        .setSubject(claims.username)
        .setJti(jti)
        .setIssuedAt(claims.iat)
        .setNotBefore(claims.iat)
        .setExpirationTime(claims.exp)
        .sign(key());
      return { token, jti };
    },
    known,
    async verify(token) {
      const hit = known(token);
      if (hit !== undefined) return hit;
      const secret = deps.secretKey();
      let payload;
      try {
        ({ payload } = await jwtVerify(token, key(), {
          issuer: WORKLOAD_TOKEN_ISSUER,
          algorithms: ['HS256'],
          currentDate: new Date(deps.now()),
          requiredClaims: ['sub', 'jti', 'iat', 'exp'],
        }));
      } catch (err: unknown) {
        if (err instanceof Unavailable) throw err;
        if (err instanceof joseErrors.JWTExpired) throw new Unauthenticated('token has expired; exchange a new workload token');
        throw new Unauthenticated('token is invalid');
      }
      const sub = payload.sub as string;
      const grp = payload['grp'];
      const wle = payload['wle'];
      if (!sub.startsWith(WORKLOAD_PREFIX) || typeof wle !== 'string' || !Array.isArray(grp) || !grp.every((g) => typeof g === 'string')) {
        throw new Unauthenticated('token is invalid');
      }
      const claims = checkTimes({ username: sub, groups: grp, entry: wle, jti: payload.jti as string, iat: payload.iat as number, exp: payload.exp as number });
      if (secret !== undefined) verified.set(token, { secret, claims });
      return claims;
    },
  };
}
