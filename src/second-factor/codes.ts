/**
 * Checks a code typed for an account's second factor: six digits are a TOTP code (accepted
 * once per time step, totp-replay.ts), anything else a recovery code (used up in svc-secret,
 * factor-store.ts). Answers which factor passed, REUSED_CODE or undefined; the caller counts the failure.
 */
import type { AccountSettings } from '../accounts/account.js';
import { factorOf } from '../accounts/account.js';
import { Unavailable } from '../errors.js';
import { createSealer, type Sealer } from '../lib/sealed.js';
import type { StateBackend } from '../state/state.js';
import type { FactorStore } from './factor-store.js';
import { recoveryCodeHasher, type RecoveryCodeHasher } from './recovery-codes.js';
import { isTotpCode, matchingStep } from './totp.js';
import { claimTotpStep } from './totp-replay.js';

export type CodeFactor = 'totp' | 'recovery';

/**
 * A TOTP code that is right for its time step, whose step was already accepted (the enrolment's
 * own code, say): refused and counted as a wrong code, but said as what it is, since only a
 * holder of the right code gets it. Never a success: callers test for a CodeFactor.
 */
export const REUSED_CODE = 'reused';
export type CodeCheck = CodeFactor | typeof REUSED_CODE | undefined;

/** The sealer and hasher of the server.secretkey in force, read per use so that a rotated key applies. */
export interface SecondFactorKeys {
  readonly totpSealer: () => Sealer;
  readonly recoveryHasher: () => RecoveryCodeHasher;
}

export function secondFactorKeysFrom(secretKey: () => string | undefined): SecondFactorKeys {
  const key = (): string => {
    const value = secretKey();
    if (value === undefined || value === '') throw new Unavailable('server.secretkey is missing from svc-secret: second factors cannot be checked');
    return value;
  };
  return { totpSealer: () => createSealer(key(), 'mfa-totp'), recoveryHasher: () => recoveryCodeHasher(key()) };
}

export interface CodeCheckDeps {
  readonly state: StateBackend;
  readonly factors: Pick<FactorStore, 'useRecoveryCode'>;
  readonly keys: SecondFactorKeys;
  readonly now: () => number;
}

/** The TOTP secret of an account, opened; undefined when it has none or it does not open under this key. */
export function openTotpSecret(keys: SecondFactorKeys, account: AccountSettings): string | undefined {
  const sealed = factorOf(account).totpSealed;
  return sealed === undefined ? undefined : keys.totpSealer().open(sealed, account.name);
}

export async function checkCode(deps: CodeCheckDeps, account: AccountSettings, code: string): Promise<CodeCheck> {
  const trimmed = code.trim();
  if (isTotpCode(trimmed)) {
    const secret = openTotpSecret(deps.keys, account);
    if (secret === undefined) return undefined;
    const step = matchingStep(secret, trimmed, deps.now());
    if (step === undefined) return undefined;
    // A step of before a loss of state is refused as used: its use may have been lost with it.
    return (await claimTotpStep(deps.state, account.name, step, deps.now())) ? 'totp' : REUSED_CODE;
  }
  const hash = deps.keys.recoveryHasher()(trimmed);
  if (!factorOf(account).recoveryHashes.includes(hash)) return undefined;
  return (await deps.factors.useRecoveryCode(account.name, hash)) ? 'recovery' : undefined;
}
