/** API token writes on a running server: the per-account cap (SVC_MAX_API_TOKENS_PER_ACCOUNT). */
import { expect } from 'chai';
import { rm } from 'node:fs/promises';
import { accountsConfigDir, call, login, PASSWORDS } from '../helpers/accounts-fixture.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

describe('accounts/api-tokens', function () {
  cleanUpTempDirs();
  this.timeout(30_000);
  let dir: string;
  let server: TestServer;

  before(async function () {
    dir = accountsConfigDir();
    server = await startTestServer(dir, { env: { SVC_MAX_API_TOKENS_PER_ACCOUNT: '3' } });
  });
  after(async function () {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('caps the tokens of one account: past the cap a 409 says so, and deleting one makes room', async function () {
    const alice = await login(server.url, 'alice', PASSWORDS.alice);
    const make = (id: string) => call(server.url, 'POST', '/api/v1/account/alice/token', { token: alice, body: { id } });
    for (const id of ['a', 'b', 'c']) expect((await make(id)).status).to.equal(200);
    const refused = await make('d');
    expect(refused.status).to.equal(409);
    expect(refused.body).to.deep.equal({
      error: 'conflict',
      message: "account 'alice' already has 3 API tokens, the most allowed (SVC_MAX_API_TOKENS_PER_ACCOUNT=3); delete one first (expired ones count until deleted)",
    });
    expect((await call(server.url, 'DELETE', '/api/v1/account/alice/token/a', { token: alice })).status).to.equal(200);
    expect((await make('d')).status).to.equal(200);
  });
});
