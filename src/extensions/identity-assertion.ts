/**
 * `Svc-Identity-Assertion`: who the caller is, signed, for backends of extensions with
 * `backend.identityAssertion: true` (docs/extensions.md). A backend that verifies it against
 * `{url}/.well-known/svc/jwks.json` no longer has to trust that the network only lets svc reach it.
 *
 * A JWT, ES256, signed synchronously with node:crypto: the proxy's path makes no promise for a
 * request it can answer from memory (gateway.ts), and jose's signer is async. One assertion is
 * reused per (token, extension, application) while more than REUSE_MIN_LEFT_S of its life
 * remains: a caller's requests mostly cost a map look-up, not a signature.
 */
import { sign } from 'node:crypto';
import type { Principal } from '../principal.js';
import { ASSERTION_TTL_S, privateKeyOf, type AssertionKey } from './assertion-keys.js';
import { AssertionCache } from './assertion-cache.js';
import { signingOrder } from '../idp/keys.js';
import { SvcError } from '../errors.js';
import type { ExtensionRoute } from './access.js';

export const IDENTITY_ASSERTION_HEADER = 'svc-identity-assertion';
/** A cached assertion is signed again once less than this is left of it. */
export const REUSE_MIN_LEFT_S = 30;

export type AssertionKind = 'local' | 'sso' | 'workload';

export interface AssertionSubject {
  readonly principal: Principal;
  readonly extension: string;
  readonly application?: { readonly name: string; readonly project: string } | undefined;
}

export interface IdentityAssertionDeps {
  /** The keys in force (assertion-keys.ts); throws when there are none, and then nothing is forwarded. */
  readonly keys: () => readonly AssertionKey[];
  /** svc's `url`, the `iss`. */
  readonly issuer: () => string;
  readonly now: () => number;
  readonly cache?: AssertionCache;
}

export type IdentityAssertions = (subject: AssertionSubject) => string;

export function kindOf(principal: Principal): AssertionKind {
  return principal.kind === 'sso' || principal.kind === 'ssoApiKey' ? 'sso' : principal.kind === 'workload' ? 'workload' : 'local';
}

/** When an assertion issued at `iat` expires: 60 s on, and never after the token it speaks for (at least 1 s). */
export function assertionExpiry(principal: Principal, iat: number): number {
  const tokenEnds = principal.expiresAt ?? Number.POSITIVE_INFINITY;
  return Math.max(iat + 1, Math.min(iat + ASSERTION_TTL_S, Math.floor(tokenEnds)));
}

/** The claims of an assertion issued at `iat` (seconds). */
export function assertionClaims(subject: AssertionSubject, issuer: string, iat: number): Record<string, unknown> {
  const { principal, application } = subject;
  const claims: Record<string, unknown> = {
    iss: issuer,
    aud: `svc-extension:${subject.extension}`,
    sub: principal.username,
    name: principal.displayName ?? principal.username,
    groups: principal.groups,
    kind: kindOf(principal),
    iat,
    exp: assertionExpiry(principal, iat),
  };
  if (application !== undefined) {
    claims.application = application.name;
    claims.project = application.project;
  }
  return claims;
}

function encode(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/** A compact JWS, ES256 with the JOSE (r || s) signature encoding. */
export function signAssertion(claims: Record<string, unknown>, key: AssertionKey): string {
  const input = `${encode({ alg: 'ES256', typ: 'JWT', kid: key.kid })}.${encode(claims)}`;
  const signature = sign('sha256', Buffer.from(input), { key: privateKeyOf(key), dsaEncoding: 'ieee-p1363' });
  return `${input}.${signature.toString('base64url')}`;
}

export function createIdentityAssertions(deps: IdentityAssertionDeps): IdentityAssertions {
  const cache = deps.cache ?? new AssertionCache();
  return function identityAssertion(subject) {
    const now = deps.now();
    const key = signingOrder(deps.keys(), new Date(now))[0];
    if (key === undefined) throw new Error('assertion keys: an empty list passed parsing');
    const issuer = deps.issuer();
    const { principal } = subject;
    // The token id binds the groups and names the token carried; the username and issuer keep ids of different kinds apart.
    const cacheKey = `${principal.issuer}\n${principal.username}\n${principal.tokenId}\n${subject.extension}\n${subject.application?.name ?? ''}\n${subject.application?.project ?? ''}`;
    const cached = cache.get(cacheKey);
    if (cached !== undefined && cached.reuseUntil > now && cached.kid === key.kid && cached.issuer === issuer) return cached.token;
    const iat = Math.floor(now / 1000);
    const token = signAssertion(assertionClaims(subject, issuer, iat), key);
    cache.set(cacheKey, { token, reuseUntil: (assertionExpiry(principal, iat) - REUSE_MIN_LEFT_S) * 1000, kid: key.kid, issuer });
    return token;
  };
}

/** Thrown when an extension wants an assertion and this proxy was built without a signer: nothing goes out unsigned. */
export class AssertionsNotConfigured extends SvcError {
  readonly code = 'unavailable';
}

/**
 * The assertion a route's backend gets: undefined when its extension did not ask for one. Fails
 * (503) rather than forward without it, since such a backend may refuse unsigned requests or,
 * worse, fall back to trusting the plain headers.
 */
export function assertionForRoute(assertions: IdentityAssertions | undefined, route: ExtensionRoute): string | undefined {
  if (route.extension.identityAssertion !== true) return undefined;
  if (assertions === undefined) throw new AssertionsNotConfigured(`extension '${route.extension.name}' asks for an identity assertion, and this server signs none`);
  const application = route.application;
  return assertions({
    principal: route.principal,
    extension: route.extension.name,
    application: application === undefined ? undefined : { name: `${application.namespace}/${application.name}`, project: application.project },
  });
}
