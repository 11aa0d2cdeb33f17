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

const TYPES: readonly string[] = ['local', 'sso', 'workload'] satisfies PersonType[];

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
export function personOf(principal: Pick<Principal, 'kind' | 'issuer' | 'username'>): Person {
  switch (principal.kind) {
    case 'session':
    case 'apiKey':
      return localPerson(principal.username);
    case 'sso':
    case 'ssoApiKey':
      return ssoPerson(principal.issuer, principal.username);
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

function unescapePart(text: string): string | undefined {
  let out = '';
  for (let i = 0; i < text.length;) {
    const c = text[i] as string;
    if (/[A-Za-z0-9._~-]/.test(c)) {
      out += c;
      i++;
      continue;
    }
    if (c !== '%') return undefined;
    const wide = text[i + 1] === 'u';
    const hex = wide ? text.slice(i + 2, i + 6) : text.slice(i + 1, i + 3);
    if (!/^[0-9A-F]+$/.test(hex) || hex.length !== (wide ? 4 : 2)) return undefined;
    out += String.fromCharCode(parseInt(hex, 16));
    i += wide ? 6 : 3;
  }
  return out;
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
  const parts = text.split(':');
  if (parts.length !== 3) return undefined;
  const [type, issuer, subject] = parts.map(unescapePart);
  if (type === undefined || issuer === undefined || subject === undefined || !TYPES.includes(type)) return undefined;
  const person: Person = { type: type as PersonType, issuer, subject };
  if (person.type === 'local' && issuer !== LOCAL_ISSUER) return undefined;
  if (person.type === 'workload' && issuer !== WORKLOAD_ISSUER) return undefined;
  return personKey(person) === text ? person : undefined;
}

export function samePerson(a: Person, b: Person): boolean {
  return a.type === b.type && a.issuer === b.issuer && a.subject === b.subject;
}
