/**
 * A person as svc keeps their records: who vouches for them (the issuer) and their id there (the
 * subject), by the type of identity. Every per-person record (the session registry, the session
 * list, the per-person session bound, the extension rate-limit buckets, the audit's user) is
 * keyed by this, never by a principal's `username` alone: an SSO provider may give `sub: alice`,
 * and that user is not the local account `alice` (issue 51, finding 4).
 *
 * The type comes from the principal's kind, never from how a name looks:
 * - `local`: a local account (a session or an API token); svc vouches (`svc`), the subject is the
 *   account's name;
 * - `sso`: an SSO user (an ID token or a personal API token); the provider's issuer vouches, the
 *   subject is its `sub`;
 * - `workload`: a workload; svc built its name from the trust entry and the upstream subject
 *   (`workload:<entry>:<subject>`), so svc's workload issuer vouches and that name is the subject.
 *
 * personKey is the one encoding: `<type>:<issuer>:<subject>`, each part escaped so that it holds
 * no `:`, `%`, brace (a Redis Cluster hash tag) or space. Distinct persons thus never share a
 * key, whatever a `sub` holds. Rejected: `${issuer}:${sub}` (a crafted `sub` can imitate another
 * issuer's key), and a hash (the key is read in the audit trail and named in `?account=`).
 */
import type { Principal } from './principal.js';
import { WORKLOAD_TOKEN_ISSUER } from './workload/tokens.js';

export type PersonType = 'local' | 'sso' | 'workload';

export interface Person {
  readonly type: PersonType;
  /** Who vouches: `svc` (local), the provider's issuer (sso), `svc:workload` (workload). */
  readonly issuer: string;
  /** The id there: the account's name, the `sub`, the workload's name. Also its rights subject. */
  readonly subject: string;
}

declare const personKeyBrand: unique symbol;
/** The text of personKey(); only that function makes one. */
export type PersonKey = string & { readonly [personKeyBrand]: true };

/** The issuer of local accounts: svc itself (the `iss` of its tokens). */
export const LOCAL_ISSUER = 'svc';
export const WORKLOAD_ISSUER = WORKLOAD_TOKEN_ISSUER;

const TYPES: readonly PersonType[] = ['local', 'sso', 'workload'];
const isPersonType = (text: string): text is PersonType => TYPES.some((type) => type === text);
const isThreeParts = (parts: readonly string[]): parts is readonly [string, string, string] => parts.length === 3;

export function localPerson(name: string): Person {
  return { type: 'local', issuer: LOCAL_ISSUER, subject: name };
}

export function ssoPerson(issuer: string, sub: string): Person {
  return { type: 'sso', issuer, subject: sub };
}

export function workloadPerson(name: string): Person {
  return { type: 'workload', issuer: WORKLOAD_ISSUER, subject: name };
}

/** The person a verified principal is, by its kind. */
export function personOf(principal: Pick<Principal, 'kind' | 'issuer' | 'username' | 'subject'>): Person {
  switch (principal.kind) {
    case 'session':
    case 'apiKey':
      return localPerson(principal.username);
    case 'sso':
    case 'ssoApiKey':
      // The `sub`, whatever oidc.config's claim mappings made the name (issue 54).
      return ssoPerson(principal.issuer, principal.subject ?? principal.username);
    case 'workload':
      return workloadPerson(principal.username);
  }
}

/** Letters, digits and `-._~` stay; every other UTF-16 unit is `%hh` (below 0x100) or `%uhhhh`. */
function escapePart(text: string): string {
  return text.replace(/[^A-Za-z0-9._~-]/g, (c) => {
    const unit = c.charCodeAt(0);
    return unit < 0x100 ? `%${unit.toString(16).toUpperCase().padStart(2, '0')}` : `%u${unit.toString(16).toUpperCase().padStart(4, '0')}`;
  });
}

/**
 * Decodes the escapes escapePart writes and checks nothing: parsePersonKey keeps the result
 * only when escaping it again gives the text back, so any other text (a lower-case, non-hex or
 * short escape, an escape of a character written as itself, a character left unescaped) is
 * refused there, by the one encoding rather than by a second set of rules beside it.
 */
function unescapePart(text: string): string {
  return text.replace(/%u[0-9A-F]{4}|%[0-9A-F]{2}/g, (escape) => String.fromCharCode(parseInt(escape.slice(escape.startsWith('%u') ? 2 : 1), 16)));
}

/** The one key of a person: `<type>:<escaped issuer>:<escaped subject>`. */
export function personKey(person: Person): PersonKey {
  return `${person.type}:${escapePart(person.issuer)}:${escapePart(person.subject)}` as PersonKey;
}

/**
 * The person a key names, or undefined when the text is not a key personKey() would write (a
 * different escaping, an unknown type, a local or workload key with another issuer).
 */
export function parsePersonKey(text: string): Person | undefined {
  const parts = text.split(':').map(unescapePart);
  if (!isThreeParts(parts)) return undefined;
  const [type, issuer, subject] = parts;
  if (!isPersonType(type)) return undefined;
  if (type === 'local' && issuer !== LOCAL_ISSUER) return undefined;
  if (type === 'workload' && issuer !== WORKLOAD_ISSUER) return undefined;
  const person: Person = { type, issuer, subject };
  return personKey(person) === text ? person : undefined;
}

export function samePerson(a: Person, b: Person): boolean {
  return a.type === b.type && a.issuer === b.issuer && a.subject === b.subject;
}
