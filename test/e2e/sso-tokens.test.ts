/**
 * Personal API tokens of SSO users, end to end: the bundled provider with the LDAP connector
 * against a real slapd (fixtures/ldap/ldap-connector.ldif), an echo backend behind the
 * extension proxy. A directory user logs in, makes a token, uses it on the proxy, lists and
 * deletes it; the rule `tokens, create, self` decides who may; a user deleted from the
 * directory, a group removed and the rule removed each take the token's rights away within
 * users.sso.groupsRecheck (2s here).
 */
import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'chai';
import { Attribute, Change } from 'ldapts';
import { collectAudit, type CollectedAudit } from '../helpers/audit.js';
import { configMap } from '../helpers/manifests.js';
import { ssoFormLogin, startLdapIdpSvc, type LdapIdpSvc } from '../helpers/ldap-idp-svc.js';
import { asDirectoryAdmin } from '../connectors/ldap/directory-admin.js';

const SECRET_KEY = 'sso-tokens-e2e-secret-key-0123456789';
const RECHECK_MS = 2000;
/** The recheck interval, plus the time a check and the store's watch take on a loaded machine. */
const WITHIN_MS = RECHECK_MS + 3000;
const POLICY = [
  'p, role:token-makers, tokens, create, self, allow',
  'g, devs, role:token-makers',
  'p, role:dev-tools, extensions, *, */tools, allow',
  'g, qa, role:dev-tools',
  'p, role:admin-tools, extensions, *, */secret, allow',
  'g, admins, role:admin-tools',
].join('\n');

describe('e2e: personal API tokens of SSO users (bundled provider, LDAP, real slapd)', function () {
  this.timeout(90_000);
  let svc: LdapIdpSvc | undefined;
  let ldapPort: number;
  let url: string;
  let audit: CollectedAudit;

  before(async function () {
    audit = collectAudit();
    svc = await startLdapIdpSvc({
      secretKey: SECRET_KEY, extensions: ['tools', 'secret'], policy: POLICY,
      cm: { 'users.sso.groupsRecheck': `${RECHECK_MS / 1000}s`, 'users.ssoTokens.maxLifetime': '24h' },
    }, { env: { SVC_MAX_API_TOKENS_PER_ACCOUNT: '2' }, audit });
    ({ url, ldapPort } = svc);
  });

  after(async function () {
    await svc?.close();
  });

  /** An SSO session through /auth/login and the password form: its token (the provider's ID token). */
  async function logIn(username: string, password: string): Promise<string> {
    const token = (await ssoFormLogin(url, username, password)).token();
    if (token === '') throw new Error('no svc.token cookie');
    return token;
  }

  const call = (token: string, method: string, path: string, body?: unknown) => fetch(`${url}${path}`, {
    method, headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const proxied = async (token: string, extension: string) => (await call(token, 'GET', `/api/v1/extensions/${extension}/x`)).status;
  const listed = (token: string) => call(token, 'GET', '/api/v1/session/tokens');

  async function makeToken(session: string, name: string, expiresIn: string | number = '1h'): Promise<{ id: string; token: string; expiresAt: string }> {
    const res = await call(session, 'POST', '/api/v1/session/tokens', { name, expiresIn });
    const body = await res.json() as { id: string; token: string; expiresAt: string };
    expect(res.status, JSON.stringify(body)).to.equal(200);
    return body;
  }

  /** Polls `probe` until it gives `want`; fails after `withinMs`. How long it took. */
  async function within(withinMs: number, want: unknown, probe: () => Promise<unknown>): Promise<number> {
    const start = Date.now();
    let last: unknown;
    while (Date.now() - start < withinMs) {
      last = await probe();
      if (last === want) return Date.now() - start;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`still ${String(last)} after ${withinMs} ms, want ${String(want)}`);
  }

  it('makes a token for a directory user, which the proxy judges by their groups; lists it, and deleting it ends it', async function () {
    const session = await logIn('bob', 'bob123');
    const made = await makeToken(session, 'ci job');
    expect(made.token.split('.')).to.have.length(3);
    expect(Date.parse(made.expiresAt) - Date.now()).to.be.within(3_590_000, 3_600_000);
    expect(await proxied(made.token, 'tools')).to.equal(200);
    expect(await proxied(made.token, 'secret')).to.equal(403);
    // The refusal names the token by the id its owner sees, not by its jti.
    expect(audit.of('rights-refused').at(-1)?.svc).to.deep.include({ via: 'proxy', tokenKind: 'ssoApiKey', tokenId: made.id });

    const list = await (await listed(made.token)).json() as { items: { id: string; name: string; groups: string[]; expiresAt: string }[] };
    expect(list.items.map((t) => ({ id: t.id, name: t.name, groups: [...t.groups].sort(), expiresAt: t.expiresAt }))).to.deep.equal([{ id: made.id, name: 'ci job', groups: ['devs', 'qa'], expiresAt: made.expiresAt }]);
    const created = audit.of('token-created').at(-1);
    expect(created).to.deep.include({ category: 'iam', type: 'creation', outcome: 'success' });
    expect(created?.svc).to.deep.include({ tokenKind: 'sso', tokenId: made.id });
    expect(JSON.stringify(audit.events)).not.to.contain(made.token.split('.')[2]);

    const deleted = await call(session, 'DELETE', `/api/v1/session/tokens/${made.id}`);
    expect(deleted.status).to.equal(200);
    expect(await proxied(made.token, 'tools')).to.equal(401);
    expect(await (await listed(session)).json()).to.deep.equal({ items: [] });
    expect(audit.of('token-deleted').at(-1)?.svc).to.deep.include({ tokenKind: 'sso', tokenId: made.id });
  });

  it('logging out with a personal token deletes its record, as deleting it does: no revocation of it lives in state alone', async function () {
    const session = await logIn('bob', 'bob123');
    const made = await makeToken(session, 'logged out');
    const out = await call(made.token, 'DELETE', '/api/v1/session');
    expect(out.status, await out.clone().text()).to.equal(200);
    expect(await proxied(made.token, 'tools')).to.equal(401);
    expect(await (await listed(session)).json(), 'gone from svc-secret').to.deep.equal({ items: [] });
    expect(audit.of('token-deleted').at(-1)?.svc).to.deep.include({ tokenKind: 'sso', tokenId: made.id });
  });

  it('refuses a user whom no rule grants tokens, create, self with 403 and the reason', async function () {
    const session = await logIn('dave', 'dave123');
    const res = await call(session, 'POST', '/api/v1/session/tokens', { name: 'x', expiresIn: '1h' });
    expect(res.status).to.equal(403);
    expect(await res.json()).to.deep.equal({ error: 'permission_denied', message: "no rule grants 'tokens, create, self' to 'dave'; ask an administrator for it" });
  });

  it('refuses an expiresIn above users.ssoTokens.maxLifetime, and none at all, with a message', async function () {
    const session = await logIn('bob', 'bob123');
    const long = await call(session, 'POST', '/api/v1/session/tokens', { name: 'x', expiresIn: '25h' });
    expect(long.status).to.equal(400);
    expect(await long.json()).to.deep.equal({ error: 'invalid_request', message: 'expiresIn 25h is longer than users.ssoTokens.maxLifetime (24h); ask for a shorter lifetime' });
    const none = await call(session, 'POST', '/api/v1/session/tokens', { name: 'x' });
    expect(none.status).to.equal(400);
    expect((await none.json() as { message: string }).message).to.contain("field 'expiresIn' is required");
  });

  it('holds the per-user cap, and a token cannot make another token', async function () {
    const session = await logIn('alice', 'alice123');
    const first = await makeToken(session, 'one');
    await makeToken(session, 'two');
    const third = await call(session, 'POST', '/api/v1/session/tokens', { name: 'three', expiresIn: 600 });
    expect(third.status).to.equal(409);
    expect(await third.json()).to.deep.equal({ error: 'conflict', message: "'alice' already has 2 personal API tokens, the most allowed (SVC_MAX_API_TOKENS_PER_ACCOUNT=2); delete one first (expired ones count until deleted)" });
    const fromToken = await call(first.token, 'POST', '/api/v1/session/tokens', { name: 'child', expiresIn: 600 });
    expect(fromToken.status).to.equal(403);
  });

  it('takes away the extension a group granted within the recheck interval once the group is removed in the directory', async function () {
    const made = await makeToken(await logIn('bob', 'bob123'), 'groups');
    expect(await proxied(made.token, 'tools')).to.equal(200);
    const qa = 'cn=qa,ou=groups,dc=example,dc=org';
    await asDirectoryAdmin(ldapPort, (c) => c.modify(qa, new Change({ operation: 'delete', modification: new Attribute({ type: 'memberUid', values: ['bob'] }) })));
    try {
      await within(WITHIN_MS, 403, () => proxied(made.token, 'tools'));
      // Still bob, still a member of devs: only the group is gone.
      expect((await listed(made.token)).status).to.equal(200);
    } finally {
      await asDirectoryAdmin(ldapPort, (c) => c.modify(qa, new Change({ operation: 'add', modification: new Attribute({ type: 'memberUid', values: ['bob'] }) })));
    }
  });

  it('stops a deleted directory user\'s token within the recheck interval and deletes their tokens', async function () {
    const made = await makeToken(await logIn('carol', 'carol123'), 'carol');
    expect((await listed(made.token)).status).to.equal(200);
    await asDirectoryAdmin(ldapPort, (c) => c.del('uid=carol,ou=people,dc=example,dc=org'));
    await within(WITHIN_MS, 401, async () => (await listed(made.token)).status);
    const refused = audit.of('sso-identity-refused');
    expect(refused).to.have.length(1);
    expect(refused[0]).to.deep.include({ outcome: 'success', reason: "connector 'corp' no longer knows the user" });
    expect(refused[0]?.user?.name).to.equal('carol');
    const records = svc?.server.services.settings.current().ssoTokens;
    expect([...(records?.values() ?? [])].map((u) => u.name)).not.to.include('carol');
  });

  it('stops working once the rule granting tokens, create, self is removed', async function () {
    const made = await makeToken(await logIn('bob', 'bob123'), 'rule');
    expect(await proxied(made.token, 'tools')).to.equal(200);
    const file = join(svc?.dir ?? '', 'svc-rbac-cm.yaml');
    await writeFile(`${file}.tmp`, configMap('svc-rbac-cm', { 'policy.csv': POLICY.split('\n').filter((l) => !l.includes('tokens')).join('\n') }));
    await rename(`${file}.tmp`, file);
    try {
      await within(WITHIN_MS, 401, () => proxied(made.token, 'tools'));
    } finally {
      await writeFile(`${file}.tmp`, configMap('svc-rbac-cm', { 'policy.csv': POLICY }));
      await rename(`${file}.tmp`, file);
    }
  });
});
