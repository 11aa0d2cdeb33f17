/** The GitLab users of the fake and connector configs pointing at it, shared by the GitLab tests. */
import type { FakeGitlab, FakeGitlabUser } from '../../helpers/fake-gitlab.js';

export const CLIENT_ID = 'gitlab-app-0123456789';
export const CLIENT_SECRET = 'gloas-client-secret-9a8b7c6d5e';
export const SECRETS = { 'gitlab.clientSecret': CLIENT_SECRET };
export const CALLBACK = 'https://svc.example.org/api/idp/callback';

export const USERS: readonly FakeGitlabUser[] = [
  {
    id: 2001, username: 'alice', name: 'Alice Liddell', email: 'alice@example.org',
    groups: ['acme', 'acme/ops', 'acme/dev', 'hobby'],
    owner: ['acme/ops'], developer: ['acme'],
  },
  { id: 2002, username: 'bob', email: 'bob@example.org', groups: ['elsewhere'] },
];

/** Members: anyone in acme/ops or acme/dev. */
export function gitlabConfig(fake: Pick<FakeGitlab, 'url' | 'caPem'>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { baseURL: fake.url, clientID: CLIENT_ID, clientSecret: '$gitlab.clientSecret', rootCA: fake.caPem, groups: ['acme/ops', 'acme/dev'], ...extra };
}

export const ALICE_GROUPS = ['acme/ops', 'acme/dev'];
