/**
 * oidc.config's claim rules (docs/claims.md) end to end, against a real oidc-provider on HTTPS:
 * a login that passes with its mapped name and groups, one refused by each kind of rule with the
 * rule's message (in the answer, the log and the audit trail), a mapped name that is reserved,
 * a mapped group `role:admin` that grants nothing, and the same rules on an ID token sent as a
 * bearer (the command line's path).
 */
import { expect } from 'chai';
import type { AuditEvent } from '../../src/audit/trail.js';
import { collectAudit } from '../helpers/audit.js';
import { setupSso, userInfo, type SsoSetup } from '../helpers/sso-setup.js';
import { makeTestCa } from '../helpers/test-ca.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const RULES = {
  claimValidationRules: [{ expression: '!("blocked" in claims.groups)', message: 'blocked accounts cannot log in here' }],
  claimMappings: {
    // `x-<name>` upstream is `<name>` here: how a mapping could make a reserved name.
    username: { expression: 'claims.sub.startsWith("x-") ? claims.sub.substring(2) : "corp-" + claims.sub' },
    groups: { expression: 'claims.groups.map(g, g.startsWith("team-") ? "corp:" + g.substring(5) : g)' },
  },
  userValidationRules: [{ expression: '!("corp:contractors" in user.groups)', message: 'contractors use the partner portal' }],
};

describe('e2e: claim rules of oidc.config (oidc-provider)', function () {
  cleanUpTempDirs();
  this.timeout(30_000);
  const audit = collectAudit();
  let setup: SsoSetup;

  before(async () => {
    setup = await setupSso({ ca: makeTestCa(), oidc: RULES, audit });
    const accounts: Record<string, string[]> = { alice: ['team-dev'], bob: ['team-dev', 'blocked'], carol: ['team-contractors'], 'x-admin': ['team-dev'], dave: ['role:admin'] };
    for (const [name, groups] of Object.entries(accounts)) setup.provider.accounts.set(name, { groups });
  });
  after(() => setup?.close());

  /** A login by an API client (JSON answers): where it ended, its answer, and svc's cookie if any. */
  async function login(account: string) {
    const browser = setup.browser();
    const { url, res } = await browser.browse(`${setup.svc.url}/auth/login?return_url=%2Fapps`, account);
    const body = await res?.text();
    return { url, status: res?.status, body: body === undefined || body === '' ? undefined : (JSON.parse(body) as Record<string, unknown>), token: browser.cookie(setup.svc.url, 'svc.token'), browser };
  }

  const lastLogin = (): AuditEvent | undefined => audit.of('login').at(-1);

  it('logs in with the mapped name and groups, on the session and for the same token as a bearer', async () => {
    const alice = await login('alice');
    expect(alice.url).to.equal(`${setup.svc.url}/apps`);
    expect(alice.token).to.be.a('string');
    expect(await userInfo(setup.svc.url, alice.token!)).to.deep.include({ loggedIn: true, username: 'corp-alice', groups: ['corp:dev'] });
  });

  it('refuses a login that a claim validation rule refuses, with its message, in the log and the audit trail', async () => {
    const bob = await login('bob');
    expect(bob.token).to.equal(undefined);
    expect(bob.status).to.equal(403);
    expect(bob.body).to.deep.include({ error: 'permission_denied', message: 'blocked accounts cannot log in here' });
    expect(setup.svc.logs()).to.include("SSO login refused by oidc.config's claim rules: blocked accounts cannot log in here");
    expect(lastLogin()).to.deep.include({ outcome: 'failure', reason: 'refused: blocked accounts cannot log in here (claimValidationRules[0] gave false)' });
  });

  it('refuses a login that a user validation rule refuses on the mapped groups, with its message', async () => {
    const carol = await login('carol');
    expect(carol.token).to.equal(undefined);
    expect(carol.body).to.deep.include({ error: 'permission_denied', message: 'contractors use the partner portal' });
    expect(lastLogin()).to.deep.include({ outcome: 'failure', reason: 'refused: contractors use the partner portal (userValidationRules[0] gave false)' });
  });

  it('refuses a mapped name that is reserved, and lets a mapped group role:admin grant nothing', async () => {
    const admin = await login('x-admin');
    expect(admin.token).to.equal(undefined);
    expect(admin.status).to.equal(401);
    expect(String(admin.body?.['message'])).to.match(/^single sign-on user 'admin' from .* cannot log in: it is the name of the built-in local account 'admin'/);

    const dave = await login('dave');
    expect(dave.token).to.be.a('string');
    expect(await userInfo(setup.svc.url, dave.token!)).to.deep.include({ username: 'corp-dave', groups: ['role:admin'] });
    const res = await fetch(`${setup.svc.url}/api/v1/account/can-i/logs/get/x`, { headers: { authorization: `Bearer ${dave.token}` } });
    expect(((await res.json()) as { value: string }).value).to.equal('no');
    expect(setup.svc.logs()).to.include("single sign-on group 'role:admin' from");
  });

  it('applies the rules to an ID token sent as a bearer: one the rules refuse is refused with the rule\'s message', async () => {
    const now = Math.floor(Date.now() / 1000);
    const token = await setup.provider.sign({ iss: setup.provider.issuer, aud: 'svc', sub: 'bob', iat: now, exp: now + 300, groups: ['blocked'] }, 'JWT');
    const apps = await fetch(`${setup.svc.url}/api/v1/applications`, { headers: { authorization: `Bearer ${token}` } });
    expect(apps.status).to.equal(403);
    expect(((await apps.json()) as { message: string }).message).to.equal('blocked accounts cannot log in here');
  });
});
