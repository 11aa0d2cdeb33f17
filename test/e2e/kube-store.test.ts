/**
 * `svc-server --kube` against the stand-in API server (test/helpers/fake-kube-apiserver.ts),
 * with the real kubectl as the operator: the stores are loaded by `kubectl apply -f` of the same
 * manifest directory the directory-store tests use, then edited with kubectl while svc runs.
 * Two servers share the namespace, as two replicas would.
 */
import bcrypt from 'bcryptjs';
import { expect } from 'chai';
import YAML from 'yaml';
import { call, login, PASSWORDS, waitFor } from '../helpers/accounts-fixture.js';
import type { FakeKube } from '../helpers/fake-kube-apiserver.js';
import { KUBE_NS as NS, startKubeSvc, type KubeSvc } from '../helpers/kube-svc.js';
import type { Kubectl } from '../helpers/kubectl.js';
import { configMap } from '../helpers/manifests.js';
import type { TestServer } from '../helpers/server.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

/** The outage "Done when" asks for; the suite pays it once. */
const OUTAGE_MS = 30_000;
/** After the restart: the longest backoff (0.4 s), a LIST or resumed WATCH and a reload, with room for a loaded machine. */
const RECOVERY_MS = 2000;

describe('e2e: the Kubernetes API as the store (svc-server --kube)', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  let cluster: KubeSvc;
  let kube: FakeKube;
  let kubectl: Kubectl;
  let a: TestServer;
  let b: TestServer;

  before(async function () {
    cluster = await startKubeSvc({ workPrefix: 'svc-kube-e2e-', bookmarkMs: 200, accounts: true });
    ({ kube, kubectl } = cluster);
    [a, b] = await Promise.all([cluster.startServer(), cluster.startServer()]);
  });
  after(async function () {
    await Promise.all([a?.close(), b?.close()]);
    await cluster?.close();
  });

  it('kubectl apply and kubectl edit of svc-cm reach the running servers within 2 s', async function () {
    const servers = { a, b };
    const capabilitiesOf = (name: string) => Object.entries(servers).map(([at, s]) => `${at}: ${s.services.settings.current().accounts.get(name)?.capabilities.join(', ') ?? 'none'}`);
    expect(capabilitiesOf('erin'), 'before the edit').to.deep.equal(['a: none', 'b: none']);
    // The 2 s count from kubectl's return: the change is in the API server from then on.
    await kubectl.edit('configmap/svc-cm', 's/^  accounts.bob: login$/  accounts.bob: login\\n  accounts.erin: apiKey/');
    const edited = Date.now();
    await waitFor(() => capabilitiesOf('erin').every((c) => !c.endsWith('none')), 'erin on both servers', 2000);
    expect(Date.now() - edited, 'ms from kubectl edit to both servers').to.be.below(2000);
    expect(capabilitiesOf('erin'), 'after kubectl edit').to.deep.equal(['a: apiKey', 'b: apiKey']);
    expect(capabilitiesOf('bob'), 'the line the edit appended to').to.deep.equal(['a: login', 'b: login']);

    await kubectl.apply(configMap('svc-cm', { 'users.session.duration': '2h', 'accounts.alice': 'apiKey, login', 'accounts.bob': 'login', 'accounts.carol': 'apiKey', 'accounts.erin': 'apiKey, login' }));
    const applied = Date.now();
    await waitFor(() => capabilitiesOf('erin').every((c) => c.endsWith('login')), 'erin to get login on both servers', 2000);
    expect(Date.now() - applied, 'ms from kubectl apply to both servers').to.be.below(2000);
    expect(capabilitiesOf('erin'), 'after kubectl apply').to.deep.equal(['a: apiKey, login', 'b: apiKey, login']);
  });

  it('two servers generating API tokens for one account at once keep them all; one deleted with kubectl edit is refused at once', async function () {
    const [ta, tb] = await Promise.all([login(a.url, 'alice', PASSWORDS.alice), login(b.url, 'alice', PASSWORDS.alice)]);
    const ids = Array.from({ length: 6 }, (_, i) => `t${i}`);
    const conflictsBefore = kube.refusals.get(409) ?? 0;
    const replies = await Promise.all(ids.map((id, i) => call(i % 2 === 0 ? a.url : b.url, 'POST', '/api/v1/account/alice/token', { token: i % 2 === 0 ? ta : tb, body: { id } })));
    expect(replies.map((r) => r.status)).to.deep.equal(ids.map(() => 200));
    const shown = YAML.parse(await kubectl.run(['get', 'secret', 'svc-secret', '-o', 'yaml'])) as { data: Record<string, string> };
    const stored = JSON.parse(Buffer.from(shown.data['accounts.alice.tokens'] ?? '', 'base64').toString('utf8')) as { id: string }[];
    expect(stored.map((t) => t.id).sort()).to.deep.equal(ids);
    // The two servers did compete: some writes met a newer resourceVersion and were re-applied.
    expect(kube.refusals.get(409) ?? 0).to.be.above(conflictsBefore);
    expect(cluster.secretValues('svc-secret')['operator.note']).to.equal('keep me'); // another writer's key untouched
    // Delete t0 by hand with kubectl edit: the editor replaces the list's base64 value with one without t0.
    const t0 = String(replies[0]?.body['token']);
    expect((await call(b.url, 'GET', '/api/v1/account/alice', { token: t0 })).status).to.equal(200);
    const kept = Buffer.from(JSON.stringify(stored.filter((t) => t.id !== 't0'))).toString('base64');
    await kubectl.edit('secret/svc-secret', `s#^\\(  accounts.alice.tokens: \\).*#\\1${kept}#`);
    expect(cluster.secretValues('svc-secret')['accounts.alice.tokens']).to.not.include('"t0"');
    await waitFor(async () => (await call(b.url, 'GET', '/api/v1/account/alice', { token: t0 })).status === 401, 't0 refused', 2000);
    expect((await call(a.url, 'GET', '/api/v1/account/alice', { token: t0 })).status).to.equal(401);
  });

  it('a watch that expires (410) lists again without losing the change it missed', async function () {
    const cm = kube.store.get('configmaps', NS, 'svc-cm');
    if (cm === undefined) throw new Error('no svc-cm');
    const data = { ...(cm['data'] as Record<string, string>), 'accounts.frank': 'apiKey' };
    // Stored without telling the open watches: only a new LIST can show it.
    kube.store.put({ group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap' }, NS, { ...cm, data }, false);
    await new Promise((r) => setTimeout(r, 300));
    expect(a.services.settings.current().accounts.has('frank')).to.equal(false);
    kube.expireWatches();
    await waitFor(() => a.services.settings.current().accounts.has('frank') && b.services.settings.current().accounts.has('frank'), 'frank after the relist', 2000);
    expect(a.logs()).to.include('watch expired (410 Gone); listing again');
  });

  it('API server stopped for 30 s: svc serves its last good configuration, says so in /metrics, /readyz and the log, refuses writes, and picks up what changed meanwhile', async function () {
    this.timeout(OUTAGE_MS + 30_000);
    const metric = async (server: TestServer): Promise<string | undefined> => /^svc_config_store_up (\d)$/m.exec(await (await fetch(`${server.url}/metrics`)).text())?.[1];
    const outageLines = (server: TestServer): number => server.logs().split('\n').filter((line) => line.includes('serving the last good configuration and retrying')).length;
    const token = await login(a.url, 'alice', PASSWORDS.alice);
    const secretBefore = kube.store.get('secrets', NS, 'svc-secret')?.metadata['resourceVersion'];
    const stopped = Date.now();
    await kube.stop();
    // A real stop: nothing listens on the port any more (the open watches were cut with it).
    expect(await fetch(`${kube.url}/version`).then(() => 'answered', (err: Error) => String((err.cause as { code?: string } | undefined)?.code))).to.equal('ECONNREFUSED');
    await waitFor(async () => (await metric(a)) === '0' && (await metric(b)) === '0', 'the outage in /metrics', 3000);
    expect(a.logs()).to.match(/the Kubernetes API does not answer .*serving the last good configuration/);
    const down = await fetch(`${a.url}/readyz`);
    expect(down.status).to.equal(503);
    expect(((await down.json()) as { checks: { store: string } }).checks.store).to.equal('the Kubernetes API does not answer; serving the last good configuration');
    // A write cannot land while the API is away: a 503 that says why, not a success kept only in memory.
    const refused = await call(a.url, 'POST', '/api/v1/account/alice/token', { token, body: { id: 'during-outage' } });
    expect(refused.status).to.equal(503);
    expect(String(refused.body['message'])).to.match(/Secret svc-secret could not be written: the Kubernetes API at .* cannot be reached: ECONNREFUSED/);
    // Changed in the API server's storage while it is down: only a resumed watch or a new LIST can show it.
    const cm = kube.store.get('configmaps', NS, 'svc-cm');
    if (cm === undefined) throw new Error('no svc-cm');
    kube.store.put({ group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap' }, NS, { ...cm, data: { ...(cm['data'] as Record<string, string>), 'accounts.gina': 'apiKey' } });
    // Through the whole outage (the retries reach their longest backoff and keep failing): still serving
    // the last good configuration (erin came from an edit before the outage), still reported as down.
    while (Date.now() - stopped < OUTAGE_MS) {
      await new Promise((r) => setTimeout(r, Math.min(5000, OUTAGE_MS - (Date.now() - stopped))));
      for (const server of [a, b]) {
        expect(await metric(server)).to.equal('0');
        expect(server.services.settings.current().accounts.has('erin')).to.equal(true);
        expect(server.services.settings.current().accounts.has('gina')).to.equal(false);
        expect((await call(server.url, 'POST', '/api/v1/session', { body: { username: 'bob', password: PASSWORDS.bob } })).status).to.equal(200);
      }
    }
    // One line for the outage, not one per failed retry.
    expect([outageLines(a), outageLines(b)]).to.deep.equal([1, 1]);
    await kube.start();
    const restarted = Date.now();
    await waitFor(() => a.services.settings.current().accounts.has('gina') && b.services.settings.current().accounts.has('gina'), 'the change made while the API was down', RECOVERY_MS);
    const arrived = Date.now() - restarted;
    await waitFor(async () => (await metric(a)) === '1' && (await metric(b)) === '1', 'recovery in /metrics', RECOVERY_MS);
    const ready = await fetch(`${a.url}/readyz`);
    expect([ready.status, await ready.json()]).to.deep.equal([200, { status: 'ready', checks: { configuration: 'ok', store: 'ok', state: 'ok' } }]);
    expect(a.logs()).to.include('the Kubernetes API answers again');
    expect(b.logs()).to.include('the Kubernetes API answers again');
    // The refused write left nothing behind.
    expect(kube.store.get('secrets', NS, 'svc-secret')?.metadata['resourceVersion']).to.equal(secretBefore);
    expect(cluster.secretValues('svc-secret')['accounts.alice.tokens']).to.not.include('during-outage');
    console.log(`      (down ${Math.round((restarted - stopped) / 1000)} s; the change arrived ${arrived} ms after the restart)`);
  });

  it('a Role without update on svc-secret: generating a token answers 503 naming the permission, and nothing is written', async function () {
    const token = await login(a.url, 'alice', PASSWORDS.alice);
    const before = kube.store.get('secrets', NS, 'svc-secret')?.metadata['resourceVersion'];
    kube.rules = [
      { verbs: ['get', 'list', 'watch'], resources: ['configmaps', 'secrets', 'applications'] },
      { verbs: ['create'], resources: ['secrets'] },
    ];
    try {
      const reply = await call(a.url, 'POST', '/api/v1/account/alice/token', { token, body: { id: 'denied' } });
      expect(reply.status).to.equal(503);
      expect(String(reply.body['message'])).to.match(/lacks "update" on secrets "svc-secret"/);
    } finally {
      kube.rules = undefined;
    }
    expect(kube.store.get('secrets', NS, 'svc-secret')?.metadata['resourceVersion']).to.equal(before);
  });
});

describe('e2e: first start of two replicas on an empty cluster namespace', function () {
  cleanUpTempDirs();
  this.timeout(60_000);

  it('creates the initial admin secret once, and its password matches the hash both replicas use', async function () {
    const cluster = await startKubeSvc({ workPrefix: 'svc-kube-first-' });
    const { kube } = cluster;
    const created: string[] = [];
    const unsubscribe = kube.store.subscribe((e) => {
      if (e.plural === 'secrets' && e.object.metadata['name'] === 'svc-initial-admin-secret') created.push(e.type);
    });
    const servers = await Promise.all([0, 1].map(() => cluster.startServer()));
    try {
      expect(created).to.deep.equal(['ADDED']);
      const password = cluster.secretValues('svc-initial-admin-secret')['password'] ?? '';
      const secret = cluster.secretValues('svc-secret');
      expect(bcrypt.compareSync(password, secret['admin.password'] ?? '')).to.equal(true);
      expect(secret['server.secretkey']).to.have.length.above(30);
      for (const server of servers) expect((await call(server.url, 'POST', '/api/v1/session', { body: { username: 'admin', password } })).status).to.equal(200);
    } finally {
      unsubscribe();
      await Promise.all(servers.map((s) => s.close()));
      await cluster.close();
    }
  });
});

describe('e2e: first start of two replicas on the Secrets deploy/ ships empty, with a Role that creates nothing', function () {
  cleanUpTempDirs();
  this.timeout(60_000);

  it('fills svc-initial-admin-secret once, by update, and its password matches the hash both replicas use', async function () {
    const cluster = await startKubeSvc({ workPrefix: 'svc-kube-shipped-' });
    const { kube, kubectl } = cluster;
    const empty = (name: string) => YAML.stringify({ apiVersion: 'v1', kind: 'Secret', type: 'Opaque', metadata: { name, labels: { 'app.kubernetes.io/part-of': 'svc' } } });
    await kubectl.apply(`${empty('svc-secret')}---\n${empty('svc-initial-admin-secret')}`);
    // deploy/base/role.yaml's grants: no create anywhere.
    kube.rules = [
      { verbs: ['get', 'list', 'watch'], resources: ['configmaps', 'secrets', 'applications'] },
      { verbs: ['update'], resources: ['secrets'], resourceNames: ['svc-secret', 'svc-initial-admin-secret'] },
    ];
    const events: string[] = [];
    const unsubscribe = kube.store.subscribe((e) => {
      if (e.plural === 'secrets') events.push(`${e.type} ${String(e.object.metadata['name'])}`);
    });
    const servers = await Promise.all([0, 1].map(() => cluster.startServer()));
    try {
      expect(events.filter((e) => e.endsWith('svc-initial-admin-secret')), 'written once, never created').to.deep.equal(['MODIFIED svc-initial-admin-secret']);
      expect(events.filter((e) => e.startsWith('ADDED'))).to.deep.equal([]);
      expect(kube.refusals.get(403) ?? 0, 'requests the Role refused').to.equal(0);
      const password = cluster.secretValues('svc-initial-admin-secret')['password'] ?? '';
      const secret = cluster.secretValues('svc-secret');
      expect(bcrypt.compareSync(password, secret['admin.password'] ?? '')).to.equal(true);
      for (const server of servers) expect((await call(server.url, 'POST', '/api/v1/session', { body: { username: 'admin', password } })).status).to.equal(200);
    } finally {
      unsubscribe();
      await Promise.all(servers.map((s) => s.close()));
      await cluster.close();
    }
  });
});
