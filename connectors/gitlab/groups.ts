/**
 * A GitLab user's groups, as Dex's GitLab connector makes them from the OIDC userinfo
 * (connector/gitlab/gitlab.go): the `groups` claim (full paths), filtered to `groups` when the
 * config lists them (a user in none is refused), and with `getGroupsPermission` also
 * `<group>:owner`, `:maintainer` or `:developer` for the highest role the userinfo claims give
 * on that group or an ancestor of it.
 */
import type { GitlabConfig } from './config.js';

const ROLE_CLAIMS = [
  ['owner', 'https://gitlab.org/claims/groups/owner'],
  ['maintainer', 'https://gitlab.org/claims/groups/maintainer'],
  ['developer', 'https://gitlab.org/claims/groups/developer'],
] as const;

export type GroupsDecision = { readonly allowed: true; readonly groups: readonly string[] } | { readonly allowed: false };

/** Whether userinfo must be read: to check `groups`, or for groups asked for. */
export function needsGroups(config: GitlabConfig, wantGroups: boolean): boolean {
  return config.groups !== undefined || wantGroups;
}

export function decideGroups(config: GitlabConfig, userinfo: Readonly<Record<string, unknown>>): GroupsDecision {
  const all = strings(userinfo['groups']);
  const allowed = config.groups;
  const kept = allowed === undefined ? all : all.filter((g) => allowed.includes(g));
  if (allowed !== undefined && kept.length === 0) return { allowed: false };
  if (!config.getGroupsPermission) return { allowed: true, groups: kept };
  const roles = ROLE_CLAIMS.map(([role, claim]) => [role, strings(userinfo[claim])] as const);
  const withRoles = kept.flatMap((group) => {
    const role = roles.find(([, paths]) => paths.some((p) => group === p || group.startsWith(`${p}/`)))?.[0];
    return role === undefined ? [group] : [group, `${group}:${role}`];
  });
  return { allowed: true, groups: withRoles };
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? [...new Set(value.filter((v): v is string => typeof v === 'string' && v !== ''))] : [];
}
