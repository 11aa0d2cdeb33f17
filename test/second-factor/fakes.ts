/**
 * What the second-factor unit tests build their services from: an account map the factor store
 * writes to, a password check and a throttle that record what they were asked, and sessions of
 * one account.
 */
import { expect } from 'chai';
import type { AccountSettings, SecondFactorSettings } from '../../src/accounts/account.js';
import { NO_SECOND_FACTOR } from '../../src/accounts/account.js';
import { secondFactorKeysFrom, type SecondFactorKeys } from '../../src/second-factor/codes.js';
import type { FactorStore } from '../../src/second-factor/factor-store.js';
import type { Principal } from '../../src/principal.js';
import { MARKER_FIELD, REVOKED_HASH } from '../../src/session/revocation.js';
import { formatMarker } from '../../src/session/revocations-epoch.js';
import { createMemoryState } from '../../src/state/memory.js';
import type { StateBackend } from '../../src/state/state.js';

export const PASSWORD = 'the-right-password';
export const keys: SecondFactorKeys = secondFactorKeysFrom(() => 'a-server-secret-key-for-the-unit-tests-0123456789');

export function session(username: string, tokenId: string): Principal {
  return { username, groups: [], issuer: 'svc', kind: 'session', tokenId, expiresAt: Math.floor(Date.now() / 1000) + 3600 };
}

/** Accounts held in a map that the fake factor store writes to, as svc-secret's watcher would apply. */
export interface FakeAccounts {
  readonly accounts: () => ReadonlyMap<string, AccountSettings>;
  readonly factors: FactorStore;
  factorOf(name: string): SecondFactorSettings;
  set(name: string, factor: SecondFactorSettings): void;
  /** How many writes the factor store made. */
  readonly writes: () => number;
}

export function fakeAccounts(names: readonly string[]): FakeAccounts {
  const map = new Map<string, AccountSettings>(names.map((name) => [name, { name, enabled: true, capabilities: ['login'], passwordHash: 'h', tokens: [], secondFactor: NO_SECOND_FACTOR }]));
  let writes = 0;
  const factorOf = (name: string): SecondFactorSettings => map.get(name)?.secondFactor ?? NO_SECOND_FACTOR;
  const set = (name: string, factor: SecondFactorSettings): void => {
    const account = map.get(name);
    if (account === undefined) throw new Error(`no account ${name}`);
    map.set(name, { ...account, secondFactor: factor });
  };
  const write = (name: string, change: (f: SecondFactorSettings) => SecondFactorSettings): Promise<void> => {
    writes++;
    set(name, change(factorOf(name)));
    return Promise.resolve();
  };
  const factors: FactorStore = {
    enableTotp: (name, totpSealed, recoveryHashes) => write(name, (f) => ({ ...f, totpSealed, recoveryHashes })),
    removeTotp: (name) => write(name, (f) => ({ passkeys: f.passkeys, recoveryHashes: f.passkeys.length > 0 ? f.recoveryHashes : [] })),
    async useRecoveryCode(name, hash) {
      if (!factorOf(name).recoveryHashes.includes(hash)) return false;
      await write(name, (f) => ({ ...f, recoveryHashes: f.recoveryHashes.filter((h) => h !== hash) }));
      return true;
    },
    replaceRecoveryCodes: (name, recoveryHashes) => write(name, (f) => ({ ...f, recoveryHashes })),
    addPasskey: (name, passkey, hashes) => write(name, (f) => ({ ...f, passkeys: [...f.passkeys, passkey], recoveryHashes: f.recoveryHashes.length === 0 && hashes !== undefined ? hashes : f.recoveryHashes })),
    removePasskey: (name, id) => write(name, (f) => ({ ...f, passkeys: f.passkeys.filter((p) => p.id !== id) })),
    updatePasskeyCounter: () => Promise.resolve(),
  };
  return { accounts: () => map, factors, factorOf, set, writes: () => writes };
}

/** The login service's password check and throttle, as the recent proof sees them, recording each call. */
export interface FakeLogin {
  readonly checkPassword: (request: { username: string; password: string }, options: { readonly keepFailures: boolean }) => Promise<boolean>;
  readonly throttle: { admit(name: string): Promise<number>; recordFailure(name: string, attempt: number): Promise<void>; recordSuccess(name: string): Promise<void> };
  /** Every call, in order: `check:<name>:<keepFailures>`, `admit:<name>`, `failure:<name>`, `success:<name>`. */
  readonly calls: string[];
}

export function fakeLogin(): FakeLogin {
  const calls: string[] = [];
  return {
    calls,
    checkPassword: ({ username, password }, { keepFailures }) => {
      calls.push(`check:${username}:${keepFailures}`);
      return Promise.resolve(password === PASSWORD);
    },
    throttle: {
      admit: (name) => {
        calls.push(`admit:${name}`);
        return Promise.resolve(1);
      },
      recordFailure: (name) => {
        calls.push(`failure:${name}`);
        return Promise.resolve();
      },
      recordSuccess: (name) => {
        calls.push(`success:${name}`);
        return Promise.resolve();
      },
    },
  };
}

/** A TOTP secret sealed for `name`, as the factor store keeps it. */
export function sealedTotp(secret: string, name: string): string {
  return keys.totpSealer().seal(secret, name);
}

/** The typed refusal a call ended with (its code and message); fails the test when the call was accepted. */
export async function refusal(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await promise;
  } catch (err: unknown) {
    return { code: (err as { code: string }).code, message: (err as Error).message };
  }
  return expect.fail('accepted');
}

/**
 * Memory state as a running server holds it: its record began at `beganMs` (the marker of the
 * record of revocations, revocations-epoch.ts, long ago by default), so the TOTP steps of a test
 * are not refused as steps of before a loss of state (totp-replay.ts).
 */
export function stateWithRecord(beganMs = 1): StateBackend {
  const state = createMemoryState();
  // Memory's hashSet stores before its first await: the marker is there when this returns.
  void state.hashSet(REVOKED_HASH, MARKER_FIELD, formatMarker({ id: '00000000-0000-4000-8000-000000000000', atMs: beganMs }));
  return state;
}
