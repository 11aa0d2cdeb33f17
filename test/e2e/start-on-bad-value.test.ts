/**
 * A replica that starts on a store it cannot apply is not ready, and serves nothing (issue 52,
 * finding 5). Before, it served defaults in place of the bad values: a svc-cm that does not
 * parse meant no local account (alice's login answered 401 as if she did not exist) and the
 * default rights, a bad `url` meant another one, and /readyz answered 200 all along, while the
 * replicas that ran beside it kept their last good configuration.
 *
 * Here, on the directory store and on the Kubernetes stand-in (--kube), a replica started (and
 * one restarted beside a running one) on a bad value answers /readyz 503 naming the store, the
 * key and a category of what is wrong, never the value (anyone reads it), refuses a login with
 * 503 and the same reason, logs the whole problem, value included, once and shows
 * svc_config_applied 0; the running one keeps its last good configuration and stays ready; once
 * the store is fixed, the new replica becomes ready by itself and the login works.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { accountsConfigDir, call, login, PASSWORDS, waitFor, type Reply } from '../helpers/accounts-fixture.js';
import { startKubeSvc, type KubeSvc } from '../helpers/kube-svc.js';
import { configMap } from '../helpers/manifests.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cleanUpTempDirs, removeTempDir } from '../helpers/temp-dir.js';
import { DETAILS_IN_LOG, NOT_APPLIED } from '../../src/main/start-gate.js';

/** Long enough for a reload (watch, debounce, poll) on a loaded machine. */
const RELOAD_MS = 5000;

const aliceLogin = (base: string): Promise<Reply> => call(base, 'POST', '/api/v1/session', { body: { username: 'alice', password: PASSWORDS.alice } });

/**
 * The reason a replica gives while it waits, checked the same in /readyz, a refused login and
 * another route (`shown`: store, key, category), in the log (`logged`: the whole problem) and in
 * the metric.
 */
async function expectWaiting(server: TestServer, shown: string, logged: string): Promise<void> {
  const reason = `${NOT_APPLIED}: ${shown} (${DETAILS_IN_LOG})`;
  const ready = await call(server.url, 'GET', '/readyz');
  expect(ready.status, '/readyz').to.equal(503);
  expect(ready.body['status']).to.equal('not ready');
  expect((ready.body['checks'] as Record<string, string>)['configuration']).to.equal(reason);
  const refused = await aliceLogin(server.url);
  expect(refused.status, 'the login is refused as unavailable, not as an account that does not exist').to.equal(503);
  expect(refused.body).to.deep.equal({ error: 'unavailable', message: reason });
  const other = await call(server.url, 'GET', '/api/version');
  expect(other.status, 'every other route').to.equal(503);
  expect(other.body).to.deep.equal({ error: 'unavailable', message: reason });
  expect((await fetch(`${server.url}/healthz`)).status, 'it stays up').to.equal(200);
  expect(await (await fetch(`${server.url}/metrics`)).text()).to.match(/^svc_config_applied 0$/m);
  const lines = server.logs().split('\n').filter((line) => line.includes(JSON.stringify(NOT_APPLIED).slice(1, -1)));
  expect(lines, 'logged once').to.have.length(1);
  expect(lines[0]).to.include(JSON.stringify(logged).slice(1, -1));
}

async function expectServing(server: TestServer): Promise<void> {
  await waitFor(async () => (await call(server.url, 'GET', '/readyz')).status === 200, 'the replica to become ready', RELOAD_MS);
  expect((await aliceLogin(server.url)).status).to.equal(200);
  expect(await (await fetch(`${server.url}/metrics`)).text()).to.match(/^svc_config_applied 1$/m);
  expect(server.logs()).to.include('configuration applied: the store no longer holds a problem; this replica is ready');
}

describe('e2e: a replica that starts on a bad value is not ready, and serves nothing until the store is fixed', function () {
  cleanUpTempDirs();
  this.timeout(60_000);

  describe('directory store', function () {
    let dir: string;
    const servers: TestServer[] = [];
    beforeEach(() => {
      dir = accountsConfigDir();
    });
    afterEach(async () => {
      await Promise.all(servers.splice(0).map((s) => s.close(200)));
      removeTempDir(dir);
    });
    const cmFile = () => join(dir, 'svc-cm.yaml');

    it('started on a svc-cm that does not parse: 503 naming the file, then ready once it is fixed', async () => {
      const good = readFileSync(cmFile(), 'utf8');
      writeFileSync(cmFile(), `${good}  broken: [\n`);
      const server = await startTestServer(dir);
      servers.push(server);
      const problem = server.services.store.problems?.().map((p) => `${p.source}: ${p.message}`)[0] ?? '';
      expect(problem).to.match(new RegExp(`^${cmFile().replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: `));
      await expectWaiting(server, `${cmFile()}: does not parse`, problem);

      writeFileSync(cmFile(), good);
      await expectServing(server);
    });

    it('restarted beside a running replica after a bad edit: the running one keeps its last good configuration, the new one waits', async () => {
      const running = await startTestServer(dir);
      servers.push(running);
      const good = readFileSync(cmFile(), 'utf8');
      writeFileSync(cmFile(), good.replace('\ndata:\n', '\ndata:\n  url: ftp://svc.example\n'));
      await waitFor(() => running.services.settings.problems().length === 1, 'the running replica to see the bad edit', RELOAD_MS);
      expect((await call(running.url, 'GET', '/readyz')).status, 'the running replica stays ready').to.equal(200);
      expect((await aliceLogin(running.url)).status).to.equal(200);
      expect(await (await fetch(`${running.url}/metrics`)).text()).to.match(/^svc_config_problems 1$/m);

      const restarted = await startTestServer(dir);
      servers.push(restarted);
      const [problem] = restarted.services.settings.problems().map((p) => `${p.source}: ${String(p.path[0])}: ${p.message}`);
      expect(problem).to.match(/^svc-cm: url: 'ftp:\/\/svc\.example' is not an http\(s\) URL; /);
      await expectWaiting(restarted, 'svc-cm: url: invalid value', problem ?? '');

      writeFileSync(cmFile(), good);
      await expectServing(restarted);
      expect((await aliceLogin(running.url)).status).to.equal(200);
    });

    it('started on a bad policy.csv line and url: "not a url": every public answer names the keys, never the values; the log has them', async () => {
      removeTempDir(dir);
      const line = 'p, role:leaky, applications, get, hidden-project-name/*, permit';
      dir = accountsConfigDir({ cm: { url: 'not a url' }, rbac: { 'policy.csv': `g, alice, role:admin\n${line}` } });
      const server = await startTestServer(dir);
      servers.push(server);
      const problems = server.services.settings.problems().map((p) => `${p.source}: ${p.path.join(': ')}: ${p.message}`);
      expect(problems).to.have.length(2);
      const [rbacProblem, urlProblem] = [problems.find((p) => p.startsWith('svc-rbac-cm')) ?? '', problems.find((p) => p.startsWith('svc-cm')) ?? ''];
      expect(rbacProblem, 'the log quotes the line').to.include(JSON.stringify(line));
      expect(urlProblem, 'the log quotes the value').to.include('not a url');
      const shown = server.services.settings.problems().map((p) => (p.source === 'svc-cm' ? 'svc-cm: url: invalid value' : 'svc-rbac-cm: policy.csv: line 2: invalid value')).join('; ');
      for (const [method, path] of [['GET', '/readyz'], ['POST', '/api/v1/session'], ['GET', '/api/v1/applications'], ['GET', '/']] as const) {
        const reply = await fetch(`${server.url}${path}`, { method });
        expect(reply.status, path).to.equal(503);
        const text = await reply.text();
        for (const value of ['hidden-project-name', 'role:leaky', 'not a url']) expect(text, `${method} ${path}`).not.to.include(value);
      }
      await expectWaiting(server, shown, rbacProblem);
      expect(server.logs()).to.include(JSON.stringify(urlProblem).slice(1, -1));
    });
  });

  describe('Kubernetes store (--kube)', function () {
    let cluster: KubeSvc;
    const servers: TestServer[] = [];
    before(async () => {
      cluster = await startKubeSvc({ workPrefix: 'svc-kube-bad-start-', bookmarkMs: 200, accounts: true });
    });
    after(async () => {
      await Promise.all(servers.splice(0).map((s) => s.close(200)));
      await cluster?.close();
    });

    it('restarted beside a running replica after a bad edit of svc-rbac-cm: 503 naming the key, then ready once it is fixed', async () => {
      const running = await cluster.startServer();
      servers.push(running);
      await cluster.kubectl.apply(configMap('svc-rbac-cm', { 'policy.csv': '', 'policy.default': 'role:admin', 'policy.defualt': 'role:readonly' }));
      await waitFor(() => running.services.settings.problems().length === 1, 'the running replica to see the bad edit', RELOAD_MS);
      expect((await call(running.url, 'GET', '/readyz')).status, 'the running replica stays ready').to.equal(200);

      const restarted = await cluster.startServer();
      servers.push(restarted);
      const [problem] = restarted.services.settings.problems().map((p) => `${p.source}: ${String(p.path[0])}: ${p.message}`);
      expect(problem).to.match(/^svc-rbac-cm: policy\.defualt: /);
      await expectWaiting(restarted, 'svc-rbac-cm: policy.defualt: unknown key', problem ?? '');

      await cluster.kubectl.apply(configMap('svc-rbac-cm', { 'policy.csv': '', 'policy.default': 'role:admin' }));
      await expectServing(restarted);
      expect(await login(running.url, 'alice', PASSWORDS.alice)).to.be.a('string');
    });
  });
});
