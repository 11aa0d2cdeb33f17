import { expect } from 'chai';
import { DEFAULT_GITLAB_BASE_URL, parseGitlabConfig } from '../../../connectors/gitlab/config.js';
import { AT, parseWithProblems, TEST_CA, TEST_CA_BASE64 } from '../helpers.js';

const parse = (raw: unknown) => parseWithProblems(parseGitlabConfig, raw);

const GOOD = { clientID: 'abc', clientSecret: 'shh' };

describe('gitlab connector config', () => {
  it('takes a minimal config and fills in the defaults', () => {
    const { config, problems } = parse(GOOD);
    expect(problems).to.deep.equal([]);
    expect(config).to.deep.equal({ ...GOOD, baseURL: DEFAULT_GITLAB_BASE_URL, useLoginAsID: false, getGroupsPermission: false });
    expect(DEFAULT_GITLAB_BASE_URL).to.equal('https://gitlab.com');
  });

  it("takes every key of Dex's GitLab connector but redirectURI, with the CA as PEM or base64 PEM", () => {
    const full = { ...GOOD, baseURL: 'https://gitlab.corp.example.com', groups: ['acme/ops'], useLoginAsID: true, getGroupsPermission: true };
    const pem = parse({ ...full, rootCA: TEST_CA });
    expect(pem.problems).to.deep.equal([]);
    expect(pem.config?.rootCA).to.equal(TEST_CA);
    const base64 = parse({ ...full, rootCAData: TEST_CA_BASE64 });
    expect(base64.problems).to.deep.equal([]);
    expect(base64.config?.rootCAData).to.equal(TEST_CA);
  });

  it('names every bad key with its path, in one run', () => {
    const { config, problems } = parse({
      baseURL: 'gitlab.corp.example.com',
      clientID: '',
      groups: [1],
      getGroupsPermission: 1,
      rootCA: 'ca.pem',
    });
    expect(config).to.equal(undefined);
    expect(problems).to.have.members([
      `${AT}.baseURL: 'gitlab.corp.example.com' is not an http(s) URL`,
      `${AT}.clientID: must not be empty`,
      `${AT}.clientSecret: required`,
      `${AT}.groups[0]: 1 must be a string`,
      `${AT}.getGroupsPermission: 1 must be true or false`,
      `${AT}.rootCA: 'ca.pem' must be PEM certificates (-----BEGIN CERTIFICATE-----) or a secret reference to them, never a file path`,
    ]);
  });

  it('refuses rootCA with rootCAData, and rootCAData that is not base64 PEM', () => {
    expect(parse({ ...GOOD, rootCA: TEST_CA, rootCAData: TEST_CA_BASE64 }).problems).to.deep.equal([`${AT}.rootCAData: cannot be combined with rootCA: set one of them`]);
    expect(parse({ ...GOOD, rootCAData: TEST_CA }).problems).to.deep.equal([`${AT}.rootCAData: '-----BEGIN CERTIFICATE-----…' must be base64 of PEM certificates, or a secret reference to it`]);
  });

  it('names an unknown key', () => {
    expect(parse({ ...GOOD, inheritedGroups: true }).problems).to.deep.equal([`${AT}.inheritedGroups: unknown key`]);
  });

  it('refuses redirectURI: svc sets the callback URL itself', () => {
    const { config, problems } = parse({ ...GOOD, redirectURI: 'https://svc.example.com/api/idp/callback' });
    expect(config).to.equal(undefined);
    expect(problems).to.deep.equal([`${AT}.redirectURI: must not be set: svc gives the connector <url>/api/idp/callback (with the url of svc-cm) as its callback; register that URL upstream`]);
  });

  it('resolves the client secret and the CA from secret references, and names one that does not resolve', () => {
    const { config, problems } = parse({ ...GOOD, clientSecret: '$corp-idp:client-secret', rootCA: '$corp-idp:ca.crt' });
    expect(problems).to.deep.equal([]);
    expect(config?.clientSecret).to.equal('from-corp-idp');
    expect(config?.rootCA).to.equal(TEST_CA);
    expect(parse({ ...GOOD, clientSecret: '$nowhere:key' }).problems).to.deep.equal([`${AT}.clientSecret: references Secret 'nowhere', which does not exist`]);
  });
});
