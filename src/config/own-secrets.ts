/**
 * The one list of what svc keeps for itself in its Secrets: its session key, the accounts'
 * password hashes and API token records, the identity provider's signing and cookie keys,
 * the extension identity assertion keys, second-factor material, and the initial admin password. Configuration never reads any of it:
 * a `$<key>` or `$<secret>:<key>` naming one is refused (secret-ref.ts), because whoever may
 * edit a ConfigMap could otherwise have svc send them to a host of their choosing (an LDAP
 * bind, a client secret posted to an upstream).
 *
 * Owned prefixes of svc-secret, not an allow-list of what configuration may reference: the keys
 * operators add for configuration are theirs to name (`oidc.clientSecret`,
 * `dex.github.clientSecret`, Argo CD's habit), and an allow-list would refuse each. A key svc
 * adds later is owned from its first write all the same: every write svc makes to its own
 * Secrets goes through ownKeysOnly(), which refuses a key outside these prefixes, so the new key
 * fails every test that writes it until it is listed here (and test/config/own-secrets.test.ts
 * fails if a write to svc-secret bypasses ownKeysOnly()).
 */
import { INITIAL_ADMIN_SECRET, SETTINGS_SECRET } from './manifests.js';
import type { SecretPatch } from './store.js';

/** Secrets svc writes whole, with what they hold: no key of theirs is ever configuration. */
const OWNED_SECRETS: ReadonlyMap<string, string> = new Map([[INITIAL_ADMIN_SECRET, 'the initial admin password']]);

/** svc-secret's keys svc owns, each prefix with what lives under it. */
export const OWNED_KEY_PREFIXES: Readonly<Record<string, string>> = {
  'server.': "svc's session and API token signing key",
  'admin.': "the admin account's password hash and its change time",
  'accounts.': "the local accounts' password hashes and API token records",
  'idp.': "the identity provider's signing and cookie keys",
  'mfa.': 'second-factor material',
  'ssotokens.': "SSO users' personal API token records, with the identity their connector rechecks",
  'assertion.': 'the keys svc signs the identity assertions it sends to extension backends with',
};

/**
 * What `key` of Secret `secret` holds for svc itself (a phrase for a message), or undefined
 * when configuration may read it.
 */
export function ownedBySvc(secret: string, key: string): string | undefined {
  const whole = OWNED_SECRETS.get(secret);
  if (whole !== undefined) return `${secret} holds ${whole}`;
  if (secret !== SETTINGS_SECRET) return undefined;
  const prefix = Object.keys(OWNED_KEY_PREFIXES).find((p) => key.startsWith(p));
  return prefix === undefined ? undefined : `${secret}'s ${prefix}* keys hold ${OWNED_KEY_PREFIXES[prefix]}`;
}

/** A key svc was about to write outside what it owns: a defect of svc, never of configuration. */
export class UnownedSecretKey extends Error {}

/**
 * `mutate` as svc's own writes to svc-secret must run it: a patch that sets or deletes a key
 * svc does not own (OWNED_KEY_PREFIXES) throws instead of being written.
 */
export function ownKeysOnly<C>(mutate: (current: C) => SecretPatch): (current: C) => SecretPatch {
  return (current) => {
    const patch = mutate(current);
    assertOwnKeys([...Object.keys(patch.set ?? {}), ...(patch.delete ?? [])]);
    return patch;
  };
}

/** Throws UnownedSecretKey naming the first of `keys` outside OWNED_KEY_PREFIXES. */
export function assertOwnKeys(keys: readonly string[]): void {
  const stray = keys.find((key) => ownedBySvc(SETTINGS_SECRET, key) === undefined);
  if (stray !== undefined) {
    throw new UnownedSecretKey(`svc would write key '${stray}' of Secret ${SETTINGS_SECRET}, which is not among the keys it owns (${Object.keys(OWNED_KEY_PREFIXES).join(', ')}); list it in own-secrets.ts`);
  }
}
