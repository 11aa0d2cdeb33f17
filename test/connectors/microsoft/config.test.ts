import { expect } from 'chai';
import { DEFAULT_AUTHORITY, DEFAULT_GRAPH_URL, parseMicrosoftConfig } from '../../../connectors/microsoft/config.js';
import { AT, parseWithProblems, TEST_CA } from '../helpers.js';

const parse = (raw: unknown) => parseWithProblems(parseMicrosoftConfig, raw);

const GOOD = { tenant: '5b3c2a10-8f1e-4d7c-9a6b-0c1d2e3f4a5b', clientID: 'abc', clientSecret: 'shh' };

describe('microsoft connector config', () => {
  it('takes a minimal config and fills in the defaults: ids as group names, the global cloud', () => {
    const { config, problems } = parse(GOOD);
    expect(problems).to.deep.equal([]);
    expect(config).to.deep.equal({ ...GOOD, groupNameFormat: 'id', onlySecurityGroups: false, authority: DEFAULT_AUTHORITY, graphURL: DEFAULT_GRAPH_URL });
    expect([DEFAULT_AUTHORITY, DEFAULT_GRAPH_URL]).to.deep.equal(['https://login.microsoftonline.com', 'https://graph.microsoft.com']);
  });

  it('takes a tenant id, a domain, organizations or common, and every key, with a national cloud\'s hosts', () => {
    for (const tenant of ['contoso.onmicrosoft.com', 'corp.example.org', 'organizations', 'common', GOOD.tenant.toUpperCase()]) {
      expect(parse({ ...GOOD, tenant }).problems, tenant).to.deep.equal([]);
    }
    const full = parse({ ...GOOD, groups: ['ops'], groupNameFormat: 'name', onlySecurityGroups: true, authority: 'https://login.microsoftonline.us/', graphURL: 'https://graph.microsoft.us', rootCA: TEST_CA });
    expect(full.problems).to.deep.equal([]);
    expect(full.config).to.deep.include({ authority: 'https://login.microsoftonline.us', graphURL: 'https://graph.microsoft.us', groupNameFormat: 'name', onlySecurityGroups: true });
  });

  it('names every bad key with its path, in one run', () => {
    const { config, problems } = parse({
      tenant: 'consumers', clientID: '', groups: [1], groupNameFormat: 'displayName', onlySecurityGroups: 'yes',
      authority: 'https://login.microsoftonline.com/contoso', graphURL: 'graph.microsoft.com', rootCA: 'ca.pem', apiURL: 'https://login.microsoftonline.us',
    });
    expect(config).to.equal(undefined);
    expect(problems).to.have.members([
      `${AT}.tenant: 'consumers' must not be consumers: personal Microsoft accounts have no directory groups`,
      `${AT}.clientID: must not be empty`,
      `${AT}.clientSecret: required`,
      `${AT}.groups[0]: 1 must be a string`,
      `${AT}.groupNameFormat: 'displayName' must be id or name`,
      `${AT}.onlySecurityGroups: 'yes' must be true or false`,
      `${AT}.authority: 'https://login.microsoftonline.com/contoso' must be an origin only (https://host[:port]), without a path, a query or user info`,
      `${AT}.graphURL: 'graph.microsoft.com' is not an http(s) URL`,
      `${AT}.rootCA: 'ca.pem' must be PEM certificates (-----BEGIN CERTIFICATE-----) or a secret reference to them, never a file path`,
      `${AT}.apiURL: 'https://login.microsoftonline.us' is not taken: name the login host with authority`,
    ]);
  });

  it('refuses a tenant that is neither an id, a domain nor a multi-tenant name, an unknown key, and redirectURI', () => {
    const { problems } = parse({ ...GOOD, tenant: 'contoso', tennant: 'x', redirectURI: 'https://x.example/cb' });
    expect(problems).to.include(`${AT}.tenant: 'contoso' must be a tenant id (a GUID), a verified domain of the tenant (contoso.onmicrosoft.com), organizations or common`);
    expect(problems.some((p) => p.startsWith(`${AT}.tennant:`))).to.equal(true);
    expect(problems.some((p) => p.startsWith(`${AT}.redirectURI: must not be set`))).to.equal(true);
  });

  it('refuses groupNameFormat name with tenant common or organizations, naming the key: another tenant can make a group of the same name', () => {
    for (const tenant of ['common', 'organizations']) {
      const { config, problems } = parse({ ...GOOD, tenant, groupNameFormat: 'name', onlySecurityGroups: true, groups: ['ops'] });
      expect(config, tenant).to.equal(undefined);
      expect(problems, tenant).to.deep.equal([
        `${AT}.groupNameFormat: cannot be name with tenant ${tenant}: the admin of any other tenant can make a group of the same display name; use id (the default) and list group object ids in groups, or name one tenant`,
      ]);
      expect(parse({ ...GOOD, tenant, groupNameFormat: 'id', groups: ['00000000-0000-4000-8000-000000000001'] }).problems, tenant).to.deep.equal([]);
    }
    // Named with other problems, in one run.
    expect(parse({ tenant: 'common', clientID: '', clientSecret: 'x', groupNameFormat: 'name' }).problems).to.have.length(2);
  });
});
