/**
 * PUT /api/v1/account/password: the caller proves who it is with ITS OWN current password
 * (also when changing another account, as Argo CD), which counts toward its login throttle;
 * another account needs `accounts, update, <name>`. SSO callers have no local password to
 * prove and are refused (Argo CD instead asks for an SSO token under 5 minutes old).
 *
 * passwordMtime is a whole second and the write waits until that second has begun: every
 * session issued before the change has a smaller `iat` (whole seconds) and dies, every session
 * issued with the new password has `iat >= mtime` and lives. Without the wait, a session
 * issued with the new password in the same second as the change would be refused or an old
 * one kept (the "second granularity" trap). The wait is at most 1 s, on a rare call.
 *
 * The write happens only if the stored hashes (caller's and target's) are still those read
 * before the check (else 409), and if the settings would take the account once written (else
 * 503, settings-guard.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { SETTINGS_SECRET } from '../config/manifests.js';
import { ownKeysOnly } from '../config/own-secrets.js';
import type { ConfigStore } from '../config/store.js';
import { Conflict, PermissionDenied } from '../errors.js';
import type { Principal } from '../principal.js';
import type { Accounts } from './account-queries.js';
import { checkNewPassword, hashPassword, passwordKeys } from './passwords.js';
import { patchThatTakesEffect } from './settings-guard.js';

export interface PasswordChangeRequest {
  readonly name: string;
  readonly currentPassword: string;
  readonly newPassword: string;
}

export interface PasswordChangeDeps {
  readonly store: ConfigStore;
  readonly accounts: Pick<Accounts, 'authorize' | 'find'>;
  /** The login service's password check: throttle, timing and failure delay included. */
  readonly checkPassword: (request: { username: string; password: string }) => Promise<boolean>;
  readonly now: () => number;
}

/** The hash now stored, so that a fresh session can be bound to it (LoginService.issueSession). */
export interface PasswordChanged {
  readonly passwordHash: string;
}

export type ChangePassword = (caller: Principal, request: PasswordChangeRequest) => Promise<PasswordChanged>;

export function createPasswordChange({ store, accounts, checkPassword, now }: PasswordChangeDeps): ChangePassword {
  return async function changePassword(caller, { name, currentPassword, newPassword }) {
    if (caller.kind === 'sso' || caller.kind === 'ssoApiKey') throw new PermissionDenied('password changes need a local account: log in with a local account first');
    accounts.authorize(caller, 'update', name);
    // Read before the check, so they are at least as old as the hash the check compares with:
    // a change in between also counts as "changed meanwhile" below, never the other way round.
    const checked = new Map([caller.username, name].map((n) => [n, accounts.find(n).passwordHash]));
    checkNewPassword(newPassword);
    if (!(await checkPassword({ username: caller.username, password: currentPassword }))) {
      throw new PermissionDenied('the current password is incorrect');
    }
    const hash = await hashPassword(newPassword);
    const mtimeMs = Math.ceil(now() / 1000) * 1000;
    const wait = mtimeMs - now();
    if (wait > 0) await sleep(wait);
    const keys = passwordKeys(name);
    await store.updateSecret(SETTINGS_SECRET, ownKeysOnly((current) => {
      const patch = { set: { [keys.hash]: hash, [keys.mtime]: new Date(mtimeMs).toISOString() } };
      // First: with an account the settings refuse, the hashes they hold are stale anyway.
      patchThatTakesEffect(store, name, current, patch);
      // The bcrypt and the wait leave time for another change; writing over it would lose it
      // (both callers told "done"), and a caller whose own password changed proved nothing.
      for (const [account, hashChecked] of checked) {
        if (storedHash(current, account) !== hashChecked) {
          throw new Conflict(`the password of account '${account}' changed meanwhile (after the current password was checked); nothing was written: try again`);
        }
      }
      return patch;
    }));
    return { passwordHash: hash };
  };
}

/** As the settings read it (config.ts): an empty value is no password. */
function storedHash(current: Readonly<Record<string, string>>, name: string): string | undefined {
  const value = current[passwordKeys(name).hash];
  return value === undefined || value === '' ? undefined : value;
}
