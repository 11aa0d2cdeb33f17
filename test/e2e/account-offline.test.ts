/**
 * `svc-server account …` while a server runs, on both stores: the server sees each change
 * within 2 s, the account's sessions end (a session made before answers 401 after), and a new
 * password logs in.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { runAccountCommand, type AccountCommand } from '../../src/commands/account.js';
import type { ClusterStoreOptions } from '../../src/config/kube/open.js';
import { accountsConfigDir, call, login, PASSWORDS } from '../helpers/accounts-fixture.js';
import { startFakeKube, type FakeKube } from '../helpers/fake-kube-apiserver.js';
import { kubectlFor } from '../helpers/kubectl.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { makeTestCa } from '../helpers/test-ca.js';
import { textSink } from '../helpers/text-sink.js';

/** What the server must take to see an offline change (the stores watch). */
const SEEN_WITHIN_MS = 2000;

interface Setup {
  readonly server: TestServer;
  readonly source: string | ClusterStoreOptions;
  close(): Promise<void>;
}

async function command(source: string | ClusterStoreOptions, request: AccountCommand, stdin?: string): Promise<void> {
  const out = textSink();
  const err = textSink();
  const code = await runAccountCommand(source, request, { out: out.stream, err: err.stream, ...(stdin !== undefined ? { stdin: Readable.from([stdin]) } : {}) });
  expect(code, err.text()).to.equal(0);
}

/** How long until `token` is refused (401) on a call that needs a session, failing past the bound. */
async function refusedWithin(server: TestServer, name: string, token: string): Promise<{ ms: number; message: unknown }> {
  const started = Date.now();
  for (;;) {
    const reply = await call(server.url, 'GET', `/api/v1/account/${name}`, { token });
    const ms = Date.now() - started;
    if (reply.status === 401) return { ms, message: reply.body['message'] };
    expect(reply.status).to.equal(200);
    if (ms > SEEN_WITHIN_MS) throw new Error(`${name}'s session still answered 200 ${ms} ms after the command`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

function offlineScenarios(store: string, start: () => Promise<Setup>): void {
  describe(`e2e: svc-server account … while a server runs (${store})`, function () {
    this.timeout(60_000);
    let setup: Setup;
    before(async () => (setup = await start()));
    after(async () => setup?.close());

    it("set-password ends the account's sessions within 2 s, and the new password logs in", async () => {
      const { server, source } = setup;
      const token = await login(server.url, 'alice', PASSWORDS.alice);
      expect((await call(server.url, 'GET', '/api/v1/account/alice', { token })).status).to.equal(200);
      await command(source, { command: 'set-password', name: 'alice' }, 'offline-pass-1\n');
      const refused = await refusedWithin(server, 'alice', token);
      expect(refused.message).to.equal("the password of account 'alice' changed after this token was issued; log in again");
      console.log(`      (${store}: alice's session refused ${refused.ms} ms after set-password returned)`);
      expect((await call(server.url, 'POST', '/api/v1/session', { body: { username: 'alice', password: PASSWORDS.alice } })).status).to.equal(401);
      await login(server.url, 'alice', 'offline-pass-1');
    });

    it("disable ends the account's sessions within 2 s; enable lets it log in again, the old session staying refused", async () => {
      const { server, source } = setup;
      const token = await login(server.url, 'bob', PASSWORDS.bob);
      await command(source, { command: 'disable', name: 'bob' });
      const disabledAt = Date.now();
      const refused = await refusedWithin(server, 'bob', token);
      // disable writes the sessions' end first, then the switch (offline-admin.ts): a server that
      // has read the first write only refuses the session for it, and says so.
      const disabled = "account 'bob' is disabled";
      expect(refused.message).to.be.oneOf([disabled, "the sessions of account 'bob' were ended after this token was issued (a second factor changed, or an operator ended them); log in again"]);
      console.log(`      (${store}: bob's session refused ${refused.ms} ms after disable returned)`);
      let said = refused.message;
      while (said !== disabled && Date.now() - disabledAt < SEEN_WITHIN_MS) {
        await new Promise((r) => setTimeout(r, 25));
        said = (await call(server.url, 'GET', '/api/v1/account/bob', { token })).body['message'];
      }
      expect(said, 'the refusal once the server has read both writes').to.equal(disabled);
      await command(source, { command: 'enable', name: 'bob' });
      const started = Date.now();
      let fresh: string | undefined;
      while (fresh === undefined && Date.now() - started < SEEN_WITHIN_MS) {
        fresh = await login(server.url, 'bob', PASSWORDS.bob).catch(() => undefined);
      }
      expect(fresh, 'bob logs in again within 2 s of enable').to.be.a('string');
      expect((await call(server.url, 'GET', '/api/v1/account/bob', { token })).status).to.equal(401);
    });

    it('reset-second-factor removes the keys and writes sessionsNotBefore, which the server holds within 2 s', async () => {
      const { server, source } = setup;
      await command(source, { command: 'reset-second-factor', name: 'admin' });
      const started = Date.now();
      const data = () => server.services.store.current().secrets.get('svc-secret')?.data ?? {};
      while (data()['admin.sessionsNotBefore'] === undefined && Date.now() - started < SEEN_WITHIN_MS) await new Promise((r) => setTimeout(r, 25));
      expect(data()['admin.sessionsNotBefore']).to.match(/^\d{4}-.*\.000Z$/);
      expect(data()['mfa.admin.totp']).to.equal(undefined);
      expect(data()['mfa.carol.totp'], "another account's factor").to.equal('hers');
    });

    it('reset-second-factor ends the account\'s sessions within 2 s', async () => {
      const { server, source } = setup;
      // bob: the tests above changed alice's password; bob is enabled again by the last of them.
      const before = await login(server.url, 'bob', PASSWORDS.bob);
      // sessionsNotBefore is a whole second: a session of the same second as the reset would survive it.
      await new Promise((r) => setTimeout(r, 1100));
      await command(source, { command: 'reset-second-factor', name: 'bob' });
      const started = Date.now();
      const status = async () => (await call(server.url, 'GET', '/api/v1/account/bob', { token: before })).status;
      while ((await status()) !== 401 && Date.now() - started < SEEN_WITHIN_MS) await new Promise((r) => setTimeout(r, 25));
      expect(await status(), 'a session of bob made before the reset').to.equal(401);
    });
  });
}

const MFA = { 'mfa.admin.totp': 'sealed', 'mfa.carol.totp': 'hers' };

offlineScenarios('--config', async () => {
  const dir = accountsConfigDir({ secret: MFA });
  const server = await startTestServer(dir);
  return { server, source: dir, close: async () => { await server.close(1000); rmSync(dir, { recursive: true, force: true }); } };
});

offlineScenarios('--kube', async () => {
  const kube: FakeKube = await startFakeKube({ tls: makeTestCa(), bookmarkMs: 200 });
  const kubectl = kubectlFor(kube, 'svc');
  const dir = accountsConfigDir({ secret: MFA });
  await kubectl.run(['apply', '--validate=false', '-f', dir]);
  const work = mkdtempSync(join(tmpdir(), 'svc-account-offline-'));
  const kubeconfig = join(work, 'kubeconfig');
  writeFileSync(kubeconfig, kube.kubeconfig('svc'), { mode: 0o600 });
  const options = { kubeconfig, namespace: 'svc', backoff: { initialMs: 100, maxMs: 400 } };
  const server = await startTestServer(join(work, 'unused'), { kube: options });
  return {
    server,
    source: { kubeconfig, namespace: 'svc' },
    close: async () => {
      await server.close(1000);
      kubectl.close();
      await kube.close();
      rmSync(dir, { recursive: true, force: true });
      rmSync(work, { recursive: true, force: true });
    },
  };
});
