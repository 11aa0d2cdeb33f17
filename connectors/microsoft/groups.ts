/**
 * Where an Entra ID token's groups are, and which of them count. Entra puts the user's group
 * object ids in the `groups` claim (as the app registration's `groupMembershipClaims` says)
 * unless there are more than fit in a token (200 in a JWT): then there is no `groups` claim but
 * an overage indication, `_claim_names.groups` (code flow) or `hasgroups: true` (implicit flow),
 * and the groups must be read from Microsoft Graph (./graph.ts).
 */
import type { MicrosoftConfig } from './config.js';
import type { GraphGroup } from './graph.js';

export type GroupSource =
  | { readonly kind: 'token'; readonly ids: readonly string[] }
  | { readonly kind: 'overage' }
  | { readonly kind: 'none' };

/** The token's groups claim is not what Entra sends (for the log). */
export class GroupsClaimProblem extends Error {
  override readonly name = 'GroupsClaimProblem';
}

const MAX_TOKEN_GROUPS = 1_000;

export function groupSource(claims: Readonly<Record<string, unknown>>): GroupSource {
  const groups = claims['groups'];
  if (groups !== undefined) {
    if (!Array.isArray(groups) || groups.length > MAX_TOKEN_GROUPS || !groups.every((g): g is string => typeof g === 'string' && g !== '')) {
      throw new GroupsClaimProblem('the "groups" claim is not a list of group ids');
    }
    return { kind: 'token', ids: groups };
  }
  const names = claims['_claim_names'];
  const overage = (typeof names === 'object' && names !== null && Object.hasOwn(names, 'groups')) || claims['hasgroups'] === true;
  return overage ? { kind: 'overage' } : { kind: 'none' };
}

/**
 * Whether the ids need Graph's group objects: for names, for `onlySecurityGroups` (the token
 * does not say which groups are security groups), and after an overage (getMemberObjects also
 * answers directory roles and administrative units; only groups count).
 */
export function needsGroupObjects(config: MicrosoftConfig, source: GroupSource): boolean {
  return source.kind === 'overage' || config.groupNameFormat === 'name' || config.onlySecurityGroups;
}

/** The group values (names or ids) of Graph's group objects, security groups only when configured; a group without a name is left out under `name`. */
export function valuesOf(config: MicrosoftConfig, objects: readonly GraphGroup[]): string[] {
  const kept = config.onlySecurityGroups ? objects.filter((o) => o.securityEnabled) : objects;
  return kept.flatMap((o) => (config.groupNameFormat === 'id' ? [o.id] : o.displayName !== undefined ? [o.displayName] : []));
}

/** `values` restricted to `groups` when configured; `allowed` false when that leaves none. */
export function decideGroups(config: MicrosoftConfig, values: readonly string[]): { allowed: boolean; groups: string[] } {
  const unique = [...new Set(values)];
  if (config.groups === undefined) return { allowed: true, groups: unique };
  const only = new Set(config.groups);
  const groups = unique.filter((g) => only.has(g));
  return { allowed: groups.length > 0, groups };
}
