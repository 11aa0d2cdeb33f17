/**
 * The bundled identity provider's keys, kept in svc-secret so that every replica signs and
 * verifies with the same ones and a restart keeps them:
 *
 * - `idp.signingKeys`: JSON list of RS256 private JWKs with their dates, the current key first.
 *   Keys retired by `svc-server idp rotate-keys` stay listed (and published in the JWKS) until
 *   every ID token they signed has expired, then the next rotation prunes them.
 * - `idp.cookieKeys`: JSON list of random strings, the keys the provider signs its cookies with.
 *
 * A key added by rotation is published at once but signs only PUBLISH_BEFORE_SIGNING_S later
 * (`signsFrom`): replicas see svc-secret change each on its own schedule, and one that signed
 * with a key the others do not know yet would have its tokens refused by them.
 *
 * First start: each replica generates candidates and writes them only if the key is still
 * absent (the store serialises read-modify-write), then reads back what the store holds, so
 * replicas that start together end with the same keys whoever wrote first.
 */
import { createHash, generateKeyPair, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { z } from 'zod';
import { createLocalJWKSet, type JWTVerifyGetKey } from 'jose';
import { SETTINGS_SECRET } from '../config/manifests.js';
import { ownKeysOnly } from '../config/own-secrets.js';
import type { ConfigStore } from '../config/store.js';
import { SvcError } from '../errors.js';
import { issuePlace, operatorWords } from '../config/zod-problems.js';
import { ID_TOKEN_TTL_S } from './lifetimes.js';

export const SIGNING_KEYS_KEY = 'idp.signingKeys';
export const COOKIE_KEYS_KEY = 'idp.cookieKeys';

const RSA_MODULUS_BITS = 2048;
const COOKIE_KEY_BYTES = 32;
/** A retired key stays published this long after an ID token it signed may have expired (clock skew). */
export const RETIRED_KEY_GRACE_S = 5 * 60;
/**
 * How long a rotated-in key is published before it signs: longer than any replica takes to see
 * a change of svc-secret (2 s on one host; a Kubernetes-mounted Secret, a minute or two).
 */
export const PUBLISH_BEFORE_SIGNING_S = 5 * 60;

const jwkSchema = z.looseObject({ kty: z.literal('RSA'), kid: z.string().min(1), n: z.string(), e: z.string(), d: z.string() });
const signingKeySchema = z.strictObject({
  kid: z.string().min(1),
  createdAt: z.iso.datetime(),
  /** When a rotated-in key starts signing; absent: at once (the first key). */
  signsFrom: z.iso.datetime().optional(),
  /** When a newer key took over signing (or takes over, for the key still signing); absent for the newest key. */
  retiredAt: z.iso.datetime().optional(),
  jwk: jwkSchema,
});
const signingKeysSchema = z.array(signingKeySchema).min(1);
const cookieKeysSchema = z.array(z.string().min(16)).min(1);

export type SigningKey = z.infer<typeof signingKeySchema>;

export interface IdpKeys {
  /** The current key first. */
  readonly signing: readonly SigningKey[];
  readonly cookie: readonly string[];
}

/** svc-secret holds a value under an idp key that is not what svc writes there. */
export class IdpKeysUnreadable extends SvcError {
  readonly code = 'unavailable';
}

export function parseIdpKeys(secret: Readonly<Record<string, string>>): IdpKeys | undefined {
  const signing = secret[SIGNING_KEYS_KEY];
  const cookie = secret[COOKIE_KEYS_KEY];
  if (signing === undefined || cookie === undefined) return undefined;
  return { signing: parseList(signingKeysSchema, signing, SIGNING_KEYS_KEY), cookie: parseList(cookieKeysSchema, cookie, COOKIE_KEYS_KEY) };
}

function parseList<T>(schema: z.ZodType<T>, text: string, key: string): T {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new IdpKeysUnreadable(`svc-secret: ${key}: not JSON; remove the key to have new keys generated`);
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    // A Secret's value: the problem's place and words, never the value (operatorWords quotes nothing).
    const issue = parsed.error.issues[0];
    const why = issue === undefined ? 'invalid' : `${issuePlace(issue)}${operatorWords(issue)}`;
    throw new IdpKeysUnreadable(`svc-secret: ${key}: not a key list svc wrote (${why}); remove the key to have new keys generated`);
  }
  return parsed.data;
}

export async function generateSigningKey(now: Date): Promise<SigningKey> {
  const { privateKey } = await promisify(generateKeyPair)('rsa', { modulusLength: RSA_MODULUS_BITS });
  const exported = privateKey.export({ format: 'jwk' }) as { n: string; e: string; d: string };
  // The RFC 7638 thumbprint of the public part, as oidc-provider would compute it.
  const kid = createHash('sha256').update(JSON.stringify({ e: exported.e, kty: 'RSA', n: exported.n })).digest('base64url');
  return { kid, createdAt: now.toISOString(), jwk: { ...exported, kty: 'RSA', kid } };
}

function generateCookieKeys(): string[] {
  return [randomBytes(COOKIE_KEY_BYTES).toString('base64url')];
}

function readSecret(store: ConfigStore): Readonly<Record<string, string>> {
  return store.current().secrets.get(SETTINGS_SECRET)?.data ?? {};
}

/** The keys in svc-secret, written first if absent (concurrent first starts agree: see the header). */
export async function ensureIdpKeys(store: ConfigStore, now: () => Date): Promise<IdpKeys> {
  const existing = parseIdpKeys(readSecret(store));
  if (existing !== undefined) return existing;
  const signing = JSON.stringify([await generateSigningKey(now())]);
  const cookie = JSON.stringify(generateCookieKeys());
  await store.updateSecret(SETTINGS_SECRET, ownKeysOnly((current) => ({
    set: {
      ...(current[SIGNING_KEYS_KEY] === undefined ? { [SIGNING_KEYS_KEY]: signing } : {}),
      ...(current[COOKIE_KEYS_KEY] === undefined ? { [COOKIE_KEYS_KEY]: cookie } : {}),
    },
  })));
  const written = parseIdpKeys(readSecret(store));
  if (written === undefined) throw new IdpKeysUnreadable('svc-secret: the identity provider keys were written but cannot be read back');
  return written;
}

/** What rotation reads of a key, whatever its algorithm (the extension assertion keys rotate the same way). */
export interface RotatableKey {
  readonly kid: string;
  readonly signsFrom?: string | undefined;
  readonly retiredAt?: string | undefined;
}

export interface RotationReport<K extends RotatableKey = SigningKey> {
  readonly added: K;
  readonly retired: readonly string[];
  readonly pruned: readonly string[];
  readonly kept: readonly string[];
}

/**
 * A new key, published now and signing from PUBLISH_BEFORE_SIGNING_S on; the key it replaces is
 * retired as of then. Retired keys whose tokens have all expired (retired longer ago than the ID
 * token lifetime plus a grace) are removed.
 */
export function rotatedKeys<K extends RotatableKey>(keys: readonly K[], generated: K, now: Date, tokenTtlS = ID_TOKEN_TTL_S): { keys: K[]; report: RotationReport<K> } {
  const at = new Date(now.getTime() + PUBLISH_BEFORE_SIGNING_S * 1000).toISOString();
  const added: K = { ...generated, signsFrom: at };
  const expiredBefore = now.getTime() - (tokenTtlS + RETIRED_KEY_GRACE_S) * 1000;
  const retired: string[] = [];
  const pruned: string[] = [];
  const kept: K[] = [];
  for (const key of keys) {
    if (key.retiredAt === undefined) {
      retired.push(key.kid);
      kept.push({ ...key, retiredAt: at });
    } else if (Date.parse(key.retiredAt) < expiredBefore) {
      pruned.push(key.kid);
    } else {
      kept.push(key);
    }
  }
  return { keys: [added, ...kept], report: { added, retired, pruned, kept: kept.map((k) => k.kid) } };
}

/**
 * The keys as the provider takes them at `now`: the one that signs first (the newest whose
 * `signsFrom` has come), then the others in their order.
 */
export function signingOrder<K extends RotatableKey>(keys: readonly K[], now: Date): K[] {
  const signer = keys.find((k) => k.signsFrom === undefined || Date.parse(k.signsFrom) <= now.getTime());
  return signer === undefined ? [...keys] : [signer, ...keys.filter((k) => k !== signer)];
}

/** When, after `now`, a published key starts signing (epoch ms); undefined if none is waiting. */
export function nextSignerChange(keys: readonly SigningKey[], now: Date): number | undefined {
  const waiting = keys.map((k) => (k.signsFrom === undefined ? NaN : Date.parse(k.signsFrom))).filter((t) => t > now.getTime());
  return waiting.length === 0 ? undefined : Math.min(...waiting);
}

/** `svc-server idp rotate-keys`: applied in one read-modify-write of svc-secret. */
export async function rotateSigningKeys(store: ConfigStore, now: Date): Promise<RotationReport> {
  const report = await rotateSigningKeysIf(store, now, () => true);
  if (report === undefined) throw new IdpKeysUnreadable('svc-secret: the signing keys were not rotated');
  return report;
}

/**
 * A rotation decided on the keys as stored at the moment of the write: the store serialises
 * read-modify-write across processes (a lock file beside the Secret's file, or the API's
 * resourceVersion), so replicas that find a rotation due at the same time rotate once; the
 * later ones see the new key, find nothing due and write nothing. undefined: not rotated.
 */
export async function rotateSigningKeysIf(store: ConfigStore, now: Date, due: (keys: readonly SigningKey[]) => boolean): Promise<RotationReport | undefined> {
  const added = await generateSigningKey(now);
  let report: RotationReport | undefined;
  await store.updateSecret(SETTINGS_SECRET, ownKeysOnly((current) => {
    report = undefined; // a write retried after a conflict decides again, on the newer keys
    const text = current[SIGNING_KEYS_KEY];
    const keys = text === undefined ? [] : parseList(signingKeysSchema, text, SIGNING_KEYS_KEY);
    if (!due(keys)) return {};
    const next = rotatedKeys(keys, added, now);
    report = next.report;
    return { set: { [SIGNING_KEYS_KEY]: JSON.stringify(next.keys) } };
  }));
  return report;
}

/** The public half of each key, as published in the JWKS. */
export function publicJwks(keys: readonly SigningKey[]): { keys: { kty: 'RSA'; kid: string; n: string; e: string; alg: 'RS256'; use: 'sig' }[] } {
  return { keys: keys.map((k) => ({ kty: 'RSA', kid: k.kid, n: k.jwk.n, e: k.jwk.e, alg: 'RS256', use: 'sig' })) };
}

/**
 * The keys the provider publishes now, as a key source for jose's jwtVerify: svc verifies the
 * bundled provider's ID tokens with them in process, rather than fetching its own JWKS over
 * HTTP. Built again only when the list changes (a rotation).
 */
export function localKeySet(keys: () => readonly SigningKey[]): JWTVerifyGetKey {
  let built: { of: readonly SigningKey[]; jwks: JWTVerifyGetKey } | undefined;
  return (header, token) => {
    const now = keys();
    if (built?.of !== now) built = { of: now, jwks: createLocalJWKSet(publicJwks(now)) };
    return built.jwks(header, token);
  };
}
