/** `svc account get-user-info`, run in-process against a real server: its exit code is what scripts test. */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { accountsConfigDir, call, login, PASSWORDS } from '../../helpers/accounts-fixture.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { runCli } from '../run-cli.js';

describe('svc account get-user-info', function () {
  this.timeout(20_000);
  let dir: string;
  let home: string;
  let server: TestServer;

  before(async function () {
    dir = accountsConfigDir();
    home = mkdtempSync(join(tmpdir(), 'svc-home-userinfo-'));
    server = await startTestServer(dir);
  });
  after(async function () {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
    rmSync(home, { recursive: true, force: true });
  });

  it('exits 0 when logged in, and 1 with one line saying to log in when the server refuses the token', async function () {
    const token = await login(server.url, 'alice', PASSWORDS.alice);
    const env = ['--server', server.url, '--auth-token', token];
    const ok = await runCli(home, ['account', 'get-user-info', ...env]);
    expect(ok, ok.err).to.include({ code: 0, err: '' });
    expect(ok.out).to.equal('Logged In: true\nUsername: alice\nIssuer: svc\nGroups: \n');
    expect((await call(server.url, 'DELETE', '/api/v1/session', { token })).status).to.equal(200);
    const refused = await runCli(home, ['account', 'get-user-info', ...env]);
    expect(refused).to.deep.equal({
      code: 1,
      out: 'Logged In: false\n',
      err: `svc: not logged in: ${server.url} refused the token (expired, revoked or deleted): run 'svc login ${server.url}'\n`,
    });
    const json = await runCli(home, ['account', 'get-user-info', '-o', 'json', ...env]);
    expect(json.code).to.equal(1);
    expect(JSON.parse(json.out)).to.deep.include({ loggedIn: false });
  });
});
