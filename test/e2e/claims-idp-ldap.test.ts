/**
 * The claim rules of an `ldap` connector of the bundled provider (docs/claims.md) end to end,
 * against a real slapd: `claims` is the user entry's attributes (each a list) and the groups the
 * connector found. A login that passes with the mapped groups, and one refused by each kind of
 * rule with the rule's message on the password form, in the log and in the audit trail; a
 * refusal is not a wrong password. A client that leaves `groups` out of its scope gets the same
 * refusal: the rules read the directory's groups whatever the scope (issue 54).
 */
import { expect } from 'chai';
import * as client from 'openid-client';
import { collectAudit } from '../helpers/audit.js';
import { authorizationRequest, svcWebClient } from '../helpers/authorization.js';
import { devicePasswordForm } from '../helpers/device-flow.js';
import { FormBrowser, isPage, type Page } from '../helpers/form-browser.js';
import { idpSvcAddress, startIdpSvc, type IdpSvc } from '../helpers/idp-svc.js';
import { corpLdapConnector, LDAP_BIND_SECRETS, startLdapDirectory, type LdapDirectory } from '../helpers/ldap-directory.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const SECRET = 'claims-idp-ldap-secret-key-0123456789';
const RULES = {
  claimValidationRules: [{ expression: 'claims.mail[0].endsWith("@example.org") && !("qa" in claims.groups)', message: 'QA accounts use the staging server' }],
  claimMappings: { groups: { expression: 'claims.groups.map(g, "ldap:" + g)' } },
  userValidationRules: [{ expression: '!("ldap:ops" in user.groups)', message: 'operators use the break-glass account' }],
};

describe('e2e: claim rules of an ldap connector (real slapd)', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  const audit = collectAudit();
  let directory: LdapDirectory;
  let svc: IdpSvc;

  before(async function () {
    directory = await startLdapDirectory();
    const corp = corpLdapConnector(directory);
    svc = await startIdpSvc(await idpSvcAddress(), {
      connectors: [{ ...corp, config: { ...corp.config, ...RULES } }], extensions: ['tools'], policy: '',
      secrets: { 'server.secretkey': SECRET, ...LDAP_BIND_SECRETS },
    }, { audit });
  });
  after(async function () {
    await svc?.close();
    await directory?.stop();
  });

  async function login(username: string, password: string) {
    const browser = new FormBrowser();
    const form = await browser.go(`${svc.url}/auth/login?return_url=/apps`, `${svc.url}/apps`);
    if (!isPage(form)) throw new Error('expected the password form');
    const done = await browser.submit(form, { username, password }, `${svc.url}/apps`);
    return { browser, page: isPage(done) ? done : undefined };
  }
  const lastLogin = () => audit.of('login').at(-1);

  it('logs in with the groups the mapping makes of the directory\'s groups', async function () {
    const { browser, page } = await login('carol', 'carol123');
    expect(page, page?.html.slice(0, 300)).to.equal(undefined);
    const info = await (await browser.request(`${svc.url}/api/v1/session/userinfo`)).json() as Record<string, unknown>;
    expect(info).to.deep.include({ loggedIn: true, groups: ['ldap:devs'] });
  });

  it('refuses a login that a claim validation rule refuses, with its message on the form, in the log and the audit trail', async function () {
    const { page } = await login('bob', 'bob123');
    expect(page?.status).to.equal(403);
    expect(page?.html).to.contain('QA accounts use the staging server.').and.not.contain('Wrong username or password');
    expect(svc.server.logs()).to.include('QA accounts use the staging server (claimValidationRules[0] gave false)');
    expect(lastLogin()).to.deep.include({ outcome: 'failure', reason: 'refused: QA accounts use the staging server (claimValidationRules[0] gave false)' });
  });

  it('refuses a login that a user validation rule refuses on the mapped groups, with its message', async function () {
    const { page } = await login('alice', 'alice123');
    expect(page?.status).to.equal(403);
    expect(page?.html).to.contain('Operators use the break-glass account.');
    expect(lastLogin()).to.deep.include({ outcome: 'failure', reason: 'refused: operators use the break-glass account (userValidationRules[0] gave false)' });
  });

  it('refuses the rule on groups to a device-flow login whose scope has no groups, and svc\'s own login after it asks again', async function () {
    const cli = await client.discovery(new URL(`${svc.url}/api/idp`), 'svc-cli', undefined, client.None(), { execute: [client.allowInsecureRequests] });
    const device = await client.initiateDeviceAuthorization(cli, { scope: 'openid' });
    const { browser, form } = await devicePasswordForm(String(device.verification_uri), device.user_code);
    const done = await browser.submit(form, { username: 'alice', password: 'alice123' }, 'about:');
    expect(isPage(done) && done.status, isPage(done) ? done.html.slice(0, 300) : String(done)).to.equal(403);
    expect((done as Page).html).to.contain('Operators use the break-glass account.');
    expect(lastLogin()).to.deep.include({ outcome: 'failure', reason: 'refused: operators use the break-glass account (userValidationRules[0] gave false)' });
    const web = await browser.go(`${svc.url}/auth/login?return_url=/apps`, `${svc.url}/apps`);
    expect(isPage(web) && web.html, 'svc\'s login must show the password form again').to.contain('password');
  });

  it('refuses the rule on groups to a web login whose scope has no groups, and gives groups only to a scope that asks', async function () {
    const rp = await svcWebClient(svc.url, SECRET);
    const redirect = `${svc.url}/auth/callback`;
    const bare = await authorizationRequest(rp, redirect, 'openid profile');
    const browser = new FormBrowser();
    const refused = await browser.submit(await browser.go(bare.href, redirect) as Page, { username: 'alice', password: 'alice123' }, redirect);
    expect(isPage(refused) && refused.status).to.equal(403);
    const carol = new FormBrowser();
    const granted = await carol.submit(await carol.go(bare.href, redirect) as Page, { username: 'carol', password: 'carol123' }, redirect);
    expect(isPage(granted), isPage(granted) ? granted.html.slice(0, 300) : '').to.equal(false);
    const tokens = await client.authorizationCodeGrant(rp, granted as URL, { pkceCodeVerifier: bare.verifier, expectedState: bare.state });
    expect(tokens.claims()).to.not.have.property('groups');
  });
});
