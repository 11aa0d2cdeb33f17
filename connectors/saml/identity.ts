/**
 * The identity of a verified SAML assertion, as Dex builds it: the NameID is the user id, the
 * first value of `usernameAttr` the user name, the first of `emailAttr` the email (always taken
 * as verified: the IdP vouches for it), and the groups all values of `groupsAttr` (or its one
 * value split on `groupsDelim`). `allowedGroups` refuses a user in none of them; with
 * `filterGroups` only the allowed groups are kept.
 */
import type { Identity } from '../connector.js';
import type { SamlConfig } from './config.js';
import { REFUSED, SamlRefused } from './errors.js';

/** `profile.attributes` of node-saml: one value flattened to itself, several to an array. */
export type Attributes = Readonly<Record<string, unknown>>;

function values(attributes: Attributes, name: string): string[] {
  const raw = attributes[name];
  const list = Array.isArray(raw) ? (raw as unknown[]) : raw === undefined ? [] : [raw];
  // A value with child elements comes as an object: no name or group is made of one.
  return list.filter((v): v is string => typeof v === 'string');
}

function first(attributes: Attributes, name: string, key: string): string {
  const value = values(attributes, name)[0];
  if (value === undefined || value === '') {
    const present = Object.keys(attributes).join(', ') || '(none)';
    throw new SamlRefused(REFUSED.incomplete, `the assertion has no ${key} attribute '${name}'; attributes present: ${present}`);
  }
  return value;
}

export function groupsOf(config: SamlConfig, attributes: Attributes): string[] {
  if (config.groupsAttr === undefined) return [];
  const raw = values(attributes, config.groupsAttr);
  const delim = config.groupsDelim;
  const groups = delim === undefined ? raw : raw.flatMap((v) => v.split(delim));
  return [...new Set(groups.filter((g) => g !== ''))];
}

export function identityOf(config: SamlConfig, nameId: string | undefined, attributes: Attributes, wantGroups: boolean): Identity {
  if (nameId === undefined || nameId === '') throw new SamlRefused(REFUSED.incomplete, 'the assertion has no NameID');
  const username = first(attributes, config.usernameAttr, 'usernameAttr');
  const email = first(attributes, config.emailAttr, 'emailAttr');
  let groups = groupsOf(config, attributes);
  const allowed = config.allowedGroups;
  if (allowed !== undefined) {
    if (config.groupsAttr === undefined) throw new SamlRefused(REFUSED.notAllowed, 'allowedGroups is set but groupsAttr is not: no user can be in an allowed group');
    const kept = groups.filter((g) => allowed.includes(g));
    if (kept.length === 0) {
      throw new SamlRefused(REFUSED.notAllowed, `user ${username} is in none of allowedGroups (${allowed.join(', ')}); their groups: ${groups.join(', ') || '(none)'}`);
    }
    if (config.filterGroups) groups = kept;
  }
  return { userId: nameId, username, email, emailVerified: true, groups: wantGroups ? groups : [], claims: claimsOf(nameId, attributes) };
}

/** The assertion as the claim rules read it: each attribute as a list of its string values, and `nameID`. */
function claimsOf(nameId: string, attributes: Attributes): Record<string, unknown> {
  const claims: Record<string, unknown> = {};
  for (const name of Object.keys(attributes)) claims[name] = values(attributes, name);
  return { ...claims, nameID: nameId };
}
