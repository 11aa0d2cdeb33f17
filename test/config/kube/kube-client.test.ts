/** The connection: a kubeconfig with a client certificate instead of a token, for kubectl and for svc's client alike. */
import { expect } from 'chai';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeApiError, openKubeClient } from '../../../src/config/kube/kube-client.js';
import { startFakeKube, type FakeKube } from '../../helpers/fake-kube-apiserver.js';
import { clientCertKubeconfig, makeKubeTls } from '../../helpers/kube-tls.js';
import { kubectlFor } from '../../helpers/kubectl.js';

describe('config/kube/kube-client', function () {
  this.timeout(30_000);
  const tls = makeKubeTls('system:serviceaccount:svc:svc');
  const stranger = makeKubeTls('mallory');
  let kube: FakeKube;
  let work: string;
  before(async () => {
    kube = await startFakeKube({ tls });
    work = mkdtempSync(join(tmpdir(), 'svc-kube-client-'));
  });
  after(async () => {
    await kube.close();
    rmSync(work, { recursive: true, force: true });
  });

  const write = (name: string, text: string): string => {
    const file = join(work, name);
    writeFileSync(file, text);
    return file;
  };

  it('logs in with the client certificate of the kubeconfig (kubectl and svc)', async () => {
    const file = write('cert', clientCertKubeconfig(kube.url, tls, 'svc'));
    const kubectl = kubectlFor(kube, 'svc');
    try {
      await kubectl.apply('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: svc-cm\ndata:\n  url: http://x\n');
      const viaCert = await kubectl.run(['--kubeconfig', file, 'get', 'configmap', 'svc-cm', '-o', 'jsonpath={.data.url}']);
      expect(viaCert).to.equal('http://x');
    } finally {
      kubectl.close();
    }
    const client = await openKubeClient({ kubeconfig: file });
    expect(client.namespace).to.equal('svc');
    const cm = await client.request('get', 'configmaps', 'svc-cm');
    expect((cm['data'] as Record<string, string>)['url']).to.equal('http://x');
  });

  it('is refused (401) with a certificate from another CA, and --namespace wins over the context', async () => {
    const file = write('stranger', clientCertKubeconfig(kube.url, { ...stranger, caPem: tls.caPem }, 'svc'));
    const client = await openKubeClient({ kubeconfig: file, namespace: 'other' });
    expect(client.namespace).to.equal('other');
    const err = await client.request('list', 'configmaps').then(() => undefined, (e: unknown) => e);
    expect(err).to.be.instanceOf(KubeApiError);
    expect((err as KubeApiError).code).to.equal(401);
  });
});

describe('config/kube/kube-client in a pod', function () {
  this.timeout(30_000);
  const tls = makeKubeTls('unused');
  let kube: FakeKube;
  let root: string;
  const saved = { host: process.env['KUBERNETES_SERVICE_HOST'], port: process.env['KUBERNETES_SERVICE_PORT'] };
  before(async () => {
    kube = await startFakeKube({ tls });
    root = mkdtempSync(join(tmpdir(), 'svc-pod-'));
    const dir = join(root, 'var/run/secrets/kubernetes.io/serviceaccount');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'ca.crt'), tls.caPem);
    writeFileSync(join(dir, 'namespace'), 'svc-pod');
    writeFileSync(join(dir, 'token'), kube.token);
    // The library reads the API's address from the environment, as in a pod.
    process.env['KUBERNETES_SERVICE_HOST'] = '127.0.0.1';
    process.env['KUBERNETES_SERVICE_PORT'] = new URL(kube.url).port;
  });
  after(async () => {
    for (const [key, value] of [['KUBERNETES_SERVICE_HOST', saved.host], ['KUBERNETES_SERVICE_PORT', saved.port]] as const) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
    await kube.close();
    rmSync(root, { recursive: true, force: true });
  });

  it("uses the service account's token, CA and namespace, and the address from KUBERNETES_SERVICE_HOST/_PORT", async () => {
    const client = await openKubeClient({ env: { KUBERNETES_SERVICE_HOST: '127.0.0.1' }, inClusterRoot: root });
    expect(client.namespace).to.equal('svc-pod');
    expect(client.server).to.equal(kube.url);
    await client.request('list', 'secrets');
    expect(kube.requests.at(-1)).to.equal('GET /api/v1/namespaces/svc-pod/secrets');
  });
});
