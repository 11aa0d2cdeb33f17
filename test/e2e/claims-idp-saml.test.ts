/**
 * The claim rules of a `saml` connector of the bundled provider (docs/claims.md) end to end,
 * against a real SimpleSAMLphp IdP (started once for the file): `claims` is the assertion's
 * attributes, each a list, and `nameID`. A login that passes with the mapped groups, and one
 * refused by each kind of rule with the rule's message on the page and in the audit trail.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'chai';
import { collectAudit } from '../helpers/audit.js';
import { FormBrowser, isPage, type Page } from '../helpers/form-browser.js';
import { idpSvcAddress, startIdpSvc, type IdpSvc } from '../helpers/idp-svc.js';
import { freePort, startPeer, type Peer } from '../helpers/peers.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const RULES = {
  claimValidationRules: [{ expression: '!("contractors" in claims.groups) && claims.nameID != ""', message: 'contractors use the partner portal' }],
  claimMappings: {
    name: { expression: 'claims.displayName[0]' },
    groups: { expression: 'claims.groups.filter(g, g != "admins").map(g, "saml:" + g)' },
  },
  userValidationRules: [{ expression: 'user.name != "Mallory Namer"', message: 'this account is suspended' }],
};

describe('e2e: claim rules of a saml connector (real SimpleSAMLphp)', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  const audit = collectAudit();
  let ssp: Peer;
  let svc: IdpSvc;
  let url: string;

  before(async function () {
    const at = await idpSvcAddress();
    url = at.url;
    const acs = `${url}/api/idp/callback`;
    const sspPort = await freePort();
    ssp = await startPeer('start-simplesamlphp.sh', [String(sspPort)], { SP_ENTITY_ID: acs, SP_ACS_URL: acs, SP_SLO_URL: `${url}/api/idp/logout` });
    const idp = `http://127.0.0.1:${sspPort}`;
    const config = {
      ssoURL: `${idp}/saml2/idp/SSOService.php`, ssoIssuer: `${idp}/saml2/idp/metadata.php`, ca: await readFile(join(ssp.dir, 'cert', 'idp.crt'), 'utf8'),
      usernameAttr: 'uid', emailAttr: 'mail', groupsAttr: 'groups', nameIDPolicyFormat: 'unspecified', ...RULES,
    };
    svc = await startIdpSvc(at, {
      connectors: [{ type: 'saml', id: 'corp', name: 'Corp SAML', config }], extensions: ['tools'], policy: '',
      secrets: { 'server.secretkey': 'claims-idp-saml-secret-key-0123456789' },
    }, { audit });
  });
  after(async function () {
    await svc?.close();
    await ssp?.stop();
  });

  const page = (value: URL | Page, what: string): Page => {
    if (!isPage(value)) throw new Error(`expected ${what}, got a redirect to ${value.href}`);
    return value;
  };

  /** /auth/login → the IdP's form, filled in → its auto-POST form → svc: where the browser ends. */
  async function login(username: string, password: string): Promise<{ browser: FormBrowser; landed: URL | Page }> {
    const browser = new FormBrowser();
    const form = page(await browser.go(`${url}/auth/login?return_url=/apps`, `${url}/apps`), 'the IdP login form');
    const post = page(await browser.submit(form, { username, password }, `${url}/apps`), 'the IdP auto-POST form');
    return { browser, landed: await browser.submit(post, {}, `${url}/apps`) };
  }
  const lastLogin = () => audit.of('login').at(-1);

  it('logs in with the groups the mapping makes of the assertion\'s groups attribute', async function () {
    const { browser, landed } = await login('alice', 'alice123');
    expect(landed, 'back at return_url').to.be.instanceOf(URL);
    const info = await (await browser.request(`${url}/api/v1/session/userinfo`)).json() as Record<string, unknown>;
    expect(info).to.deep.include({ loggedIn: true, groups: ['saml:devs'] });
  });

  it('refuses a login that a claim validation rule refuses, with its message on the page and in the audit trail', async function () {
    const refused = page((await login('carol', 'carol123')).landed, 'the refusal page');
    expect(refused.status).to.equal(401);
    expect(refused.html).to.contain('Contractors use the partner portal.');
    expect(lastLogin()).to.deep.include({ outcome: 'failure', reason: 'refused: contractors use the partner portal (claimValidationRules[0] gave false)' });
  });

  it('refuses a login that a user validation rule refuses on the mapped name, with its message', async function () {
    const refused = page((await login('mallory', 'mallory123')).landed, 'the refusal page');
    expect(refused.html).to.contain('This account is suspended.');
    expect(lastLogin()).to.deep.include({ outcome: 'failure', reason: 'refused: this account is suspended (userValidationRules[0] gave false)' });
  });
});
