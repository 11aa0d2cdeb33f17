/**
 * Account administration without a login (`svc-server account …`): for when no one can log in
 * (admin's password lost, its second factor gone, an account to lock out now). Each operation
 * writes the store directly, through the store's own locked read-modify-write, and the running
 * servers see it as any other change of svc-cm or svc-secret.
 *
 * Every write is checked before it is made, with the settings' own parser (accountProblems):
 * a change the settings would then refuse (and so ignore, keeping the account's last good
 * version) is refused here, not reported as done. Each operation records one audit event,
 * success or failure; none carries a password or a hash.
 *
 * Sessions end by the rules the server already applies: a new passwordMtime (set-password), a
 * disabled account (disable), `<prefix>.sessionsNotBefore` (reset-second-factor). Times are whole
 * seconds and the write waits until that second has begun, as password-change.ts explains.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { AuditTrail, AuditType } from '../audit/trail.js';
import { SETTINGS_CM, SETTINGS_SECRET } from '../config/manifests.js';
import { ownKeysOnly } from '../config/own-secrets.js';
import { patchedValues, type ConfigMapWriter, type ConfigStore, type SecretPatch } from '../config/store.js';
import { AccountNotFound, Conflict, InvalidRequest } from '../errors.js';
import { accountProblems, ADMIN, usernameProblem } from './config.js';
import { checkNewPassword, hashPassword, passwordKeys } from './passwords.js';
import { patchThatTakesEffect, unreadableAccount } from './settings-guard.js';

export type AdminStore = Pick<ConfigStore, 'current' | 'updateSecret'> & ConfigMapWriter;

export interface OfflineAdminDeps {
  readonly store: AdminStore;
  readonly audit: AuditTrail;
  /** Which store is written, for the audit event: `directory` or `kubernetes`. */
  readonly storeKind: string;
  /** Where: the directory's path, or the namespace. */
  readonly location: string;
  readonly now: () => number;
  readonly wait?: (ms: number) => Promise<void>;
}

/** What an operation changed, one line each, for the operator. */
export type ChangeReport = readonly string[];

export interface OfflineAccountAdmin {
  setPassword(name: string, password: string): Promise<ChangeReport>;
  disable(name: string): Promise<ChangeReport>;
  enable(name: string): Promise<ChangeReport>;
  resetSecondFactor(name: string): Promise<ChangeReport>;
  create(name: string, capabilities: string): Promise<ChangeReport>;
}

/** svc-secret's key prefix of an account: `admin` for admin, `accounts.<name>` otherwise. */
export function accountPrefix(name: string): string {
  return name === ADMIN ? ADMIN : `accounts.${name}`;
}

/** The account names svc-cm defines (admin always), as the settings read them (config.ts). */
export function definedAccounts(cm: Readonly<Record<string, string>>): Set<string> {
  const names = new Set([ADMIN]);
  for (const key of Object.keys(cm)) {
    if (key.startsWith('accounts.') && !key.endsWith('.enabled')) names.add(key.slice('accounts.'.length));
  }
  return names;
}

/**
 * svc-secret's second-factor keys of account `name`: those under `mfa.<name>.`, less those of a
 * longer account name that shares the prefix (`mfa.bob.x.…` belongs to `bob.x`, whose factor
 * a reset of `bob` must not remove).
 */
export function secondFactorKeys(name: string, keys: Iterable<string>, accounts: ReadonlySet<string>): string[] {
  const owner = (key: string): string | undefined =>
    [...accounts].filter((a) => key.startsWith(`mfa.${a}.`)).sort((a, b) => b.length - a.length)[0];
  return [...keys].filter((key) => key.startsWith(`mfa.${name}.`) && (owner(key) ?? name) === name).sort();
}

export function createOfflineAccountAdmin(deps: OfflineAdminDeps): OfflineAccountAdmin {
  const { store } = deps;
  const wait = deps.wait ?? ((ms: number) => sleep(ms));
  const cmNow = (): Readonly<Record<string, string>> => store.current().configMaps.get(SETTINGS_CM)?.data ?? {};
  const secretNow = (): Readonly<Record<string, string>> => store.current().secrets.get(SETTINGS_SECRET)?.data ?? {};

  /** One audit event per operation: success with what was done, or failure with why. */
  async function audited(command: string, action: string, type: AuditType, name: string, run: () => Promise<ChangeReport>): Promise<ChangeReport> {
    const event = { category: 'iam', type, action, user: { name }, svc: { command: `account ${command}`, store: deps.storeKind, location: deps.location } } as const;
    try {
      const report = await run();
      deps.audit.record({ ...event, outcome: 'success' });
      return report;
    } catch (err: unknown) {
      deps.audit.record({ ...event, outcome: 'failure', reason: err instanceof Error ? err.message : String(err) });
      throw err;
    }
  }

  function requireAccount(name: string, cm: Readonly<Record<string, string>>): void {
    if (!definedAccounts(cm).has(name)) throw new AccountNotFound(name);
  }

  /** A whole-second time, once that second has begun (see the module header). */
  async function wholeSecondNow(): Promise<string> {
    const ms = Math.ceil(deps.now() / 1000) * 1000;
    const left = ms - deps.now();
    if (left > 0) await wait(left);
    return new Date(ms).toISOString();
  }

  /** A svc-cm write of account `name`, refused when the settings would not take the account after it. */
  async function writeConfigMap(name: string, change: (cm: Readonly<Record<string, string>>) => SecretPatch): Promise<SecretPatch> {
    let written: SecretPatch = {};
    await store.updateConfigMap(SETTINGS_CM, (cm) => {
      const patch = change(cm);
      const problems = accountProblems(name, patchedValues(cm, patch), secretNow());
      if (problems.length > 0) throw unreadableAccount(name, problems);
      written = patch;
      return patch;
    });
    return written;
  }

  async function setPassword(name: string, password: string): Promise<ChangeReport> {
    requireAccount(name, cmNow());
    checkNewPassword(password);
    const hash = await hashPassword(password);
    const keys = passwordKeys(name);
    const mtime = await wholeSecondNow();
    await store.updateSecret(SETTINGS_SECRET, ownKeysOnly((current) => patchThatTakesEffect(store, name, current, { set: { [keys.hash]: hash, [keys.mtime]: mtime } })));
    return [
      `account '${name}': new password hash written to ${SETTINGS_SECRET} ${keys.hash}`,
      `account '${name}': ${keys.mtime} = ${mtime}; its sessions issued before then end`,
    ];
  }

  /**
   * Disabling also writes sessionsNotBefore, first: the servers' record of when an account was
   * disabled (session/account-cutoffs.ts) is made only by a server that sees the disable, and
   * these commands are run when none may be running; without it an enable before the next start
   * would bring the account's old sessions back. First, so that a failed svc-cm write still
   * leaves the sessions ended (less access, never more).
   */
  async function disable(name: string): Promise<ChangeReport> {
    const key = `accounts.${name}.enabled`;
    requireAccount(name, cmNow());
    if (cmNow()[key] === 'false') return [`account '${name}' was already disabled (${SETTINGS_CM} ${key} is "false"); nothing changed`];
    const ended = await endSessions(name, () => []);
    const patch = await writeConfigMap(name, (cm) => {
      requireAccount(name, cm);
      return cm[key] === 'false' ? {} : { set: { [key]: 'false' } };
    });
    return [
      ended.line,
      ...(patch.set === undefined ? [] : [`account '${name}': ${SETTINGS_CM} ${key} = "false"; it cannot log in, and its API tokens are refused while it is disabled`]),
    ];
  }

  /** Writes `<prefix>.sessionsNotBefore` = now (whole second) and removes the keys `remove` picks, in one write. */
  async function endSessions(name: string, remove: (current: Readonly<Record<string, string>>) => string[]): Promise<{ line: string; removed: string[] }> {
    const notBefore = `${accountPrefix(name)}.sessionsNotBefore`;
    const time = await wholeSecondNow();
    let removed: string[] = [];
    await store.updateSecret(
      SETTINGS_SECRET,
      ownKeysOnly((current) => {
        removed = remove(current);
        return patchThatTakesEffect(store, name, current, { set: { [notBefore]: time }, ...(removed.length > 0 ? { delete: removed } : {}) });
      }),
    );
    return { line: `account '${name}': ${notBefore} = ${time}; its sessions issued before then end`, removed };
  }

  async function enable(name: string): Promise<ChangeReport> {
    const switches = name === ADMIN ? ['admin.enabled', `accounts.${name}.enabled`] : [`accounts.${name}.enabled`];
    const patch = await writeConfigMap(name, (cm) => {
      requireAccount(name, cm);
      // A switch left out means enabled; one with any other value than "true" is turned on.
      const off = switches.filter((key) => cm[key] !== undefined && cm[key] !== 'true');
      return off.length === 0 ? {} : { set: Object.fromEntries(off.map((key) => [key, 'true'])) };
    });
    const set = Object.keys(patch.set ?? {});
    if (set.length === 0) return [`account '${name}' was already enabled; nothing changed`];
    return [
      ...set.map((key) => `account '${name}': ${SETTINGS_CM} ${key} = "true"`),
      `account '${name}' is enabled; sessions and tokens issued before it was disabled stay refused`,
    ];
  }

  async function resetSecondFactor(name: string): Promise<ChangeReport> {
    requireAccount(name, cmNow());
    const { line, removed } = await endSessions(name, (current) => secondFactorKeys(name, Object.keys(current), definedAccounts(cmNow())));
    return [
      removed.length === 0 ? `account '${name}': no second factor was enrolled` : `account '${name}': removed ${removed.length} second-factor key(s) from ${SETTINGS_SECRET}: ${removed.join(', ')}`,
      line,
    ];
  }

  async function create(name: string, capabilities: string): Promise<ChangeReport> {
    const problem = usernameProblem(name);
    if (problem !== undefined) throw new InvalidRequest(problem);
    const parts = [...new Set(capabilities.split(',').map((c) => c.trim()).filter((c) => c !== ''))];
    if (parts.length === 0) throw new InvalidRequest('--capabilities: give at least one of login, apiKey (comma-separated)');
    const capsKey = `accounts.${name}`;
    const exists = (cm: Readonly<Record<string, string>>): void => {
      if (name === ADMIN || cm[capsKey] !== undefined) throw new Conflict(`account '${name}' already exists${name === ADMIN ? ' (built in)' : ` (${SETTINGS_CM} ${capsKey})`}`);
    };
    exists(cmNow());
    // Keys a removed account of the same name left in svc-secret would bring its old password,
    // tokens and factors back: removed before the account exists, never after.
    const leftovers = leftoverKeys(name, Object.keys(secretNow()), definedAccounts(cmNow()));
    if (leftovers.length > 0) {
      await store.updateSecret(SETTINGS_SECRET, ownKeysOnly((current) => ({ delete: leftoverKeys(name, Object.keys(current), definedAccounts(cmNow())) })));
    }
    await writeConfigMap(name, (cm) => {
      exists(cm);
      return { set: { [capsKey]: parts.join(', ') } };
    });
    const disabled = cmNow()[`${capsKey}.enabled`] === 'false';
    return [
      ...(leftovers.length > 0 ? [`account '${name}': removed what a former account of that name left in ${SETTINGS_SECRET}: ${leftovers.join(', ')}`] : []),
      `account '${name}': ${SETTINGS_CM} ${capsKey} = "${parts.join(', ')}"${disabled ? ` (disabled: ${capsKey}.enabled is "false")` : ''}`,
      `account '${name}' has no password yet: set one with svc-server account set-password ${name}`,
    ];
  }

  return {
    setPassword: (name, password) => audited('set-password', 'account-password-set', 'change', name, () => setPassword(name, password)),
    disable: (name) => audited('disable', 'account-disabled', 'change', name, () => disable(name)),
    enable: (name) => audited('enable', 'account-enabled', 'change', name, () => enable(name)),
    resetSecondFactor: (name) => audited('reset-second-factor', 'second-factor-reset', 'deletion', name, () => resetSecondFactor(name)),
    create: (name, capabilities) => audited('create', 'account-created', 'creation', name, () => create(name, capabilities)),
  };
}

/** svc-secret keys of account `name` that a new account of that name must not inherit. */
function leftoverKeys(name: string, keys: readonly string[], accounts: ReadonlySet<string>): string[] {
  const prefix = accountPrefix(name);
  const own = new Set(['password', 'passwordMtime', 'tokens', 'sessionsNotBefore'].map((k) => `${prefix}.${k}`));
  return [...keys.filter((k) => own.has(k)).sort(), ...secondFactorKeys(name, keys, accounts)];
}
