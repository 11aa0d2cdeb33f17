/** `svc session list` and `svc session delete ID | --all-others`, run in-process against a real server. */
import { expect } from 'chai';
import { decodeJwt } from 'jose';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { svcVersion } from '../../../src/lib/version.js';
import { accountsConfigDir, call, login, PASSWORDS } from '../../helpers/accounts-fixture.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { runCli } from '../run-cli.js';

describe('svc session', function () {
  this.timeout(20_000);
  let dir: string;
  let home: string;
  let server: TestServer;

  before(async function () {
    dir = accountsConfigDir();
    home = mkdtempSync(join(tmpdir(), 'svc-home-sessions-'));
    server = await startTestServer(dir);
  });
  after(async function () {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
    rmSync(home, { recursive: true, force: true });
  });

  const svc = (...args: string[]) => runCli(home, args);

  it('lists the CLI\'s own login as a cli session (User-Agent svc/<version>), marked current', async function () {
    const browser = await login(server.url, 'bob', PASSWORDS.bob);
    expect((await svc('login', server.url, '--plaintext', '--username', 'bob', '--password', PASSWORDS.bob)).code).to.equal(0);
    const listed = await svc('session', 'list', '-o', 'json');
    expect(listed.code, listed.err).to.equal(0);
    const items = (JSON.parse(listed.out) as { items: Record<string, unknown>[] }).items;
    expect(items.map((i) => [i['client'], i['current']])).to.deep.equal([['cli', true], ['api', false]]);
    expect(items[1]?.['id']).to.equal(decodeJwt(browser).jti);
    const table = await svc('session', 'list');
    expect(table.out.split('\n')[0]).to.match(/^ID\s+KIND\s+CLIENT\s+ADDRESS\s+CREATED\s+LAST USED\s+CURRENT$/);
    expect(svcVersion()).to.match(/^\d+\.\d+\.\d+/);
  });

  it('deletes one session by id, then every other one with --all-others', async function () {
    const first = await login(server.url, 'bob', PASSWORDS.bob);
    const second = await login(server.url, 'bob', PASSWORDS.bob);
    const one = await svc('session', 'delete', String(decodeJwt(first).jti));
    expect(one).to.deep.include({ code: 0, out: `session '${String(decodeJwt(first).jti)}' ended\n` });
    expect((await call(server.url, 'GET', '/api/v1/session/userinfo', { token: first })).body).to.deep.equal({ loggedIn: false });
    expect((await call(server.url, 'GET', '/api/v1/session/userinfo', { token: second })).body['loggedIn']).to.equal(true);
    const rest = await svc('session', 'delete', '--all-others');
    expect(rest.code, rest.err).to.equal(0);
    expect(rest.out).to.match(/^\d+ other sessions? ended\n$/);
    expect((await call(server.url, 'GET', '/api/v1/session/userinfo', { token: second })).body).to.deep.equal({ loggedIn: false });
    const left = JSON.parse((await svc('session', 'list', '-o', 'json')).out) as { items: Record<string, unknown>[] };
    expect(left.items.map((i) => i['current'])).to.deep.equal([true]);
  });

  it('wants an id or --all-others, not both', async function () {
    expect(await svc('session', 'delete')).to.deep.include({ code: 1, err: 'svc: give a session id or --all-others (not both)\n' });
    expect(await svc('session', 'delete', 'x', '--all-others')).to.deep.include({ code: 1, err: 'svc: give a session id or --all-others (not both)\n' });
  });
});
