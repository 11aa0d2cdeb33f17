/**
 * The second factor on the Kubernetes store (`svc-server --kube`, the stand-in API server):
 * enrolment writes the account's `mfa.<name>.` keys through the API, leaving every other key as
 * it was, and removing the factor deletes them and writes `sessionsNotBefore`.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { codeAt } from '../../src/second-factor/totp.js';
import { accountsConfigDir, call, PASSWORDS, waitFor } from '../helpers/accounts-fixture.js';
import { startFakeKube, type FakeKube } from '../helpers/fake-kube-apiserver.js';
import { kubectlFor, type Kubectl } from '../helpers/kubectl.js';
import { enrolTotp, loginWithCode } from '../helpers/second-factor.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { makeTestCa } from '../helpers/test-ca.js';

const NS = 'svc';

function secretValues(kube: FakeKube): Record<string, string> {
  const data = (kube.store.get('secrets', NS, 'svc-secret')?.['data'] ?? {}) as Record<string, string>;
  return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
}

describe('e2e: the second factor on the Kubernetes store', function () {
  this.timeout(60_000);
  const ca = makeTestCa();
  let kube: FakeKube;
  let kubectl: Kubectl;
  let dir: string;
  let work: string;
  let server: TestServer;
  let offset = 0;
  const now = () => Date.now() + offset;

  before(async function () {
    kube = await startFakeKube({ tls: ca, bookmarkMs: 200 });
    kubectl = kubectlFor(kube, NS);
    dir = accountsConfigDir();
    await kubectl.run(['apply', '--validate=false', '-f', dir]);
    work = mkdtempSync(join(tmpdir(), 'svc-kube-mfa-'));
    const kubeconfig = join(work, 'kubeconfig');
    writeFileSync(kubeconfig, kube.kubeconfig(NS), { mode: 0o600 });
    server = await startTestServer(join(work, 'unused'), { kube: { kubeconfig, namespace: NS, backoff: { initialMs: 100, maxMs: 400 } }, now });
  });
  after(async function () {
    await server?.close();
    kubectl?.close();
    await kube?.close();
    rmSync(dir, { recursive: true, force: true });
    rmSync(work, { recursive: true, force: true });
  });

  it('writes the factor under mfa.alice. through the API, logs in with it, and removing it ends the sessions', async function () {
    const before = secretValues(kube);
    const alice = await enrolTotp(server.url, 'alice', PASSWORDS.alice, now);
    const after = secretValues(kube);
    expect(Object.keys(after).filter((k) => !(k in before)).sort()).to.deep.equal(['mfa.alice.recoveryCodes', 'mfa.alice.totp']);
    for (const [key, value] of Object.entries(before)) expect(after[key], key).to.equal(value);
    expect(JSON.stringify(after)).not.to.include(alice.secret);
    offset += 4 * 30_000;
    const session = await loginWithCode(server.url, 'alice', PASSWORDS.alice, codeAt(alice.secret, now()));
    expect(session.status).to.equal(200);
    const token = String(session.body['token']);
    const removed = await call(server.url, 'DELETE', '/api/v1/account/second-factor/totp', { token, body: { password: PASSWORDS.alice, code: alice.recoveryCodes[0] } });
    expect(removed.status, JSON.stringify(removed.body)).to.equal(200);
    const last = secretValues(kube);
    expect(Object.keys(last).filter((k) => k.startsWith('mfa.alice.'))).to.deep.equal([]);
    expect(new Date(last['accounts.alice.sessionsNotBefore'] ?? '').getTime()).to.be.greaterThan(0);
    await waitFor(async () => (await call(server.url, 'GET', '/api/v1/account', { token })).status === 401, 'the session to end');
  });
});
