/**
 * idp.config under fuzzing (docs/reliability.md): YAML text, random documents and variants of a
 * valid configuration with every connector type. Never a throw; every input parses or gives
 * problems with their key paths, none repeating a secret.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import YAML from 'yaml';
import { parseIdpConfig } from '../../../src/idp/connectors/config.js';
import { FUZZ_SECRETS, Outcomes, parseChecked } from '../../helpers/config-fuzz.js';
import { fuzzOptions, mutated } from '../../helpers/fuzz.js';
import { TEST_CA } from '../../connectors/helpers.js';

/** One valid entry per connector type, and a static client: the starting points of the variants. */
export const VALID_IDP_CONFIG = {
  connectors: [
    { type: 'ldap', id: 'corp', name: 'Corp', config: { host: 'ldap.example.org', bindDN: 'cn=svc', bindPW: '$svc-secret:fuzz.secret', userSearch: { baseDN: 'ou=people,dc=example,dc=org', username: 'uid', idAttr: 'uid', emailAttr: 'mail' }, groupSearch: { baseDN: 'ou=groups', nameAttr: 'cn', userAttr: 'uid', groupAttr: 'memberUid' } } },
    { type: 'saml', id: 'saml', name: 'SAML', config: { ssoURL: 'https://idp.example.com/sso', ca: TEST_CA, usernameAttr: 'name', emailAttr: 'email', groupsAttr: 'groups' } },
    { type: 'github', id: 'gh', name: 'GitHub', config: { clientID: 'abc', clientSecret: '$svc-secret:fuzz.secret', orgs: [{ name: 'acme', teams: ['ops'] }] } },
    { type: 'gitlab', id: 'gl', name: 'GitLab', config: { clientID: 'abc', clientSecret: '$fuzz.secret', baseURL: 'https://gitlab.example.com', groups: ['acme/ops'] } },
    { type: 'oidc', id: 'up', name: 'Upstream', config: { issuer: 'https://accounts.example.com', clientID: 'abc', clientSecret: '$other:key', scopes: ['openid', 'email'] } },
  ],
  staticClients: [
    { id: 'wiki', name: 'Wiki', secret: '$svc-secret:fuzz.secret', redirectURIs: ['https://wiki.example.org/callback'], postLogoutRedirectURIs: ['https://wiki.example.org/'] },
    { id: 'cli', public: true, redirectURIs: ['http://127.0.0.1/callback'] },
  ],
};

const text = fc.oneof(
  { weight: 6, arbitrary: mutated(VALID_IDP_CONFIG).map((doc) => YAML.stringify(doc)) },
  { weight: 1, arbitrary: fc.anything({ maxDepth: 4 }).map((doc) => YAML.stringify(doc)) },
  { weight: 1, arbitrary: fc.string({ maxLength: 200 }) },
  // Cut anywhere: YAML that stops mid-document.
  { weight: 1, arbitrary: fc.tuple(fc.constant(YAML.stringify(VALID_IDP_CONFIG)), fc.nat()).map(([t, n]) => t.slice(0, n % t.length)) },
);

describe('idp.config under fuzzing', function () {
  this.timeout(60_000);

  it('never throws; parses, or names each problem by its key path without a secret (300 cases, seed 3801)', () => {
    const outcomes = new Outcomes();
    fc.assert(
      fc.property(text, (yaml) => {
        parseChecked('idp.config', (sink) => parseIdpConfig(yaml, FUZZ_SECRETS, sink), outcomes);
      }),
      fuzzOptions(3801, 300),
    );
    // The generator must reach both ways, or the property proves little.
    expect(outcomes.clean, 'valid variants').to.be.greaterThan(2);
    expect(outcomes.refused, 'refused variants').to.be.greaterThan(100);
  });

  it('the starting configuration is valid', () => {
    const outcomes = new Outcomes();
    expect(parseChecked('idp.config', (sink) => parseIdpConfig(YAML.stringify(VALID_IDP_CONFIG), FUZZ_SECRETS, sink), outcomes)).to.deep.equal([]);
  });
});
