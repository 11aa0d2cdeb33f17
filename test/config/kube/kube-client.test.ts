/**
 * The connection, as each way of logging in that the issue lists: a kubeconfig with a client
 * certificate or with exec credentials (for kubectl and for svc's client alike), and in a pod the
 * service account, whose token the kubelet rotates.
 */
import { expect } from 'chai';
import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { KubeApiError, openKubeClient } from '../../../src/config/kube/kube-client.js';
import { openKubeStore } from '../../../src/config/kube/kube-store.js';
import { waitFor } from '../../helpers/accounts-fixture.js';
import { startFakeKube, type FakeKube } from '../../helpers/fake-kube-apiserver.js';
import { clientCertKubeconfig, makeKubeTls } from '../../helpers/kube-tls.js';
import { kubeconfigText } from '../../helpers/kubeconfig.js';
import { kubectlFor } from '../../helpers/kubectl.js';
import { cleanUpTempDirs, makeTempDir } from '../../helpers/temp-dir.js';

describe('config/kube/kube-client', function () {
  cleanUpTempDirs();
  this.timeout(30_000);
  const tls = makeKubeTls('system:serviceaccount:svc:svc');
  const stranger = makeKubeTls('mallory');
  let kube: FakeKube;
  let work: string;
  before(async () => {
    kube = await startFakeKube({ tls });
    work = makeTempDir('svc-kube-client-');
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

  it('logs in with exec credentials (client.authentication.k8s.io/v1): kubectl and svc run the plugin and send the token it prints', async () => {
    const ran = join(work, 'plugin-ran');
    // The plugin protocol: print an ExecCredential on stdout; the token comes from the env the kubeconfig gives.
    const plugin = write('exec-plugin.sh', `#!/bin/sh\necho "$SVC_PLUGIN_USER" >> '${ran}'\nprintf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}' "$SVC_PLUGIN_TOKEN"\n`);
    chmodSync(plugin, 0o755);
    const file = write('exec', execKubeconfig(kube.url, tls.caPem, plugin, kube.token, 'svc'));
    const kubectl = kubectlFor(kube, 'svc');
    try {
      await kubectl.apply('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: svc-rbac-cm\ndata:\n  policy.default: role:readonly\n');
      expect(await kubectl.run(['--kubeconfig', file, 'get', 'configmap', 'svc-rbac-cm', '-o', 'jsonpath={.data.policy\\.default}'])).to.equal('role:readonly');
    } finally {
      kubectl.close();
    }
    const client = await openKubeClient({ kubeconfig: file });
    const cm = await client.request('get', 'configmaps', 'svc-rbac-cm');
    expect((cm['data'] as Record<string, string>)['policy.default']).to.equal('role:readonly');
    expect(readFileSync(ran, 'utf8')).to.equal('exec-user\nexec-user\n'); // once for kubectl, once for svc
    // A plugin that prints another token is refused: the token really is the plugin's.
    const wrong = write('exec-wrong', execKubeconfig(kube.url, tls.caPem, plugin, 'not-the-token', 'svc'));
    const err = await (await openKubeClient({ kubeconfig: wrong })).request('list', 'configmaps').then(() => undefined, (e: unknown) => e);
    expect((err as KubeApiError).code).to.equal(401);
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
  cleanUpTempDirs();
  this.timeout(30_000);
  const tls = makeKubeTls('unused');
  let kube: FakeKube;
  let root: string;
  const saved = { host: process.env['KUBERNETES_SERVICE_HOST'], port: process.env['KUBERNETES_SERVICE_PORT'] };
  before(async () => {
    kube = await startFakeKube({ tls });
    root = makeTempDir('svc-pod-');
    const dir = join(root, 'var/run/secrets/kubernetes.io/serviceaccount');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'ca.crt'), tls.caPem);
    writeFileSync(join(dir, 'namespace'), 'svc-pod');
    // The kubelet's layout (its AtomicWriter): token -> ..data/token, ..data -> a dated directory
    // that a rotation replaces by swapping the ..data link.
    publishToken(dir, kube.token, 'first');
    symlinkSync('..data/token', join(dir, 'token'));
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

  it("follows the kubelet's rotation of the token: once the old token is refused, requests, watches and writes carry the new one, with no restart", async () => {
    const client = await openKubeClient({ env: { KUBERNETES_SERVICE_HOST: '127.0.0.1' }, inClusterRoot: root });
    const store = await openKubeStore({ client, log: pino({ level: 'silent' }), backoff: { initialMs: 50, maxMs: 200 } });
    try {
      // Its three watches open (with the first token) before the rotation, so none is in flight across it.
      await waitFor(() => kube.requests.filter((r) => r.includes('watch=true')).length >= 3, 'the watches', 3000);
      const next = `rotated-${Math.random().toString(36).slice(2)}`;
      publishToken(join(root, 'var/run/secrets/kubernetes.io/serviceaccount'), next, 'second');
      kube.rotateToken(next);
      await client.request('list', 'secrets');
      // Every watch ends (410): the store lists and watches again, with the token it now reads.
      kube.expireWatches();
      kube.store.put({ group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap' }, 'svc-pod', { metadata: { name: 'svc-cm' }, data: { 'accounts.rot': 'apiKey' } });
      await waitFor(() => store.current().configMaps.get('svc-cm')?.data['accounts.rot'] === 'apiKey', 'the change after the rotation', 3000);
      await store.updateSecret('svc-secret', () => ({ set: { 'rotation.note': 'written with the new token' } }));
      const data = kube.store.get('secrets', 'svc-pod', 'svc-secret')?.['data'] as Record<string, string>;
      expect(Buffer.from(data['rotation.note'] ?? '', 'base64').toString()).to.equal('written with the new token');
      expect(store.connected()).to.equal(true);
      expect(kube.refusals.get(401) ?? 0).to.equal(0);
    } finally {
      await store.close();
    }
  });
});

/** What the kubelet does to rotate a projected token: a new dated directory, then the ..data link swapped to it atomically. */
function publishToken(dir: string, token: string, stamp: string): void {
  mkdirSync(join(dir, `..${stamp}`));
  writeFileSync(join(dir, `..${stamp}`, 'token'), token);
  symlinkSync(`..${stamp}`, join(dir, '..data_tmp'));
  renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
}

/** A kubeconfig whose user is an exec plugin (the client.authentication.k8s.io/v1 protocol), given the token in its env. */
function execKubeconfig(server: string, caPem: string, plugin: string, token: string, namespace: string): string {
  const exec = {
    apiVersion: 'client.authentication.k8s.io/v1',
    command: plugin,
    env: [{ name: 'SVC_PLUGIN_TOKEN', value: token }, { name: 'SVC_PLUGIN_USER', value: 'exec-user' }],
    interactiveMode: 'Never',
  };
  return kubeconfigText(server, caPem, { name: 'exec-user', user: { exec } }, namespace);
}
