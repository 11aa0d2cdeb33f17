/**
 * The upstream's claims (the verified ID token's, with the user-info endpoint's merged over them
 * under `getUserInfo`) turned into svc's Identity, as Dex's oidc connector does it: `userIDKey`,
 * `userNameKey`, `claimMapping` (used when the standard claim is missing, or always with
 * `overrideClaimMapping`), `email_verified`, and groups.
 *
 * Groups differ from Dex on purpose: SPEC rule 2 gives groups only when both
 * `insecureEnableGroups` and `getUserInfo` are true, and every group (the claim, and the ones
 * `claimModifications.newGroupFromClaims` builds) follows that rule; Dex builds the latter
 * even with groups off.
 */
import { PermissionDenied } from '../../src/errors.js';
import type { Identity } from '../connector.js';
import type { OidcConnectorConfig } from './config.js';

export type Claims = Readonly<Record<string, unknown>>;

/** A claim the config needs is missing or malformed: the upstream is not sending what it was set up to send. */
export class ClaimProblem extends Error {
  override readonly name = 'ClaimProblem';
}

const NOT_ALLOWED = 'your account is not in any group allowed to log in here';

function stringClaim(claims: Claims, key: string): string | undefined {
  const value = claims[key];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The standard claim, or the mapped one when the standard is missing (or always, with override). */
function mapped(claims: Claims, standard: string, mappedKey: string | undefined, override: boolean): { key: string; value: unknown } {
  if (mappedKey !== undefined && (override || claims[standard] === undefined)) return { key: mappedKey, value: claims[mappedKey] };
  return { key: standard, value: claims[standard] };
}

/** Groups as a list of strings, a single string, or objects with a `name` (as Dex reads them). */
function groupsOf(key: string, value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (typeof value === 'string') return [value];
  if (!Array.isArray(value)) throw new ClaimProblem(`the "${key}" claim is not a list`);
  return value.map((item: unknown) => {
    if (typeof item === 'string') return item;
    if (typeof item === 'object' && item !== null && typeof (item as { name?: unknown }).name === 'string') return (item as { name: string }).name;
    throw new ClaimProblem(`the "${key}" claim holds something other than group names`);
  });
}

function emailVerified(claims: Claims, config: OidcConnectorConfig, asksEmail: boolean): boolean {
  const value = claims['email_verified'];
  if (typeof value === 'boolean') return value;
  // Some providers send the JSON string; anything else is not a yes.
  if (value === 'true' || value === 'false') return value === 'true';
  if (config.insecureSkipEmailVerified) return true;
  if (asksEmail) throw new ClaimProblem('the "email_verified" claim is missing (set insecureSkipEmailVerified if the provider never sends it)');
  return false;
}

function groupsFrom(claims: Claims, config: OidcConnectorConfig): string[] {
  if (!config.insecureEnableGroups || !config.getUserInfo) return [];
  const { key, value } = mapped(claims, 'groups', config.claimMapping?.groups, config.overrideClaimMapping);
  let groups = groupsOf(key, value);
  const mods = config.claimModifications;
  if (mods?.filterGroupClaims !== undefined) {
    const keep = new RegExp(mods.filterGroupClaims.groupsFilter, 'u');
    groups = groups.filter((g) => keep.test(g));
  }
  if (config.allowedGroups !== undefined && config.allowedGroups.length > 0) {
    const allowed = new Set(config.allowedGroups);
    groups = groups.filter((g) => allowed.has(g));
    if (groups.length === 0) throw new PermissionDenied(NOT_ALLOWED);
  }
  for (const rule of mods?.newGroupFromClaims ?? []) {
    const parts = rule.claims
      .map((name) => stringClaim(claims, name))
      .filter((v): v is string => v !== undefined)
      .map((v) => (rule.clearDelimiter ? v.split(rule.delimiter).join('') : v));
    if (parts.length > 0) groups.push([rule.prefix ?? '', ...parts].join(rule.delimiter));
  }
  const names = mods?.modifyGroupNames;
  if (names !== undefined) groups = groups.map((g) => `${names.prefix ?? ''}${g}${names.suffix ?? ''}`);
  return [...new Set(groups)];
}

/** The identity the claims describe; ClaimProblem when a needed claim is missing, PermissionDenied when allowedGroups refuse. */
export function identityFromClaims(claims: Claims, config: OidcConnectorConfig, asksEmail: boolean): Omit<Identity, 'connectorData'> {
  const userId = stringClaim(claims, config.userIDKey);
  if (userId === undefined) throw new ClaimProblem(`the "${config.userIDKey}" claim (userIDKey) is missing or not a string`);
  const username = stringClaim(claims, config.userNameKey);
  if (username === undefined) throw new ClaimProblem(`the "${config.userNameKey}" claim (userNameKey) is missing or not a string`);
  const preferred = mapped(claims, 'preferred_username', config.claimMapping?.preferred_username, config.overrideClaimMapping);
  const email = mapped(claims, 'email', config.claimMapping?.email, config.overrideClaimMapping);
  const emailValue = typeof email.value === 'string' && email.value !== '' ? email.value : undefined;
  if (emailValue === undefined && asksEmail) throw new ClaimProblem(`the "${email.key}" claim is missing though the email scope is asked for`);
  return {
    userId,
    username,
    ...(typeof preferred.value === 'string' && preferred.value !== '' ? { preferredUsername: preferred.value } : {}),
    ...(emailValue !== undefined ? { email: emailValue } : {}),
    emailVerified: emailVerified(claims, config, asksEmail),
    groups: groupsFrom(claims, config),
  };
}
