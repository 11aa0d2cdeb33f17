import { expect } from 'chai';
import { DEFAULT_OIDC_SCOPES, DEFAULT_PROMPT_TYPE, DEFAULT_USER_ID_KEY, DEFAULT_USER_NAME_KEY, parseOidcConnectorConfig } from '../../../connectors/oidc/config.js';
import { AT, parseWithProblems, TEST_CA, TEST_CA_BASE64 } from '../helpers.js';

const parse = (raw: unknown) => parseWithProblems(parseOidcConnectorConfig, raw);

const GOOD = { issuer: 'https://accounts.example.com', clientID: 'abc', clientSecret: 'shh' };

describe('oidc connector config', () => {
  it('takes a minimal config and fills in the defaults', () => {
    const { config, problems } = parse(GOOD);
    expect(problems).to.deep.equal([]);
    expect(config).to.deep.equal({
      ...GOOD,
      scopes: ['profile', 'email'],
      insecureEnableGroups: false,
      insecureSkipEmailVerified: false,
      getUserInfo: false,
      userIDKey: 'sub',
      userNameKey: 'name',
      overrideClaimMapping: false,
      promptType: 'consent',
    });
    expect([DEFAULT_OIDC_SCOPES, DEFAULT_USER_ID_KEY, DEFAULT_USER_NAME_KEY, DEFAULT_PROMPT_TYPE]).to.deep.equal([['profile', 'email'], 'sub', 'name', 'consent']);
  });

  it("takes every key of Dex's OIDC connector but redirectURI", () => {
    const { config, problems } = parse({
      ...GOOD,
      issuerAlias: 'https://login.example.com',
      scopes: ['profile', 'email', 'groups'],
      basicAuthUnsupported: true,
      rootCA: TEST_CA,
      rootCAs: [TEST_CA, TEST_CA_BASE64],
      insecureEnableGroups: true,
      allowedGroups: ['admins'],
      insecureSkipEmailVerified: true,
      getUserInfo: true,
      userIDKey: 'oid',
      userNameKey: 'preferred_username',
      claimMapping: { preferred_username: 'upn', email: 'mail', groups: 'roles' },
      overrideClaimMapping: true,
      claimModifications: {
        newGroupFromClaims: [{ claims: ['dept', 'team'], delimiter: '/', clearDelimiter: true, prefix: 'org' }],
        filterGroupClaims: { groupsFilter: '^svc-' },
        modifyGroupNames: { prefix: 'corp:', suffix: '' },
      },
      promptType: '',
      acrValues: ['mfa'],
      pkceChallenge: 'S256',
      providerDiscoveryOverrides: { tokenURL: 'https://accounts.example.com/token', endSessionURL: 'https://accounts.example.com/logout' },
    });
    expect(problems).to.deep.equal([]);
    expect(config?.rootCAs).to.deep.equal([TEST_CA, TEST_CA]);
    expect(config?.promptType).to.equal('');
    expect(config?.claimModifications?.newGroupFromClaims?.[0]?.delimiter).to.equal('/');
  });

  it('names every bad key with its path, in one run', () => {
    const { config, problems } = parse({
      issuer: 'file:///etc/passwd',
      clientID: 'abc',
      scopes: 'groups',
      rootCAs: ['/etc/ssl/corp.pem'],
      getUserInfo: 'true',
      claimMapping: { email: 'mail', name: 'cn' },
      claimModifications: { filterGroupClaims: { groupsFilter: '([' } },
      pkceChallenge: 's256',
      providerDiscoveryOverrides: { authURL: 'javascript:alert(1)' },
    });
    expect(config).to.equal(undefined);
    expect(problems).to.have.members([
      `${AT}.issuer: 'file:///etc/passwd' is not an http(s) URL`,
      `${AT}.clientSecret: required`,
      `${AT}.scopes: 'groups' must be a list of strings`,
      `${AT}.rootCAs[0]: '/etc/ssl/corp.pem' must be PEM certificates or base64 of them (or a secret reference), never a file path`,
      `${AT}.getUserInfo: 'true' must be true or false`,
      `${AT}.claimMapping.name: unknown key`,
      `${AT}.claimModifications.filterGroupClaims.groupsFilter: '([' is not a valid regular expression`,
      `${AT}.pkceChallenge: 's256' must be one of 'S256', 'plain'`,
      `${AT}.providerDiscoveryOverrides.authURL: 'javascript:alert(1)' is not an http(s) URL`,
    ]);
  });

  it('refuses insecureSkipVerify and hostedDomains with what to do instead', () => {
    expect(parse({ ...GOOD, insecureSkipVerify: true, hostedDomains: ['example.com'] }).problems).to.have.members([
      `${AT}.insecureSkipVerify: true is not taken per connector: oidc.tls.insecure.skip.verify in svc-cm switches certificate checks off`,
      `${AT}.hostedDomains: was removed from Dex: restrict users with allowedGroups, or at the provider`,
    ]);
  });

  it('refuses allowedGroups without insecureEnableGroups, which would restrict nobody', () => {
    expect(parse({ ...GOOD, allowedGroups: ['admins'] }).problems).to.deep.equal([
      `${AT}.allowedGroups: needs insecureEnableGroups: true (groups are ignored without it, so nobody would be restricted)`,
    ]);
  });

  it('refuses allowedGroups without getUserInfo, which would let nobody in (groups need both switches)', () => {
    expect(parse({ ...GOOD, insecureEnableGroups: true, allowedGroups: ['admins'] }).problems).to.deep.equal([
      `${AT}.allowedGroups: needs getUserInfo: true as well (groups are read only with both insecureEnableGroups and getUserInfo)`,
    ]);
  });

  it('names an unknown key', () => {
    expect(parse({ ...GOOD, getUserinfo: true }).problems).to.deep.equal([`${AT}.getUserinfo: unknown key; did you mean 'getUserInfo'?`]);
  });

  it('refuses redirectURI: svc sets the callback URL itself', () => {
    const { config, problems } = parse({ ...GOOD, redirectURI: 'https://svc.example.com/api/idp/callback' });
    expect(config).to.equal(undefined);
    expect(problems).to.deep.equal([`${AT}.redirectURI: must not be set: svc gives the connector <url>/api/idp/callback (with the url of svc-cm) as its callback; register that URL upstream`]);
  });

  it('resolves the client secret and a CA in rootCAs from secret references, and names one that does not resolve', () => {
    const { config, problems } = parse({ ...GOOD, clientSecret: '$dex.clientSecret', rootCAs: ['$corp-idp:ca.crt'] });
    expect(problems).to.deep.equal([]);
    expect(config?.clientSecret).to.equal('from-svc-secret');
    expect(config?.rootCAs).to.deep.equal([TEST_CA]);
    expect(parse({ ...GOOD, rootCAs: ['$corp-idp:tls.crt'] }).problems).to.deep.equal([
      `${AT}.rootCAs[0]: references key 'tls.crt' of Secret 'corp-idp', which has no such key`,
    ]);
  });
});
