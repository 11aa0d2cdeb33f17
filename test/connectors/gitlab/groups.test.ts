/** The GitLab connector's groups from the userinfo claims (Dex's rules), apart from HTTP. */
import { expect } from 'chai';
import type { GitlabConfig } from '../../../connectors/gitlab/config.js';
import { decideGroups, needsGroups } from '../../../connectors/gitlab/groups.js';

const BASE: GitlabConfig = { baseURL: 'https://gitlab.com', clientID: 'a', clientSecret: 'b', useLoginAsID: false, getGroupsPermission: false };
const INFO = {
  groups: ['acme', 'acme/ops', 'acme/ops/oncall', 'hobby', 7],
  'https://gitlab.org/claims/groups/owner': ['acme/ops'],
  'https://gitlab.org/claims/groups/maintainer': ['hobby'],
  'https://gitlab.org/claims/groups/developer': ['acme'],
};

describe('the GitLab connector\'s groups', () => {
  it('takes the groups claim, strings only; with `groups` keeps those and refuses a user in none', () => {
    expect(decideGroups(BASE, INFO)).to.deep.equal({ allowed: true, groups: ['acme', 'acme/ops', 'acme/ops/oncall', 'hobby'] });
    expect(decideGroups({ ...BASE, groups: ['acme/ops', 'other'] }, INFO)).to.deep.equal({ allowed: true, groups: ['acme/ops'] });
    expect(decideGroups({ ...BASE, groups: ['other'] }, INFO)).to.deep.equal({ allowed: false });
    expect(decideGroups({ ...BASE, groups: ['other'] }, {})).to.deep.equal({ allowed: false });
  });

  it('getGroupsPermission: the highest role on the group or an ancestor', () => {
    expect(decideGroups({ ...BASE, getGroupsPermission: true }, INFO)).to.deep.equal({
      allowed: true,
      groups: ['acme', 'acme:developer', 'acme/ops', 'acme/ops:owner', 'acme/ops/oncall', 'acme/ops/oncall:owner', 'hobby', 'hobby:maintainer'],
    });
  });

  it('lets in a user without groups when `groups` is not set; reads strings of an array only, none empty, each once', () => {
    expect(decideGroups(BASE, {})).to.deep.equal({ allowed: true, groups: [] });
    expect(decideGroups(BASE, { groups: 'acme' })).to.deep.equal({ allowed: true, groups: [] });
    expect(decideGroups(BASE, { groups: ['', 'a', 'a', null] })).to.deep.equal({ allowed: true, groups: ['a'] });
  });

  it('getGroupsPermission: no role for a group no role claim covers; any of a claim\'s paths counts', () => {
    const info = { groups: ['solo', 'team/x'], 'https://gitlab.org/claims/groups/owner': ['other', 'team'], 'https://gitlab.org/claims/groups/developer': ['sol'] };
    expect(decideGroups({ ...BASE, getGroupsPermission: true }, info)).to.deep.equal({ allowed: true, groups: ['solo', 'team/x', 'team/x:owner'] });
  });

  it('reads userinfo only to check `groups` or for groups asked for', () => {
    expect(needsGroups({ ...BASE, groups: ['a'] }, false)).to.equal(true);
    expect(needsGroups(BASE, true)).to.equal(true);
    expect(needsGroups(BASE, false)).to.equal(false);
  });
});
