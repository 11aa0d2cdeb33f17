/**
 * Who may list and end which sessions: one's own always; another person's (`?account=`) with the
 * right `accounts, update` on that person (accountsObjectOf: a local account's name, as for its
 * tokens; anyone else's whole person key). Knows nothing of HTTP.
 *
 * Sessions belong to a person (person.ts), so `?account=` names one:
 * - a bare name (no `:`) is always the local account of that name, never an SSO user or a
 *   workload whose `sub` or name is written the same (issue 51, finding 4);
 * - anyone else is named by their person key, as the audit trail's `user.domain` and `user.id`
 *   give it: `sso:<issuer>:<sub>` or `workload:svc%3Aworkload:<name>`, each part escaped as
 *   personKey() writes it. A value with a `:` that is not such a key is refused (400), never
 *   read as a name.
 * One's own sessions are the caller's person, whatever `?account=` spells the same person.
 */
import type { AuditSource } from '../audit/trail.js';
import { InvalidRequest, PermissionDenied } from '../errors.js';
import { localPerson, parsePersonKey, personKey, personOf, samePerson, type Person } from '../person.js';
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

/** The person `?account=` names: a local account's name, or a person key. */
export function namedPerson(account: string): Person {
  if (account === '' || account.length > MAX_ACCOUNT_LENGTH) throw new InvalidRequest(`query 'account' must be 1 to ${MAX_ACCOUNT_LENGTH} characters`);
  if (!account.includes(':')) return localPerson(account);
  const person = parsePersonKey(account);
  if (person === undefined) throw new InvalidRequest("query 'account' must be a local account's name, or a person's key such as 'sso:<issuer>:<sub>' (each part escaped)");
  return person;
}

/**
 * What the rights are asked about for another person's sessions: the person the registry then
 * acts on. A local account by its name, as every `accounts` line names one; anyone else by their
 * whole key, so that a line written for local `alice` never reaches the SSO user whose `sub` is
 * `alice` (nor the other way round). `*` covers both.
 */
export function accountsObjectOf(person: Person): string {
  return person.type === 'local' ? person.subject : personKey(person);
}

export function createSessionAccess({ registry, rights }: SessionAccessDeps): SessionAccess {
  function whose(caller: Principal, account: string | undefined): Person {
    const own = personOf(caller);
    if (account === undefined) return own;
    const named = namedPerson(account);
    if (samePerson(named, own)) return own;
    const object = accountsObjectOf(named);
    if (!rights.allows(caller, 'accounts', 'update', object)) throw new PermissionDenied(`permission denied: accounts, update, ${object}`);
    return named;
  }

  return {
    async list(caller, account) {
      const listed = await registry.list(whose(caller, account));
      return listed.map(({ record, lastUsedMs }) => viewOf(record, lastUsedMs, caller.tokenId));
    },
    async end(caller, id, account, source) {
      const own = personOf(caller);
      const owner = whose(caller, account);
      await registry.end(owner, id, { via: 'list', source, ...(samePerson(owner, own) ? {} : { by: { id: own.subject, domain: own.issuer } }) });
    },
  };
}
