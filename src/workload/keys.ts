/**
 * One workload issuer's signing keys: its discovery document (`<issuer>/.well-known/openid-configuration`,
 * whose `issuer` must be the configured one) gives `jwks_uri` and the algorithms it signs with;
 * or, for an issuer without discovery, `jwksURL` and the algorithms its keys name. The key set
 * is cached; a token naming a key the set lacks makes one refetch, at most once per
 * `cooldownMs` (a minute) per issuer, so forged `kid`s cannot make svc hammer the issuer. The
 * cache is renewed after `maxAgeMs`, and keys older than that are not used. When the issuer
 * cannot be reached, the answer is Unavailable (503): the token cannot be checked, which is
 * neither a refusal nor a pass; for 5 s after a failed fetch that answer comes without asking.
 *
 * Rejected: jose's createRemoteJWKSet, whose cooldown reads the wall clock (tests could not show
 * the once-a-minute refetch) and which cannot hand back the discovery's algorithms.
 */
import { createLocalJWKSet, errors as joseErrors, type JSONWebKeySet, type JWSHeaderParameters } from 'jose';
import { Unavailable } from '../errors.js';
import { describeFailure } from '../lib/tls-fetch.js';
import type { WorkloadIssuer } from './config.js';

export const KEYS_COOLDOWN_MS = 60_000;
export const KEYS_MAX_AGE_MS = 10 * 60_000;
/** After a failed fetch, requests answer 503 at once for this long instead of each asking a dead issuer. */
export const KEYS_RETRY_AFTER_FAILURE_MS = 5_000;
/** Discovery documents and key sets are small; a larger answer is refused, not buffered. */
const MAX_DOCUMENT_BYTES = 256 * 1024;

/** Signature algorithms svc accepts at all: asymmetric ones (never `none`, never HMAC, whose key would be public). */
export const ASYMMETRIC_ALGORITHMS: ReadonlySet<string> = new Set(['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519']);

type KeyLookup = ReturnType<typeof createLocalJWKSet>;
export type VerificationKey = Awaited<ReturnType<KeyLookup>>;

/** The key for a token's header, or why there is none (the token's fault: the check is named `key`). */
export type KeyResult = { readonly key: VerificationKey } | { readonly missing: string };

export interface IssuerKeys {
  /** The algorithms the issuer publishes that svc accepts; loads the keys when needed. */
  algorithms(): Promise<readonly string[]>;
  keyFor(header: JWSHeaderParameters): Promise<KeyResult>;
}

export interface IssuerKeysDeps {
  readonly fetch: typeof globalThis.fetch;
  readonly now: () => number;
  readonly cooldownMs?: number;
  readonly maxAgeMs?: number;
}

interface Loaded {
  readonly at: number;
  readonly algorithms: readonly string[];
  readonly lookup: KeyLookup;
}

export function createIssuerKeys(entry: WorkloadIssuer, deps: IssuerKeysDeps): IssuerKeys {
  const cooldownMs = deps.cooldownMs ?? KEYS_COOLDOWN_MS;
  const maxAgeMs = deps.maxAgeMs ?? KEYS_MAX_AGE_MS;
  let loaded: Loaded | undefined;
  let pending: Promise<Loaded> | undefined;
  let lastAttempt = -Infinity;
  let lastFailure: unknown;

  /** One load at a time: concurrent exchanges wait for the same fetch. */
  function load(): Promise<Loaded> {
    if (pending !== undefined) return pending;
    lastAttempt = deps.now();
    pending = fetchKeys(entry, deps).then(
      (next) => {
        loaded = next;
        lastFailure = undefined;
        pending = undefined;
        return next;
      },
      (err: unknown) => {
        lastFailure = err;
        pending = undefined;
        throw err;
      },
    );
    return pending;
  }

  /** Keys older than maxAgeMs are never used: an issuer that cannot renew them cannot be checked. */
  async function current(): Promise<Loaded> {
    if (loaded !== undefined && deps.now() - loaded.at < maxAgeMs) return loaded;
    if (lastFailure !== undefined && deps.now() - lastAttempt < KEYS_RETRY_AFTER_FAILURE_MS) throw lastFailure;
    return load();
  }

  return {
    async algorithms() {
      return (await current()).algorithms;
    },
    async keyFor(header) {
      const keys = await current();
      const found = await lookup(keys, header);
      if (!('missing' in found) || deps.now() - lastAttempt < cooldownMs) return found;
      return lookup(await load(), header);
    },
  };
}

async function lookup(keys: Loaded, header: JWSHeaderParameters): Promise<KeyResult> {
  try {
    return { key: await keys.lookup(header) };
  } catch (err: unknown) {
    if (err instanceof joseErrors.JWKSNoMatchingKey) return { missing: `no key of the issuer's key set matches the token's kid '${String(header.kid ?? '(none)').slice(0, 64)}' and alg '${String(header.alg)}'` };
    if (err instanceof joseErrors.JWKSMultipleMatchingKeys) return { missing: 'several keys of the issuer match a token without a kid' };
    if (err instanceof joseErrors.JOSEError) return { missing: `the issuer's key cannot be used: ${err.code}` };
    throw err;
  }
}

async function fetchKeys(entry: WorkloadIssuer, deps: IssuerKeysDeps): Promise<Loaded> {
  const where = `workload issuer '${entry.name}'`;
  let jwksUri = entry.jwksURL;
  let published: readonly string[] | undefined;
  if (jwksUri === undefined) {
    const discoveryUrl = `${entry.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
    const doc = await fetchJson(discoveryUrl, deps.fetch, `the discovery document of ${where}`);
    if (doc['issuer'] !== entry.issuer) throw new Unavailable(`the discovery document of ${where} names another issuer; svc trusts none of its keys`);
    const uri = doc['jwks_uri'];
    if (typeof uri !== 'string' || !URL.canParse(uri) || new URL(uri).protocol !== 'https:') throw new Unavailable(`the discovery document of ${where} has no https jwks_uri`);
    jwksUri = uri;
    const algs = doc['id_token_signing_alg_values_supported'];
    if (Array.isArray(algs)) published = algs.filter((a): a is string => typeof a === 'string');
  }
  const jwks = await fetchJson(jwksUri, deps.fetch, `the key set of ${where}`);
  if (!Array.isArray(jwks['keys'])) throw new Unavailable(`the key set of ${where} is not a JWK set (no keys list)`);
  const keys = jwks['keys'] as readonly Record<string, unknown>[];
  // Without a published list, the algorithms the keys name (and RS256 for RSA keys that name none, as OIDC's default).
  published ??= keys.map((k) => (typeof k['alg'] === 'string' ? k['alg'] : k['kty'] === 'RSA' ? 'RS256' : undefined)).filter((a): a is string => a !== undefined);
  const algorithms = [...new Set(published.filter((a) => ASYMMETRIC_ALGORITHMS.has(a)))];
  let lookupKeys: KeyLookup;
  try {
    lookupKeys = createLocalJWKSet(jwks as unknown as JSONWebKeySet);
  } catch (err: unknown) {
    throw new Unavailable(`the key set of ${where} cannot be read: ${describeFailure(err)}`, { cause: err });
  }
  return { at: deps.now(), algorithms, lookup: lookupKeys };
}

async function fetchJson(url: string, fetchImpl: typeof globalThis.fetch, what: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    const response = await fetchImpl(url, { headers: { accept: 'application/json' }, redirect: 'error' });
    if (response.status !== 200) {
      await response.body?.cancel();
      throw new Error(`HTTP ${response.status}`);
    }
    const length = Number(response.headers.get('content-length') ?? '0');
    if (length > MAX_DOCUMENT_BYTES) {
      await response.body?.cancel();
      throw new Error(`the answer is larger than ${MAX_DOCUMENT_BYTES} bytes`);
    }
    text = await response.text();
    if (text.length > MAX_DOCUMENT_BYTES) throw new Error(`the answer is larger than ${MAX_DOCUMENT_BYTES} bytes`);
  } catch (err: unknown) {
    throw new Unavailable(`${what} cannot be read from ${url}: ${describeFailure(err)}`, { cause: err });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Unavailable(`${what} at ${url} is not JSON`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Unavailable(`${what} at ${url} is not a JSON object`);
  return value as Record<string, unknown>;
}
