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
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { SETTINGS_SECRET } from '../config/manifests.js';
import type { ConfigStore } from '../config/store.js';
import { PermissionDenied } from '../errors.js';
import type { Principal } from '../session/principal.js';
import type { Accounts } from './accounts.js';
import { checkNewPassword, hashPassword, passwordKeys } from './passwords.js';

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
    if (caller.kind === 'sso') throw new PermissionDenied('password changes need a local account: log in with a local account first');
    accounts.authorize(caller, 'update', name);
    accounts.find(name);
    checkNewPassword(newPassword);
    if (!(await checkPassword({ username: caller.username, password: currentPassword }))) {
      throw new PermissionDenied('the current password is incorrect');
    }
    const hash = await hashPassword(newPassword);
    const mtimeMs = Math.ceil(now() / 1000) * 1000;
    const wait = mtimeMs - now();
    if (wait > 0) await sleep(wait);
    const keys = passwordKeys(name);
    await store.updateSecret(SETTINGS_SECRET, () => ({
      set: { [keys.hash]: hash, [keys.mtime]: new Date(mtimeMs).toISOString() },
    }));
    return { passwordHash: hash };
  };
}
