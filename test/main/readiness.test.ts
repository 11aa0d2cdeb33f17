/** /readyz when a switch that turns something off is refused: the more open last good value stays, and readiness says so. */
import { expect } from 'chai';
import { rm } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { runValidate } from '../../src/commands/validate.js';
import { accountsConfigDir, call, editConfigMap, PASSWORDS, waitFor } from '../helpers/accounts-fixture.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

function collect(): { stream: Writable; text(): string } {
  let text = '';
  return { stream: new Writable({ write: (c: Buffer, _e, done) => ((text += c.toString()), done()) }), text: () => text };
}

describe('readiness: refused disabling switches', function () {
  cleanUpTempDirs();
  this.timeout(20_000);
  let dir: string;
  let server: TestServer;
  const readyz = async () => {
    const reply = await fetch(`${server.url}/readyz`);
    return { status: reply.status, body: (await reply.json()) as { status: string; checks: { configuration: string } } };
  };

  beforeEach(async () => {
    dir = accountsConfigDir();
    server = await startTestServer(dir);
  });
  afterEach(async () => {
    await server.close(500);
    await rm(dir, { recursive: true, force: true });
  });

  it('admin.enabled: "no" keeps admin enabled, fails /readyz naming the key, logs what stays in force, and fails validate', async () => {
    expect((await readyz()).status).to.equal(200);
    editConfigMap(dir, (text) => text.replace('\ndata:\n', '\ndata:\n  admin.enabled: "no"\n'));
    const expected = `svc-cm: admin.enabled: must be "true" or "false", not 'no'; admin stays enabled (its last good value) until this is fixed`;
    await waitFor(async () => (await readyz()).status === 503, '/readyz to fail');
    expect((await readyz()).body).to.deep.equal({
      status: 'not ready',
      checks: { configuration: 'a switch that turns something off was refused, so more stays on than svc-cm says: svc-cm: admin.enabled: invalid value', store: 'ok', state: 'ok' },
    });
    expect(server.logs()).to.include(JSON.stringify(`configuration problem: ${expected}`).slice(1, -1));
    // The last good value, as for every key: the login still works, and readiness is what says so.
    expect((await call(server.url, 'POST', '/api/v1/session', { body: { username: 'admin', password: PASSWORDS.admin } })).status).to.equal(200);

    const out = collect();
    const err = collect();
    expect(await runValidate(dir, out.stream, err.stream)).to.equal(1);
    expect(err.text()).to.include(`svc-cm: admin.enabled: must be "true" or "false", not 'no'`);

    editConfigMap(dir, (text) => text.replace('admin.enabled: "no"', 'admin.enabled: "false"'));
    await waitFor(async () => (await readyz()).status === 200, '/readyz to recover once the switch is readable');
    expect((await call(server.url, 'POST', '/api/v1/session', { body: { username: 'admin', password: PASSWORDS.admin } })).status).to.equal(401);
  });

  it('accounts.<name>.enabled: "off" fails /readyz naming the key, and the account stays as it was', async () => {
    editConfigMap(dir, (text) => text.replace('\ndata:\n', '\ndata:\n  accounts.alice.enabled: "off"\n'));
    await waitFor(async () => (await readyz()).status === 503, '/readyz to fail');
    // Anyone reads /readyz: the key, never the refused value; the log has the whole problem.
    expect((await readyz()).body.checks.configuration).to.equal(
      'a switch that turns something off was refused, so more stays on than svc-cm says: svc-cm: accounts.alice.enabled: invalid value',
    );
    expect(server.logs()).to.include(JSON.stringify(`svc-cm: accounts.alice.enabled: must be "true" or "false", not 'off'; account 'alice' stays enabled (its last good value) until this is fixed`).slice(1, -1));
    const out = collect();
    expect(await runValidate(dir, out.stream, collect().stream)).to.equal(1);
  });

  it('stays ready for a refused key that turns nothing off', async () => {
    editConfigMap(dir, (text) => text.replace('users.session.duration: 2h', 'users.session.duration: forever'));
    await waitFor(() => server.services.settings.problems().length === 1, 'the problem to stand');
    expect((await readyz()).status).to.equal(200);
  });
});
