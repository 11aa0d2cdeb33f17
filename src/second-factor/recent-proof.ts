/**
 * The recent proof that adding, removing or replacing a second factor (recovery codes included)
 * takes: the account's password, and while a factor is on, a current code (TOTP or a recovery
 * code, codes.ts). A session alone is never enough: whoever copied a cookie could otherwise
 * remove the owner's last factor or bind the account to an authenticator of their own.
 *
 * Both are counted as at login, under the account's canonical name (`account.name`, the key the
 * login throttle and its lockout use): a wrong password through the login service's own check
 * (throttle, timing, failure delay), a wrong code as a failed attempt. With a factor on, the
 * right password clears nothing (its attempt is handed back): only the code's success does, so
 * password and code guesses add up as they do at login. Without a factor, the password is the
 * whole proof and its success clears the count, as a login's does.
 *
 * A passkey assertion is not taken here (no step-up challenge exists for it yet): an account
 * with passkeys only proves itself with a recovery code, which is then used up.
 */
import type { AccountSettings } from '../accounts/account.js';
import { hasSecondFactor } from '../accounts/account.js';
import { InvalidRequest, PermissionDenied } from '../errors.js';
import type { LoginThrottle } from '../session/throttle.js';
import { checkCode, REUSED_CODE, type CodeCheckDeps } from './codes.js';

export interface Proof {
  /** The account's password; always required (a missing one is refused uncounted). */
  readonly password?: string | undefined;
  /** A TOTP code or a recovery code; required while the account has a factor. */
  readonly code?: string | undefined;
}

export const WRONG_PASSWORD = 'the password is incorrect';
export const WRONG_CODE = 'the second-factor code is incorrect or already used';
export const REUSED_PROOF_CODE = 'this code was already used; wait for the next one (a new code every 30 seconds)';

export interface RecentProofDeps {
  /** The login service's password check (throttle, timing and failure delay included). */
  readonly checkPassword: (request: { username: string; password: string }, options: { readonly keepFailures: boolean }) => Promise<boolean>;
  /** The login throttle: a wrong code here counts as one at login does. */
  readonly throttle: Pick<LoginThrottle, 'admit' | 'recordFailure' | 'recordSuccess'>;
  readonly codes: CodeCheckDeps;
}

/** Resolves when `proof` proves `account`'s owner; throws PermissionDenied (InvalidRequest for a missing field) otherwise. */
export type ProveOwner = (account: AccountSettings, proof: Proof) => Promise<void>;

export function createRecentProof(deps: RecentProofDeps): ProveOwner {
  return async function proveOwner(account, proof) {
    const factorOn = hasSecondFactor(account);
    const password = proof.password ?? '';
    const code = proof.code?.trim() ?? '';
    // Missing fields are refused before anything is checked: nothing was guessed, so nothing is counted.
    if (password === '') {
      throw new InvalidRequest(`field 'password' is required: changing a second factor takes the password of account '${account.name}'`);
    }
    if (factorOn && code === '') {
      throw new InvalidRequest(`field 'code' is required: account '${account.name}' has a second factor; send a code from the authenticator app or a recovery code`);
    }
    if (!(await deps.checkPassword({ username: account.name, password }, { keepFailures: factorOn }))) {
      throw new PermissionDenied(WRONG_PASSWORD);
    }
    if (!factorOn) return;
    const attempt = await deps.throttle.admit(account.name);
    const checked = await checkCode(deps.codes, account, code);
    if (checked !== 'totp' && checked !== 'recovery') {
      await deps.throttle.recordFailure(account.name, attempt);
      throw new PermissionDenied(checked === REUSED_CODE ? REUSED_PROOF_CODE : WRONG_CODE);
    }
    await deps.throttle.recordSuccess(account.name);
  };
}
