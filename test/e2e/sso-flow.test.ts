/**
 * Single sign-on against a real oidc-provider on HTTPS with a test CA: login through
 * /auth/login with a cookie-keeping client, the token on the API and through the proxy,
 * logout, TLS with rootCA / without it / with the skip switch, the claims parameter, the
 * logout URL, a key rotation at the provider, and a session renewed before it expires.
 */
import { expect } from 'chai';
import { makeTestCa, type TestCa } from '../helpers/test-ca.js';
import { PROVIDER_PUBLIC_CLIENT_ID } from '../helpers/test-provider.js';
import { setupSso, ssoLogin, userInfo, type SetupOptions, type SsoSetup } from '../helpers/sso-setup.js';
import { echoBackend, type Backend } from '../extensions/helpers.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

describe('e2e: SSO login against an existing OIDC provider over HTTPS', function () {
  cleanUpTempDirs();
  this.timeout(30_000);
  let ca: TestCa;
  let echo: Backend;
  const setups: SsoSetup[] = [];
  const open = async (options: Omit<SetupOptions, 'ca'>): Promise<SsoSetup> => {
    const setup = await setupSso({ ca, ...options });
    setups.push(setup);
    return setup;
  };

  before(async () => {
    ca = makeTestCa();
    echo = await echoBackend('echo');
  });
  afterEach(async () => {
    for (const setup of setups.splice(0)) await setup.close();
  });
  after(() => echo.close());

  it('logs in with rootCA; the token works on the API and through the proxy for its group; logout revokes it', async () => {
    const setup = await open({ extensionUrl: echo.url });
    setup.provider.accounts.set('alice', { groups: ['sso-team'] });
    const { browser, token, landed } = await ssoLogin(setup, 'alice', '/apps?x=1');
    expect(landed).to.equal(`${setup.svc.url}/apps?x=1`);
    expect(await userInfo(setup.svc.url, token)).to.deep.include({ loggedIn: true, username: 'alice', iss: setup.provider.issuer, groups: ['sso-team'] });

    const proxied = await browser.request(`${setup.svc.url}/api/v1/extensions/echo/hello`);
    expect(proxied.status).to.equal(200);
    expect(((await proxied.json()) as { url: string }).url).to.equal('/hello');

    // A link or a form from another site logs no one out (issue 21): a GET is a confirmation page, a POST needs svc's Origin.
    const confirm = await browser.request(`${setup.svc.url}/auth/logout`);
    expect(confirm.status).to.equal(200);
    expect(confirm.headers.get('content-security-policy')).to.contain("frame-ancestors 'none'").and.contain("form-action 'self'");
    expect(await confirm.text()).to.contain('<form method="post" action="/auth/logout">');
    for (const origin of [undefined, 'https://evil.example', 'http://127.0.0.1:1']) {
      const forged = await browser.request(`${setup.svc.url}/auth/logout`, { method: 'POST', ...(origin === undefined ? {} : { headers: { origin } }) });
      expect(forged.status, String(origin)).to.equal(403);
      expect(((await forged.json()) as { message: string }).message).to.equal("logging out takes a POST from svc's own pages: open /auth/logout and confirm");
      expect(forged.headers.getSetCookie(), 'the cookie is left alone').to.deep.equal([]);
    }
    expect(await userInfo(setup.svc.url, token)).to.deep.include({ loggedIn: true });
    expect((await browser.request(`${setup.svc.url}/api/v1/extensions/echo/hello`)).status, 'still logged in').to.equal(200);

    const logout = await browser.request(`${setup.svc.url}/auth/logout`, { method: 'POST', headers: { origin: setup.svc.url } });
    expect(logout.status).to.equal(303);
    expect(logout.headers.get('location')).to.equal(`${setup.svc.url}/login`);
    expect(browser.cookie(setup.svc.url, 'svc.token')).to.equal(undefined);
    const after = await fetch(`${setup.svc.url}/api/v1/extensions/echo/hello`, { headers: { authorization: `Bearer ${token}` } });
    expect(after.status).to.equal(401);
    expect(((await after.json()) as { message: string }).message).to.match(/revoked/);
  });

  it('logs in as a public client with enablePKCEAuthentication, through /pkce/verify and without a secret', async () => {
    const setup = await open({ oidc: { clientID: PROVIDER_PUBLIC_CLIENT_ID, clientSecret: undefined, enablePKCEAuthentication: true } });
    setup.provider.accounts.set('alice', { groups: ['sso-team'] });
    const start = await fetch(`${setup.svc.url}/auth/login`, { redirect: 'manual' });
    const authorize = new URL(start.headers.get('location') ?? '');
    expect(authorize.searchParams.get('redirect_uri')).to.equal(`${setup.svc.url}/pkce/verify`);
    expect(authorize.searchParams.get('code_challenge_method')).to.equal('S256');
    const { token, landed } = await ssoLogin(setup, 'alice', '/');
    expect(landed).to.equal(`${setup.svc.url}/`);
    expect(await userInfo(setup.svc.url, token)).to.include({ loggedIn: true, username: 'alice' });
  });

  it('refuses a callback without the login cookie, or with a cookie of another login', async () => {
    const setup = await open({});
    setup.provider.accounts.set('alice', { groups: [] });
    const bare = await fetch(`${setup.svc.url}/auth/callback?code=abc&state=def`);
    expect(bare.status).to.equal(401);
    expect(((await bare.json()) as { message: string }).message).to.match(/no login in progress/);

    // A browser's own login cookie, with the code and state of another browser's login.
    const victim = setup.browser();
    await (await victim.request(`${setup.svc.url}/auth/login`)).body?.cancel();
    const { url } = await setup.browser().browse(`${setup.svc.url}/auth/login`, 'alice', (u) => u.includes('/auth/callback'));
    const res = await victim.request(url);
    expect(res.status).to.equal(401);
    expect(victim.cookie(setup.svc.url, 'svc.token')).to.equal(undefined);
    // Each logged once at info with the reason and the request id, and counted.
    const failed = setup.svc.logs().split('\n').filter((l) => l.includes('"msg":"SSO login failed"')).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(failed.map((l) => [l['level'], typeof l['requestId'], typeof l['reason']])).to.deep.equal([[30, 'string', 'string'], [30, 'string', 'string']]);
    const metrics = await (await fetch(`${setup.svc.url}/metrics`)).text();
    expect(metrics).to.contain('svc_login_outcomes_total{method="sso",connector="",reason="expired"} 1');
    expect(metrics).to.contain('svc_login_outcomes_total{method="sso",connector="",reason="invalid-token"} 1');
  });

  it('refuses a user whose groups no rule allows on the proxy', async () => {
    const setup = await open({ extensionUrl: echo.url });
    setup.provider.accounts.set('bob', { groups: ['other'] });
    const { browser } = await ssoLogin(setup, 'bob');
    expect((await browser.request(`${setup.svc.url}/api/v1/extensions/echo/hello`)).status).to.equal(403);
  });

  it('fails with a clear certificate error without rootCA, and works with the skip switch (warned at start)', async () => {
    const strict = await open({ tls: 'none' });
    const res = await fetch(`${strict.svc.url}/auth/login`, { redirect: 'manual' });
    expect(res.status).to.equal(503);
    expect(((await res.json()) as { message: string }).message).to.match(/certificate verification failed: UNABLE_TO_VERIFY_LEAF_SIGNATURE/);

    const skip = await open({ tls: 'skip' });
    skip.provider.accounts.set('alice', { groups: ['sso-team'] });
    const { token } = await ssoLogin(skip, 'alice');
    expect((await userInfo(skip.svc.url, token))['username']).to.equal('alice');
    expect(skip.svc.logs()).to.include('oidc.tls.insecure.skip.verify is true');
  });

  it('sends requestedIDTokenClaims as the claims parameter, and only to the provider', async () => {
    const claims = { acr: { essential: true, values: ['urn:mfa'] }, email: { essential: true } };
    const setup = await open({ oidc: { requestedIDTokenClaims: claims, requestedScopes: ['openid', 'groups'] } });
    const res = await fetch(`${setup.svc.url}/auth/login`, { redirect: 'manual' });
    const location = new URL(res.headers.get('location') ?? '');
    expect(JSON.parse(location.searchParams.get('claims') ?? '')).to.deep.equal({ id_token: claims });
    expect(location.searchParams.get('scope')).to.equal('openid groups');
    await setup.browser().request(location.href);
    const seen = setup.provider.requests.find((r) => r.path === '/auth');
    expect(JSON.parse(seen?.claims ?? '')).to.deep.equal({ id_token: claims });
  });

  it('redirects logout to logoutURL with both placeholders URL-encoded', async () => {
    const setup = await open({ oidc: { logoutURL: 'https://idp.example.com/logout?id_token_hint={{token}}&post_logout_redirect_uri={{logoutRedirectURL}}' } });
    setup.provider.accounts.set('alice', { groups: [] });
    const { browser, token } = await ssoLogin(setup, 'alice');
    const res = await browser.request(`${setup.svc.url}/auth/logout`, { method: 'POST', headers: { origin: setup.svc.url } });
    const expected = `https://idp.example.com/logout?id_token_hint=${encodeURIComponent(token)}&post_logout_redirect_uri=${encodeURIComponent(setup.svc.url)}`;
    expect(res.headers.get('location')).to.equal(expected);
  });

  it('fetches the keys again when the provider signs with a new key', async () => {
    const setup = await open({});
    setup.provider.accounts.set('alice', { groups: [] });
    const jwksFetches = () => setup.provider.requests.filter((r) => r.path === '/jwks').length;
    const first = await ssoLogin(setup, 'alice');
    expect(jwksFetches()).to.equal(1);
    await setup.provider.rotateKey();
    // Within the cool-down after a fetch, an unknown key is refused without asking again.
    const early = setup.browser();
    const { res } = await early.browse(`${setup.svc.url}/auth/login`, 'alice');
    expect(res?.status).to.equal(401);
    expect(jwksFetches()).to.equal(1);
    await sleep(5_100);
    const second = await ssoLogin(setup, 'alice');
    expect(jwksFetches()).to.equal(2);
    expect((await userInfo(setup.svc.url, first.token))['loggedIn']).to.equal(true);
    expect((await userInfo(setup.svc.url, second.token))['loggedIn']).to.equal(true);
  });

  it('renews a session about to expire with the refresh token, as the new cookie', async () => {
    const setup = await open({ idTokenTtlSeconds: 4, oidc: { requestedScopes: ['openid', 'profile', 'email', 'groups', 'offline_access'] } });
    setup.provider.accounts.set('alice', { groups: ['sso-team'] });
    const { browser, token } = await ssoLogin(setup, 'alice');
    const refreshes = () => setup.provider.requests.filter((r) => r.path === '/token').length - 1;
    const fresh = await browser.request(`${setup.svc.url}/api/v1/session/userinfo`);
    expect(((await fresh.json()) as { username: string }).username).to.equal('alice');
    expect(refreshes()).to.equal(0);

    await sleep(2_500);   // less than half of its 4 s left: due for renewal
    const res = await browser.request(`${setup.svc.url}/api/v1/session/userinfo`);
    expect(((await res.json()) as { username: string }).username).to.equal('alice');
    expect(refreshes()).to.equal(1);
    const renewed = browser.cookie(setup.svc.url, 'svc.token');
    expect(renewed).to.be.a('string').and.not.equal(token);
    expect(await userInfo(setup.svc.url, renewed as string)).to.include({ loggedIn: true, username: 'alice' });

    // Logged out through the API: whoever holds the token cannot renew it any more.
    const del = await fetch(`${setup.svc.url}/api/v1/session`, { method: 'DELETE', headers: { authorization: `Bearer ${renewed as string}` } });
    expect(await del.json()).to.deep.equal({ revoked: true });
    await sleep(2_500);
    const thief = setup.browser();
    thief.setCookie(setup.svc.url, 'svc.token', renewed as string);
    const stolen = await thief.request(`${setup.svc.url}/api/v1/session/userinfo`);
    expect(await stolen.json()).to.deep.equal({ loggedIn: false });
    expect(refreshes()).to.equal(1);
  });

  it('renews a due session on a request the extension proxy answers, beside the backend\'s own cookies', async () => {
    const setup = await open({ extensionUrl: echo.url, idTokenTtlSeconds: 4, oidc: { requestedScopes: ['openid', 'profile', 'email', 'groups', 'offline_access'] } });
    setup.provider.accounts.set('alice', { groups: ['sso-team'] });
    const { browser, token } = await ssoLogin(setup, 'alice');
    const refreshes = () => setup.provider.requests.filter((r) => r.path === '/token').length - 1;
    await sleep(2_500);   // less than half of its 4 s left: due for renewal
    const proxied = await browser.request(`${setup.svc.url}/api/v1/extensions/echo/hello`);
    expect(proxied.status).to.equal(200);
    await proxied.body?.cancel();
    expect(refreshes()).to.equal(1);
    const cookies = proxied.headers.getSetCookie();
    // The echo backend sets `theirs=1` and tries to plant svc.token: the proxy keeps the one and drops the other.
    expect(cookies).to.include('theirs=1; Path=/');
    expect(cookies.filter((c) => c.startsWith('svc.token=')), 'the renewed session cookie').to.have.length(1);
    expect(cookies.find((c) => c.startsWith('svc.token='))).not.to.contain('planted');
    expect(cookies.find((c) => c.startsWith('svc.token='))).to.match(/; path=\/; expires=[^;]+; samesite=lax; httponly$/);
    const renewed = browser.cookie(setup.svc.url, 'svc.token');
    expect(renewed).to.be.a('string').and.not.equal(token);
    expect(await userInfo(setup.svc.url, renewed as string)).to.include({ loggedIn: true, username: 'alice' });
    // The next request is not due: no second renewal.
    await (await browser.request(`${setup.svc.url}/api/v1/extensions/echo/hello`)).body?.cancel();
    expect(refreshes()).to.equal(1);
  });

  it('ends a session the provider refuses to renew at once: the cookie is no longer accepted, the refusal logged', async () => {
    const setup = await open({ idTokenTtlSeconds: 4, oidc: { requestedScopes: ['openid', 'groups', 'offline_access'] } });
    setup.provider.accounts.set('alice', { groups: ['sso-team'] });
    const { browser, token } = await ssoLogin(setup, 'alice');
    setup.provider.accounts.delete('alice');   // the provider now refuses the grant
    await sleep(2_500);
    const res = await browser.request(`${setup.svc.url}/api/v1/session/userinfo`);
    expect(res.status).to.equal(200);
    expect(await res.json()).to.deep.equal({ loggedIn: false });
    expect(browser.cookie(setup.svc.url, 'svc.token')).to.equal(token);
    expect(await userInfo(setup.svc.url, token)).to.deep.equal({ loggedIn: false });
    expect(setup.svc.logs()).to.include('the provider refused to renew an SSO session; it ends');
  });
});

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
