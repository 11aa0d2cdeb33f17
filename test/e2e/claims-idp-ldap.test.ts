/**
 * The claim rules of an `ldap` connector of the bundled provider (docs/claims.md) end to end,
 * against a real slapd: `claims` is the user entry's attributes (each a list) and the groups the
 * connector found. A login that passes with the mapped groups, and one refused by each kind of
 * rule with the rule's message on the password form, in the log and in the audit trail; a
 * refusal is not a wrong password.
 */
import { expect } from 'chai';
import { collectAudit } from '../helpers/audit.js';
import { FormBrowser, isPage } from '../helpers/form-browser.js';
import { idpSvcAddress, startIdpSvc, type IdpSvc } from '../helpers/idp-svc.js';
import { corpLdapConnector, LDAP_BIND_SECRETS, startLdapDirectory, type LdapDirectory } from '../helpers/ldap-directory.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

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
      secrets: { 'server.secretkey': 'claims-idp-ldap-secret-key-0123456789', ...LDAP_BIND_SECRETS },
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
});
