/** The Kubernetes store on its own: what it reads, from which namespaces, and the directory's rejection rules. */
import { expect } from 'chai';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { openKubeClient } from '../../../src/config/kube/kube-client.js';
import { openKubeStore, type KubeStore } from '../../../src/config/kube/kube-store.js';
import { formatProblem } from '../../../src/config/problems.js';
import { startFakeKube, type FakeKube } from '../../helpers/fake-kube-apiserver.js';
import { makeTestCa } from '../../helpers/test-ca.js';
import { cleanUpTempDirs, makeTempDir } from '../../helpers/temp-dir.js';

const APP = { group: 'svc.io', version: 'v1alpha1', plural: 'applications', kind: 'Application' } as const;
const SECRET = { group: '', version: 'v1', plural: 'secrets', kind: 'Secret' } as const;

describe('config/kube/kube-store', function () {
  cleanUpTempDirs();
  this.timeout(30_000);
  let kube: FakeKube;
  let work: string;
  let store: KubeStore | undefined;
  before(async () => {
    kube = await startFakeKube({ tls: makeTestCa() });
    work = makeTempDir('svc-kube-store-');
    writeFileSync(join(work, 'kubeconfig'), kube.kubeconfig('svc'));
    for (const ns of ['team-a', 'team-b', 'team-c']) kube.store.put(APP, ns, { metadata: { name: 'guestbook' }, spec: { project: 'default', destination: { name: 'in-cluster' } } });
    kube.store.put(APP, 'team-a', { metadata: { name: 'broken' }, spec: { destination: {} } });
    kube.store.put(SECRET, 'svc', { metadata: { name: 'not-ours' }, data: { k: Buffer.from('v').toString('base64') } });
    kube.store.put(SECRET, 'svc', { metadata: { name: 'cluster-1', labels: { 'svc.io/secret-type': 'cluster' } }, data: { name: Buffer.from('c1').toString('base64') } });
  });
  afterEach(async () => {
    await store?.close();
    store = undefined;
  });
  after(async () => {
    await kube.close();
    rmSync(work, { recursive: true, force: true });
  });

  const open = async (applicationNamespaces?: string[]): Promise<KubeStore> =>
    (store = await openKubeStore({
      client: await openKubeClient({ kubeconfig: join(work, 'kubeconfig') }),
      log: pino({ level: 'silent' }),
      ...(applicationNamespaces !== undefined ? { applicationNamespaces } : {}),
    }));

  it('reads Applications in the listed namespaces only; a malformed one is left out with its key path, as from a file', async () => {
    const s = await open(['team-a', 'team-b']);
    expect(s.current().applications.map((a) => `${a.namespace}/${a.name}`).sort()).to.deep.equal(['team-a/guestbook', 'team-b/guestbook']);
    expect(s.problems().map(formatProblem)).to.deep.equal(['kubernetes:applications/team-a/broken: Application/team-a/broken: spec.project: is missing']);
  });

  it("reads svc's own namespace by default, keeps cluster Secrets and drops Secrets that are not svc's", async () => {
    const s = await open();
    expect(s.current().applications).to.deep.equal([]);
    expect([...s.current().secrets.keys()]).to.deep.equal(['cluster-1']);
  });
});

describe('config/kube/kube-store start', function () {
  cleanUpTempDirs();
  this.timeout(30_000);

  it('fails to start, naming the permission, when the Role does not allow a LIST', async () => {
    const kube = await startFakeKube({ tls: makeTestCa() });
    const work = makeTempDir('svc-kube-start-');
    try {
      writeFileSync(join(work, 'kubeconfig'), kube.kubeconfig('svc'));
      kube.rules = [{ verbs: ['list', 'watch'], resources: ['configmaps', 'applications'] }];
      const err = await openKubeStore({
        client: await openKubeClient({ kubeconfig: join(work, 'kubeconfig') }),
        log: pino({ level: 'silent' }),
        backoff: { initialMs: 50, maxMs: 100 },
        startTimeoutMs: 500,
      }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(String(err)).to.match(/did not answer a LIST of every resource within 500 ms \(secrets\/svc: .*cannot list resource "secrets"/);
    } finally {
      await kube.close();
      rmSync(work, { recursive: true, force: true });
    }
  });
});
