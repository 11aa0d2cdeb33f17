/**
 * Who may list and end which sessions: one's own always; another account's (`?account=<name>`)
 * with the right `accounts, update, <name>`, as for that account's tokens. The account is the
 * rights subject: a local account's name or an SSO user's `sub`. Knows nothing of HTTP.
 */
import type { AuditSource } from '../audit/trail.js';
import { InvalidRequest, PermissionDenied } from '../errors.js';
import type { Principal } from '../principal.js';
import type { Rights } from '../rbac/rights.js';
import type { SessionRegistry } from './registry.js';
import { viewOf, type SessionView } from './session-record.js';

/** An account name given in a query: the caller chose it, so its length is bounded before it is asked about or stored. */
const MAX_ACCOUNT_LENGTH = 256;

export interface SessionAccessDeps {
  readonly registry: Pick<SessionRegistry, 'list' | 'end'>;
  readonly rights: Pick<Rights, 'allows'>;
}

export interface SessionAccess {
  /** The sessions of `account` (default: the caller's), newest first; `current` marks the caller's own. */
  list(caller: Principal, account: string | undefined): Promise<readonly SessionView[]>;
  /** Ends one session of `account` (default: the caller's); NotFound when it has no session of that id. */
  end(caller: Principal, id: string, account: string | undefined, source: AuditSource): Promise<void>;
}

export function createSessionAccess({ registry, rights }: SessionAccessDeps): SessionAccess {
  function whose(caller: Principal, account: string | undefined): string {
    if (account === undefined || account === caller.username) return caller.username;
    if (account === '' || account.length > MAX_ACCOUNT_LENGTH) throw new InvalidRequest(`query 'account' must be 1 to ${MAX_ACCOUNT_LENGTH} characters`);
    if (!rights.allows(caller, 'accounts', 'update', account)) throw new PermissionDenied(`permission denied: accounts, update, ${account}`);
    return account;
  }

  return {
    async list(caller, account) {
      const listed = await registry.list(whose(caller, account));
      return listed.map(({ record, lastUsedMs }) => viewOf(record, lastUsedMs, caller.tokenId));
    },
    async end(caller, id, account, source) {
      const owner = whose(caller, account);
      await registry.end(owner, id, { via: 'list', source, ...(owner !== caller.username ? { by: { id: caller.username } } : {}) });
    },
  };
}
