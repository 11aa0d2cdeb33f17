/**
 * The second factor on the Kubernetes store (`svc-server --kube`, the stand-in API server):
 * enrolment writes the account's `mfa.<name>.` keys through the API, leaving every other key as
 * it was, and removing the factor deletes them and writes `sessionsNotBefore`.
 */
import { expect } from 'chai';
import { codeAt } from '../../src/second-factor/totp.js';
import { call, PASSWORDS, waitFor } from '../helpers/accounts-fixture.js';
import { startKubeSvc, type KubeSvc } from '../helpers/kube-svc.js';
import { enrolTotp, loginWithCode, stepClock } from '../helpers/second-factor.js';
import type { TestServer } from '../helpers/server.js';

describe('e2e: the second factor on the Kubernetes store', function () {
  this.timeout(60_000);
  let cluster: KubeSvc;
  let server: TestServer;
  const { now, nextSteps } = stepClock();
  const secretValues = (): Record<string, string> => cluster.secretValues('svc-secret');

  before(async function () {
    cluster = await startKubeSvc({ workPrefix: 'svc-kube-mfa-', bookmarkMs: 200, accounts: true });
    server = await cluster.startServer({ now });
  });
  after(async function () {
    await server?.close();
    await cluster?.close();
  });

  it('writes the factor under mfa.alice. through the API, logs in with it, and removing it ends the sessions', async function () {
    const before = secretValues();
    const alice = await enrolTotp(server.url, 'alice', PASSWORDS.alice, now);
    const after = secretValues();
    expect(Object.keys(after).filter((k) => !(k in before)).sort()).to.deep.equal(['mfa.alice.recoveryCodes', 'mfa.alice.totp']);
    for (const [key, value] of Object.entries(before)) expect(after[key], key).to.equal(value);
    expect(JSON.stringify(after)).not.to.include(alice.secret);
    nextSteps();
    const session = await loginWithCode(server.url, 'alice', PASSWORDS.alice, codeAt(alice.secret, now()));
    expect(session.status).to.equal(200);
    const token = String(session.body['token']);
    const removed = await call(server.url, 'DELETE', '/api/v1/account/second-factor/totp', { token, body: { password: PASSWORDS.alice, code: alice.recoveryCodes[0] } });
    expect(removed.status, JSON.stringify(removed.body)).to.equal(200);
    const last = secretValues();
    expect(Object.keys(last).filter((k) => k.startsWith('mfa.alice.'))).to.deep.equal([]);
    expect(new Date(last['accounts.alice.sessionsNotBefore'] ?? '').getTime()).to.be.greaterThan(0);
    await waitFor(async () => (await call(server.url, 'GET', '/api/v1/account', { token })).status === 401, 'the session to end');
  });
});
