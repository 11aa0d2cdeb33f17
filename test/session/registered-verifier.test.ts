/**
 * A token verifier registered with the server (the tests' own issuer, test-issuer.ts, standing
 * for the SSO issuers) gets what svc's own tokens get: its tokens work on the API and through
 * the extension proxy, its groups feed rights, the fast path serves them once seen, and a logout
 * revokes them everywhere. The same on two replicas sharing Redis: test/e2e/two-replicas.test.ts.
 */
import { rm } from 'node:fs/promises';
import { expect } from 'chai';
import { SignJWT } from 'jose';
import { accountsConfigDir, call } from '../helpers/accounts-fixture.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createTestVerifier, echoExtension, mintTestToken, SSO_POLICY, TEST_ISSUER } from '../helpers/test-issuer.js';
import { echoBackend, type Backend } from '../extensions/helpers.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

describe('session: a registered token verifier, on memory state', function () {
  cleanUpTempDirs();
  let backend: Backend;
  let dir: string;
  let server: TestServer;
  const verifier = createTestVerifier();

  before(async function () {
    backend = await echoBackend('echo');
    dir = accountsConfigDir({ cm: { 'extension.config': echoExtension(backend.url) }, rbac: { 'policy.csv': SSO_POLICY } });
    server = await startTestServer(dir, { verifiers: () => [verifier] });
  });
  after(async function () {
    await server?.close(1000);
    await backend?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('accepts its token on the API, with the issuer and groups it carries', async function () {
    const token = await mintTestToken('sso-user-1', ['sso-team', 'other']);
    const info = await call(server.url, 'GET', '/api/v1/session/userinfo', { token });
    expect(info.body).to.deep.include({ loggedIn: true, username: 'sso-user-1', iss: TEST_ISSUER, groups: ['sso-team', 'other'] });
    expect((info.body as { expiresAt: unknown }).expiresAt).to.be.a('number');
  });

  it('lets its groups open an extension through the proxy, by bearer and by cookie, and refuses a user without them', async function () {
    const member = await mintTestToken('sso-user-2', ['sso-team']);
    const outsider = await mintTestToken('sso-user-3', ['nobody']);
    expect((await call(server.url, 'GET', '/api/v1/extensions/echo/x', { token: member })).status).to.equal(200);
    expect((await call(server.url, 'GET', '/api/v1/extensions/echo/x', { cookie: `svc.token=${member}` })).status).to.equal(200);
    const refused = await call(server.url, 'GET', '/api/v1/extensions/echo/x', { token: outsider });
    expect(refused.status).to.equal(403);
    expect(refused.body['message']).to.contain("'sso-user-3' may not use extension 'echo'");
  });

  it('verifies a token once, then answers from the fast path', async function () {
    const token = await mintTestToken('sso-user-4', ['sso-team']);
    const before = verifier.verifications();
    for (let i = 0; i < 5; i++) expect((await call(server.url, 'GET', '/api/v1/extensions/echo/x', { token })).status).to.equal(200);
    expect(verifier.verifications() - before).to.equal(1);
  });

  it('revokes its token on logout, on the API and on the proxy', async function () {
    const token = await mintTestToken('sso-user-5', ['sso-team']);
    expect((await call(server.url, 'GET', '/api/v1/extensions/echo/x', { token })).status).to.equal(200);
    const logout = await call(server.url, 'DELETE', '/api/v1/session', { token });
    expect(logout.body).to.deep.equal({ revoked: true });
    const api = await call(server.url, 'GET', '/api/v1/session/userinfo', { token });
    expect(api.body).to.deep.equal({ loggedIn: false });
    const proxied = await call(server.url, 'GET', '/api/v1/extensions/echo/x', { token });
    expect(proxied.body).to.deep.equal({ error: 'unauthenticated', message: 'token is revoked; log in again' });
  });

  it('refuses a token of an issuer no verifier answers for', async function () {
    const stranger = await new SignJWT({ groups: ['sso-team'] })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer('https://stranger.test.invalid')
      .setSubject('x')
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode('another-key-0123456789abcdef0123'));
    const reply = await call(server.url, 'GET', '/api/v1/extensions/echo/x', { token: stranger });
    expect(reply.body).to.deep.equal({ error: 'unauthenticated', message: 'token issuer is not accepted' });
  });
});
