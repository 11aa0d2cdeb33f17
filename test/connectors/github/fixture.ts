/** The GitHub users of the fake and connector configs pointing at it, shared by the GitHub tests. */
import type { FakeGithub, FakeGithubUser } from '../../helpers/fake-github.js';

export const CLIENT_ID = 'Iv1.0123456789abcdef';
export const CLIENT_SECRET = 'github-client-secret-0f1e2d3c4b5a';
export const SECRETS = { 'github.clientSecret': CLIENT_SECRET };
export const CALLBACK = 'https://svc.example.org/api/idp/callback';

const team = (org: string, name: string): { org: string; name: string; slug: string } => ({ org, name, slug: name.toLowerCase().replace(/ /g, '-') });

export const USERS: readonly FakeGithubUser[] = [
  {
    // No public email: the address comes from /user/emails. Three orgs and five teams: pages at 2 a page.
    id: 1001, login: 'alice', name: 'Alice Liddell',
    emails: [
      { email: 'alice@old.example.org', verified: true, primary: false },
      { email: 'alice@corp.example.com', verified: false, primary: false },
      { email: 'alice@example.org', verified: true, primary: true },
      { email: 'alice@eu.example.net', verified: true, primary: false },
    ],
    orgs: ['acme', 'wonder', 'other'],
    teams: [team('acme', 'Platform Ops'), team('acme', 'Developers'), team('acme', 'Red Team'), team('wonder', 'Tea Party'), team('other', 'Misc')],
  },
  {
    id: 1002, login: 'bob', email: 'bob@example.org',
    emails: [{ email: 'bob@example.org', verified: true, primary: true }],
    orgs: ['elsewhere'], teams: [team('elsewhere', 'Platform Ops')],
  },
  {
    // In acme, but only in a team the config does not list.
    id: 1003, login: 'carol', name: 'Carol',
    emails: [{ email: 'carol@example.org', verified: true, primary: true }],
    orgs: ['acme'], teams: [team('acme', 'Red Team')],
  },
  {
    id: 1004, login: 'dave',
    emails: [{ email: 'dave@example.org', verified: false, primary: true }],
    orgs: ['wonder'], teams: [],
  },
  {
    // In more teams than the connector reads pages of (20 pages at 2 a page).
    id: 1005, login: 'erin',
    emails: [{ email: 'erin@example.org', verified: true, primary: true }],
    orgs: ['acme'], teams: Array.from({ length: 41 }, (_, i) => team('acme', `Team ${i}`)),
  },
];

/** Members: acme's Platform Ops and Developers teams, or anyone in wonder. */
export function githubConfig(fake: Pick<FakeGithub, 'host' | 'caPem'>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    clientID: CLIENT_ID,
    clientSecret: '$github.clientSecret',
    hostName: fake.host,
    rootCA: fake.caPem,
    orgs: [{ name: 'acme', teams: ['Platform Ops', 'Developers'] }, { name: 'wonder' }],
    ...extra,
  };
}

export const ALICE_GROUPS = ['acme', 'acme:Platform Ops', 'acme:Developers', 'wonder', 'wonder:Tea Party'];
