/**
 * Who may log in and which groups they get, from the user's orgs and teams, as Dex's GitHub
 * connector decides it (connector/github/github.go), apart from HTTP:
 *
 * - `orgs`: the user must be in one listed org with no `teams`, or in a listed team of one;
 *   groups are each listed org that let the user in, and its `<org>:<team>` (the team's name,
 *   slug or both, per `teamNameField`), filtered to `teams` where an org lists them. Dex gives
 *   only the `<org>:<team>` groups; svc adds the org, so a policy can name a whole org
 *   (`g, acme, role:x`) as it can with loadAllGroups, and Dex's `<org>:<team>` rules still hold.
 * - `org` (legacy): the user must be in that org; groups are its team names, without the org.
 *   (Dex lets a non-member in with no groups; svc refuses, failing closed.)
 * - neither, with `loadAllGroups` and groups asked for: every org, and every `<org>:<team>`.
 */
import type { GithubConfig } from './config.js';

export interface Team {
  readonly org: string;
  readonly name: string;
  readonly slug: string;
}

export interface Memberships {
  /** The logins of the user's orgs. */
  readonly orgs: readonly string[];
  readonly teams: readonly Team[];
}

export type Decision = { readonly allowed: true; readonly groups: readonly string[] } | { readonly allowed: false };

/** Whether the org and team lists must be read: to check membership, or for groups. */
export function needsMemberships(config: GithubConfig, wantGroups: boolean): boolean {
  return config.orgs !== undefined || config.org !== undefined || (wantGroups && config.loadAllGroups);
}

/** The team's names as groups go: name, slug or both (Dex's teamNameField). */
export function teamClaims(team: Team, field: GithubConfig['teamNameField']): string[] {
  if (field === 'slug') return [team.slug];
  if (field === 'both') return team.name === team.slug ? [team.name] : [team.name, team.slug];
  return [team.name];
}

// GitHub org logins are case-insensitive; the API answers them as they were created.
const same = (a: string, b: string): boolean => a.toLowerCase() === b.toLowerCase();

export function decide(config: GithubConfig, m: Memberships, wantGroups: boolean): Decision {
  const teamsOf = (org: string): string[] => m.teams.filter((t) => same(t.org, org)).flatMap((t) => teamClaims(t, config.teamNameField));
  const inOrg = (org: string): boolean => m.orgs.some((o) => same(o, org));

  if (config.orgs !== undefined) {
    const groups: string[] = [];
    let inOrgWithoutTeams = false;
    for (const org of config.orgs) {
      if (!inOrg(org.name)) continue;
      const teams = teamsOf(org.name);
      if (org.teams === undefined) inOrgWithoutTeams = true;
      const kept = org.teams === undefined ? teams : teams.filter((t) => org.teams?.includes(t));
      if (org.teams === undefined || kept.length > 0) groups.push(org.name);
      groups.push(...kept.map((t) => `${org.name}:${t}`));
    }
    return inOrgWithoutTeams || groups.length > 0 ? { allowed: true, groups: unique(groups) } : { allowed: false };
  }
  if (config.org !== undefined) {
    return inOrg(config.org) ? { allowed: true, groups: unique(teamsOf(config.org)) } : { allowed: false };
  }
  if (!wantGroups || !config.loadAllGroups) return { allowed: true, groups: [] };
  const groups = m.orgs.flatMap((org) => [org, ...teamsOf(org).map((t) => `${org}:${t}`)]);
  return { allowed: true, groups: unique(groups) };
}

function unique(values: readonly string[]): string[] {
  return [...new Set(values)];
}
