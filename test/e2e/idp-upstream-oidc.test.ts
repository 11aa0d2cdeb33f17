/**
 * The bundled identity provider with an upstream OIDC connector whose issuer is LemonLDAP::NG
 * (a provider nobody here wrote, over a private slapd: test/helpers/llng.ts), end to end:
 * a login through /auth/login with a plain HTTP client that follows redirects and posts the
 * portal's login form, ending in a working svc.token whose groups drive a rights decision;
 * groups only when both insecureEnableGroups and getUserInfo are on; and refresh at svc's token
 * endpoint going through the upstream's refresh token, refused once the upstream session ends.
 */
import { expect } from 'chai';
import * as client from 'openid-client';
import { authorizationRequest, svcWebClient } from '../helpers/authorization.js';
import { FormBrowser, isPage } from '../helpers/form-browser.js';
import { LLNG_CLIENT_ID, startLlng, throughLlng, type Llng } from '../helpers/llng-upstream.js';
import { idpSvcAddress, startIdpSvc, type IdpSvc } from '../helpers/idp-svc.js';
import type { TestServer } from '../helpers/server.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const SECRET_KEY = 'idp-upstream-oidc-e2e-secret-key-0123';
const CLIENT_SECRET = 'llng-e2e-client-secret';
const POLICY = ['p, role:admin-tools, extensions, *, */secret, allow', 'g, admins, role:admin-tools'].join('\n');

describe('e2e: the bundled identity provider with an upstream OIDC connector (real LemonLDAP::NG)', function () {
  cleanUpTempDirs();
  this.timeout(90_000);
  let llng: Llng;
  let server: TestServer;
  let svc: IdpSvc | undefined;
  let url: string;
  let rp: client.Configuration;

  before(async function () {
    const at = await idpSvcAddress();
    url = at.url;
    llng = await startLlng([`${url}/api/idp/callback`], CLIENT_SECRET);
    // LemonLDAP::NG sends name, email and groups from userinfo only, and no email_verified.
    const common = { issuer: llng.issuer, clientID: LLNG_CLIENT_ID, clientSecret: '$llng.clientSecret', insecureSkipEmailVerified: true };
    const connectors = [
      { type: 'oidc', id: 'llng', name: 'Corp portal', config: { ...common, scopes: ['profile', 'email', 'groups'], getUserInfo: true, insecureEnableGroups: true } },
      { type: 'oidc', id: 'userinfo-only', name: 'Userinfo only', config: { ...common, scopes: ['profile', 'email', 'groups'], getUserInfo: true } },
      // Without userinfo the portal's ID token names the subject only: no name, no email.
      { type: 'oidc', id: 'groups-only', name: 'Groups switch only', config: { ...common, scopes: ['groups'], userNameKey: 'sub', insecureEnableGroups: true } },
    ];
    svc = await startIdpSvc(at, {
      connectors: connectors, extensions: ['secret'], policy: POLICY,
      secrets: { 'server.secretkey': SECRET_KEY, 'llng.clientSecret': CLIENT_SECRET },
    });
    server = svc.server;
    rp = await svcWebClient(url, SECRET_KEY);
  });

  after(async function () {
    await svc?.close();
    await llng?.stop();
  });

  /** A relying party's login through one connector; the browser is returned for the portal's session cookie. */
  async function logIn(connectorId: string, scope: string, browser = new FormBrowser()) {
    const redirectUri = `${url}/auth/callback`;
    const { href, verifier, state } = await authorizationRequest(rp, redirectUri, scope);
    const back = await throughLlng(browser, `${href}&connector_id=${connectorId}`, 'alice', 'alice123', redirectUri);
    if (isPage(back)) throw new Error(`no code: ${back.status} at ${back.url}: ${back.html.slice(0, 300)}`);
    return { browser, tokens: await client.authorizationCodeGrant(rp, back, { pkceCodeVerifier: verifier, expectedState: state }) };
  }

  it('logs in through /auth/login and the portal\'s form to a svc.token whose upstream groups drive the rights', async function () {
    const browser = new FormBrowser();
    const chooser = await browser.go(`${url}/auth/login?return_url=/apps`, `${url}/apps`);
    if (!isPage(chooser)) throw new Error(`expected the connector chooser, got a redirect to ${chooser.href}`);
    const link = /href="([^"]*\/connector\/llng)"/.exec(chooser.html)?.[1];
    expect(link, 'a link to the llng connector').to.be.a('string');
    const landed = await throughLlng(browser, new URL(link ?? '', chooser.url).href, 'alice', 'alice123', `${url}/apps`);
    expect(landed, 'back at return_url').to.be.instanceOf(URL);
    const info = await (await browser.request(`${url}/api/v1/session/userinfo`)).json() as Record<string, unknown>;
    expect(info).to.deep.include({ loggedIn: true, iss: `${url}/api/idp` });
    expect((info['groups'] as string[]).sort()).to.deep.equal(['admins', 'devs']);
    expect((await browser.request(`${url}/api/v1/extensions/secret/x`)).status).to.equal(200);
  });

  it('gives the portal\'s groups only when both insecureEnableGroups and getUserInfo are on', async function () {
    const scope = 'openid profile email groups';
    const both = (await logIn('llng', scope)).tokens.claims();
    expect(both).to.deep.include({ name: 'Alice Liddell', email: 'alice@example.org', preferred_username: 'alice' });
    expect((both?.['groups'] as string[]).sort()).to.deep.equal(['admins', 'devs']);
    const userinfoOnly = (await logIn('userinfo-only', scope)).tokens.claims();
    expect(userinfoOnly).to.deep.include({ name: 'Alice Liddell' });
    expect(userinfoOnly?.['groups'], 'getUserInfo alone').to.equal(undefined);
    const groupsOnly = (await logIn('groups-only', scope)).tokens.claims();
    expect(groupsOnly).to.deep.include({ name: 'alice' });
    expect(groupsOnly?.['groups'], 'insecureEnableGroups alone').to.equal(undefined);
  });

  it('refreshes at svc\'s token endpoint through the upstream\'s refresh token, and refuses once the portal session has ended', async function () {
    const { browser, tokens } = await logIn('llng', 'openid profile email groups offline_access');
    expect(tokens.refresh_token, 'svc issued a refresh token').to.be.a('string');
    const refreshed = await client.refreshTokenGrant(rp, tokens.refresh_token ?? '');
    expect(refreshed.claims()).to.deep.include({ email: 'alice@example.org' });
    expect((refreshed.claims()?.['groups'] as string[]).sort()).to.deep.equal(['admins', 'devs']);
    // Logging out at the portal ends its refresh tokens: svc's refresh now fails at the upstream.
    await (await browser.request(`${llng.issuer}?logout=1`)).arrayBuffer();
    const err = await client.refreshTokenGrant(rp, refreshed.refresh_token ?? '').then(() => undefined, (e: unknown) => e as { error?: string });
    expect(err?.error).to.equal('invalid_grant');
    expect(server.logs()).to.contain('the provider refused the refresh token');
    expect(server.logs()).not.to.contain(CLIENT_SECRET);
  });
});
