/**
 * The keys svc signs extension identity assertions with (identity-assertion.ts), kept in
 * svc-secret under `assertion.signingKeys` so that every replica signs with the same ones, a
 * restart keeps them, and backends verify with one published key set
 * (`{url}/.well-known/svc/jwks.json`).
 *
 * ES256 (P-256) rather than the provider's RS256: a signature is made on the proxy's request
 * path (cached, but made again for each caller and extension), and a P-256 signature costs a
 * fraction of a 2048-bit RSA one.
 *
 * They rotate as the provider's keys do (idp/keys.ts): `svc-server idp rotate-keys` adds a key,
 * published at once and signing PUBLISH_BEFORE_SIGNING_S later (every replica, and every
 * backend's cached key set, has it by then); the key it replaces stays published until the
 * assertions it signed have expired, and the next rotation prunes it. `idp.keyRotation`
 * (idp/key-rotation.ts) runs the same rotation by itself when these keys are a period old.
 */
import { createHash, createPrivateKey, generateKeyPair, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import { z } from 'zod';
import { SETTINGS_SECRET } from '../config/manifests.js';
import { ownKeysOnly } from '../config/own-secrets.js';
import type { ConfigStore } from '../config/store.js';
import { issuePlace, operatorWords } from '../config/zod-problems.js';
import { SvcError } from '../errors.js';
import { rotatedKeys, type RotationReport } from '../idp/keys.js';

export const ASSERTION_KEYS_KEY = 'assertion.signingKeys';
/** An assertion's longest lifetime; a retired key stays published this long (plus a grace) after it stopped signing. */
export const ASSERTION_TTL_S = 60;

const jwkSchema = z.looseObject({ kty: z.literal('EC'), crv: z.literal('P-256'), kid: z.string().min(1), x: z.string(), y: z.string(), d: z.string() });
const assertionKeySchema = z.strictObject({
  kid: z.string().min(1),
  createdAt: z.iso.datetime(),
  signsFrom: z.iso.datetime().optional(),
  retiredAt: z.iso.datetime().optional(),
  jwk: jwkSchema,
});
const assertionKeysSchema = z.array(assertionKeySchema).min(1);

export type AssertionKey = z.infer<typeof assertionKeySchema>;

/** svc-secret holds no assertion keys, or a value there that svc did not write: nothing is forwarded unsigned. */
export class AssertionKeysUnavailable extends SvcError {
  readonly code = 'unavailable';
}

/** The keys in svc-secret's text, or undefined when the key is absent; throws on a value svc did not write. */
export function parseAssertionKeys(text: string | undefined): AssertionKey[] | undefined {
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new AssertionKeysUnavailable(`svc-secret: ${ASSERTION_KEYS_KEY}: not JSON; remove the key to have new keys generated`);
  }
  const parsed = assertionKeysSchema.safeParse(value);
  if (!parsed.success) {
    // A Secret's value: the place and the words of the problem, never the value.
    const issue = parsed.error.issues[0];
    const why = issue === undefined ? 'invalid' : `${issuePlace(issue)}${operatorWords(issue)}`;
    throw new AssertionKeysUnavailable(`svc-secret: ${ASSERTION_KEYS_KEY}: not a key list svc wrote (${why}); remove the key to have new keys generated`);
  }
  return parsed.data;
}

export async function generateAssertionKey(now: Date): Promise<AssertionKey> {
  const { privateKey } = await promisify(generateKeyPair)('ec', { namedCurve: 'P-256' });
  const exported = privateKey.export({ format: 'jwk' }) as { x: string; y: string; d: string };
  // The RFC 7638 thumbprint of the public part.
  const kid = createHash('sha256').update(JSON.stringify({ crv: 'P-256', kty: 'EC', x: exported.x, y: exported.y })).digest('base64url');
  return { kid, createdAt: now.toISOString(), jwk: { kty: 'EC', crv: 'P-256', kid, x: exported.x, y: exported.y, d: exported.d } };
}

function storedText(store: ConfigStore): string | undefined {
  return store.current().secrets.get(SETTINGS_SECRET)?.data[ASSERTION_KEYS_KEY];
}

/** The keys in svc-secret, written first if absent; replicas starting together end with the same (the store serialises the write). */
export async function ensureAssertionKeys(store: ConfigStore, now: () => Date): Promise<AssertionKey[]> {
  const existing = parseAssertionKeys(storedText(store));
  if (existing !== undefined) return existing;
  const first = JSON.stringify([await generateAssertionKey(now())]);
  await store.updateSecret(SETTINGS_SECRET, ownKeysOnly((current) => (current[ASSERTION_KEYS_KEY] === undefined ? { set: { [ASSERTION_KEYS_KEY]: first } } : {})));
  const written = parseAssertionKeys(storedText(store));
  if (written === undefined) throw new AssertionKeysUnavailable(`svc-secret: ${ASSERTION_KEYS_KEY} was written but cannot be read back`);
  return written;
}

/** `svc-server idp rotate-keys` for the assertion keys: one read-modify-write of svc-secret. */
export async function rotateAssertionKeys(store: ConfigStore, now: Date): Promise<RotationReport<AssertionKey>> {
  const report = await rotateAssertionKeysIf(store, now, () => true);
  if (report === undefined) throw new AssertionKeysUnavailable(`svc-secret: ${ASSERTION_KEYS_KEY} was not rotated`);
  return report;
}

/**
 * A rotation decided on the keys as stored at the moment of the write (idp/keys.ts's
 * rotateSigningKeysIf, for these keys): replicas finding it due together rotate once, the later
 * ones see the new key and write nothing. undefined: not rotated.
 */
export async function rotateAssertionKeysIf(store: ConfigStore, now: Date, due: (keys: readonly AssertionKey[]) => boolean): Promise<RotationReport<AssertionKey> | undefined> {
  const added = await generateAssertionKey(now);
  let report: RotationReport<AssertionKey> | undefined;
  await store.updateSecret(SETTINGS_SECRET, ownKeysOnly((current) => {
    report = undefined; // a write retried after a conflict decides again, on the newer keys
    const keys = parseAssertionKeys(current[ASSERTION_KEYS_KEY]) ?? [];
    if (!due(keys)) return {};
    const next = rotatedKeys(keys, added, now, ASSERTION_TTL_S);
    report = next.report;
    return { set: { [ASSERTION_KEYS_KEY]: JSON.stringify(next.keys) } };
  }));
  return report;
}

export interface PublicAssertionJwk {
  readonly kty: 'EC';
  readonly crv: 'P-256';
  readonly kid: string;
  readonly x: string;
  readonly y: string;
  readonly alg: 'ES256';
  readonly use: 'sig';
}

/** The public half of each key (never `d`), as `{url}/.well-known/svc/jwks.json` serves them. */
export function publicAssertionJwks(keys: readonly AssertionKey[]): { keys: PublicAssertionJwk[] } {
  return { keys: keys.map((k) => ({ kty: 'EC', crv: 'P-256', kid: k.kid, x: k.jwk.x, y: k.jwk.y, alg: 'ES256', use: 'sig' })) };
}

/** A key's private half as a key object, made once per key. */
const keyObjects = new WeakMap<AssertionKey, KeyObject>();
export function privateKeyOf(key: AssertionKey): KeyObject {
  let made = keyObjects.get(key);
  if (made === undefined) {
    made = createPrivateKey({ key: { ...key.jwk }, format: 'jwk' });
    keyObjects.set(key, made);
  }
  return made;
}

/**
 * The keys svc-secret holds now, read from the store's snapshot and parsed again only when the
 * text changes (a rotation). Throws AssertionKeysUnavailable when absent or unreadable.
 */
export function assertionKeysIn(store: Pick<ConfigStore, 'current'>): () => readonly AssertionKey[] {
  let parsed: { text: string; keys: readonly AssertionKey[] } | undefined;
  return () => {
    const text = store.current().secrets.get(SETTINGS_SECRET)?.data[ASSERTION_KEYS_KEY];
    if (text === undefined) throw new AssertionKeysUnavailable(`svc-secret has no ${ASSERTION_KEYS_KEY}; svc writes it at start (restart a replica, or run svc-server idp rotate-keys)`);
    if (parsed?.text !== text) parsed = { text, keys: parseAssertionKeys(text) ?? [] };
    return parsed.keys;
  };
}
