/** `svc-server --kube` and `svc-server validate --kube` as real processes, on the stand-in API server through a kubeconfig. */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startFakeKube, type FakeKube } from '../helpers/fake-kube-apiserver.js';
import { kubectlFor, type Kubectl } from '../helpers/kubectl.js';
import { configMap, secret } from '../helpers/manifests.js';
import { freePort, startRedis } from '../helpers/peers.js';
import { ROOT, runEntry, entryArgs, SERVER_ENTRY } from '../helpers/run.js';
import { makeTestCa } from '../helpers/test-ca.js';
import { cleanUpTempDirs, makeTempDir } from '../helpers/temp-dir.js';


describe('svc-server --kube', function () {
  cleanUpTempDirs();
  // Real processes on a shared, loaded host: their start alone can take many seconds.
  this.timeout(90_000);
  let kube: FakeKube;
  let kubectl: Kubectl;
  let work: string;
  let kubeconfig: string;
  const env = (): NodeJS.ProcessEnv => ({ PATH: process.env['PATH'], HOME: work, SVC_REDIS_URL: '' });

  before(async () => {
    kube = await startFakeKube({ tls: makeTestCa() });
    kubectl = kubectlFor(kube, 'elsewhere');
    work = makeTempDir('svc-cli-kube-');
    kubeconfig = join(work, 'kubeconfig');
    // The context's namespace is `elsewhere`; --namespace must win.
    writeFileSync(kubeconfig, kube.kubeconfig('elsewhere'));
    await kubectl.run(['apply', '--validate=false', '-n', 'svc', '-f', '-'], { input: `${configMap('svc-cm', { 'accounts.alice': 'apiKey' })}---\n${configMap('svc-rbac-cm', { 'policy.csv': '' })}---\n${secret('svc-secret', { 'server.secretkey': 'k'.repeat(32) })}` });
  });
  after(async () => {
    kubectl?.close();
    await kube?.close();
    rmSync(work, { recursive: true, force: true });
  });

  it('SVC_STORE=kubernetes with KUBECONFIG and --namespace: the admin password made at first start, /readyz answers once loaded', async () => {
    const port = await freePort();
    const child = spawn(process.execPath, [...entryArgs(SERVER_ENTRY), '--namespace', 'svc', '--listen', `127.0.0.1:${port}`], {
      cwd: ROOT,
      env: { ...env(), SVC_STORE: 'kubernetes', KUBECONFIG: kubeconfig },
    });
    let logs = '';
    child.stdout.on('data', (d: Buffer) => (logs += d.toString()));
    child.stderr.on('data', (d: Buffer) => (logs += d.toString()));
    try {
      const deadline = Date.now() + 60_000;
      let status = 0;
      while (Date.now() < deadline && status !== 200) {
        status = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status, () => 0);
        if (status !== 200) await new Promise((r) => setTimeout(r, 100));
      }
      expect(status, logs).to.equal(200);
      expect(kube.store.get('secrets', 'svc', 'svc-initial-admin-secret')).to.not.equal(undefined);
      expect(kube.store.get('secrets', 'elsewhere', 'svc-secret')).to.equal(undefined);
      expect(logs).to.include('configuration read from the Kubernetes API');
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('close', r));
    }
  });

  it('--workers 2 with --redis: both workers start on the API (the primary does no directory first start); one initial admin secret', async () => {
    const redis = await startRedis();
    const port = await freePort();
    const created: string[] = [];
    const unsubscribe = kube.store.subscribe((e) => {
      if (e.namespace === 'workers' && e.plural === 'secrets') created.push(`${e.type} ${String(e.object.metadata['name'])}`);
    });
    await kubectl.run(['apply', '--validate=false', '-n', 'workers', '-f', '-'], { input: configMap('svc-cm', {}) });
    const child = spawn(process.execPath, [...entryArgs(SERVER_ENTRY), '--kube', '--kubeconfig', kubeconfig, '--namespace', 'workers', '--workers', '2', '--redis', redis.url, '--listen', `127.0.0.1:${port}`], {
      cwd: ROOT,
      env: env(),
    });
    let logs = '';
    child.stdout.on('data', (d: Buffer) => (logs += d.toString()));
    child.stderr.on('data', (d: Buffer) => (logs += d.toString()));
    try {
      for (const deadline = Date.now() + 60_000; logs.split('"worker ready"').length - 1 < 2; await new Promise((r) => setTimeout(r, 100))) {
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`workers not ready:\n${logs}`);
      }
      expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).to.equal(200);
      expect(created.filter((c) => c.endsWith('svc-initial-admin-secret'))).to.deep.equal(['ADDED svc-initial-admin-secret']);
      expect(created.filter((c) => c.startsWith('ADDED svc-secret'))).to.have.length(1);
      expect(existsSync(join(ROOT, 'config'))).to.equal(false);
    } finally {
      unsubscribe();
      child.kill('SIGTERM');
      await new Promise((r) => child.once('close', r));
      await redis.stop();
    }
  });

  it('validate --kube checks what is in the cluster: exit 0 when clean, its warnings as the directory\'s, 1 with the key path of a problem', async () => {
    const clean = await runEntry(SERVER_ENTRY, ['validate', '--kube', '--kubeconfig', kubeconfig, '--namespace', 'svc'], env());
    expect(clean.code, clean.stderr).to.equal(0);
    expect(clean.stdout).to.include('namespace svc: configuration is valid');
    // A warning, as the directory's validate and the server say it, and still valid.
    await kubectl.run(['patch', '-n', 'svc', 'configmap', 'svc-rbac-cm', '--type', 'merge', '-p', '{"data":{"policy.csv":"p, role:ops, applicatons, get, */*, allow"}}']);
    const warned = await runEntry(SERVER_ENTRY, ['validate', '--kube', '--kubeconfig', kubeconfig, '--namespace', 'svc'], env());
    expect(warned.code, warned.stderr).to.equal(0);
    expect(warned.stderr).to.include("warning: svc-rbac-cm: policy.csv: line 1: resource 'applicatons' is not one svc checks");
    await kubectl.run(['patch', '-n', 'svc', 'configmap', 'svc-cm', '--type', 'merge', '-p', '{"data":{"accounts.alice":"apiKey, teleport"}}']);
    const broken = await runEntry(SERVER_ENTRY, ['validate', '--kube', '--kubeconfig', kubeconfig, '--namespace', 'svc'], env());
    expect(broken.code).to.equal(1);
    expect(broken.stderr).to.match(/accounts\.alice.*teleport|teleport.*accounts\.alice/);
  });

  it('rbac can answers for the policy in the cluster from svc-rbac-cm as kubectl prints it (docs/rbac.md)', async () => {
    await kubectl.run(['patch', '-n', 'svc', 'configmap', 'svc-rbac-cm', '--type', 'merge', '-p', JSON.stringify({ data: { 'policy.csv': 'p, role:metrics-viewer, extensions, *, default/metrics, allow\ng, alice, role:metrics-viewer' } })]);
    const policy = join(work, 'policy');
    mkdirSync(policy);
    writeFileSync(join(policy, 'svc-rbac-cm.yaml'), await kubectl.run(['get', 'configmap', 'svc-rbac-cm', '-n', 'svc', '-o', 'yaml']));
    const yes = await runEntry(SERVER_ENTRY, ['rbac', 'can', '--config', policy, 'alice', 'extensions', '*', 'default/metrics'], env());
    expect([yes.code, yes.stdout, yes.stderr]).to.deep.equal([0, 'yes\n', '']);
    const no = await runEntry(SERVER_ENTRY, ['rbac', 'can', '--config', policy, 'bob', 'extensions', '*', 'default/metrics'], env());
    expect([no.code, no.stdout]).to.deep.equal([2, 'no\n']);
  });

  it('refuses --kubeconfig without --kube, and says what to give when there is no API to talk to', async () => {
    const mixed = await runEntry(SERVER_ENTRY, ['validate', '--config', work, '--kubeconfig', kubeconfig], env());
    expect([mixed.code, mixed.stderr.trim()]).to.deep.equal([1, 'svc-server: --kubeconfig, --namespace and --application-namespaces go with --kube']);
    const none = await runEntry(SERVER_ENTRY, ['validate', '--kube'], env());
    expect(none.code).to.equal(1);
    expect(none.stderr).to.include('give --kubeconfig FILE or KUBECONFIG, or run in a pod');
  });
});
