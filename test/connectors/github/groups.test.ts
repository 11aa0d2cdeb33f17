/** Who the GitHub connector lets in and their groups (Dex's rules), and the email it picks, apart from HTTP. */
import { expect } from 'chai';
import type { GithubConfig } from '../../../connectors/github/config.js';
import { inPreferredDomain, pickEmail } from '../../../connectors/github/email.js';
import { decide, needsMemberships, teamClaims, type Memberships } from '../../../connectors/github/groups.js';

const BASE: GithubConfig = { clientID: 'a', clientSecret: 'b', teamNameField: 'name', loadAllGroups: false, useLoginAsID: false };
const M: Memberships = {
  orgs: ['Acme', 'wonder'],
  teams: [{ org: 'acme', name: 'Platform Ops', slug: 'platform-ops' }, { org: 'wonder', name: 'Tea', slug: 'tea' }],
};

describe('the GitHub connector\'s rules', () => {
  it('orgs: a member of an org without teams is in; groups are the org and its org:team', () => {
    expect(decide({ ...BASE, orgs: [{ name: 'wonder' }] }, M, true)).to.deep.equal({ allowed: true, groups: ['wonder', 'wonder:Tea'] });
    expect(decide({ ...BASE, orgs: [{ name: 'other' }] }, M, true)).to.deep.equal({ allowed: false });
  });

  it('orgs with teams: only a listed team lets in; org logins compare without case', () => {
    expect(decide({ ...BASE, orgs: [{ name: 'acme', teams: ['Platform Ops'] }] }, M, true)).to.deep.equal({ allowed: true, groups: ['acme', 'acme:Platform Ops'] });
    expect(decide({ ...BASE, orgs: [{ name: 'acme', teams: ['Red'] }] }, M, true)).to.deep.equal({ allowed: false });
    // acme let her in through no team: acme is not a group of hers.
    expect(decide({ ...BASE, orgs: [{ name: 'acme', teams: ['Red'] }, { name: 'wonder' }] }, M, true)).to.deep.equal({ allowed: true, groups: ['wonder', 'wonder:Tea'] });
  });

  it('teamNameField slug and both', () => {
    expect(decide({ ...BASE, teamNameField: 'slug', orgs: [{ name: 'acme' }] }, M, true)).to.deep.equal({ allowed: true, groups: ['acme', 'acme:platform-ops'] });
    expect(decide({ ...BASE, teamNameField: 'both', orgs: [{ name: 'acme', teams: ['platform-ops'] }] }, M, true)).to.deep.equal({ allowed: true, groups: ['acme', 'acme:platform-ops'] });
  });

  it('orgs: a member of an org without teams listed is in with the org as a group, even in none of its teams', () => {
    expect(decide({ ...BASE, orgs: [{ name: 'Acme' }] }, { orgs: ['acme'], teams: [] }, true)).to.deep.equal({ allowed: true, groups: ['Acme'] });
  });

  it('reads the org and team lists only to check membership, or for groups asked for with loadAllGroups', () => {
    expect(needsMemberships({ ...BASE, orgs: [{ name: 'a' }] }, false)).to.equal(true);
    expect(needsMemberships({ ...BASE, org: 'a' }, false)).to.equal(true);
    expect(needsMemberships({ ...BASE, loadAllGroups: true }, true)).to.equal(true);
    expect(needsMemberships({ ...BASE, loadAllGroups: true }, false)).to.equal(false);
    expect(needsMemberships(BASE, true)).to.equal(false);
  });

  it('teamNameField both gives a team whose name is its slug once', () => {
    expect(teamClaims({ org: 'o', name: 'tea', slug: 'tea' }, 'both')).to.deep.equal(['tea']);
    expect(teamClaims({ org: 'o', name: 'Tea', slug: 'tea' }, 'both')).to.deep.equal(['Tea', 'tea']);
    expect(teamClaims({ org: 'o', name: 'Tea', slug: 'tea' }, 'name')).to.deep.equal(['Tea']);
  });

  it('legacy org, loadAllGroups, and neither', () => {
    expect(decide({ ...BASE, org: 'wonder' }, M, false)).to.deep.equal({ allowed: true, groups: ['Tea'] });
    expect(decide({ ...BASE, org: 'other' }, M, true)).to.deep.equal({ allowed: false });
    expect(decide({ ...BASE, loadAllGroups: true }, M, true)).to.deep.equal({ allowed: true, groups: ['Acme', 'Acme:Platform Ops', 'wonder', 'wonder:Tea'] });
    expect(decide({ ...BASE, loadAllGroups: true }, M, false)).to.deep.equal({ allowed: true, groups: [] });
    expect(decide(BASE, M, true)).to.deep.equal({ allowed: true, groups: [] });
  });

  it('picks a verified address: the preferred domain (a * is one label), else the primary', () => {
    const emails = [
      { email: 'a@x.example.org', verified: true, primary: false },
      { email: 'a@y.example.org', verified: false, primary: false },
      { email: 'a@example.com', verified: true, primary: true },
    ];
    expect(pickEmail(emails, '*.example.org')).to.equal('a@x.example.org');
    expect(pickEmail(emails, 'y.example.org')).to.equal('a@example.com');
    expect(pickEmail(emails, undefined)).to.equal('a@example.com');
    expect(pickEmail([{ email: 'a@example.com', verified: false, primary: true }], undefined)).to.equal(undefined);
    expect(inPreferredDomain('a.b.example.org', '*.example.org')).to.equal(false);
    expect(inPreferredDomain('EXAMPLE.org', 'example.org')).to.equal(true);
  });
});
