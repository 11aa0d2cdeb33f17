/**
 * A user entry to an `Identity`, as Dex's identityFromEntry does: userId from idAttr, username
 * from nameAttr (else the entry's username attribute), preferredUsername, email from emailAttr
 * or `<username>@<emailSuffix>`, emailVerified always true (the directory is the authority).
 * A configured attribute the entry lacks is a misconfiguration, reported by name.
 */
import type { Identity } from '../connector.js';
import type { UserSearch } from './config.js';
import { attributeValues, firstValue, type DirectoryEntry } from './entry.js';

/** What refresh needs: the username to search again, the DN to check it is still the same entry. */
export interface LdapConnectorData {
  readonly username: string;
  readonly dn: string;
}

export class MissingAttribute extends Error {
  constructor(readonly attribute: string, readonly key: string) {
    super(`the user entry has no ${attribute} (userSearch.${key})`);
    this.name = 'MissingAttribute';
  }
}

export function identityFromEntry(entry: DirectoryEntry, search: UserSearch, typedUsername: string, groups: readonly string[]): Identity {
  const required = (attribute: string, key: string): string => {
    const value = firstValue(entry, attribute);
    if (value === undefined) throw new MissingAttribute(attribute, key);
    return value;
  };
  const userId = required(search.idAttr, 'idAttr');
  const username = search.nameAttr === undefined ? (firstValue(entry, search.username) ?? typedUsername) : required(search.nameAttr, 'nameAttr');
  const preferredUsername = search.preferredUsernameAttr === undefined ? undefined : required(search.preferredUsernameAttr, 'preferredUsernameAttr');
  let email: string | undefined;
  if (search.emailSuffix !== undefined) email = `${username}@${search.emailSuffix}`;
  else if (search.emailAttr !== undefined) email = required(search.emailAttr, 'emailAttr');
  const data: LdapConnectorData = { username: typedUsername, dn: entry.dn };
  return {
    userId,
    username,
    ...(preferredUsername === undefined ? {} : { preferredUsername }),
    ...(email === undefined ? {} : { email }),
    emailVerified: true,
    groups: [...groups],
    connectorData: JSON.stringify(data),
    claims: claimsOf(entry, groups),
  };
}

/** The entry as the claim rules read it: each attribute the search read as a list of strings, `dn`, and the groups found. */
function claimsOf(entry: DirectoryEntry, groups: readonly string[]): Record<string, unknown> {
  const claims: Record<string, unknown> = {};
  for (const name of Object.keys(entry)) if (name !== 'dn') claims[name] = attributeValues(entry, name);
  return { ...claims, dn: entry.dn, groups: [...groups] };
}

/** The stored data, or undefined when it is not this connector's (then refresh cannot help). */
export function readConnectorData(text: string | undefined): LdapConnectorData | undefined {
  if (text === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== 'object' || value === null) return undefined;
    const { username, dn } = value as Record<string, unknown>;
    return typeof username === 'string' && typeof dn === 'string' ? { username, dn } : undefined;
  } catch {
    return undefined;
  }
}
