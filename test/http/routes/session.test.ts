/** POST/DELETE /api/v1/session, userinfo and every token validity rule, on a running server. */
import { expect } from 'chai';
import { decodeJwt, SignJWT } from 'jose';
import { rm } from 'node:fs/promises';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { accountsConfigDir, call, editConfigMap, login, PASSWORDS, SECRET_KEY, waitFor } from '../../helpers/accounts-fixture.js';
import { accountsServer } from '../../helpers/accounts-server.js';
import { startTestServer } from '../../helpers/server.js';
import { cleanUpTempDirs } from '../../helpers/temp-dir.js';

describe('HTTP /api/v1/session', function () {
  cleanUpTempDirs();
  this.timeout(20_000);
  const svc = accountsServer({ server: { env: { SVC_SESSION_FAILURE_MAX_FAIL_COUNT: '3' } } });

  const sign = (claims: Record<string, unknown>, key = SECRET_KEY) =>
    new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode(key));

  it('logs in: {token} with the DESIGN §3 claims and the svc.token cookie', async function () {
    const before = Math.floor(Date.now() / 1000);
    const reply = await call(svc.base, 'POST', '/api/v1/session', { body: { username: 'alice', password: PASSWORDS.alice } });
    expect(reply.status).to.equal(200);
    const token = String(reply.body['token']);
    const claims = decodeJwt(token);
    expect(claims).to.include({ iss: 'svc', sub: 'alice:login' });
    expect(claims.jti).to.be.a('string');
    expect(claims.iat).to.be.within(before, before + 2);
    expect(claims.nbf).to.equal(claims.iat);
    expect(claims.exp).to.equal((claims.iat ?? 0) + 7200); // users.session.duration: 2h
    expect(claims['pwh']).to.match(/^[A-Za-z0-9_-]{16}$/); // bound to the password hash checked
    const cookie = reply.headers.get('set-cookie') ?? '';
    expect(cookie).to.match(new RegExp(`^svc\\.token=${token.replace(/\./g, '\\.')}; path=/; expires=.*; samesite=lax; httponly$`));
    expect(cookie).not.to.include('secure');
  });

  it('refuses every bad login with one answer: 401 invalid_credentials', async function () {
    const attempts = [
      { username: 'alice', password: 'wrong' }, // wrong password
      { username: 'nobody', password: 'x' }, // unknown user
      { username: 'dave', password: PASSWORDS.dave }, // disabled account, right password
      { username: 'carol', password: PASSWORDS.carol }, // no login capability, right password
    ];
    const replies = await Promise.all(attempts.map((body) => call(svc.base, 'POST', '/api/v1/session', { body })));
    for (const reply of replies) {
      expect(reply.status).to.equal(401);
      expect(reply.body).to.deep.equal({ error: 'invalid_credentials', message: 'invalid username or password' });
    }
  });

  it('answers 400 for missing fields and over-long names', async function () {
    const missing = await call(svc.base, 'POST', '/api/v1/session', { body: { username: 'alice' } });
    expect(missing.status).to.equal(400);
    expect(missing.body).to.deep.equal({ error: 'invalid_request', message: "field 'password' is required and must be a non-empty string" });
    const long = await call(svc.base, 'POST', '/api/v1/session', { body: { username: 'x'.repeat(33), password: 'p' } });
    expect(long.status).to.equal(400);
    expect(long.body).to.deep.equal({ error: 'invalid_request', message: 'username is longer than 32 characters' });
  });

  it('locks a name after SVC_SESSION_FAILURE_MAX_FAIL_COUNT failures: 429 with Retry-After, even with the right password', async function () {
    const failures = await Promise.all([1, 2, 3].map((i) => call(svc.base, 'POST', '/api/v1/session', { body: { username: 'bob', password: `bad${i}` } })));
    expect(failures.map((r) => r.status)).to.deep.equal([401, 401, 401]);
    const locked = await call(svc.base, 'POST', '/api/v1/session', { body: { username: 'bob', password: PASSWORDS.bob } });
    expect(locked.status).to.equal(429);
    // The window runs from the first failure: on a busy machine a second or more may pass before this call.
    const retryAfter = Number(locked.headers.get('retry-after'));
    expect(retryAfter).to.be.within(290, 300);
    expect(locked.body).to.deep.equal({ error: 'too_many_attempts', message: `too many failed logins; try again in ${retryAfter}s` });
    const metrics = await (await fetch(`${svc.base}/metrics`)).text();
    expect(metrics).to.match(/^svc_login_throttle_fallback 0$/m);
  });

  it('refuses a body that is not JSON also when it is chunked (no Content-Length)', async function () {
    const reply = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(`${svc.base}/api/v1/session`, { method: 'POST', headers: { 'content-type': 'text/plain', 'transfer-encoding': 'chunked' } }, (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk)).on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.end(JSON.stringify({ username: 'alice', password: PASSWORDS.alice }));
    });
    expect(reply.status).to.equal(400);
    expect(JSON.parse(reply.body)).to.deep.equal({ error: 'invalid_request', message: 'the body must be JSON (Content-Type: application/json)' });
  });

  it('userinfo: from the bearer token, from the cookie, and loggedIn false without (or with a bad) token', async function () {
    const token = await login(svc.base, 'alice', PASSWORDS.alice);
    const expiresAt = (JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()) as { exp: number }).exp;
    const expected = { loggedIn: true, username: 'alice', iss: 'svc', groups: [], expiresAt };
    expect((await call(svc.base, 'GET', '/api/v1/session/userinfo', { token })).body).to.deep.equal(expected);
    expect((await call(svc.base, 'GET', '/api/v1/session/userinfo', { cookie: `svc.token=${token}` })).body).to.deep.equal(expected);
    expect((await call(svc.base, 'GET', '/api/v1/session/userinfo')).body).to.deep.equal({ loggedIn: false });
    const bad = await call(svc.base, 'GET', '/api/v1/session/userinfo', { token: 'not.a.jwt' });
    expect(bad.status).to.equal(200);
    expect(bad.body).to.deep.equal({ loggedIn: false });
  });

  it('logout revokes the token until it expires and clears the cookie', async function () {
    const token = await login(svc.base, 'alice', PASSWORDS.alice);
    const out = await call(svc.base, 'DELETE', '/api/v1/session', { cookie: `svc.token=${token}`, origin: svc.base });
    expect(out.status).to.equal(200);
    expect(out.body).to.deep.equal({ revoked: true });
    expect(out.headers.get('set-cookie')).to.match(/^svc\.token=; path=\/; expires=Thu, 01 Jan 1970 00:00:00 GMT; samesite=lax; httponly$/);
    const after = await call(svc.base, 'GET', '/api/v1/account/alice', { token });
    expect(after.status).to.equal(401);
    expect(after.body).to.deep.equal({ error: 'unauthenticated', message: 'token is revoked; log in again' });
    const ttl = await svc.server.services.state.ttlMs(`revoked-token:${String(decodeJwt(token).jti)}`);
    expect(ttl).to.be.within(7_100_000, 7_200_000);
    const again = await call(svc.base, 'DELETE', '/api/v1/session');
    expect(again.body).to.deep.equal({ revoked: false });
  });

  it('takes the cookie for a request that may change something only from its own origin (CSRF)', async function () {
    const token = await login(svc.base, 'alice', PASSWORDS.alice);
    const cookie = `svc.token=${token}`;
    let made = 0;
    const create = (origin?: string) => call(svc.base, 'POST', '/api/v1/account/alice/token', { cookie, body: { id: `csrf-${++made}` }, ...(origin !== undefined ? { origin } : {}) });
    const sibling = await create('https://evil.example.com');
    expect(sibling.status).to.equal(401);
    expect(sibling.body).to.deep.equal({
      error: 'unauthenticated',
      message: "the svc.token cookie does not sign in a POST from origin 'https://evil.example.com': send it from svc's own pages, or send a bearer token",
    });
    expect((await create()).status, 'no Origin').to.equal(401);
    expect((await create(svc.base)).status, 'own origin').to.equal(200);
    // Reading needs no Origin; a cross-origin logout is no logout.
    expect((await call(svc.base, 'GET', '/api/v1/account/alice', { cookie, origin: 'https://evil.example.com' })).status).to.equal(200);
    expect((await call(svc.base, 'DELETE', '/api/v1/session', { cookie, origin: 'https://evil.example.com' })).body).to.deep.equal({ revoked: false });
    expect((await call(svc.base, 'GET', '/api/v1/account/alice', { token })).status).to.equal(200);
    // A bearer token cannot be planted by another page: no Origin rule for it.
    expect((await call(svc.base, 'POST', '/api/v1/account/alice/token', { token, body: { id: 'csrf-bearer' }, origin: 'https://evil.example.com' })).status).to.equal(200);
  });

  it("logging out with carol's API token 'deploy' leaves alice's token 'deploy' alive", async function () {
    const [admin, alice] = await Promise.all([login(svc.base, 'admin', PASSWORDS.admin), login(svc.base, 'alice', PASSWORDS.alice)]);
    const make = async (name: string, token: string) => String((await call(svc.base, 'POST', `/api/v1/account/${name}/token`, { token, body: { id: 'deploy' } })).body['token']);
    const carolDeploy = await make('carol', admin);
    const aliceDeploy = await make('alice', alice);
    expect((await call(svc.base, 'DELETE', '/api/v1/session', { token: carolDeploy })).body).to.deep.equal({ revoked: true });
    // Its record is deleted from svc-secret (a revocation in state alone would come back with a loss of state).
    expect((await call(svc.base, 'GET', '/api/v1/account/carol', { token: carolDeploy })).body).to.deep.equal({ error: 'unauthenticated', message: "this API token of account 'carol' was deleted" });
    expect(JSON.stringify((await call(svc.base, 'GET', '/api/v1/account/carol', { token: admin })).body)).to.not.include('deploy');
    const alive = await call(svc.base, 'GET', '/api/v1/account/alice', { token: aliceDeploy });
    expect(alive.status).to.equal(200);
    expect(alive.body['name']).to.equal('alice');
  });

  it('routes that need a caller answer 401 with the reason the token was refused', async function () {
    const none = await call(svc.base, 'GET', '/api/v1/account');
    expect(none.body).to.deep.equal({ error: 'unauthenticated', message: 'no valid token: log in or send a bearer token' });
    const now = Math.floor(Date.now() / 1000);
    const cases: [string, string][] = [
      [await sign({ iss: 'svc', sub: 'alice:login', jti: 'j1', iat: now - 100, nbf: now - 100, exp: now - 10 }), 'token has expired; log in again'],
      [await sign({ iss: 'svc', sub: 'alice:login', jti: 'j2', iat: now, nbf: now, exp: now + 60 }, 'another-key-0123456789abcdef0123'), 'token is invalid'],
      [await sign({ iss: 'svc', sub: 'alice:login', jti: 'j3', iat: now, nbf: now + 600, exp: now + 900 }), 'token is not valid yet'],
      [await sign({ iss: 'svc', sub: 'ghost:login', jti: 'j4', iat: now, nbf: now, exp: now + 60 }), "account 'ghost' does not exist"],
      [await sign({ iss: 'svc', sub: 'carol:login', jti: 'j5', iat: now, nbf: now, exp: now + 60 }), "account 'carol' does not have the login capability"],
      [await sign({ iss: 'svc', sub: 'dave:login', jti: 'j6', iat: now, nbf: now, exp: now + 60 }), "account 'dave' is disabled"],
      [await sign({ iss: 'svc', sub: 'alice:apiKey', jti: 'never-listed', iat: now }), "this API token of account 'alice' was deleted"],
      [await sign({ iss: 'svc', sub: 'alice:login', jti: 'j7', iat: Date.parse('2019-12-31T23:59:59Z') / 1000, nbf: 0, exp: now + 60 }), "the password of account 'alice' changed after this token was issued; log in again"],
      [await sign({ iss: 'svc', sub: 'alice:login', jti: 'j9', iat: now, nbf: now, exp: now + 60, pwh: 'AAAAAAAAAAAAAAAA' }), "the password of account 'alice' changed after this token was issued; log in again"],
      [await sign({ iss: 'https://elsewhere.example', sub: 'x', jti: 'j8', iat: now }), 'token issuer is not accepted'],
    ];
    for (const [token, message] of cases) {
      const reply = await call(svc.base, 'GET', '/api/v1/account', { token });
      expect(reply.status, message).to.equal(401);
      expect(reply.body).to.deep.equal({ error: 'unauthenticated', message });
    }
  });

  it('a session dies when its account is disabled or loses the login capability, and re-enabling does not revive it', async function () {
    const token = await login(svc.base, 'alice', PASSWORDS.alice);
    expect((await call(svc.base, 'GET', '/api/v1/account/alice', { token })).status).to.equal(200);
    editConfigMap(svc.dir, (text) => text.replace("accounts.alice: apiKey, login", 'accounts.alice: apiKey'));
    await waitFor(() => svc.server.services.settings.current().accounts.get('alice')?.capabilities.includes('login') === false, 'alice to lose login');
    expect((await call(svc.base, 'GET', '/api/v1/account/alice', { token })).body).to.deep.equal({ error: 'unauthenticated', message: "account 'alice' does not have the login capability" });
    editConfigMap(svc.dir, (text) => text.replace('accounts.alice: apiKey', 'accounts.alice: apiKey, login\n  accounts.alice.enabled: "false"'));
    await waitFor(() => svc.server.services.settings.current().accounts.get('alice')?.enabled === false, 'alice to be disabled');
    expect((await call(svc.base, 'GET', '/api/v1/account/alice', { token })).body).to.deep.equal({ error: 'unauthenticated', message: "account 'alice' is disabled" });
    editConfigMap(svc.dir, (text) => text.replace('\n  accounts.alice.enabled: "false"', ''));
    await waitFor(() => svc.server.services.settings.current().accounts.get('alice')?.enabled === true, 'alice to be enabled again');
    // A token taken before the disable (stolen, say) stays dead; the owner logs in again.
    expect((await call(svc.base, 'GET', '/api/v1/account/alice', { token })).body).to.deep.equal({
      error: 'unauthenticated',
      message: "account 'alice' was disabled after this token was issued; log in again",
    });
    // iat has whole seconds and a token of the very second of the disable is refused: start a new one.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const fresh = await login(svc.base, 'alice', PASSWORDS.alice);
    expect((await call(svc.base, 'GET', '/api/v1/account/alice', { token: fresh })).status).to.equal(200);
  });
});

describe('HTTP /api/v1/session behind an ingress that ends TLS', function () {
  cleanUpTempDirs();
  this.timeout(20_000);

  it('sets and clears the cookie with Secure when the configured url is https, though svc itself speaks http', async function () {
    const dir = accountsConfigDir({ cm: { url: 'https://svc.example.com' } });
    const server = await startTestServer(dir);
    try {
      const reply = await call(server.url, 'POST', '/api/v1/session', { body: { username: 'alice', password: PASSWORDS.alice } });
      expect(reply.status).to.equal(200);
      expect(reply.headers.get('set-cookie')).to.match(/^svc\.token=[^;]+; path=\/; expires=[^;]+; samesite=lax; secure; httponly$/);
      const logout = await call(server.url, 'DELETE', '/api/v1/session', { token: String(reply.body['token']) });
      expect(logout.headers.get('set-cookie')).to.match(/^svc\.token=; path=\/; expires=Thu, 01 Jan 1970 00:00:00 GMT; samesite=lax; secure; httponly$/);
    } finally {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('HTTP DELETE /api/v1/session while the state backend is unreachable', function () {
  cleanUpTempDirs();
  this.timeout(20_000);

  it('answers 503 saying what happened, and clears the cookie anyway', async function () {
    // A port nothing listens on: Redis is down from the start (logins fall back to memory).
    const closed = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    const dir = accountsConfigDir();
    const server = await startTestServer(dir, { redisUrl: `redis://127.0.0.1:${closed}` });
    try {
      const base = server.url;
      const token = await login(base, 'alice', PASSWORDS.alice);
      const out = await call(base, 'DELETE', '/api/v1/session', { cookie: `svc.token=${token}`, origin: base });
      expect(out.status).to.equal(503);
      expect(out.body).to.deep.equal({
        error: 'unavailable',
        message:
          'logout could not be recorded: the state backend is unreachable. The svc.token cookie is cleared, ' +
          'but the token stays valid on other replicas until it expires: log out again once the state backend is back',
      });
      expect(out.headers.get('set-cookie')).to.match(/^svc\.token=; path=\/; expires=Thu, 01 Jan 1970 00:00:00 GMT; samesite=lax; httponly$/);
      // This replica remembered the revocation before the shared write failed.
      expect((await call(base, 'GET', '/api/v1/account/alice', { token })).status).to.equal(401);
    } finally {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
