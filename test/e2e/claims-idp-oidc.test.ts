/**
 * The claim rules of an `oidc` connector of the bundled provider (docs/claims.md) end to end,
 * against a real oidc-provider upstream (test/helpers/test-provider.ts, HTTPS with a test CA):
 * `claims` is the upstream's ID token, so a groups mapping reads its `groups` claim; a login that
 * passes with the mapped groups, one refused by each kind of rule with the rule's message (on
 * the page, in the log and in the audit trail), and a mapped group `role:admin` that grants nothing.
 */
import { expect } from 'chai';
import YAML from 'yaml';
import { collectAudit } from '../helpers/audit.js';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { freePort } from '../helpers/peers.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { makeTestCa } from '../helpers/test-ca.js';
import { PROVIDER_CLIENT_ID, PROVIDER_CLIENT_SECRET, providerBrowsers, startTestProvider, type ProviderBrowsers, type TestProvider } from '../helpers/test-provider.js';
import { removeTempDir } from '../helpers/temp-dir.js';

export const CONNECTOR_RULES = {
  claimValidationRules: [{ expression: '!("blocked" in claims.groups)', message: 'blocked accounts cannot log in here' }],
  claimMappings: { groups: { expression: 'claims.groups.map(g, g.startsWith("team-") ? "corp:" + g.substring(5) : g)' } },
  userValidationRules: [{ expression: '!("corp:contractors" in user.groups)', message: 'contractors use the partner portal' }],
};

describe('e2e: claim rules of an oidc connector (oidc-provider upstream)', function () {
  this.timeout(60_000);
  const ca = makeTestCa();
  const audit = collectAudit();
  let upstream: TestProvider;
  let server: TestServer;
  let browsers: ProviderBrowsers;
  let dir: string;
  let url: string;

  before(async function () {
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    upstream = await startTestProvider({ ca, redirectUris: [`${url}/api/idp/callback`] });
    const accounts: Record<string, string[]> = { alice: ['team-dev', 'other'], bob: ['team-dev', 'blocked'], carol: ['team-contractors'], dave: ['role:admin'] };
    for (const [name, groups] of Object.entries(accounts)) upstream.accounts.set(name, { groups });
    const connector = {
      type: 'oidc', id: 'corp', name: 'Corp',
      config: {
        issuer: upstream.issuer, clientID: PROVIDER_CLIENT_ID, clientSecret: '$corp.clientSecret', rootCA: ca.caPem, userNameKey: 'sub',
        insecureSkipEmailVerified: true, scopes: ['profile', 'email', 'groups'], ...CONNECTOR_RULES,
      },
    };
    dir = tempConfigDir({
      'svc-cm.yaml': configMap('svc-cm', { url, 'idp.config': YAML.stringify({ connectors: [connector] }) }),
      'svc-rbac-cm.yaml': configMap('svc-rbac-cm', { 'policy.csv': '' }),
      'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': 'claims-idp-oidc-secret-key-0123456789', 'corp.clientSecret': PROVIDER_CLIENT_SECRET }),
    });
    server = await startTestServer(dir, { port, audit });
    browsers = providerBrowsers(ca, upstream.issuer);
  });
  after(async function () {
    await server?.close(1000);
    await upstream?.close();
    await browsers?.close();
    if (dir !== undefined) removeTempDir(dir);
  });

  async function login(account: string) {
    const browser = browsers.browser();
    const { url: landed, res } = await browser.browse(`${url}/auth/login?return_url=/apps`, account);
    return { landed, status: res?.status, page: (await res?.text()) ?? '', token: browser.cookie(url, 'svc.token') };
  }
  const info = async (token: string) => (await (await fetch(`${url}/api/v1/session/userinfo`, { headers: { authorization: `Bearer ${token}` } })).json()) as Record<string, unknown>;
  const lastLogin = () => audit.of('login').at(-1);

  it('logs in with the groups the mapping makes of the upstream token\'s groups claim', async function () {
    const alice = await login('alice');
    expect(alice.landed).to.equal(`${url}/apps`);
    expect(await info(alice.token!)).to.deep.include({ loggedIn: true, groups: ['corp:dev', 'other'] });
  });

  it('refuses a login that a claim validation rule refuses, with its message on the page, in the log and in the audit trail', async function () {
    const bob = await login('bob');
    expect(bob.token).to.equal(undefined);
    expect(bob.status).to.equal(401);
    expect(bob.page).to.include('Blocked accounts cannot log in here.');
    expect(server.logs()).to.include('blocked accounts cannot log in here (claimValidationRules[0] gave false)');
    expect(lastLogin()).to.deep.include({ outcome: 'failure', reason: 'refused: blocked accounts cannot log in here (claimValidationRules[0] gave false)' });
  });

  it('refuses a login that a user validation rule refuses on the mapped groups, with its message', async function () {
    const carol = await login('carol');
    expect(carol.token).to.equal(undefined);
    expect(carol.page).to.include('Contractors use the partner portal.');
    expect(lastLogin()).to.deep.include({ outcome: 'failure', reason: 'refused: contractors use the partner portal (userValidationRules[0] gave false)' });
  });

  it('lets a mapped group role:admin grant nothing', async function () {
    const dave = await login('dave');
    expect(await info(dave.token!)).to.deep.include({ groups: ['role:admin'] });
    const res = await fetch(`${url}/api/v1/account/can-i/logs/get/x`, { headers: { authorization: `Bearer ${dave.token}` } });
    expect(((await res.json()) as { value: string }).value).to.equal('no');
  });
});
