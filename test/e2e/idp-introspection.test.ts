/**
 * Token introspection (RFC 7662) and revocation (RFC 7009) at the bundled provider, on two
 * replicas sharing Redis, with the LDAP connector on a real slapd: a static client is told about
 * its own access and refresh tokens, with the claims and nothing more; the answer turns
 * `{"active": false}` after a revocation at the other replica, a logout, the session ended from
 * svc's sessions list, and the user deleted in the directory (at the next check, after
 * users.sso.groupsRecheck). Another client's tokens answer `{"active": false}`, unless the caller
 * is a resource server (`introspection: any`); a public client or svc's own may not ask. Wrong
 * secrets at one replica's introspection lock the client at both endpoints of the other.
 */
import { expect } from 'chai';
import * as client from 'openid-client';
import { DEFAULT_MAX_FAIL_COUNT } from '../../src/session/limits.js';
import { webClientSecret } from '../../src/idp/clients.js';
import { asDirectoryAdmin } from '../connectors/ldap/directory-admin.js';
import { authorizationRequest } from '../helpers/authorization.js';
import { FormBrowser, isPage } from '../helpers/form-browser.js';
import { SvcTokenBrowser } from '../helpers/ldap-idp-svc.js';
import { startLdapReplicas, type LdapReplicas, type ReplicaName as Name } from '../helpers/ldap-replicas.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const SECRET_KEY = 'idp-introspection-e2e-secret-key-0123456789';
const RECHECK_MS = 2000;
const WIKI = 'https://wiki.example.org/cb';
const WIKI_OUT = 'https://wiki.example.org/out';
const SECRETS = { 'wiki.secret': 'wiki-secret-0123456789', 'grafana.secret': 'grafana-secret-0123456789', 'gateway.secret': 'gateway-secret-0123456789', 'locked.secret': 'locked-secret-0123456789' };
const STATIC_CLIENTS = [
  { id: 'wiki', secret: '$wiki.secret', redirectURIs: [WIKI], postLogoutRedirectURIs: [WIKI_OUT] },
  { id: 'grafana', secret: '$grafana.secret', redirectURIs: ['https://grafana.example.org/cb'] },
  { id: 'gateway', secret: '$gateway.secret', redirectURIs: ['https://gateway.example.org/cb'], introspection: 'any' },
  { id: 'locked', secret: '$locked.secret', redirectURIs: ['https://locked.example.org/cb'] },
  { id: 'dash', public: true, redirectURIs: ['http://127.0.0.1/cb'] },
];
const TOLD = ['active', 'client_id', 'exp', 'groups', 'iat', 'iss', 'scope', 'sub', 'token_type'];

describe('e2e: token introspection and revocation at the bundled provider, two replicas sharing Redis (real slapd)', function () {
  cleanUpTempDirs();
  this.timeout(90_000);
  let lb: LdapReplicas;
  let url: string;
  let issuer: string;

  before(async function () {
    lb = await startLdapReplicas({ secretKey: SECRET_KEY, policy: '', staticClients: STATIC_CLIENTS, secrets: SECRETS, cm: { 'users.sso.groupsRecheck': `${RECHECK_MS / 1000}s` } });
    url = lb.url;
    issuer = `${url}/api/idp`;
  });

  after(async function () {
    await lb?.close();
  });

  /** Runs `step` with every request sent to `name`. */
  async function on<T>(name: Name, step: () => Promise<T>): Promise<T> {
    lb.to(name);
    return step();
  }

  const rp = (id: string, secret: string) => client.discovery(new URL(issuer), id, undefined, client.ClientSecretBasic(secret), { execute: [client.allowInsecureRequests] });
  const wiki = () => rp('wiki', SECRETS['wiki.secret']);

  /** POST to an endpoint as `id`:`secret` (Basic); status, Retry-After and the JSON answer. */
  async function post(name: Name, path: string, id: string, secret: string, form: Record<string, string>): Promise<{ status: number; retryAfter: string | null; body: Record<string, unknown> }> {
    return on(name, async () => {
      const res = await fetch(`${issuer}${path}`, {
        method: 'POST',
        headers: { authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(form),
      });
      const text = await res.text();
      return { status: res.status, retryAfter: res.headers.get('retry-after'), body: text === '' ? {} : JSON.parse(text) as Record<string, unknown> };
    });
  }
  const introspect = (name: Name, token: string, id = 'wiki', secret = SECRETS['wiki.secret']) => post(name, '/token/introspection', id, secret, { token });

  /** wiki's login of `username` through the password form (or the provider session `browser` holds); its tokens. */
  async function wikiLogin(username: string, password: string, scope: string, browser: FormBrowser = new FormBrowser()) {
    const config = await wiki();
    const request = await authorizationRequest(config, WIKI, scope);
    let done = await on('a', () => browser.go(request.href, WIKI));
    if (isPage(done)) done = await on('b', () => browser.submit(done as never, { username, password }, WIKI));
    if (isPage(done)) throw new Error(`expected the redirect with a code, got ${String(done.status)}: ${done.html.slice(0, 300)}`);
    const tokens = await on('a', () => client.authorizationCodeGrant(config, done as URL, { pkceCodeVerifier: request.verifier, expectedState: request.state }));
    return { config, tokens, browser };
  }

  async function inactiveOnBoth(token: string, what: string): Promise<void> {
    for (const name of ['a', 'b'] as const) {
      const told = await introspect(name, token);
      expect(told, `${what} at ${name}`).to.deep.equal({ status: 200, retryAfter: null, body: { active: false } });
    }
  }

  it('tells a static client about its own access and refresh tokens on either replica: the listed claims and the groups, nothing more', async function () {
    const { tokens } = await wikiLogin('alice', 'alice123', 'openid profile groups offline_access');
    const sub = String(tokens.claims()?.sub);
    for (const name of ['a', 'b'] as const) {
      const access = await introspect(name, tokens.access_token);
      expect(access.status).to.equal(200);
      expect(Object.keys(access.body).sort(), name).to.deep.equal(TOLD);
      expect(access.body).to.deep.include({ active: true, sub, client_id: 'wiki', iss: issuer, token_type: 'Bearer', scope: 'openid profile groups offline_access' });
      expect(access.body['groups']).to.include.members(['admins', 'devs']);
      const refresh = await introspect(name, String(tokens.refresh_token));
      expect(refresh.body).to.deep.include({ active: true, sub, client_id: 'wiki' });
      expect(refresh.body).not.to.have.property('token_type');
    }
    // Without the groups scope, no groups.
    const plain = await wikiLogin('alice', 'alice123', 'openid');
    expect((await introspect('b', plain.tokens.access_token)).body).to.include({ active: true }).and.not.to.have.property('groups');
  });

  it("answers another client's tokens {active: false}; a resource server with introspection: any is told; a public client and svc's own may not ask", async function () {
    const { tokens } = await wikiLogin('bob', 'bob123', 'openid groups offline_access');
    for (const token of [tokens.access_token, String(tokens.refresh_token)]) {
      expect((await introspect('a', token, 'grafana', SECRETS['grafana.secret'])).body).to.deep.equal({ active: false });
      expect((await introspect('b', token, 'gateway', SECRETS['gateway.secret'])).body).to.deep.include({ active: true, client_id: 'wiki' });
    }
    const publicClient = await on('a', async () => (await fetch(`${issuer}/token/introspection`, { method: 'POST', body: new URLSearchParams({ token: tokens.access_token, client_id: 'dash' }) })));
    expect(publicClient.status).to.equal(400);
    expect(await publicClient.json()).to.deep.equal({ error: 'unauthorized_client', error_description: 'only a confidential application registered in staticClients may introspect tokens' });
    const own = await introspect('b', tokens.access_token, 'svc', webClientSecret(SECRET_KEY));
    expect(own.status).to.equal(400);
    expect(own.body).to.have.property('error', 'unauthorized_client');
    // The same answer for a token that does not exist: the refusal tells nothing about the token.
    expect((await introspect('b', 'not-a-token', 'svc', webClientSecret(SECRET_KEY))).status).to.equal(400);
  });

  it('ends the grant on the other replica when a refresh token is revoked: both tokens inactive, no refresh', async function () {
    const { config, tokens } = await wikiLogin('bob', 'bob123', 'openid offline_access');
    expect((await introspect('b', tokens.access_token)).body).to.include({ active: true });
    // Another client's revocation is a 200 without effect (RFC 7009 §2.2).
    expect((await post('a', '/token/revocation', 'grafana', SECRETS['grafana.secret'], { token: String(tokens.refresh_token) })).status).to.equal(200);
    expect((await introspect('b', String(tokens.refresh_token))).body).to.include({ active: true });
    expect((await post('a', '/token/revocation', 'wiki', SECRETS['wiki.secret'], { token: String(tokens.refresh_token) })).status).to.equal(200);
    await inactiveOnBoth(String(tokens.refresh_token), 'the revoked refresh token');
    await inactiveOnBoth(tokens.access_token, 'the access token of its grant');
    const refused = await on('b', () => client.refreshTokenGrant(config, String(tokens.refresh_token)).catch((e: unknown) => e));
    expect(refused).to.have.property('error', 'invalid_grant');
  });

  it('answers {active: false} after the user logs out at the provider', async function () {
    const { config, tokens, browser } = await wikiLogin('carol', 'carol123', 'openid');
    expect((await introspect('a', tokens.access_token)).body).to.include({ active: true });
    const end = client.buildEndSessionUrl(config, { id_token_hint: String(tokens.id_token), post_logout_redirect_uri: WIKI_OUT });
    const confirm = await on('a', () => browser.go(end.href, WIKI_OUT));
    if (!isPage(confirm)) throw new Error('expected the logout confirmation');
    const back = await on('b', () => browser.submit(confirm, { logout: 'yes' }, WIKI_OUT));
    expect(isPage(back)).to.equal(false);
    await inactiveOnBoth(tokens.access_token, 'the token of the ended session');
  });

  it("answers {active: false} once the user's provider session is ended from svc's sessions list", async function () {
    // One browser: svc's SSO session, then wiki's login through the same provider session (no form).
    const first = new SvcTokenBrowser();
    const form = await on('a', () => first.go(`${url}/auth/login?return_url=/apps`, `${url}/apps`));
    if (!isPage(form)) throw new Error('expected the password form');
    await on('a', () => first.submit(form, { username: 'erin', password: 'erin123' }, `${url}/apps`));
    const { tokens } = await wikiLogin('erin', 'erin123', 'openid', first);
    expect((await introspect('b', tokens.access_token)).body).to.include({ active: true });
    // A second session of erin's ends the first from the list.
    const second = new SvcTokenBrowser();
    const again = await on('b', () => second.go(`${url}/auth/login?return_url=/apps`, `${url}/apps`));
    if (!isPage(again)) throw new Error('expected the password form');
    await on('b', () => second.submit(again, { username: 'erin', password: 'erin123' }, `${url}/apps`));
    const bearer = { authorization: `Bearer ${second.token()}` };
    const list = await on('b', async () => (await (await fetch(`${url}/api/v1/session/list`, { headers: bearer })).json()) as { items: { id: string; current?: boolean }[] });
    const other = list.items.filter((s) => s.current !== true);
    expect(other).to.have.lengthOf(1);
    const ended = await on('b', () => fetch(`${url}/api/v1/session/${encodeURIComponent(String(other[0]?.id))}`, { method: 'DELETE', headers: bearer }));
    expect(ended.status).to.equal(200);
    await inactiveOnBoth(tokens.access_token, "the token of the session ended from the list");
  });

  it('answers {active: false} once the user is deleted in the directory, at the first check after users.sso.groupsRecheck', async function () {
    const { config, tokens } = await wikiLogin('dave', 'dave123', 'openid groups offline_access');
    expect((await introspect('a', tokens.access_token)).body).to.include({ active: true });
    await asDirectoryAdmin(lb.ldapPort, (c) => c.del('uid=dave,ou=people,dc=example,dc=org'));
    // Within the interval the token stands on its login; after it, the directory is asked.
    await new Promise((resolve) => setTimeout(resolve, RECHECK_MS + 200));
    await inactiveOnBoth(tokens.access_token, 'the access token of a deleted user');
    await inactiveOnBoth(String(tokens.refresh_token), 'the refresh token of a deleted user');
    const refused = await on('b', () => client.refreshTokenGrant(config, String(tokens.refresh_token)).catch((e: unknown) => e));
    expect(refused).to.have.property('error', 'invalid_grant');
  });

  it("locks a client at both endpoints of both replicas after too many wrong secrets at one replica's introspection", async function () {
    for (let i = 0; i < DEFAULT_MAX_FAIL_COUNT; i += 1) {
      const wrong = await introspect('a', 'any-token', 'locked', `guess-${i}`);
      expect(wrong.status).to.equal(401);
      expect(wrong.body).to.have.property('error', 'invalid_client');
    }
    for (const path of ['/token/introspection', '/token/revocation']) {
      const locked = await post('b', path, 'locked', SECRETS['locked.secret'], { token: 'any-token' });
      expect(locked.status, path).to.equal(429);
      expect(locked.body).to.have.property('error', 'invalid_client');
      expect(Number(locked.retryAfter), path).to.be.above(0);
    }
  });
});
