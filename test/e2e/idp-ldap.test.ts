/**
 * The bundled identity provider with a real LDAP connector against a real slapd, end to end: a
 * relying party (openid-client, the `svc` client) logs users in through svc's own password form
 * with a plain HTTP client that follows redirects and posts forms; the ID token carries the
 * directory's groups, and a `g, <ldap-group>, role:x` rule lets it through the extension proxy
 * for one extension and not for another. A wrong password is answered on the form, in words.
 * And svc's own SSO client side: /auth/login → the provider → the form → /auth/callback → the
 * svc.token cookie, which the same rules judge.
 */
import { expect } from 'chai';
import * as client from 'openid-client';
import { authorizationRequest, svcWebClient } from '../helpers/authorization.js';
import { FormBrowser, isPage } from '../helpers/form-browser.js';
import { toolsAndSecretPolicy } from '../helpers/manifests.js';
import { startLdapIdpSvc, type LdapIdpSvc } from '../helpers/ldap-idp-svc.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const SECRET_KEY = 'idp-ldap-e2e-secret-key-0123456789';
const POLICY = toolsAndSecretPolicy('devs', 'admins');

describe('e2e: the bundled identity provider with the LDAP connector (real slapd)', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  let svc: LdapIdpSvc | undefined;
  let url: string;
  let rp: client.Configuration;

  before(async function () {
    svc = await startLdapIdpSvc({ secretKey: SECRET_KEY, extensions: ['tools', 'secret'], policy: POLICY });
    url = svc.url;
    rp = await svcWebClient(url, SECRET_KEY);
  });

  after(async function () {
    await svc?.close();
  });

  async function logIn(username: string, password: string) {
    const redirectUri = `${url}/auth/callback`;
    const { href, verifier, state } = await authorizationRequest(rp, redirectUri, 'openid profile email groups');
    const browser = new FormBrowser();
    const form = await browser.go(href, redirectUri);
    if (!isPage(form)) throw new Error('expected the password form');
    const done = await browser.submit(form, { username, password }, redirectUri);
    if (isPage(done)) return { page: done };
    return { tokens: await client.authorizationCodeGrant(rp, done, { pkceCodeVerifier: verifier, expectedState: state }) };
  }

  const proxied = async (token: string, extension: string) => (await fetch(`${url}/api/v1/extensions/${extension}/x`, { headers: { authorization: `Bearer ${token}` } })).status;

  it('logs a directory user in; the groups from LDAP allow one extension and not another', async function () {
    const { tokens } = await logIn('bob', 'bob123');
    expect(tokens?.claims()).to.deep.include({ preferred_username: 'bob', email: 'bob@example.org' });
    const idToken = String(tokens?.id_token);
    expect((tokens?.claims()?.['groups'] as string[]).sort()).to.deep.equal(['devs', 'qa']);
    expect(await proxied(idToken, 'tools')).to.equal(200);
    expect(await proxied(idToken, 'secret')).to.equal(403);
  });

  it('lets a member of the admins group through to the other extension too', async function () {
    const { tokens } = await logIn('alice', 'alice123');
    const idToken = String(tokens?.id_token);
    expect(await proxied(idToken, 'tools')).to.equal(200);
    expect(await proxied(idToken, 'secret')).to.equal(200);
  });

  it('answers a wrong password and an injected filter on the form, in words, without a code', async function () {
    for (const [username, password] of [['bob', 'wrong'], ['*)(uid=*', 'bob123'], ['*', 'x']] as const) {
      const { page } = await logIn(username, password);
      expect(page?.html, username).to.contain('Wrong username or password');
    }
  });

  it('logs in through /auth/login to the svc.token cookie, which the LDAP groups judge on the proxy', async function () {
    const browser = new FormBrowser();
    const form = await browser.go(`${url}/auth/login?return_url=/apps`, `${url}/apps`);
    if (!isPage(form)) throw new Error(`expected the password form, got a redirect to ${form.href}`);
    expect(form.html).to.contain('Corp directory');
    const landed = await browser.submit(form, { username: 'bob', password: 'bob123' }, `${url}/apps`);
    expect(landed, 'back at return_url').to.be.instanceOf(URL);
    const info = await (await browser.request(`${url}/api/v1/session/userinfo`)).json() as Record<string, unknown>;
    expect(info).to.deep.include({ loggedIn: true, iss: `${url}/api/idp` });
    expect((info['groups'] as string[]).sort()).to.deep.equal(['devs', 'qa']);
    expect((await browser.request(`${url}/api/v1/extensions/tools/x`)).status).to.equal(200);
    expect((await browser.request(`${url}/api/v1/extensions/secret/x`)).status).to.equal(403);
  });
});
