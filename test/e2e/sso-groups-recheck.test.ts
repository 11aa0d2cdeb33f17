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
  'p, role:devs-only, extensions, *, */devtools, allow',
  'g, devs, role:devs-only',
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
      secretKey: 'sso-groups-recheck-secret-key-0123456789', extensions: ['tools', 'devtools'], policy: POLICY,
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

  /** The browser session's token, copied and sent as `Authorization: Bearer`. */
  function asBearer(browser: SvcTokenBrowser) {
    const bearer = browser.token();
    const get = (path: string) => fetch(`${url}${path}`, { headers: { authorization: `Bearer ${bearer}` } });
    return {
      token: bearer,
      async status(path: string) {
        const res = await get(path);
        await res.arrayBuffer();
        return res.status;
      },
      loggedIn: async () => ((await (await get('/api/v1/session/userinfo')).json()) as { loggedIn: boolean }).loggedIn,
    };
  }

  it('takes away the extension a removed group granted to the session token sent as a bearer, within the interval and for good', async function () {
    const alice = await session('alice', 'alice123');
    const copy = asBearer(alice);
    const devtools = () => copy.status('/api/v1/extensions/devtools/x');
    expect(await devtools(), 'in devs at login').to.equal(200);
    const devs = 'cn=devs,ou=groups,dc=example,dc=org';
    const member = new Attribute({ type: 'member', values: ['uid=alice,ou=people,dc=example,dc=org'] });
    await asDirectoryAdmin(ldapPort, (c) => c.modify(devs, new Change({ operation: 'delete', modification: member })));
    try {
      await within(WITHIN_MS, 403, devtools);
      // Held, not a passing moment: later requests, past the retry pause included, keep the groups of now.
      await new Promise((r) => setTimeout(r, RECHECK_MS + 200));
      for (let i = 0; i < 3; i++) expect(await devtools(), `request ${i} after the recheck`).to.equal(403);
      expect(await copy.loggedIn(), 'still a user, with the groups of now').to.equal(true);
      expect(alice.token(), 'the browser still holds the token the bearer was copied from').to.equal(copy.token);
      const browser = await alice.request(`${url}/api/v1/extensions/devtools/x`);
      await browser.arrayBuffer();
      expect(browser.status, 'the browser follows to the renewed session').to.equal(403);
      expect(alice.token(), 'and gets its token as the new cookie').not.to.equal(copy.token);
    } finally {
      await asDirectoryAdmin(ldapPort, (c) => c.modify(devs, new Change({ operation: 'add', modification: member })));
    }
  });

  it('refuses the session token sent as a bearer once its user is deleted from the directory, within the interval', async function () {
    const dave = await session('dave', 'dave123');
    const copy = asBearer(dave);
    expect(await copy.loggedIn()).to.equal(true);
    expect(await copy.status('/api/v1/session/tokens')).to.equal(200);
    await asDirectoryAdmin(ldapPort, (c) => c.del('uid=dave,ou=people,dc=example,dc=org'));
    await within(WITHIN_MS, false, copy.loggedIn);
    expect(await copy.status('/api/v1/session/tokens'), 'a deleted user').to.equal(401);
    expect(await loggedIn(dave), 'the browser session, the same session, ended too').to.equal(false);
  });

  it('keeps sessions and tokens on the groups of their last check while the directory is down, and logs why', async function () {
    const ended = audit.of('sso-identity-refused').length;
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
    expect(audit.of('sso-identity-refused'), 'nothing ended for a directory blip').to.have.length(ended);
    const refusedNew = await fetch(`${url}/api/v1/session/tokens`, { method: 'POST', headers: { authorization: `Bearer ${bob.token()}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'new', expiresIn: '1h' }) });
    expect(refusedNew.status, 'no new token while the directory cannot confirm the user').to.equal(503);
  });
});
