/**
 * Read side of local accounts, and who may do what to one: a local user may always read
 * itself, change its own password and manage its own tokens; anything else needs the right
 * `accounts, get|update, <name>` (an account with no rule gets `policy.default`, which the
 * rights module applies). Knows nothing of HTTP.
 */
import { AccountNotFound, InvalidRequest, PermissionDenied } from '../errors.js';
import { RESOURCES } from '../rbac/builtin.js';
import type { Rights } from '../rbac/rights.js';
import { extensionActionProblem } from '../rbac/methods.js';
import { refusal } from '../rbac/refusal.js';
import type { Principal } from '../principal.js';
import { usernameProblem, type AccountSettings, type Capability } from './config.js';

export type AccountAction = 'get' | 'update';
const ACCOUNT_ACTIONS: readonly string[] = ['get', 'update'] satisfies AccountAction[];
export const ACCOUNTS_RESOURCE = 'accounts';

export interface TokenView {
  readonly id: string;
  /** Seconds since the epoch, as the JWT's iat. */
  readonly issuedAt: number;
  /** Seconds since the epoch; null for a token that never expires. */
  readonly expiresAt: number | null;
}

export interface AccountView {
  readonly name: string;
  readonly enabled: boolean;
  readonly capabilities: readonly Capability[];
  /** Newest first. */
  readonly tokens: readonly TokenView[];
}

export function accountView(account: AccountSettings): AccountView {
  const tokens = [...account.tokens]
    .sort((a, b) => b.iat - a.iat)
    .map((t) => ({ id: t.id, issuedAt: t.iat, expiresAt: t.exp ?? null }));
  return { name: account.name, enabled: account.enabled, capabilities: [...account.capabilities], tokens };
}

export interface AccountsDeps {
  readonly accounts: () => ReadonlyMap<string, AccountSettings>;
  readonly rights: Pick<Rights, 'allows'> & Partial<Pick<Rights, 'explain'>>;
}

export interface Accounts {
  /** The accounts the caller may read (itself included), by name. */
  list(caller: Principal): AccountView[];
  get(caller: Principal, name: string): AccountView;
  /** Throws PermissionDenied unless the caller is the account itself or has the right. */
  authorize(caller: Principal, action: AccountAction, name: string): void;
  /** The account, or AccountNotFound. */
  find(name: string): AccountSettings;
  /**
   * GET …/can-i: the answer the server would act on, so the self rules count too (a user may
   * always get and update itself, whatever the policy says), not only the RBAC policy.
   */
  canI(caller: Principal, resource: string, action: string, object: string): boolean;
}

/** A local session or API token of the account itself; an SSO user of the same name is not. */
export function isSelf(caller: Principal, name: string): boolean {
  // Only a local principal is an account: an SSO or workload name is never one.
  return (caller.kind === 'session' || caller.kind === 'apiKey') && caller.username === name;
}

/** How much of a refused name or resource a message quotes: the caller chose its length. */
const QUOTED_CHARS = 40;

function quoted(value: string): string {
  return value.length > QUOTED_CHARS ? `'${value.slice(0, QUOTED_CHARS)}…'` : `'${value}'`;
}

/**
 * A name no account can have is refused before the rights are asked: every question asked is a
 * decision-cache entry, and any logged-in caller could otherwise fill it with 16 KB names.
 */
function checkName(name: string): void {
  if (usernameProblem(name) !== undefined) {
    throw new InvalidRequest(`${quoted(name)} is not an account name (at most 32 lower-case letters, digits, '-', '.' or '_', starting and ending with a letter or digit)`);
  }
}

/** can-i about a resource this product never checks is refused rather than asked (and cached). */
function checkResource(resource: string): void {
  if (!Object.hasOwn(RESOURCES, resource)) {
    throw new InvalidRequest(`unknown resource ${quoted(resource)} (want one of ${Object.keys(RESOURCES).join(', ')})`);
  }
}

/** can-i about extensions takes the method (or *), as the rights lines do. */
function checkMethod(action: string): void {
  const problem = extensionActionProblem(action);
  if (problem !== undefined) throw new InvalidRequest(problem);
}

export function createAccounts({ accounts, rights }: AccountsDeps): Accounts {
  function allowed(caller: Principal, action: AccountAction, name: string): boolean {
    checkName(name);
    return isSelf(caller, name) || rights.allows(caller, ACCOUNTS_RESOURCE, action, name);
  }

  function find(name: string): AccountSettings {
    const account = accounts().get(name);
    if (account === undefined) throw new AccountNotFound(name);
    return account;
  }

  return {
    list(caller) {
      return [...accounts().values()]
        .filter((a) => allowed(caller, 'get', a.name))
        .sort((a, b) => a.name.localeCompare(b.name))
        .map(accountView);
    },
    get(caller, name) {
      this.authorize(caller, 'get', name);
      return accountView(find(name));
    },
    authorize(caller, action, name) {
      // Rights before existence, so a caller without rights cannot probe which names exist.
      if (!allowed(caller, action, name)) throw new PermissionDenied(`permission denied: accounts, ${action}, ${name}`, { decision: refusal(rights, caller, ACCOUNTS_RESOURCE, action, name) });
    },
    find,
    canI(caller, resource, action, object) {
      checkResource(resource);
      if (resource === ACCOUNTS_RESOURCE) checkName(object);
      if (resource === 'extensions') checkMethod(action);
      if (resource === ACCOUNTS_RESOURCE && ACCOUNT_ACTIONS.includes(action) && isSelf(caller, object)) return true;
      return rights.allows(caller, resource, action, object);
    },
  };
}
