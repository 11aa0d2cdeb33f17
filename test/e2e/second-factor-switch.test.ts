/**
 * users.mfa.required: a local login with the right password and no second factor gets a
 * session that may only enrol one (403 second_factor_enrolment_required elsewhere), admin
 * included; confirming a factor frees that same session, and from then on the account logs in
 * with its factor.
 */
import { expect } from 'chai';
import { rm } from 'node:fs/promises';
import YAML from 'yaml';
import { accountsConfigDir, call, login, PASSWORDS } from '../helpers/accounts-fixture.js';
import { echoBackend, type Backend } from '../extensions/helpers.js';
import { enrolTotp, passwordStep } from '../helpers/second-factor.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

describe('users.mfa.required', function () {
  this.timeout(30_000);
  let dir: string;
  let server: TestServer;
  let echo: Backend;

  before(async function () {
    echo = await echoBackend('echo');
    dir = accountsConfigDir({
      cm: { 'users.mfa.required': 'true', 'extension.config': YAML.stringify({ extensions: [{ name: 'echo', enabled: true, backend: { services: [{ url: echo.url }] } }] }) },
      rbac: { 'policy.csv': 'p, alice, extensions, *, */echo, allow' },
    });
    server = await startTestServer(dir);
  });
  after(async function () {
    await server.close();
    await echo.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('confines admin\'s factorless session to enrolment: every other call is 403 second_factor_enrolment_required', async function () {
    const token = await login(server.url, 'admin', PASSWORDS.admin);
    const refused = { error: 'second_factor_enrolment_required', message: 'a second factor is required (users.mfa.required): enrol one at /account or with `svc account second-factor enable-totp` before anything else' };
    for (const [method, path] of [['GET', '/api/v1/account'], ['GET', '/api/v1/account/admin'], ['POST', '/api/v1/account/admin/token'], ['GET', '/api/v1/account/can-i/accounts/get/alice']] as const) {
      const reply = await call(server.url, method, path, { token, ...(method === 'POST' ? { body: {} } : {}) });
      expect(reply.status, `${method} ${path}`).to.equal(403);
      expect(reply.body).to.deep.equal(refused);
    }
    const status = await call(server.url, 'GET', '/api/v1/account/second-factor', { token });
    expect(status.status).to.equal(200);
    expect(status.body).to.deep.include({ totp: false, required: true });
    expect((await call(server.url, 'GET', '/api/v1/session/userinfo', { token })).body).to.deep.include({ loggedIn: true, username: 'admin' });
  });

  it('refuses the confined session at the extension proxy too', async function () {
    const token = await login(server.url, 'alice', PASSWORDS.alice);
    const proxied = await fetch(`${server.url}/api/v1/extensions/echo/x`, { headers: { authorization: `Bearer ${token}` } });
    expect(proxied.status).to.equal(403);
    expect(((await proxied.json()) as { error: string }).error).to.equal('second_factor_enrolment_required');
  });

  it('frees the enrolling session once the factor is confirmed; the next login asks for the factor', async function () {
    const bob = await enrolTotp(server.url, 'bob', PASSWORDS.bob, Date.now);
    const freed = await call(server.url, 'GET', '/api/v1/account/bob', { token: bob.token });
    expect(freed.status).to.equal(200);
    expect((await passwordStep(server.url, 'bob', PASSWORDS.bob)).body['error']).to.equal('second_factor_required');
  });
});
