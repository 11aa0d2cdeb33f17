import { expect } from 'chai';
import { DEFAULT_TEAM_NAME_FIELD, parseGithubConfig } from '../../../connectors/github/config.js';
import { AT, parseWithProblems, TEST_CA } from '../helpers.js';

const parse = (raw: unknown) => parseWithProblems(parseGithubConfig, raw);

const GOOD = { clientID: 'abc', clientSecret: 'shh', orgs: [{ name: 'acme' }] };

describe('github connector config', () => {
  it('takes a minimal config and fills in the defaults', () => {
    const { config, problems } = parse(GOOD);
    expect(problems).to.deep.equal([]);
    expect(config).to.deep.equal({ ...GOOD, teamNameField: DEFAULT_TEAM_NAME_FIELD, loadAllGroups: false, useLoginAsID: false });
    expect(DEFAULT_TEAM_NAME_FIELD).to.equal('name');
  });

  it("takes every key of Dex's GitHub connector but redirectURI", () => {
    const { config, problems } = parse({
      clientID: 'abc',
      clientSecret: 'shh',
      orgs: [{ name: 'acme', teams: ['ops', 'dev'] }, { name: 'other' }],
      hostName: 'github.corp.example.com',
      rootCA: TEST_CA,
      teamNameField: 'both',
      loadAllGroups: true,
      useLoginAsID: true,
      preferredEmailDomain: '*.example.com',
    });
    expect(problems).to.deep.equal([]);
    expect(config?.orgs?.[0]?.teams).to.deep.equal(['ops', 'dev']);
    expect(config?.teamNameField).to.equal('both');
    expect(parse({ clientID: 'abc', clientSecret: 'shh', org: 'acme' }).problems).to.deep.equal([]);
  });

  it('names every bad key with its path, in one run', () => {
    const { config, problems } = parse({
      clientSecret: 7,
      orgs: [{ name: 'acme', teams: 'ops' }, { teams: [] }],
      hostName: 'github.corp.example.com/api',
      rootCA: '/etc/ssl/ghe.pem',
      teamNameField: 'title',
      useLoginAsID: 'no',
      preferredEmailDomain: 'example.*',
    });
    expect(config).to.equal(undefined);
    expect(problems).to.have.members([
      `${AT}.clientID: required`,
      `${AT}.clientSecret: must be a string`,
      `${AT}.orgs[0].teams: 'ops' must be a list of strings`,
      `${AT}.orgs[1].name: required`,
      `${AT}.hostName: 'github.corp.example.com/api' must be a host name with an optional :port, without a scheme or "/"`,
      `${AT}.rootCA: '/etc/ssl/ghe.pem' must be PEM certificates (-----BEGIN CERTIFICATE-----) or a secret reference to them, never a file path`,
      `${AT}.teamNameField: 'title' must be one of 'name', 'slug', 'both'`,
      `${AT}.useLoginAsID: 'no' must be true or false`,
      `${AT}.preferredEmailDomain: 'example.*' must not end with "*"`,
    ]);
  });

  it('refuses org with orgs, and rootCA without hostName', () => {
    expect(parse({ ...GOOD, org: 'acme' }).problems).to.deep.equal([`${AT}.org: cannot be combined with orgs: list it under orgs`]);
    expect(parse({ ...GOOD, rootCA: TEST_CA }).problems).to.deep.equal([`${AT}.rootCA: needs hostName: it verifies a GitHub Enterprise host`]);
  });

  it('names an unknown key, also inside orgs', () => {
    expect(parse({ ...GOOD, orgs: [{ name: 'acme', team: ['ops'] }], clientId: 'x' }).problems).to.have.members([
      `${AT}.clientId: unknown key; did you mean 'clientID'?`,
      `${AT}.orgs[0].team: unknown key; did you mean 'teams'?`,
    ]);
  });

  it('refuses redirectURI: svc sets the callback URL itself', () => {
    const { config, problems } = parse({ ...GOOD, redirectURI: 'https://evil.example.com/cb' });
    expect(config).to.equal(undefined);
    expect(problems).to.deep.equal([`${AT}.redirectURI: must not be set: svc gives the connector <url>/api/idp/callback (with the url of svc-cm) as its callback; register that URL upstream`]);
  });

  it('resolves the client secret from svc-secret and from a labelled Secret, and names one that does not resolve', () => {
    expect(parse({ ...GOOD, clientSecret: '$dex.clientSecret' }).config?.clientSecret).to.equal('from-svc-secret');
    expect(parse({ ...GOOD, clientSecret: '$corp-idp:client-secret' }).config?.clientSecret).to.equal('from-corp-idp');
    const { config, problems } = parse({ ...GOOD, clientSecret: '$corp-idp:nope' });
    expect(config).to.equal(undefined);
    expect(problems).to.deep.equal([`${AT}.clientSecret: references key 'nope' of Secret 'corp-idp', which has no such key`]);
  });
});
