/**
 * The bundled identity provider inside a real svc, driven by openid-client as an independent
 * relying party and by a form-posting browser without JavaScript: discovery, code + PKCE through
 * the password form, the ID token against the published JWKS (before and after rotate-keys),
 * userinfo, refresh through the connector, revocation, the device flow, and the ID token as a
 * bearer token on svc's own API. The connector is a fake PasswordConnector (a double of the
 * Connector contract), injected through the server's idp test seam.
 */
import { expect } from 'chai';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { Writable } from 'node:stream';
import * as client from 'openid-client';
import { LoginRefused } from '../../connectors/errors.js';
import { runRotateKeys } from '../../src/commands/idp.js';
import { subjectOf } from '../../src/idp/claims.js';
import { webClientSecret } from '../../src/idp/clients.js';
import { PUBLISH_BEFORE_SIGNING_S } from '../../src/idp/keys.js';
import { SECRET_KEY, waitFor } from '../helpers/accounts-fixture.js';
import { devicePasswordForm } from '../helpers/device-flow.js';
import { fakePasswordConnector } from '../helpers/fake-password-connector.js';
import { authorizationRequest } from '../helpers/authorization.js';
import { FormBrowser, isPage, type Page } from '../helpers/form-browser.js';
import { isOurCookie } from '../../src/extensions/headers.js';
import { startPasswordIdpSvc } from '../helpers/idp-svc.js';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { isLoginAppPath } from '../../src/idp/login/interactions.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const ALICE = { userId: 'u-alice', username: 'Alice Example', preferredUsername: 'alice', email: 'alice@example.com', emailVerified: true, groups: ['dev', 'ops'] };
const SCOPE = 'openid profile email groups offline_access federated:id';

function sink(): Writable & { text: () => string } {
  const chunks: string[] = [];
  return Object.assign(new Writable({ write(c: Buffer, _e, done) { chunks.push(c.toString()); done(); } }), { text: () => chunks.join('') });
}

describe('e2e: the bundled identity provider at /api/idp', function () {
  cleanUpTempDirs();
  this.timeout(30_000);
  let server: TestServer;
  let dir: string;
  let url: string;
  let issuer: string;
  let rp: client.Configuration;
  let cli: client.Configuration;
  const connector = fakePasswordConnector({ alice: { password: 'alice-pw', identity: ALICE } });

  before(async function () {
    ({ url, server, dir } = await startPasswordIdpSvc(connector, { secretKey: SECRET_KEY }));
    issuer = `${url}/api/idp`;
    const insecure = { execute: [client.allowInsecureRequests] };
    rp = await client.discovery(new URL(issuer), 'svc', undefined, client.ClientSecretBasic(webClientSecret(SECRET_KEY)), insecure);
    cli = await client.discovery(new URL(issuer), 'svc-cli', undefined, client.None(), insecure);
  });

  after(async function () {
    await server?.close();
  });

  /** Code + PKCE for `config`; the redirect the client gets, after the password form. */
  async function login(config: client.Configuration, redirectUri: string, password = 'alice-pw') {
    const { href, verifier, state } = await authorizationRequest(config, redirectUri, SCOPE);
    const browser = new FormBrowser();
    const form = await browser.go(href, redirectUri);
    if (!isPage(form)) throw new Error('expected the password form');
    expect(form.html).to.include('Email or username');
    const done = await browser.submit(form, { username: 'alice', password }, redirectUri);
    return { done, verifier, state, browser };
  }

  it('publishes discovery with the endpoints under /api/idp, and the scopes', async function () {
    const meta = rp.serverMetadata();
    expect(meta.issuer).to.equal(issuer);
    for (const endpoint of ['authorization_endpoint', 'token_endpoint', 'userinfo_endpoint', 'jwks_uri', 'revocation_endpoint', 'end_session_endpoint', 'device_authorization_endpoint'] as const) {
      expect(String(meta[endpoint]), endpoint).to.match(new RegExp(`^${issuer}/`));
    }
    expect(meta.scopes_supported).to.include.members(['openid', 'profile', 'email', 'groups', 'offline_access', 'federated:id']);
  });

  it('answers under /api/idp with a request id, counted in the metrics under /api/idp; none of its paths is the login app\'s', async function () {
    const res = await fetch(`${issuer}/.well-known/openid-configuration`, { headers: { 'x-request-id': 'trace-idp-1' } });
    expect(res.status).to.equal(200);
    expect(res.headers.get('x-request-id')).to.equal('trace-idp-1');
    const unknown = await fetch(`${issuer}/no-such-endpoint`);
    expect(unknown.status).to.equal(404);
    expect(unknown.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).to.match(/svc_http_requests_total\{route="\/api\/idp",method="GET",status="200"\} [1-9]/);
    expect(metrics).to.match(/svc_http_requests_total\{route="\/api\/idp",method="GET",status="404"\} [1-9]/);
    // The provider's endpoints go to the provider, never to the login app (src/idp/app.ts).
    const meta = rp.serverMetadata();
    for (const endpoint of ['authorization_endpoint', 'token_endpoint', 'userinfo_endpoint', 'jwks_uri', 'revocation_endpoint', 'end_session_endpoint', 'device_authorization_endpoint'] as const) {
      expect(isLoginAppPath(new URL(String(meta[endpoint])).pathname), endpoint).to.equal(false);
    }
  });

  it('logs in with code + PKCE through the password form; the ID token verifies against the JWKS and works on svc', async function () {
    const { done, verifier, state, browser } = await login(rp, `${url}/auth/callback`);
    expect(done).to.be.instanceOf(URL);
    // Every cookie the provider set is one the extension proxy refuses from a backend.
    expect([...browser.cookieNamesSet]).to.include.members(['_session', '_interaction']);
    for (const name of browser.cookieNamesSet) expect(isOurCookie(`${name}=x`), name).to.equal(true);
    const tokens = await client.authorizationCodeGrant(rp, done as URL, { pkceCodeVerifier: verifier, expectedState: state });
    const sub = subjectOf('u-alice', 'directory');
    expect(tokens.claims()).to.deep.include({
      iss: issuer, sub, aud: 'svc', email: 'alice@example.com', email_verified: true, name: 'Alice Example',
      preferred_username: 'alice', groups: ['dev', 'ops'], federated_claims: { connector_id: 'directory', user_id: 'u-alice' },
    });
    expect(tokens.refresh_token).to.be.a('string');
    const jwks = createRemoteJWKSet(new URL(String(rp.serverMetadata().jwks_uri)));
    await jwtVerify(tokens.id_token as string, jwks, { issuer, audience: 'svc' });

    const info = await client.fetchUserInfo(rp, tokens.access_token, sub);
    expect(info).to.deep.include({ sub, groups: ['dev', 'ops'], email: 'alice@example.com' });

    // svc verifies the ID token with the provider's keys in process: it never fetches its own JWKS.
    const jwksFetches = () => server.logs().split('\n').filter((line) => line.includes('"path":"/api/idp/jwks"')).length;
    const fetchedBefore = jwksFetches();
    expect(fetchedBefore, 'the test itself fetched the JWKS above, and that shows in the access log').to.be.above(0);
    const me = await fetch(`${url}/api/v1/session/userinfo`, { headers: { authorization: `Bearer ${tokens.id_token}` } });
    expect(await me.json()).to.deep.include({ loggedIn: true, username: sub, iss: issuer, groups: ['dev', 'ops'] });
    expect(jwksFetches()).to.equal(fetchedBefore);
  });

  it('refreshes through the connector, and gives no tokens once the connector no longer knows the user', async function () {
    const { done, verifier, state } = await login(rp, `${url}/auth/callback`);
    const tokens = await client.authorizationCodeGrant(rp, done as URL, { pkceCodeVerifier: verifier, expectedState: state });
    const before = connector.refreshes();
    const refreshed = await client.refreshTokenGrant(rp, tokens.refresh_token as string);
    expect(connector.refreshes()).to.equal(before + 1);
    expect(refreshed.claims()).to.include({ sub: subjectOf('u-alice', 'directory') });

    const saved = connector.users.get('alice');
    connector.users.delete('alice');
    try {
      const refused = await client.refreshTokenGrant(rp, refreshed.refresh_token as string).catch((e: unknown) => e);
      expect(refused).to.have.property('error', 'invalid_grant');
    } finally {
      if (saved !== undefined) connector.users.set('alice', saved);
    }
  });

  it('answers temporarily_unavailable before using the refresh token when the connector fails, and invalid_grant when it refuses the person', async function () {
    const { done, verifier, state } = await login(rp, `${url}/auth/callback`);
    const tokens = await client.authorizationCodeGrant(rp, done as URL, { pkceCodeVerifier: verifier, expectedState: state });
    const refresh = connector.refresh;
    if (refresh === undefined) throw new Error('the fake connector refreshes');
    connector.refresh = () => Promise.reject(new Error('connect ECONNREFUSED 10.0.0.1:636'));
    try {
      const down = await client.refreshTokenGrant(rp, tokens.refresh_token as string).catch((e: unknown) => e);
      // 503, not 400: the request was fine, the directory is down; so a client (svc's CLI, openid-client) reads it as "try again", not as the end of the login.
      expect(down, 'a 503, which openid-client does not read as a refusal').to.be.instanceOf(client.ClientError);
      const answer = (down as client.ClientError).cause as Response;
      expect(answer.status).to.equal(503);
      expect(await answer.json()).to.have.property('error', 'temporarily_unavailable');
      connector.refresh = refresh;
      const again = await client.refreshTokenGrant(rp, tokens.refresh_token as string);
      expect(again.claims(), 'the same refresh token still works').to.include({ sub: subjectOf('u-alice', 'directory') });
      connector.refresh = () => Promise.reject(new LoginRefused('you are no longer in the allowed groups'));
      const refused = await client.refreshTokenGrant(rp, again.refresh_token as string).catch((e: unknown) => e);
      expect(refused).to.have.property('error', 'invalid_grant');
    } finally {
      connector.refresh = refresh;
    }
  });

  it('revokes an access token', async function () {
    const { done, verifier, state } = await login(rp, `${url}/auth/callback`);
    const tokens = await client.authorizationCodeGrant(rp, done as URL, { pkceCodeVerifier: verifier, expectedState: state });
    await client.tokenRevocation(rp, tokens.access_token);
    const after = await client.fetchUserInfo(rp, tokens.access_token, client.skipSubjectCheck).catch((e: unknown) => e);
    expect(String((after as { response?: Response }).response?.status)).to.equal('401');
  });

  it('says "wrong username or password", and a user-safe sentence when the directory fails', async function () {
    const { done } = await login(rp, `${url}/auth/callback`, 'not-the-password');
    expect(isPage(done) && done.status).to.equal(401);
    expect((done as Page).html).to.include('Wrong username or password.').and.include('value="alice"');

    const browser = new FormBrowser();
    const form = await browser.go(client.buildAuthorizationUrl(rp, {
      redirect_uri: `${url}/auth/callback`, scope: 'openid', code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()), code_challenge_method: 'S256',
    }).href, `${url}/auth/callback`);
    const failed = await browser.submit(form as Page, { username: 'unreachable', password: 'x' }, `${url}/auth/callback`);
    expect((failed as Page).status).to.equal(503);
    expect((failed as Page).html).to.include('The directory is unreachable').and.not.include('ECONNREFUSED');
    expect(server.logs()).to.include('password connector failed');
  });

  it('ends the session (RP-initiated logout) after the user confirms, then asks for the password again', async function () {
    const { done, verifier, state, browser } = await login(rp, `${url}/auth/callback`);
    const tokens = await client.authorizationCodeGrant(rp, done as URL, { pkceCodeVerifier: verifier, expectedState: state });
    const end = client.buildEndSessionUrl(rp, { id_token_hint: tokens.id_token as string, post_logout_redirect_uri: url });
    const confirm = (await browser.go(end.href, `${url}/`)) as Page;
    expect(confirm.html).to.include('Log out of svc');
    const back = await browser.submit(confirm, { logout: 'yes' }, url);
    expect((back as URL).href).to.equal(`${url}/`);
    const again = await browser.go(client.buildAuthorizationUrl(rp, {
      redirect_uri: `${url}/auth/callback`, scope: 'openid', code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()), code_challenge_method: 'S256',
    }).href, `${url}/auth/callback`);
    expect(isPage(again) && again.html).to.include('name="password"');
  });

  it('refuses the password form without its CSRF token', async function () {
    const browser = new FormBrowser();
    const form = (await browser.go(client.buildAuthorizationUrl(rp, {
      redirect_uri: `${url}/auth/callback`, scope: 'openid', code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()), code_challenge_method: 'S256',
    }).href, `${url}/auth/callback`)) as Page;
    const failed = await browser.submit(form, { csrf: 'forged', username: 'alice', password: 'alice-pw' }, `${url}/auth/callback`);
    expect((failed as Page).status).to.equal(400);
  });

  /** The page asking whether the CLI may have the tokens, from `value`. */
  function cliConsent(value: URL | Page, port: string): Page {
    if (!isPage(value)) throw new Error(`expected the CLI consent page, got a redirect to ${value.href}`);
    expect(value.status).to.equal(200);
    expect(value.html).to.include('Allow the svc command line?').and.include(`listening on port <strong>${port}</strong>`);
    return value;
  }

  it('lets svc-cli log in with PKCE on any loopback port, once the person allows it on a page naming the port', async function () {
    const redirect = 'http://127.0.0.1:53117/auth/callback';
    const { done: asked, verifier, state, browser } = await login(cli, redirect);
    const done = await browser.submit(cliConsent(asked, '53117'), { decision: 'allow' }, redirect);
    const tokens = await client.authorizationCodeGrant(cli, done as URL, { pkceCodeVerifier: verifier, expectedState: state });
    expect(tokens.claims()).to.include({ aud: 'svc-cli' });
  });

  it('asks before svc-cli gets a code for a browser already logged in (a page may start it), and Cancel sends none', async function () {
    // The browser has a session at the provider: a page elsewhere starts the CLI's flow for a port of its own.
    const { browser } = await login(rp, `${url}/auth/callback`);
    const redirect = 'http://127.0.0.1:41999/auth/callback';
    const silent = await authorizationRequest(cli, redirect, 'openid offline_access');
    const asked = cliConsent(await browser.go(silent.href, redirect), '41999');
    expect(asked.html).to.include('a refresh token');
    const cancelled = await browser.submit(asked, { decision: 'deny' }, redirect);
    expect((cancelled as URL).searchParams.get('error')).to.equal('access_denied');
    expect((cancelled as URL).searchParams.get('code')).to.equal(null);
    // Without its CSRF token the answer is refused (a form posted from elsewhere), and no code leaves.
    const again = await authorizationRequest(cli, redirect, 'openid offline_access');
    const form = cliConsent(await browser.go(again.href, redirect), '41999');
    const forged = await browser.submit(form, { csrf: 'forged', decision: 'allow' }, redirect);
    expect(isPage(forged) && forged.status).to.equal(400);
    // Nor does leaving out offline_access skip the question (the consent is not implied for a loopback port).
    const plain = await authorizationRequest(cli, redirect, 'openid');
    expect(cliConsent(await browser.go(plain.href, redirect), '41999').html).not.to.include('a refresh token');
    // The svc web client is not asked: its redirect is svc's own.
    const web = await authorizationRequest(rp, `${url}/auth/callback`, SCOPE);
    expect(await browser.go(web.href, `${url}/auth/callback`)).to.be.instanceOf(URL);
  });

  it('runs the device flow: the user approves the code on the device page', async function () {
    const device = await client.initiateDeviceAuthorization(cli, { scope: 'openid groups' });
    const { browser, form } = await devicePasswordForm(String(device.verification_uri), device.user_code);
    const done = (await browser.submit(form, { username: 'alice', password: 'alice-pw' }, 'about:')) as Page;
    expect(done.html).to.include('You are logged in on your device');
    const tokens = await client.pollDeviceAuthorizationGrant(cli, device);
    expect(tokens.claims()).to.deep.include({ aud: 'svc-cli', groups: ['dev', 'ops'] });
  });

  it('rotate-keys: new tokens are signed with the new key; tokens of the old key still verify', async function () {
    const jwks = () => createRemoteJWKSet(new URL(String(rp.serverMetadata().jwks_uri)));
    const first = await login(rp, `${url}/auth/callback`);
    const old = await client.authorizationCodeGrant(rp, first.done as URL, { pkceCodeVerifier: first.verifier, expectedState: first.state });
    const out = sink();
    // Rotated as of PUBLISH_BEFORE_SIGNING_S ago, so the new key's time to sign has come.
    const past = new Date(Date.now() - PUBLISH_BEFORE_SIGNING_S * 1000);
    expect(await runRotateKeys(dir, out, sink(), past)).to.equal(0);
    expect(out.text()).to.match(/^added signing key \S+; published now, it signs from \S+\nretired signing key \S+; it signs until then, and stays published/);
    const keyCount = async () => ((await (await fetch(String(rp.serverMetadata().jwks_uri))).json()) as { keys: unknown[] }).keys.length;
    await waitFor(async () => (await keyCount()) === 2, 'the new key to be published');

    const second = await login(rp, `${url}/auth/callback`);
    const fresh = await client.authorizationCodeGrant(rp, second.done as URL, { pkceCodeVerifier: second.verifier, expectedState: second.state });
    expect(decodeProtectedHeader(fresh.id_token as string).kid).to.not.equal(decodeProtectedHeader(old.id_token as string).kid);
    await jwtVerify(old.id_token as string, jwks(), { issuer, audience: 'svc' });
    await jwtVerify(fresh.id_token as string, jwks(), { issuer, audience: 'svc' });
    const me = await fetch(`${url}/api/v1/session/userinfo`, { headers: { authorization: `Bearer ${fresh.id_token}` } });
    expect(await me.json()).to.include({ loggedIn: true });
  });

  it('rotate-keys: a published key starts signing when its signsFrom comes, without a restart', async function () {
    const out = sink();
    const handOverInMs = 3000;
    expect(await runRotateKeys(dir, out, sink(), new Date(Date.now() - PUBLISH_BEFORE_SIGNING_S * 1000 + handOverInMs))).to.equal(0);
    const kid = /^added signing key (\S+);/.exec(out.text())?.[1];
    const published = async () => ((await (await fetch(String(rp.serverMetadata().jwks_uri))).json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid);
    await waitFor(async () => (await published()).includes(String(kid)), 'the new key to be published');
    // The server saw the key before its time (it reloads within 2 s); the switch is its own timer's.
    let signedBy: string | undefined;
    for (let attempt = 0; attempt < 100 && signedBy !== kid; attempt++) {
      const { done, verifier, state } = await login(rp, `${url}/auth/callback`);
      const tokens = await client.authorizationCodeGrant(rp, done as URL, { pkceCodeVerifier: verifier, expectedState: state });
      signedBy = decodeProtectedHeader(tokens.id_token as string).kid;
      if (signedBy !== kid) await new Promise((r) => setTimeout(r, 200));
    }
    expect(signedBy).to.equal(kid);
  });
});

describe('e2e: svc without idp.config', function () {
  cleanUpTempDirs();
  it('serves no identity provider', async function () {
    const dir = tempConfigDir({
      'svc-cm.yaml': configMap('svc-cm', {}),
      'svc-rbac-cm.yaml': configMap('svc-rbac-cm', { 'policy.csv': '' }),
      'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': SECRET_KEY }),
    });
    const server = await startTestServer(dir);
    try {
      const res = await fetch(`${server.url}/api/idp/.well-known/openid-configuration`);
      expect(res.status).to.equal(404);
    } finally {
      await server.close();
    }
  });
});
