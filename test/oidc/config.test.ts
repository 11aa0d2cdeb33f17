import { expect } from 'chai';
import YAML from 'yaml';
import { formatProblem, ProblemSink } from '../../src/config/problems.js';
import type { SecretObject } from '../../src/config/manifests.js';
import { parseOidcConfig } from '../../src/oidc/config.js';
import { ssoProviderFromOidc } from '../../src/oidc/provider.js';

const PART_OF = { 'app.kubernetes.io/part-of': 'svc' };
const secrets = new Map<string, SecretObject>([
  ['svc-secret', { name: 'svc-secret', file: 'svc-secret.yaml', labels: PART_OF, data: { 'oidc.secret': 'from-svc-secret' } }],
  ['corp-oidc', { name: 'corp-oidc', file: 'corp.yaml', labels: PART_OF, data: { secret: 'from-corp' } }],
]);

function parse(config: Record<string, unknown>) {
  const sink = new ProblemSink();
  const parsed = parseOidcConfig(YAML.stringify(config), secrets, sink.scoped('svc-cm').at('oidc.config'));
  return { parsed, problems: sink.problems.map(formatProblem) };
}

const BASE = { issuer: 'https://idp.example.com', clientID: 'svc', clientSecret: '$oidc.secret' };

describe('oidc.config', () => {
  it('gives every field its default', () => {
    const { parsed, problems } = parse(BASE);
    expect(problems).to.deep.equal([]);
    expect(parsed).to.deep.include({
      name: 'OIDC', clientSecret: 'from-svc-secret', allowedAudiences: [], audiences: ['svc'],
      skipAudienceCheckWhenTokenHasNoAudience: false, requestedScopes: ['openid', 'profile', 'email', 'groups'],
      requestedIDTokenClaims: {}, enablePKCEAuthentication: false, enableUserInfoGroups: false,
    });
    const provider = ssoProviderFromOidc(parsed!, false);
    expect(provider).to.deep.include({ redirectPath: '/auth/callback', idTokenClaims: undefined, userInfo: undefined, tls: { rootCA: undefined, insecureSkipVerify: false } });
  });

  it('allows clientID and cliClientID when allowedAudiences is omitted or empty, and only the listed ones when given', () => {
    expect(parse({ ...BASE, cliClientID: 'svc-cli' }).parsed?.audiences).to.deep.equal(['svc', 'svc-cli']);
    expect(parse({ ...BASE, cliClientID: 'svc-cli', allowedAudiences: [] }).parsed?.audiences).to.deep.equal(['svc', 'svc-cli']);
    expect(parse({ ...BASE, cliClientID: 'svc-cli', allowedAudiences: ['api'] }).parsed?.audiences).to.deep.equal(['api']);
  });

  it('reads $<secret>:<key> references', () => {
    expect(parse({ ...BASE, clientSecret: '$corp-oidc:secret' }).parsed?.clientSecret).to.equal('from-corp');
  });

  it('names a missing $<secret>:<key> reference as a configuration problem, without the value', () => {
    const missingKey = parse({ ...BASE, clientSecret: '$corp-oidc:nope' });
    expect(missingKey.parsed).to.equal(undefined);
    expect(missingKey.problems).to.have.length(1);
    expect(missingKey.problems[0]).to.match(/oidc\.config.*clientSecret/);
    const missingSecret = parse({ ...BASE, clientSecret: '$absent:key' });
    expect(missingSecret.problems[0]).to.match(/clientSecret: references Secret .*, which does not exist/);
  });

  it('needs a client secret unless PKCE is on, and then sends the browser back to /pkce/verify', () => {
    expect(parse({ issuer: BASE.issuer, clientID: 'svc' }).problems[0]).to.match(/clientSecret.*required unless enablePKCEAuthentication/);
    const pkce = parse({ issuer: BASE.issuer, clientID: 'svc', enablePKCEAuthentication: true });
    expect(ssoProviderFromOidc(pkce.parsed!, false)).to.deep.include({ redirectPath: '/pkce/verify', clientSecret: undefined });
  });

  it('carries requestedIDTokenClaims, userinfo settings and rootCA to the provider value', () => {
    const { parsed } = parse({
      ...BASE, requestedIDTokenClaims: { groups: { essential: true } }, enableUserInfoGroups: true, userInfoPath: '/userinfo',
      userInfoCacheExpiration: '5m', rootCA: '-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n',
    });
    const provider = ssoProviderFromOidc(parsed!, true);
    expect(provider.idTokenClaims).to.deep.equal({ groups: { essential: true } });
    expect(provider.userInfo).to.deep.equal({ path: '/userinfo', cacheMs: 300_000 });
    expect(provider.tls.insecureSkipVerify).to.equal(true);
    expect(provider.tls.rootCA).to.include('BEGIN CERTIFICATE');
  });

  it('compiles the claim rules and names a bad expression or a misspelt key (with "did you mean"); the config is then not used', () => {
    const good = parse({ ...BASE, claimMappings: { groups: { expression: 'claims.roles' } } });
    expect(good.problems).to.deep.equal([]);
    expect(Object.keys(good.parsed?.claimRules.claimMappings ?? {})).to.deep.equal(['groups']);
    expect(ssoProviderFromOidc(good.parsed!, false).claimRules).to.equal(good.parsed?.claimRules);
    expect(good.parsed).to.not.have.property('claimMappings');
    const bad = parse({ ...BASE, claimMapings: {}, claimMappings: { groups: { expression: 'claims.roles.frob()' } } });
    expect(bad.parsed).to.equal(undefined);
    expect(bad.problems).to.have.members([
      "svc-cm: oidc.config: claimMapings: unknown key; did you mean 'claimMappings'?",
      "svc-cm: oidc.config: claimMappings.groups.expression: does not compile: found no function 'frob'",
    ]);
  });

  it('refuses a username or email mapping that reads claims.email unless claims.email_verified is checked, naming the key, as Kubernetes does (issue 54)', () => {
    const MESSAGE = "reads claims.email, so claims.email_verified must be checked too, in this expression or in a claimValidationRules expression (for example 'claims.email_verified == true')";
    const unchecked = parse({ ...BASE, claimMappings: { username: { expression: 'claims.email' }, email: { expression: 'claims["email"].lowerAscii()' } } });
    expect(unchecked.parsed).to.equal(undefined);
    expect(unchecked.problems).to.have.members([
      `svc-cm: oidc.config: claimMappings.username.expression: ${MESSAGE}`,
      `svc-cm: oidc.config: claimMappings.email.expression: ${MESSAGE}`,
    ]);
    const inRule = parse({ ...BASE, claimValidationRules: [{ expression: 'claims.email_verified == true' }], claimMappings: { username: { expression: 'claims.email' } } });
    expect(inRule.problems).to.deep.equal([]);
    const inExpression = parse({ ...BASE, claimMappings: { username: { expression: 'claims.email_verified ? claims.email : claims.sub' } } });
    expect(inExpression.problems).to.deep.equal([]);
    const other = parse({ ...BASE, claimMappings: { username: { expression: 'claims.preferred_username' } } });
    expect(other.problems).to.deep.equal([]);
  });
});
