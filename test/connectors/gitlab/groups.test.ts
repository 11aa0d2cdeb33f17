/** The GitLab connector's groups from the userinfo claims (Dex's rules), apart from HTTP. */
import { expect } from 'chai';
import type { GitlabConfig } from '../../../connectors/gitlab/config.js';
import { decideGroups } from '../../../connectors/gitlab/groups.js';

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
});
