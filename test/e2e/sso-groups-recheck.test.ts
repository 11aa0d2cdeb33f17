/**
 * Rights that follow a user's groups, for SSO sessions of the bundled provider (LDAP connector,
 * real slapd): a browser session is renewed through the provider's refresh grant, which asks
 * the directory again, at most every users.sso.groupsRecheck (2s here). A group removed takes
 * its extension away, a user deleted loses the session, both within the interval; a directory
 * that is down ends nothing (sessions and personal API tokens keep the groups of their last
 * check, within the grace) and the log says why.
 */
import { expect } from 'chai';
import { Attribute, Change } from 'ldapts';
import { collectAudit, type CollectedAudit } from '../helpers/audit.js';
import { ssoFormLogin, startLdapIdpSvc, type LdapIdpSvc, type SvcTokenBrowser } from '../helpers/ldap-idp-svc.js';
import { asDirectoryAdmin } from '../connectors/ldap/directory-admin.js';

const RECHECK_MS = 2000;
const WITHIN_MS = RECHECK_MS + 3000;
const POLICY = [
  'p, role:token-makers, tokens, create, self, allow',
  'g, devs, role:token-makers',
  'p, role:dev-tools, extensions, *, */tools, allow',
  'g, qa, role:dev-tools',
].join('\n');

describe('e2e: SSO sessions follow directory groups (bundled provider, LDAP, real slapd)', function () {
  this.timeout(90_000);
  let svc: LdapIdpSvc;
  let ldapPort: number;
  let url: string;
  let audit: CollectedAudit;

  before(async function () {
    audit = collectAudit();
    svc = await startLdapIdpSvc({
      secretKey: 'sso-groups-recheck-secret-key-0123456789', extensions: ['tools'], policy: POLICY,
      cm: { 'users.sso.groupsRecheck': `${RECHECK_MS / 1000}s` },
    }, { audit });
    ({ url, ldapPort } = svc);
  });

  after(async function () {
    await svc?.close();
  });

  const session = (username: string, password: string): Promise<SvcTokenBrowser> => ssoFormLogin(url, username, password);

  const tools = async (browser: SvcTokenBrowser) => {
    const res = await browser.request(`${url}/api/v1/extensions/tools/x`);
    await res.arrayBuffer();
    return res.status;
  };
  const loggedIn = async (browser: SvcTokenBrowser) => ((await (await browser.request(`${url}/api/v1/session/userinfo`)).json()) as { loggedIn: boolean }).loggedIn;

  async function within(withinMs: number, want: unknown, probe: () => Promise<unknown>): Promise<void> {
    const start = Date.now();
    let last: unknown;
    while (Date.now() - start < withinMs) {
      last = await probe();
      if (last === want) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`still ${String(last)} after ${withinMs} ms, want ${String(want)}`);
  }

  it('takes away the extension a removed group granted to a browser session within the recheck interval', async function () {
    const bob = await session('bob', 'bob123');
    expect(await tools(bob)).to.equal(200);
    const first = bob.token();
    const qa = 'cn=qa,ou=groups,dc=example,dc=org';
    await asDirectoryAdmin(ldapPort, (c) => c.modify(qa, new Change({ operation: 'delete', modification: new Attribute({ type: 'memberUid', values: ['bob'] }) })));
    try {
      await within(WITHIN_MS, 403, () => tools(bob));
      expect(bob.token(), 'renewed with the groups of now').not.to.equal(first);
      expect(await loggedIn(bob)).to.equal(true);
    } finally {
      await asDirectoryAdmin(ldapPort, (c) => c.modify(qa, new Change({ operation: 'add', modification: new Attribute({ type: 'memberUid', values: ['bob'] }) })));
    }
    await within(WITHIN_MS, 200, () => tools(bob));
  });

  it('ends the browser session of a user deleted from the directory within the recheck interval', async function () {
    const carol = await session('carol', 'carol123');
    expect(await loggedIn(carol)).to.equal(true);
    await asDirectoryAdmin(ldapPort, (c) => c.del('uid=carol,ou=people,dc=example,dc=org'));
    await within(WITHIN_MS, false, () => loggedIn(carol));
    const refused = audit.of('sso-identity-refused');
    expect(refused).to.have.length(1);
    expect(refused[0]).to.deep.include({ category: 'session', type: 'end', outcome: 'success' });
    expect(refused[0]?.reason).to.match(/^the provider refused to renew the session: /);
  });

  it('keeps sessions and tokens on the groups of their last check while the directory is down, and logs why', async function () {
    const bob = await session('bob', 'bob123');
    const made = await fetch(`${url}/api/v1/session/tokens`, { method: 'POST', headers: { authorization: `Bearer ${bob.token()}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'blip', expiresIn: '1h' }) });
    const { token } = await made.json() as { token: string };
    expect(made.status).to.equal(200);
    await svc.stopDirectory();
    await new Promise((r) => setTimeout(r, RECHECK_MS + 200));
    expect(await tools(bob), 'the session').to.equal(200);
    const viaToken = await fetch(`${url}/api/v1/extensions/tools/x`, { headers: { authorization: `Bearer ${token}` } });
    expect(viaToken.status, 'the token').to.equal(200);
    const logs = svc?.server.logs() ?? '';
    expect(logs).to.contain('an SSO session could not be renewed now; it keeps the groups of its last check');
    expect(logs).to.contain('personal API tokens: the connector cannot recheck the user now; the groups of the last confirmed check hold for now (never more)');
    expect(audit.of('sso-identity-refused'), 'nothing ended for a directory blip').to.have.length(1);
    const refusedNew = await fetch(`${url}/api/v1/session/tokens`, { method: 'POST', headers: { authorization: `Bearer ${bob.token()}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'new', expiresIn: '1h' }) });
    expect(refusedNew.status, 'no new token while the directory cannot confirm the user').to.equal(503);
  });
});
