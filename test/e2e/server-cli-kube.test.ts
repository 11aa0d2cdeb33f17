/** `svc-server --kube` and `svc-server validate --kube` as real processes, on the stand-in API server through a kubeconfig. */
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startFakeKube, type FakeKube } from '../helpers/fake-kube-apiserver.js';
import { kubectlFor, type Kubectl } from '../helpers/kubectl.js';
import { configMap, secret } from '../helpers/manifests.js';
import { freePort, startRedis, type RedisPeer } from '../helpers/peers.js';
import { ROOT, runEntry, entryArgs, SERVER_ENTRY } from '../helpers/run.js';
import { makeTestCa } from '../helpers/test-ca.js';
import { cleanUpTempDirs, makeTempDir } from '../helpers/temp-dir.js';


/** What the tests' namespaces hold at first: a clean configuration. */
const namespaceManifests = (): string => `${configMap('svc-cm', { 'accounts.alice': 'apiKey' })}---\n${configMap('svc-rbac-cm', { 'policy.csv': '' })}---\n${secret('svc-secret', { 'server.secretkey': 'k'.repeat(32) })}`;

describe('svc-server --kube', function () {
  cleanUpTempDirs();
  // Real processes on a shared, loaded host: their start alone can take many seconds.
  this.timeout(90_000);
  let kube: FakeKube;
  let kubectl: Kubectl;
  let work: string;
  let kubeconfig: string;
  const env = (): NodeJS.ProcessEnv => ({ PATH: process.env['PATH'], HOME: work, SVC_REDIS_URL: '' });
  let redis: RedisPeer;
  /** The --workers 2 server, started in the hook: its start overlaps the first test's. */
  let workers: Served;
  /** The workers test's namespace's secrets, as added or changed from before that server's start. */
  const created: string[] = [];
  let unsubscribe = (): void => undefined;

  before(async () => {
    // The workers test's Redis starts while the API server does: neither needs the other.
    const redisStarted = startRedis();
    redisStarted.catch(() => undefined); // awaited below
    kube = await startFakeKube({ tls: makeTestCa() });
    kubectl = kubectlFor(kube, 'elsewhere');
    work = makeTempDir('svc-cli-kube-');
    kubeconfig = join(work, 'kubeconfig');
    // The context's namespace is `elsewhere`; --namespace must win.
    writeFileSync(kubeconfig, kube.kubeconfig('elsewhere'));
    await kubectl.run(['apply', '--validate=false', '-n', 'svc', '-f', '-'], { input: namespaceManifests() });
    redis = await redisStarted;
    // The --workers 2 server has a namespace of its own (workers), which no other test reads or
    // writes: it starts now, while the first test's server starts, and its test awaits it.
    unsubscribe = kube.store.subscribe((e) => {
      if (e.namespace === 'workers' && e.plural === 'secrets') created.push(`${e.type} ${String(e.object.metadata['name'])}`);
    });
    await kubectl.run(['apply', '--validate=false', '-n', 'workers', '-f', '-'], { input: configMap('svc-cm', {}) });
    workers = serve(['--kube', '--kubeconfig', kubeconfig, '--namespace', 'workers', '--workers', '2', '--redis', redis.url], await freePort(), env());
  });
  after(async () => {
    unsubscribe();
    await workers?.stop();
    await redis?.stop();
    kubectl?.close();
    await kube?.close();
    rmSync(work, { recursive: true, force: true });
  });

  it('SVC_STORE=kubernetes with KUBECONFIG and --namespace: the admin password made at first start, /readyz answers once loaded', async () => {
    const port = await freePort();
    const server = serve(['--namespace', 'svc'], port, { ...env(), SVC_STORE: 'kubernetes', KUBECONFIG: kubeconfig });
    try {
      const deadline = Date.now() + 60_000;
      let status = 0;
      while (Date.now() < deadline && status !== 200) {
        status = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status, () => 0);
        if (status !== 200) await new Promise((r) => setTimeout(r, 100));
      }
      expect(status, server.logs()).to.equal(200);
      expect(kube.store.get('secrets', 'svc', 'svc-initial-admin-secret')).to.not.equal(undefined);
      expect(kube.store.get('secrets', 'elsewhere', 'svc-secret')).to.equal(undefined);
      expect(server.logs()).to.include('configuration read from the Kubernetes API');
    } finally {
      await server.stop();
    }
  });

  it('--workers 2 with --redis: both workers start on the API (the primary does no directory first start); one initial admin secret', async () => {
    try {
      for (const deadline = Date.now() + 60_000; workers.logs().split('"worker ready"').length - 1 < 2; await new Promise((r) => setTimeout(r, 100))) {
        if (Date.now() > deadline || workers.child.exitCode !== null) throw new Error(`workers not ready:\n${workers.logs()}`);
      }
      expect((await fetch(`http://127.0.0.1:${workers.port}/readyz`)).status).to.equal(200);
      expect(created.filter((c) => c.endsWith('svc-initial-admin-secret'))).to.deep.equal(['ADDED svc-initial-admin-secret']);
      expect(created.filter((c) => c.startsWith('ADDED svc-secret'))).to.have.length(1);
      expect(existsSync(join(ROOT, 'config'))).to.equal(false);
    } finally {
      await workers.stop();
    }
  });

  it('validate --kube checks what is in the cluster: exit 0 when clean, its warnings as the directory\'s, 1 with the key path of a problem', async () => {
    // The clean namespace, and two copies of it changed in the cluster (one warning, one problem):
    // three validations that only read their own namespace, run together.
    const copy = (namespace: string) => kubectl.run(['apply', '--validate=false', '-n', namespace, '-f', '-'], { input: namespaceManifests() });
    await Promise.all([copy('svc-warned'), copy('svc-broken')]);
    // A warning, as the directory's validate and the server say it, and still valid.
    await kubectl.run(['patch', '-n', 'svc-warned', 'configmap', 'svc-rbac-cm', '--type', 'merge', '-p', '{"data":{"policy.csv":"p, role:ops, applicatons, get, */*, allow"}}']);
    await kubectl.run(['patch', '-n', 'svc-broken', 'configmap', 'svc-cm', '--type', 'merge', '-p', '{"data":{"accounts.alice":"apiKey, teleport"}}']);
    const [clean, warned, broken] = await Promise.all(['svc', 'svc-warned', 'svc-broken'].map((namespace) => runEntry(SERVER_ENTRY, ['validate', '--kube', '--kubeconfig', kubeconfig, '--namespace', namespace], env())));
    expect(clean?.code, clean?.stderr).to.equal(0);
    expect(clean?.stdout).to.include('namespace svc: configuration is valid');
    expect(warned?.code, warned?.stderr).to.equal(0);
    expect(warned?.stderr).to.include("warning: svc-rbac-cm: policy.csv: line 1: resource 'applicatons' is not one svc checks");
    expect(broken?.code).to.equal(1);
    expect(broken?.stderr).to.match(/accounts\.alice.*teleport|teleport.*accounts\.alice/);
  });

  it('rbac can answers for the policy in the cluster from svc-rbac-cm as kubectl prints it (docs/rbac.md)', async () => {
    await kubectl.run(['patch', '-n', 'svc', 'configmap', 'svc-rbac-cm', '--type', 'merge', '-p', JSON.stringify({ data: { 'policy.csv': 'p, role:metrics-viewer, extensions, *, default/metrics, allow\ng, alice, role:metrics-viewer' } })]);
    const policy = join(work, 'policy');
    mkdirSync(policy);
    writeFileSync(join(policy, 'svc-rbac-cm.yaml'), await kubectl.run(['get', 'configmap', 'svc-rbac-cm', '-n', 'svc', '-o', 'yaml']));
    // Two processes that only read the policy: run together.
    const [yes, no] = await Promise.all([
      runEntry(SERVER_ENTRY, ['rbac', 'can', '--config', policy, 'alice', 'extensions', '*', 'default/metrics'], env()),
      runEntry(SERVER_ENTRY, ['rbac', 'can', '--config', policy, 'bob', 'extensions', '*', 'default/metrics'], env()),
    ]);
    expect([yes.code, yes.stdout, yes.stderr]).to.deep.equal([0, 'yes\n', '']);
    expect([no.code, no.stdout]).to.deep.equal([2, 'no\n']);
  });

  it('refuses --kubeconfig without --kube, and says what to give when there is no API to talk to', async () => {
    // Two processes that stop at their options: run together.
    const [mixed, none] = await Promise.all([
      runEntry(SERVER_ENTRY, ['validate', '--config', work, '--kubeconfig', kubeconfig], env()),
      runEntry(SERVER_ENTRY, ['validate', '--kube'], env()),
    ]);
    expect([mixed.code, mixed.stderr.trim()]).to.deep.equal([1, 'svc-server: --kubeconfig, --namespace and --application-namespaces go with --kube']);
    expect(none.code).to.equal(1);
    expect(none.stderr).to.include('give --kubeconfig FILE or KUBECONFIG, or run in a pod');
  });
});

interface Served {
  readonly child: ChildProcess;
  readonly port: number;
  /** Its stdout and stderr so far. */
  logs(): string;
  /** SIGTERM, and its end awaited; again, nothing. */
  stop(): Promise<void>;
}

/** `svc-server` with `args`, listening on 127.0.0.1:`port`, as a process, its output gathered. */
function serve(args: readonly string[], port: number, env: NodeJS.ProcessEnv): Served {
  const child = spawn(process.execPath, [...entryArgs(SERVER_ENTRY), ...args, '--listen', `127.0.0.1:${port}`], { cwd: ROOT, env });
  let logs = '';
  child.stdout.on('data', (d: Buffer) => (logs += d.toString()));
  child.stderr.on('data', (d: Buffer) => (logs += d.toString()));
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  return {
    child,
    port,
    logs: () => logs,
    stop: async () => {
      child.kill('SIGTERM');
      await closed;
    },
  };
}
