/**
 * Every write of an account's second factor to svc-secret, as API tokens are written
 * (accounts/api-tokens.ts): a serialised read-modify-write of the Secret under the store's lock
 * (the Kubernetes API on that store), changing only the account's own keys so the rest of the
 * file keeps its formatting and comments, refused when the settings would then ignore the
 * account (settings-guard.ts), and never a key outside what svc owns (ownKeysOnly).
 *
 * Removing a factor also writes `sessionsNotBefore`, ending the account's sessions.
 */
import { sessionsNotBeforeKey } from '../accounts/config.js';
import { secondFactorKeys } from '../accounts/second-factor-keys.js';
import { patchThatTakesEffect } from '../accounts/settings-guard.js';
import { parseSecondFactor } from '../accounts/second-factor-config.js';
import { SETTINGS_SECRET } from '../config/manifests.js';
import { ownKeysOnly } from '../config/own-secrets.js';
import { ProblemSink } from '../config/problems.js';
import type { ConfigStore, SecretPatch } from '../config/store.js';
import { Conflict, NotFound } from '../errors.js';
import type { PasskeyRecord, SecondFactorSettings } from '../accounts/account.js';
import { unreadableAccount } from '../accounts/settings-guard.js';

export interface FactorStore {
  /** A confirmed TOTP secret (sealed) and fresh recovery codes (hashed); 409 when TOTP is already on. */
  enableTotp(name: string, sealedSecret: string, recoveryHashes: readonly string[]): Promise<void>;
  /** TOTP off (recovery codes too, unless a passkey remains), and the account's sessions end at `cutoff`. */
  removeTotp(name: string, cutoff: Date): Promise<void>;
  /** Uses a recovery code up: true when its hash was listed (and now is not). */
  useRecoveryCode(name: string, hash: string): Promise<boolean>;
  /** Replaces every recovery code. */
  replaceRecoveryCodes(name: string, hashes: readonly string[]): Promise<void>;
  /** Adds a passkey; recovery codes come with the first factor when there are none yet. */
  addPasskey(name: string, passkey: PasskeyRecord, recoveryHashes: readonly string[] | undefined): Promise<void>;
  /** Removes a passkey by credential id and ends the account's sessions at `cutoff`; 404 when absent. */
  removePasskey(name: string, id: string, cutoff: Date): Promise<void>;
  /** The stored counter of a passkey after a login, when it grew. */
  updatePasskeyCounter(name: string, id: string, counter: number): Promise<void>;
}

export function createFactorStore(store: ConfigStore): FactorStore {
  /** One guarded read-modify-write of `name`'s keys. */
  function update(name: string, change: (factor: SecondFactorSettings, current: Readonly<Record<string, string>>) => SecretPatch | 'nothing'): Promise<void> {
    return store.updateSecret(SETTINGS_SECRET, ownKeysOnly((current) => {
      const patch = change(storedFactor(current, name), current);
      return patch === 'nothing' ? {} : patchThatTakesEffect(store, name, current, patch);
    }));
  }

  const keys = secondFactorKeys;

  return {
    enableTotp: (name, sealedSecret, hashes) =>
      update(name, (factor) => {
        if (factor.totpSealed !== undefined) throw new Conflict(`account '${name}' already has TOTP; remove it first to enrol a new authenticator`);
        return { set: { [keys(name).totp]: sealedSecret, [keys(name).recoveryCodes]: JSON.stringify(hashes) } };
      }),

    removeTotp: (name, cutoff) =>
      update(name, (factor) => {
        if (factor.totpSealed === undefined) throw new NotFound(`account '${name}' has no TOTP`);
        const gone = factor.passkeys.length > 0 ? [keys(name).totp] : [keys(name).totp, keys(name).recoveryCodes];
        return { delete: gone, set: { [sessionsNotBeforeKey(name)]: cutoff.toISOString() } };
      }),

    async useRecoveryCode(name, hash) {
      let used = false;
      await update(name, (factor) => {
        if (!factor.recoveryHashes.includes(hash)) return 'nothing';
        used = true;
        const rest = factor.recoveryHashes.filter((h) => h !== hash);
        return { set: { [keys(name).recoveryCodes]: JSON.stringify(rest) } };
      });
      return used;
    },

    replaceRecoveryCodes: (name, hashes) => update(name, () => ({ set: { [keys(name).recoveryCodes]: JSON.stringify(hashes) } })),

    addPasskey: (name, passkey, hashes) =>
      update(name, (factor) => {
        if (factor.passkeys.some((p) => p.id === passkey.id)) throw new Conflict(`this passkey is already registered for account '${name}'`);
        if (factor.passkeys.some((p) => p.name === passkey.name)) throw new Conflict(`account '${name}' already has a passkey named '${passkey.name}'`);
        const set: Record<string, string> = { [keys(name).passkeys]: JSON.stringify([...factor.passkeys, passkey]) };
        if (hashes !== undefined && factor.recoveryHashes.length === 0) set[keys(name).recoveryCodes] = JSON.stringify(hashes);
        return { set };
      }),

    removePasskey: (name, id, cutoff) =>
      update(name, (factor) => {
        if (!factor.passkeys.some((p) => p.id === id)) throw new NotFound(`account '${name}' has no passkey with id '${id.slice(0, 100)}'`);
        const rest = factor.passkeys.filter((p) => p.id !== id);
        const set = { [sessionsNotBeforeKey(name)]: cutoff.toISOString() };
        if (rest.length > 0) return { set: { ...set, [keys(name).passkeys]: JSON.stringify(rest) } };
        const gone = factor.totpSealed === undefined ? [keys(name).passkeys, keys(name).recoveryCodes] : [keys(name).passkeys];
        return { set, delete: gone };
      }),

    updatePasskeyCounter: (name, id, counter) =>
      update(name, (factor) => {
        const passkeys = factor.passkeys.map((p) => (p.id === id && counter > p.counter ? { ...p, counter } : p));
        return { set: { [keys(name).passkeys]: JSON.stringify(passkeys) } };
      }),
  };
}

/** The factor as stored right now; one the settings cannot read is refused, not rewritten. */
function storedFactor(current: Readonly<Record<string, string>>, name: string): SecondFactorSettings {
  const sink = new ProblemSink();
  const factor = parseSecondFactor(name, current, sink.scoped(SETTINGS_SECRET));
  if (factor === undefined) throw unreadableAccount(name, sink.problems);
  return factor;
}
