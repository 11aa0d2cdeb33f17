/**
 * The provider's ID tokens as a TokenVerifier: signature against its JWKS (fetched once, then
 * again when a token names an unknown `kid`, never more often than `jwksCooldownMs`; or, for the
 * bundled provider, its keys in process: `localKeys`), issuer,
 * SPEC.md's audience rule, expiry with a small clock skew. The principal is the `sub` with the
 * groups of the claims RBAC reads (`scopes` of svc-rbac-cm), or of the userinfo endpoint.
 */
import { createHash } from 'node:crypto';
import { createRemoteJWKSet, customFetch, decodeJwt, errors as joseErrors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { applyClaimRules } from '../claims/evaluate.js';
import { hasClaimRules, type ClaimRules } from '../claims/rules-config.js';
import { Unauthenticated, Unavailable } from '../errors.js';
import { BoundedCache, UNUSED_TOKEN_MS } from '../lib/bounded-cache.js';
import { readableNameOf, type Principal } from '../principal.js';
import type { TokenVerifier } from '../session/token-verifier.js';
import { checkAudience } from './audience.js';
import type { ProviderClient } from './client.js';

export const CLOCK_SKEW_SECONDS = 30;
/** The keys are fetched again for an unknown `kid`, but never sooner than this after the last fetch. */
export const JWKS_COOLDOWN_MS = 5_000;

/** Groups from elsewhere than the token (the userinfo endpoint), and until when they hold. */
export type GroupSource = (claims: VerifiedClaims, token: string) => Promise<{ readonly groups: readonly string[]; readonly untilMs: number }>;

export interface VerifiedClaims {
  readonly sub: string;
  readonly exp: number;
  readonly tokenId: string;
  readonly payload: JWTPayload;
}

export interface SsoVerifierDeps {
  readonly client: ProviderClient;
  /** The claims whose values are groups (svc-rbac-cm `scopes`), read per verification. */
  readonly groupClaims: () => readonly string[];
  readonly groupSource?: GroupSource;
  readonly jwksCooldownMs?: number;
  /**
   * The provider's public keys as it publishes them now, read in process (the bundled provider,
   * whose keys svc holds): its JWKS is then never fetched over HTTP.
   */
  readonly localKeys?: JWTVerifyGetKey;
  readonly now: () => number;
}

export interface SsoVerifier extends TokenVerifier {
  /** Signature, issuer and audience only, at any time: for the refresh of an expiring session. */
  verifyIgnoringExpiry(token: string): Promise<VerifiedClaims>;
  /** The provider's keys, as ID tokens are checked with them: for its logout tokens (backchannel-logout.ts). */
  keySet(): Promise<JWTVerifyGetKey>;
}

interface Known { readonly principal: Principal; readonly untilMs: number }

export function tokenIdOf(token: string, payload: JWTPayload): string {
  return typeof payload.jti === 'string' && payload.jti !== '' ? payload.jti : `sha256:${createHash('sha256').update(token).digest('base64url')}`;
}

export function createSsoVerifier(deps: SsoVerifierDeps): SsoVerifier {
  const { provider } = deps.client;
  let jwks: JWTVerifyGetKey | undefined = deps.localKeys;
  const seen = new BoundedCache<string, Known>(10_000, { idle: { maxIdleMs: UNUSED_TOKEN_MS, now: deps.now } });

  async function keys(): Promise<JWTVerifyGetKey> {
    if (jwks !== undefined) return jwks;
    const jwksUri = (await deps.client.configuration()).serverMetadata().jwks_uri;
    if (jwksUri === undefined) throw new Unavailable(`the OIDC provider ${provider.issuer} publishes no jwks_uri`);
    jwks = createRemoteJWKSet(new URL(jwksUri), { cooldownDuration: deps.jwksCooldownMs ?? JWKS_COOLDOWN_MS, [customFetch]: deps.client.fetch });
    return jwks;
  }

  async function check(token: string, currentDate: Date | undefined): Promise<VerifiedClaims> {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, await keys(), {
        issuer: provider.issuer,
        clockTolerance: CLOCK_SKEW_SECONDS,
        currentDate: currentDate ?? new Date(deps.now()),
        requiredClaims: ['sub', 'exp'],
      }));
    } catch (err: unknown) {
      throw refusal(err);
    }
    const audience = checkAudience(payload.aud, provider);
    if (!audience.ok) throw new Unauthenticated(audience.reason);
    return { sub: payload.sub as string, exp: payload.exp as number, tokenId: tokenIdOf(token, payload), payload };
  }

  return {
    issuer: provider.issuer,
    keySet: keys,
    known(token) {
      const entry = seen.get(token);
      if (entry === undefined) return undefined;
      const now = deps.now();
      if (now >= entry.untilMs) return undefined;
      if (entry.principal.expiresAt !== undefined && entry.principal.expiresAt * 1000 + CLOCK_SKEW_SECONDS * 1000 <= now) throw new Unauthenticated('token has expired');
      return entry.principal;
    },
    async verify(token) {
      const claims = await check(token, undefined);
      const fromToken = groupsOf(claims.payload, deps.groupClaims());
      const extra = deps.groupSource === undefined ? undefined : await deps.groupSource(claims, token);
      const person = underRules(provider.claimRules, claims, extra === undefined ? fromToken : [...new Set([...fromToken, ...extra.groups])], extra?.groups);
      const sid = claims.payload['sid'];
      const principal: Principal = {
        username: person.username,
        ...(person.username !== claims.sub ? { subject: claims.sub } : {}),
        ...(person.displayName !== undefined ? { displayName: person.displayName } : {}),
        groups: person.groups,
        issuer: provider.issuer,
        kind: 'sso',
        tokenId: claims.tokenId,
        ...(typeof sid === 'string' && sid !== '' ? { sid } : {}),
        expiresAt: claims.exp,
        ...(typeof claims.payload.iat === 'number' ? { issuedAt: claims.payload.iat } : {}),
      };
      // Kept until the token expires, or until the userinfo groups are due again.
      seen.set(token, { principal, untilMs: Math.min(extra?.untilMs ?? Infinity, (claims.exp + CLOCK_SKEW_SECONDS) * 1000) });
      return principal;
    },
    verifyIgnoringExpiry(token) {
      // Checked as of a moment of its life: every other rule (nbf, signature) still holds.
      let exp: unknown;
      try {
        exp = decodeJwt(token).exp;
      } catch {
        return Promise.reject(new Unauthenticated('token is invalid'));
      }
      if (typeof exp !== 'number') return Promise.reject(new Unauthenticated('token is invalid'));
      return check(token, new Date(Math.min(deps.now(), exp * 1000 - 1000)));
    },
  };
}

/**
 * The principal's name, readable name and groups: the token's, or what oidc.config's claim rules
 * make of them (docs/claims.md). Every ID token taken comes through here, at the login's
 * callback and as a bearer, so no path skips the rules; a refusal throws ClaimRuleRefused.
 * `claims` is the token's, with userinfo's groups (`infoGroups`, when read) added to `groups`.
 */
function underRules(rules: ClaimRules | undefined, verified: VerifiedClaims, groups: readonly string[], infoGroups: readonly string[] | undefined): { username: string; displayName: string | undefined; groups: readonly string[] } {
  const { payload } = verified;
  if (rules === undefined || !hasClaimRules(rules)) return { username: verified.sub, displayName: readableNameOf(payload), groups };
  const claims = infoGroups === undefined ? payload : { ...payload, groups: [...new Set([...groupsOf(payload, ['groups']), ...infoGroups])] };
  const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);
  const user = applyClaimRules(rules, claims, { uid: verified.sub, username: verified.sub, email: text(payload['email']), name: text(payload['name']), groups });
  const displayName = readableNameOf({
    preferred_username: rules.claimMappings.username !== undefined ? user.username : payload['preferred_username'],
    email: user.email,
    name: user.name,
  });
  return { username: user.username, displayName, groups: user.groups };
}

function refusal(err: unknown): Error {
  if (err instanceof Unavailable) return err;
  if (err instanceof joseErrors.JWTExpired) return new Unauthenticated('token has expired');
  if (err instanceof joseErrors.JWKSTimeout || err instanceof joseErrors.JWKSInvalid) return new Unavailable('the keys of the OIDC provider cannot be read', { cause: err });
  if (err instanceof joseErrors.JOSEError) return new Unauthenticated(`token is invalid: ${err.code}`);
  // A fetch failure of the key set (provider down, certificate refused): not the token's fault.
  return new Unavailable('the keys of the OIDC provider cannot be read', { cause: err });
}

/** The values of the listed claims: a string or a list of strings each. */
export function groupsOf(payload: JWTPayload, claims: readonly string[]): readonly string[] {
  const groups: string[] = [];
  for (const name of claims) {
    const value = payload[name];
    if (typeof value === 'string') groups.push(value);
    else if (Array.isArray(value)) for (const v of value) if (typeof v === 'string') groups.push(v);
  }
  return [...new Set(groups)];
}
