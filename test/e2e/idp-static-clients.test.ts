/**
 * Other applications as static clients of the bundled identity provider, with the LDAP
 * connector against a real slapd:
 * - Apache httpd with mod_auth_openidc (stock Debian packages, scripts/peers/start-apache-oidc.sh),
 *   a confidential client: a user logs in through Apache and svc's form and sees the page;
 *   `Require claim groups:admins` lets a member in and refuses another user; Apache's logout
 *   ends the session at svc too.
 * - openid-client, a public client: PKCE, refresh with offline_access, tokens for itself only,
 *   a redirect URI it did not register refused on a page (never a redirect).
 */
import { rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import * as client from 'openid-client';
import YAML from 'yaml';
import { webClientSecret } from '../../src/idp/clients.js';
import { authorizationRequest } from '../helpers/authorization.js';
import { FormBrowser, isPage, type Page } from '../helpers/form-browser.js';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { freePort, startPeer, type Peer } from '../helpers/peers.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ldapConnectorConfig } from '../connectors/ldap/fixture.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const FIXTURES = fileURLToPath(new URL('../../fixtures/', import.meta.url));
const SECRET_KEY = 'idp-static-clients-e2e-secret-key-0123456789';
const APACHE_SECRET = 'apache-client-secret-0123456789abcdef';
const NOWHERE = 'http://stop.invalid/';
/** The public client's registered loopback redirect; any port is accepted (RFC 8252 §7.3). */
const DASH_REDIRECT = 'http://127.0.0.1/callback';
const DASH_LOGOUT = 'http://127.0.0.1/logged-out';
const SPA_LOOPBACK = 'http://127.0.0.1:53118/callback';
const SPA_REDIRECT = 'http://spa.internal/callback';

/**
 * A top-level navigation as a browser sends it. mod_auth_openidc answers 401, not a redirect to
 * the provider, to what looks like a script's request, and fetch always says
 * `Sec-Fetch-Mode: cors`; so the browser's requests go through node:http here.
 */
const navigate: typeof fetch = (input, init) => new Promise((resolve, reject) => {
  const body = init?.body === undefined || init.body === null ? undefined : String(init.body);
  const headers: Record<string, string> = {
    ...(init?.headers as Record<string, string>), accept: 'text/html', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document',
    ...(body === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded', 'content-length': String(Buffer.byteLength(body)) }),
  };
  const req = httpRequest(String(input), { method: init?.method ?? 'GET', headers }, (res) => {
    const chunks: Buffer[] = [];
    res.on('data', (chunk: Buffer) => chunks.push(chunk));
    res.on('end', () => {
      const out = new Headers();
      for (const [name, value] of Object.entries(res.headers)) for (const v of [value ?? []].flat()) out.append(name, v);
      resolve(new Response(Buffer.concat(chunks), { status: res.statusCode ?? 502, headers: out }));
    });
  });
  req.on('error', reject);
  req.end(body);
});
const browserOf = (): FormBrowser => new FormBrowser(navigate);

describe('e2e: other applications as static clients of the bundled identity provider (real slapd)', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  let slapd: Peer;
  let apache: Peer;
  let server: TestServer;
  let dir: string;
  let url: string;
  let issuer: string;
  let app: string;
  let ldapPort: number;

  before(async function () {
    let port: number, apachePort: number;
    [ldapPort, port, apachePort] = await Promise.all([freePort(), freePort(), freePort()]);
    slapd = await startPeer('start-slapd.sh', [String(ldapPort), '0'], { USERS_LDIF: join(FIXTURES, 'ldap', 'ldap-connector.ldif') });
    url = `http://127.0.0.1:${port}`;
    issuer = `${url}/api/idp`;
    app = `http://127.0.0.1:${apachePort}`;
    const idpConfig = {
      connectors: [{ type: 'ldap', id: 'corp', name: 'Corp directory', config: ldapConnectorConfig(ldapPort) }],
      staticClients: [
        {
          id: 'apache', name: 'Team wiki', secret: '$apache-oidc:clientSecret', logoURL: 'https://logos.example.org/wiki.png',
          redirectURIs: [`${app}/app/redirect_uri`], postLogoutRedirectURIs: [`${app}/loggedout.html`],
        },
        { id: 'dash', name: 'Dashboard', public: true, redirectURIs: [DASH_REDIRECT], postLogoutRedirectURIs: [DASH_LOGOUT] },
        // Public, but a web application (an http redirect off loopback): oidc-provider does not prompt it as native.
        { id: 'spa', name: 'Single page app', public: true, redirectURIs: [SPA_LOOPBACK, SPA_REDIRECT] },
      ],
    };
    dir = tempConfigDir({
      'svc-cm.yaml': configMap('svc-cm', { url, 'idp.config': YAML.stringify(idpConfig) }),
      'svc-rbac-cm.yaml': configMap('svc-rbac-cm', { 'policy.csv': '' }),
      'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': SECRET_KEY, 'ldap.bindPW': 'readerpw' }),
      'apache-oidc.yaml': secret('apache-oidc', { clientSecret: APACHE_SECRET }),
    });
    server = await startTestServer(dir, { port });
    apache = await startPeer('start-apache-oidc.sh', [String(apachePort)], {
      OIDC_ISSUER: issuer, OIDC_CLIENT_ID: 'apache', OIDC_CLIENT_SECRET: APACHE_SECRET, OIDC_REQUIRE_GROUP: 'admins',
    });
  });

  after(async function () {
    await apache?.stop();
    await server?.close(1000);
    await slapd?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  async function page(result: URL | Page): Promise<Page> {
    if (!isPage(result)) throw new Error(`expected a page, got a redirect to ${result.href}`);
    return result;
  }

  /** Through Apache to svc's form, logged in there, back to Apache: the page Apache serves. */
  async function logInThroughApache(browser: FormBrowser, path: string, username: string, password: string): Promise<Page> {
    const form = await page(await browser.go(`${app}${path}`, NOWHERE));
    expect(form.url.startsWith(issuer), form.url).to.equal(true);
    return page(await browser.submit(form, { username, password }, NOWHERE));
  }

  describe('Apache httpd with mod_auth_openidc, a confidential client', function () {
    it('logs a user in through svc\'s form, which names the application, and serves the page', async function () {
      const browser = browserOf();
      const form = await page(await browser.go(`${app}/app/`, NOWHERE));
      expect(form.html).to.include('Log in to continue to <strong>Team wiki</strong>');
      expect(form.html).to.include('src="https://logos.example.org/wiki.png"');
      const headers = (await browser.request(form.url)).headers;
      expect(headers.get('content-security-policy')).to.include("img-src 'self' https://logos.example.org;");
      const done = await page(await browser.submit(form, { username: 'bob', password: 'bob123' }, NOWHERE));
      expect(done.status).to.equal(200);
      expect(done.html).to.include('protected page of the app');
    });

    it('lets a member of the required group in, and refuses another user', async function () {
      const alice = await logInThroughApache(browserOf(), '/admins/', 'alice', 'alice123');
      expect(alice.status).to.equal(200);
      expect(alice.html).to.include('page for admins only');
      const bob = await logInThroughApache(browserOf(), '/admins/', 'bob', 'bob123');
      expect(bob.status).to.equal(401);
      expect(bob.html).not.to.include('page for admins only');
    });

    it('logs out at svc too when the user logs out of Apache', async function () {
      const browser = browserOf();
      expect((await logInThroughApache(browser, '/app/', 'bob', 'bob123')).html).to.include('protected page of the app');
      // Logged in at svc: another visit after Apache forgets its session goes through without the form.
      const confirm = await page(await browser.go(`${app}/app/redirect_uri?logout=${encodeURIComponent(`${app}/loggedout.html`)}`, NOWHERE));
      expect(confirm.url.startsWith(`${issuer}/session/end`), confirm.url).to.equal(true);
      const out = await page(await browser.submit(confirm, { logout: 'yes' }, NOWHERE));
      expect(out.url).to.equal(`${app}/loggedout.html`);
      expect(out.html).to.include('logged out of the app');
      const again = await page(await browser.go(`${app}/app/`, NOWHERE));
      expect(again.url.startsWith(issuer), again.url).to.equal(true);
      expect(again.html).to.include('name="password"');
    });

    it('refuses a redirect URI the client did not register, on a page and without redirecting', async function () {
      const res = await fetch(`${issuer}/auth?${new URLSearchParams({
        client_id: 'apache', response_type: 'code', scope: 'openid', redirect_uri: 'https://attacker.example/cb', state: 's',
      })}`, { redirect: 'manual' });
      expect(res.status).to.equal(400);
      expect(res.headers.get('location')).to.equal(null);
      expect(await res.text()).to.include('redirect_uri did not match any of the client&#39;s registered redirect_uris');
    });

    it('lets a confidential client omit PKCE, while svc\'s own client must still send it', async function () {
      const authorize = (clientId: string, redirectUri: string) => fetch(`${issuer}/auth?${new URLSearchParams({
        client_id: clientId, response_type: 'code', scope: 'openid', redirect_uri: redirectUri, state: 's',
      })}`, { redirect: 'manual' });
      const apacheAnswer = await authorize('apache', `${app}/app/redirect_uri`);
      expect(apacheAnswer.status).to.equal(303);
      expect(String(apacheAnswer.headers.get('location'))).to.include('/api/idp/interaction/');
      const svcAnswer = new URL(String((await authorize('svc', `${url}/auth/callback`)).headers.get('location')));
      expect(svcAnswer.searchParams.get('error')).to.equal('invalid_request');
      expect(svcAnswer.searchParams.get('error_description')).to.include('PKCE');
    });

    it('refuses the device flow to a confidential client', async function () {
      const res = await fetch(`${issuer}/device/auth`, {
        method: 'POST',
        headers: { authorization: `Basic ${Buffer.from(`apache:${APACHE_SECRET}`).toString('base64')}` },
        body: new URLSearchParams({ scope: 'openid' }),
      });
      expect(res.status).to.equal(400);
      expect(await res.json()).to.deep.equal({
        error: 'unauthorized_client', error_description: 'urn:ietf:params:oauth:grant-type:device_code is not allowed for this client',
      });
    });
  });

  describe('the client secret check, throttled as the login is', function () {
    const WINDOW_S = 3;
    const MAX_FAILS = 3;
    let throttled: TestServer;
    let throttledDir: string;
    let tokenUrl: string;
    const callback = 'http://127.0.0.1:1/cb';

    before(async function () {
      const port = await freePort();
      const base = `http://127.0.0.1:${port}`;
      tokenUrl = `${base}/api/idp/token`;
      const idpConfig = {
        connectors: [{ type: 'ldap', id: 'corp', name: 'Corp directory', config: ldapConnectorConfig(ldapPort) }],
        staticClients: [
          { id: 'wiki', name: 'Wiki', secret: '$wiki.secret', redirectURIs: [callback] },
          { id: 'grafana', name: 'Grafana', secret: '$grafana.secret', redirectURIs: [callback] },
          { id: 'cms', name: 'CMS', secret: '$grafana.secret', redirectURIs: [callback] },
        ],
      };
      throttledDir = tempConfigDir({
        'svc-cm.yaml': configMap('svc-cm', { url: base, 'idp.config': YAML.stringify(idpConfig) }),
        'svc-rbac-cm.yaml': configMap('svc-rbac-cm', { 'policy.csv': '' }),
        'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': SECRET_KEY, 'ldap.bindPW': 'readerpw', 'wiki.secret': 'wiki-secret-0123456789', 'grafana.secret': 'grafana-secret-0123456789' }),
      });
      throttled = await startTestServer(throttledDir, {
        port,
        env: { SVC_SESSION_FAILURE_WINDOW_SECONDS: String(WINDOW_S), SVC_SESSION_FAILURE_MAX_FAIL_COUNT: String(MAX_FAILS) },
        idp: { failureDelay: () => Promise.resolve() },
      });
    });

    after(async function () {
      await throttled?.close(1000);
      if (throttledDir !== undefined) await rm(throttledDir, { recursive: true, force: true });
    });

    /** A code exchange with a code that never was: `invalid_grant` once the client authenticated. */
    async function exchange(clientId: string, secretValue: string, carrier: 'basic' | 'body' = 'basic', path = '') {
      const form = new URLSearchParams({ grant_type: 'authorization_code', code: 'no-such-code', redirect_uri: callback, token: 'no-such-token' });
      const headers: Record<string, string> = {};
      if (carrier === 'basic') headers['authorization'] = `Basic ${Buffer.from(`${clientId}:${secretValue}`).toString('base64')}`;
      else {
        form.set('client_id', clientId);
        form.set('client_secret', secretValue);
      }
      const res = await fetch(`${tokenUrl}${path}`, { method: 'POST', headers, body: form });
      return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as { error: string; error_description?: string } };
    }

    it('locks a client after too many wrong secrets, refuses even the right one while locked, leaves others alone, and lifts after the window', async function () {
      expect((await exchange('wiki', 'wiki-secret-0123456789')).body.error).to.equal('invalid_grant');
      for (let i = 0; i < MAX_FAILS; i += 1) {
        const wrong = await exchange('wiki', `guess-${i}`, i % 2 === 0 ? 'basic' : 'body');
        expect([wrong.status, wrong.body.error], `guess ${i}`).to.deep.equal([401, 'invalid_client']);
      }
      const lockedAt = Date.now();
      for (const carrier of ['basic', 'body'] as const) {
        const refused = await exchange('wiki', 'wiki-secret-0123456789', carrier);
        expect([refused.status, refused.body.error], carrier).to.deep.equal([429, 'invalid_client']);
        expect(refused.body.error_description).to.match(/too many failed client authentications; try again in \d+ seconds/);
        expect(Number(refused.retryAfter)).to.be.within(1, WINDOW_S);
      }
      // Every endpoint where the client authenticates is refused alike.
      expect((await exchange('wiki', 'wiki-secret-0123456789', 'basic', '/revocation')).status).to.equal(429);
      // No other spelling of the id is the client: the count is keyed on the client the
      // provider found, and it finds only the exact id, so the right secret gets nowhere.
      for (const spelling of ['WIKI', 'Wiki', ' wiki', 'wiki ']) {
        const other = await exchange(spelling, 'wiki-secret-0123456789', 'body');
        expect([other.status, other.body.error], JSON.stringify(spelling)).to.deep.equal([401, 'invalid_client']);
      }
      // Another client is not affected.
      expect((await exchange('grafana', 'grafana-secret-0123456789')).body.error).to.equal('invalid_grant');
      const failures = throttled.logs().split('\n').filter((line) => line.includes('client authentication failed') && line.includes('"client":"wiki"'));
      expect(failures).to.have.length(MAX_FAILS + 3);   // the other spellings are logged under their own ids
      expect(failures[0]).to.include('"reason":"invalid secret provided"').and.match(/"requestId":"[^"]+"/).and.include('"level":30');
      expect(failures.at(-1)).to.include('too many failed client authentications');
      // The lock lifts after the window.
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, lockedAt + WINDOW_S * 1000 + 200 - Date.now())));
      expect((await exchange('wiki', 'wiki-secret-0123456789')).body.error).to.equal('invalid_grant');
    });
    it('does not lock svc\'s own web client, whose secret is derived (a lockout would stop every SSO login to svc)', async function () {
      for (let i = 0; i <= MAX_FAILS; i += 1) expect((await exchange('svc', `guess-${i}`)).status).to.equal(401);
      expect((await exchange('svc', webClientSecret(SECRET_KEY))).body.error).to.equal('invalid_grant');
    });

    it('checks at most the allowance of secrets when guesses come in parallel: each is counted before its check', async function () {
      const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => exchange('cms', `parallel-guess-${i}`)));
      const checked = answers.filter((a) => a.status === 401);
      expect(checked).to.have.length(MAX_FAILS);
      expect(answers.filter((a) => a.status === 429 && a.body.error === 'invalid_client')).to.have.length(12 - MAX_FAILS);
    });
  });

  describe('openid-client, a public client', function () {
    let rp: client.Configuration;
    const redirectUri = 'http://127.0.0.1:53117/callback';

    before(async function () {
      rp = await client.discovery(new URL(issuer), 'dash', undefined, client.None(), { execute: [client.allowInsecureRequests] });
    });

    async function logIn(scope: string, browser = browserOf()) {
      const { href, verifier, state } = await authorizationRequest(rp, redirectUri, scope);
      const form = await page(await browser.go(href, redirectUri));
      expect(form.html).to.include('Log in to continue to <strong>Dashboard</strong>');
      const asked = consent(await browser.submit(form, { username: 'alice', password: 'alice123' }, redirectUri), scope);
      const back = await browser.submit(asked, { decision: 'allow' }, redirectUri);
      if (isPage(back)) throw new Error(`expected the redirect back, got ${back.status}: ${back.html.slice(0, 300)}`);
      return client.authorizationCodeGrant(rp, back, { pkceCodeVerifier: verifier, expectedState: state });
    }

    /** The question before a code goes to a loopback port: it names the application and the port. */
    function consent(value: URL | Page, scope: string): Page {
      if (!isPage(value)) throw new Error(`expected the consent page, got a redirect to ${value.href}`);
      expect(value.status).to.equal(200);
      expect(value.html).to.include('Allow Dashboard?').and.include('listening on port <strong>53117</strong>').and.include('as <strong>Dashboard</strong>');
      expect(value.html.includes('a refresh token')).to.equal(scope.split(' ').includes('offline_access'));
      return value;
    }

    it('asks before every code to its loopback port, even in a browser already logged in, and Cancel sends none', async function () {
      const browser = browserOf();
      await logIn('openid', browser);
      // Logged in at svc: a page elsewhere starts the flow again, for the port of its choosing.
      const again = await authorizationRequest(rp, redirectUri, 'openid');
      const asked = consent(await browser.go(again.href, redirectUri), 'openid');
      const cancelled = await browser.submit(asked, { decision: 'deny' }, redirectUri);
      if (isPage(cancelled)) throw new Error(`expected the redirect back, got ${cancelled.status}`);
      expect(cancelled.searchParams.get('error')).to.equal('access_denied');
      expect(cancelled.searchParams.get('error_description')).to.equal('the user did not allow Dashboard');
      expect(cancelled.searchParams.get('code')).to.equal(null);
      // Without its CSRF token the answer is refused (a form posted from elsewhere), and no code leaves.
      const third = await authorizationRequest(rp, redirectUri, 'openid');
      const forged = await browser.submit(consent(await browser.go(third.href, redirectUri), 'openid'), { csrf: 'forged', decision: 'allow' }, redirectUri);
      expect(isPage(forged) && forged.status).to.equal(400);
      // A prompt=none request gets no code either: the person must be asked.
      const silent = new URL((await authorizationRequest(rp, redirectUri, 'openid')).href);
      silent.searchParams.set('prompt', 'none');
      const none = await browser.go(silent.href, redirectUri);
      if (isPage(none)) throw new Error(`expected the redirect back, got ${none.status}`);
      expect(none.searchParams.get('error')).to.be.oneOf(['consent_required', 'interaction_required']);
      expect(none.searchParams.get('code')).to.equal(null);
    });

    it('logs in with PKCE (any loopback port), gets tokens for itself, and refreshes with offline_access', async function () {
      const tokens = await logIn('openid profile groups offline_access');
      expect(tokens.claims()).to.include({ aud: 'dash', preferred_username: 'alice' });
      expect(tokens.claims()?.['groups']).to.include('admins');
      expect(tokens.refresh_token).to.be.a('string');
      const refreshed = await client.refreshTokenGrant(rp, String(tokens.refresh_token));
      expect(refreshed.claims()).to.include({ aud: 'dash', sub: tokens.claims()?.sub });
      expect(refreshed.refresh_token).to.be.a('string').and.not.equal(tokens.refresh_token);
    });

    it('gets no refresh token without offline_access', async function () {
      const tokens = await logIn('openid profile');
      expect(tokens.refresh_token).to.equal(undefined);
    });

    it('gets a token for itself only when it asks for another client as audience (trustedPeers is not supported)', async function () {
      const tokens = await logIn('openid audience:server:client_id:apache');
      expect(tokens.claims()?.aud).to.equal('dash');
    });

    it('asks for a public web application\'s loopback redirect too, and not for its other redirect', async function () {
      const browser = browserOf();
      await logIn('openid', browser);
      const spa = await client.discovery(new URL(issuer), 'spa', undefined, client.None(), { execute: [client.allowInsecureRequests] });
      const loopback = await authorizationRequest(spa, SPA_LOOPBACK, 'openid');
      const asked = await page(await browser.go(loopback.href, SPA_LOOPBACK));
      expect(asked.html).to.include('Allow Single page app?').and.include('listening on port <strong>53118</strong>');
      const allowed = await browser.submit(asked, { decision: 'allow' }, SPA_LOOPBACK);
      if (isPage(allowed)) throw new Error(`expected the redirect back, got ${allowed.status}`);
      expect(allowed.searchParams.get('code')).to.be.a('string');
      const elsewhere = await authorizationRequest(spa, SPA_REDIRECT, 'openid');
      const back = await browser.go(elsewhere.href, SPA_REDIRECT);
      if (isPage(back)) throw new Error(`expected the redirect back without a question, got ${back.status}: ${back.html.slice(0, 200)}`);
      expect(back.searchParams.get('code')).to.be.a('string');
    });

    it('is refused without PKCE', async function () {
      const href = client.buildAuthorizationUrl(rp, { redirect_uri: redirectUri, scope: 'openid', state: 's' }).href;
      const res = await fetch(href, { redirect: 'manual' });
      const location = new URL(String(res.headers.get('location')));
      expect(location.origin + location.pathname).to.equal(redirectUri);
      expect(location.searchParams.get('error')).to.equal('invalid_request');
    });

    it('refuses a redirect URI it did not register, on a page and without redirecting', async function () {
      for (const other of ['http://127.0.0.1:53117/elsewhere', `${app}/app/redirect_uri`]) {
        const href = client.buildAuthorizationUrl(rp, {
          redirect_uri: other, scope: 'openid', code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()), code_challenge_method: 'S256',
        }).href;
        const res = await fetch(href, { redirect: 'manual' });
        expect(res.status, other).to.equal(400);
        expect(res.headers.get('location')).to.equal(null);
        expect(await res.text()).to.include('redirect_uri did not match');
      }
    });

    it('signs out to its own registered post-logout URI only', async function () {
      const browser = browserOf();
      const tokens = await logIn('openid', browser);
      const endSession = (target: string) => `${issuer}/session/end?${new URLSearchParams({ id_token_hint: String(tokens.id_token), post_logout_redirect_uri: target })}`;
      const refused = await page(await browser.go(endSession(`${app}/loggedout.html`), NOWHERE));
      expect(refused.status).to.equal(400);
      expect(refused.html).to.include('post_logout_redirect_uri not registered');
      const confirm = await page(await browser.go(endSession(DASH_LOGOUT), NOWHERE));
      const back = await browser.submit(confirm, { logout: 'yes' }, DASH_LOGOUT);
      expect(back).to.be.instanceOf(URL);
      expect(String(back)).to.equal(DASH_LOGOUT);
    });

    it('can start the device flow, being public', async function () {
      const res = await fetch(`${issuer}/device/auth`, { method: 'POST', body: new URLSearchParams({ client_id: 'dash', scope: 'openid' }) });
      expect(res.status).to.equal(200);
      expect(await res.json()).to.have.property('user_code');
    });
  });
});
