import { expect } from 'chai';
import { publicSettings } from '../../src/http/routes/public-settings.js';
import type { IdpConfig } from '../../src/idp/connectors/config.js';
import type { OidcConfig } from '../../src/oidc/config.js';
import { describeSsoInForce, ssoInForce } from '../../src/oidc/in-force.js';

const oidc = { name: 'Corp', issuer: 'https://idp.example.com', clientID: 'svc', requestedScopes: ['openid'] } as unknown as OidcConfig;
const idp = { connectors: [{ id: 'gh', name: 'GitHub', type: 'github' }] } as unknown as IdpConfig;

describe('single sign-on in force', () => {
  it('is the external provider when both are set, and says so', () => {
    expect(ssoInForce({ oidc, idp })).to.equal('oidc');
    expect(describeSsoInForce({ oidc, idp })).to.match(/external OIDC provider \(oidc\.config\) is in force; idp\.config is also set and is not used/);
    expect(ssoInForce({ oidc: undefined, idp })).to.equal('idp');
    expect(ssoInForce({ oidc: undefined, idp: undefined })).to.equal(undefined);
  });

  it('is the only one /api/v1/settings shows', () => {
    const both = publicSettings({ url: 'https://svc', oidc, idp, accounts: new Map() });
    expect(both.oidcConfig?.issuer).to.equal('https://idp.example.com');
    expect(both.idpConnectors).to.deep.equal([]);
    const idpOnly = publicSettings({ url: 'https://svc', oidc: undefined, idp, accounts: new Map() });
    expect(idpOnly.oidcConfig).to.equal(undefined);
    expect(idpOnly.idpConnectors).to.deep.equal([{ id: 'gh', name: 'GitHub', type: 'github' }]);
  });
});
