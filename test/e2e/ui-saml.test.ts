/**
 * SSO through the SAML connector in a real browser (Debian's Chromium through playwright-core)
 * against a real SimpleSAMLphp: svc's login page → the IdP's login form → the IdP's auto-POST of
 * the response back to /api/idp/callback → the account page with the SAML groups.
 *
 * The IdP is at 127.0.0.1 and svc at `localhost`: two sites, so the POST back is cross-site as in
 * production, and the browser applies its SameSite rules to every cookie of the flow (the
 * provider's interaction cookie, svc's login-state cookie). A cookie that needed a same-site
 * POST would break this login, not the one in idp-saml.test.ts, which has no browser rules.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'chai';
import YAML from 'yaml';
import { seriousViolations, ssoLoginFromLoginPage, type Chromium } from '../helpers/chromium.js';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { freePort, startPeer, type Peer } from '../helpers/peers.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';
import { startUiSvc, type UiSvc } from '../helpers/ui-svc.js';

describe('e2e: SAML login in Chromium, with the cross-site POST back to svc', function () {
  cleanUpTempDirs();
  this.timeout(120_000);
  let ssp: Peer;
  let ui: UiSvc | undefined;
  let url: string;
  let chromium: Chromium;

  before(async function () {
    const port = await freePort();
    url = `http://localhost:${port}`;
    const acs = `${url}/api/idp/callback`;
    const sspPort = await freePort();
    ssp = await startPeer('start-simplesamlphp.sh', [String(sspPort)], { SP_ENTITY_ID: acs, SP_ACS_URL: acs, SP_SLO_URL: `${url}/api/idp/logout` });
    const idp = `http://127.0.0.1:${sspPort}`;
    const saml = {
      ssoURL: `${idp}/saml2/idp/SSOService.php`, ssoIssuer: `${idp}/saml2/idp/metadata.php`, ca: await readFile(join(ssp.dir, 'cert', 'idp.crt'), 'utf8'),
      usernameAttr: 'uid', emailAttr: 'mail', groupsAttr: 'groups', nameIDPolicyFormat: 'unspecified',
    };
    const dir = tempConfigDir({
      'svc-cm.yaml': configMap('svc-cm', {
        url,
        'idp.config': YAML.stringify({ connectors: [{ type: 'saml', id: 'corp', name: 'Corp SAML', config: saml }] }),
      }),
      'svc-rbac-cm.yaml': configMap('svc-rbac-cm', { 'policy.csv': '' }),
      'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': 'ui-saml-e2e-secret-key-0123456789' }),
    });
    ui = await startUiSvc(dir, { port });
    ({ chromium } = ui);
  });

  after(async function () {
    await ui?.close();
    await ssp?.stop();
  });

  it('logs bob in from the login page through SimpleSAMLphp, back to return_url with his SAML groups', async function () {
    const page = await chromium.page();
    let crossSitePost = false;
    page.on('request', (request) => {
      if (request.method() === 'POST' && request.url() === `${url}/api/idp/callback`) {
        crossSitePost = new URL(request.frame().url()).hostname === '127.0.0.1';
      }
    });
    await ssoLoginFromLoginPage(page, {
      svcUrl: url, button: 'Log in via Corp SAML', returnUrl: '/?from=saml',
      async logIn(at) {
        await at.locator('input[name="username"]').fill('bob');
        await at.locator('input[name="password"]').fill('bob123');
        await chromium.screenshot(at, 'saml-idp-form');
        await at.locator('input[name="password"]').press('Enter');
      },
    });
    expect(crossSitePost, 'the response was posted from the IdP\'s page (another site)').to.equal(true);
    // The page fills every field at once from the session's userinfo; until then each reads '…'.
    await page.locator('#me-issuer', { hasText: `${url}/api/idp` }).waitFor();
    expect(await page.locator('#me-groups').textContent()).to.contain('devs');
    expect(await page.locator('#me-issuer').textContent()).to.equal(`${url}/api/idp`);
    expect(await seriousViolations(page)).to.deep.equal([]);
    await chromium.screenshot(page, 'account-saml');
  });
});
