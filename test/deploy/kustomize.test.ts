/**
 * The objects `kubectl kustomize deploy/` and `kubectl kustomize deploy/ha` render (the real
 * kubectl), read as a cluster would get them: probes, the metrics port apart from the public
 * Service, the disruption budget, anti-affinity, the preStop wait inside the grace period, the
 * security context of every container, no CRD in the namespaced install, the Role as written,
 * and in the HA overlay svc wired to the Sentinels the StatefulSet runs, with workers, CPU and
 * memory set together.
 */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import YAML from 'yaml';
import { SHUTDOWN_GRACE_MS } from '../../src/commands/serve.js';
import { cleanUpTempDirs, makeTempDir } from '../helpers/temp-dir.js';

interface K8sObject {
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
  rules?: unknown[];
}
interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string } };
}
interface Container {
  name: string;
  env?: EnvVar[];
  ports?: { name: string; containerPort: number }[];
  readinessProbe?: { httpGet?: { path: string; port: string } };
  livenessProbe?: { httpGet?: { path: string; port: string } };
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
  securityContext?: { allowPrivilegeEscalation?: boolean; readOnlyRootFilesystem?: boolean; capabilities?: { drop?: string[] } };
  resources?: { requests?: { cpu?: string; memory?: string }; limits?: { cpu?: string; memory?: string } };
}
interface AffinityTerm {
  topologyKey: string;
  labelSelector: { matchLabels: Record<string, string> };
}
interface PodSpec {
  terminationGracePeriodSeconds?: number;
  securityContext?: { runAsNonRoot?: boolean };
  affinity?: { podAntiAffinity?: { requiredDuringSchedulingIgnoredDuringExecution?: AffinityTerm[]; preferredDuringSchedulingIgnoredDuringExecution?: { podAffinityTerm: AffinityTerm }[] } };
  initContainers?: Container[];
  containers: Container[];
}
interface Workload {
  replicas: number;
  serviceName?: string;
  strategy?: { type: string; rollingUpdate?: { maxSurge?: number; maxUnavailable?: number } };
  selector: { matchLabels: Record<string, string> };
  template: { metadata: { labels: Record<string, string> }; spec: PodSpec };
}
interface ServiceSpec {
  selector: Record<string, string>;
  ports: { name: string; port: number; targetPort: string }[];
}

const deployDir = new URL('../../deploy/', import.meta.url).pathname;

/** What the operator writes before rendering deploy/ha: the Redis password its secretGenerator reads. */
const REDIS_PASSWORD_FILE = { name: 'ha/redis-password.env', text: 'password=redis-password-of-the-test\n' };

/** `kubectl kustomize deploy/<dir>` on a copy of deploy/ holding the operator's Redis password file. */
function render(dir: string): K8sObject[] {
  const home = makeTempDir('svc-kustomize-');
  try {
    const copy = join(home, 'deploy');
    cpSync(deployDir, copy, { recursive: true });
    writeFileSync(join(copy, REDIS_PASSWORD_FILE.name), REDIS_PASSWORD_FILE.text);
    const text = execFileSync('kubectl', ['kustomize', join(copy, dir)], { env: { PATH: process.env['PATH'], HOME: home }, encoding: 'utf8' });
    return YAML.parseAllDocuments(text).map((d) => d.toJS() as K8sObject);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

function find(objects: readonly K8sObject[], kind: string, name: string): K8sObject {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (found === undefined) throw new Error(`${kind}/${name} is not rendered`);
  return found;
}

const workload = (o: K8sObject): Workload => o.spec as unknown as Workload;
const service = (o: K8sObject): ServiceSpec => o.spec as unknown as ServiceSpec;
const svcContainer = (objects: readonly K8sObject[]): Container => {
  const container = workload(find(objects, 'Deployment', 'svc')).template.spec.containers.find((c) => c.name === 'svc');
  if (container === undefined) throw new Error('the Deployment has no container svc');
  return container;
};
const envOf = (container: Container, name: string): string | undefined => container.env?.find((e) => e.name === name)?.value;
const selects = (selector: Record<string, string>, labels: Record<string, string>): boolean => Object.entries(selector).every(([k, v]) => labels[k] === v);
/** Kubernetes memory quantities as deploy/ writes them (Mi, Gi). */
const mebibytes = (quantity: string | undefined): number => {
  const m = /^(\d+)(Mi|Gi)$/.exec(quantity ?? '');
  if (m === null) throw new Error(`not a memory quantity in Mi or Gi: ${String(quantity)}`);
  return Number(m[1]) * (m[2] === 'Gi' ? 1024 : 1);
};

/**
 * Memory from `npm run bench:memory` (docs/benchmarks.md: with --kube the primary takes about
 * 85 MiB PSS, a worker up to 180 MiB PSS and 232 MiB RSS under load): requested 128 MiB + 192 MiB
 * per worker, limited to 256 MiB + 256 MiB per worker.
 */
function checkMemory(container: Container, workers: number): void {
  expect(mebibytes(container.resources?.requests?.memory), 'memory request').to.be.at.least(128 + 192 * workers);
  expect(mebibytes(container.resources?.limits?.memory), 'memory limit').to.be.at.least(256 + 256 * workers);
}

/** What holds for both renders: the pod's shape, its probes, ports, preStop, security and budget. */
function checkCommon(objects: readonly K8sObject[]): void {
  expect(objects.map((o) => o.kind), 'the CRD is cluster-wide, applied once by a cluster admin').to.not.include('CustomResourceDefinition');
  const deployment = workload(find(objects, 'Deployment', 'svc'));
  const pod = deployment.template.spec;
  const podLabels = deployment.template.metadata.labels;
  const container = svcContainer(objects);

  expect(container.readinessProbe?.httpGet).to.deep.equal({ path: '/readyz', port: 'http' });
  expect(container.livenessProbe?.httpGet).to.deep.equal({ path: '/healthz', port: 'http' });

  // /metrics on its own port, reached by its own Service; the public Service never routes there.
  const listen = envOf(container, 'SVC_METRICS_LISTEN');
  expect(listen, 'SVC_METRICS_LISTEN').to.match(/^0\.0\.0\.0:\d+$/);
  const metricsPort = container.ports?.find((p) => p.name === 'metrics');
  expect(metricsPort?.containerPort).to.equal(Number(listen?.split(':')[1]));
  expect(Number(envOf(container, 'SVC_LISTEN')?.split(':')[1])).to.equal(container.ports?.find((p) => p.name === 'http')?.containerPort);
  const publicService = service(find(objects, 'Service', 'svc'));
  expect(publicService.ports.map((p) => p.targetPort)).to.deep.equal(['http']);
  const metricsService = service(find(objects, 'Service', 'svc-metrics'));
  expect(selects(metricsService.selector, podLabels)).to.equal(true);
  expect(metricsService.ports.map((p) => p.targetPort)).to.deep.equal(['metrics']);

  // The pod leaves the endpoints first, then drains: the preStop wait and svc's own drain fit the grace period.
  const preStop = container.lifecycle?.preStop?.exec?.command ?? [];
  expect(preStop[0]).to.equal('sleep');
  const waitS = Number(preStop[1]);
  expect(waitS).to.be.at.least(5);
  const grace = pod.terminationGracePeriodSeconds ?? 30;
  expect(waitS + (SHUTDOWN_GRACE_MS + 2000) / 1000, 'preStop + drain + exit within terminationGracePeriodSeconds').to.be.at.most(grace);

  const pdb = find(objects, 'PodDisruptionBudget', 'svc').spec as { maxUnavailable?: number; minAvailable?: number; selector: { matchLabels: Record<string, string> } };
  expect(selects(pdb.selector.matchLabels, podLabels)).to.equal(true);
  expect(pdb.maxUnavailable ?? deployment.replicas - (pdb.minAvailable ?? 0)).to.equal(1);

  const anti = pod.affinity?.podAntiAffinity;
  const terms = [...(anti?.requiredDuringSchedulingIgnoredDuringExecution ?? []), ...(anti?.preferredDuringSchedulingIgnoredDuringExecution ?? []).map((p) => p.podAffinityTerm)];
  expect(terms.some((t) => t.topologyKey === 'kubernetes.io/hostname' && selects(t.labelSelector.matchLabels, podLabels))).to.equal(true);

  // Every container of every workload: non-root, read-only root, no privilege escalation, no capabilities.
  for (const o of objects.filter((x) => x.kind === 'Deployment' || x.kind === 'StatefulSet')) {
    const spec = workload(o).template.spec;
    expect(spec.securityContext?.runAsNonRoot, `${o.kind}/${o.metadata.name} runAsNonRoot`).to.equal(true);
    for (const c of [...(spec.initContainers ?? []), ...spec.containers]) {
      const at = `${o.kind}/${o.metadata.name} container ${c.name}`;
      expect(c.securityContext?.readOnlyRootFilesystem, at).to.equal(true);
      expect(c.securityContext?.allowPrivilegeEscalation, at).to.equal(false);
      expect(c.securityContext?.capabilities?.drop, at).to.deep.equal(['ALL']);
    }
  }

  // The Role is rendered as written (its verbs are checked against the store's use in deploy.test.ts).
  const written = YAML.parse(readFileSync(join(deployDir, 'base/role.yaml'), 'utf8')) as { rules: unknown[] };
  expect(find(objects, 'Role', 'svc').rules).to.deep.equal(written.rules);
}

describe('deploy/ (kubectl kustomize)', function () {
  cleanUpTempDirs();
  this.timeout(30_000);

  it('deploy/ renders one memory-state replica that never overlaps another, with every object and no CRD', () => {
    const objects = render('.');
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`).sort()).to.deep.equal([
      'ConfigMap/svc-cm',
      'ConfigMap/svc-rbac-cm',
      'Deployment/svc',
      'NetworkPolicy/svc',
      'PodDisruptionBudget/svc',
      'Role/svc',
      'RoleBinding/svc',
      'Secret/svc-initial-admin-secret',
      'Secret/svc-secret',
      'Service/svc',
      'Service/svc-metrics',
      'ServiceAccount/svc',
    ]);
    checkCommon(objects);
    const deployment = workload(find(objects, 'Deployment', 'svc'));
    expect(deployment.replicas).to.equal(1);
    expect(deployment.strategy?.type, 'two memory-state pods never run together').to.equal('Recreate');
    const container = svcContainer(objects);
    expect(container.env?.some((e) => e.name.startsWith('SVC_REDIS'))).to.equal(false);
    expect(envOf(container, 'SVC_WORKERS'), 'more than one worker needs Redis').to.equal('1');
    checkMemory(container, 1);
  });

  it('deploy/ha renders two replicas on a three-pod Redis Sentinel, with workers, CPU and memory set together', () => {
    const objects = render('ha');
    checkCommon(objects);
    const deployment = workload(find(objects, 'Deployment', 'svc'));
    expect(deployment.replicas).to.equal(2);
    // One replica replaced at a time, without a surge pod that the required anti-affinity could leave unschedulable.
    expect(deployment.strategy).to.deep.equal({ type: 'RollingUpdate', rollingUpdate: { maxSurge: 0, maxUnavailable: 1 } });
    const anti = deployment.template.spec.affinity?.podAntiAffinity;
    expect(anti?.requiredDuringSchedulingIgnoredDuringExecution?.[0]?.topologyKey).to.equal('kubernetes.io/hostname');

    // The Sentinels svc is given are the StatefulSet's pods, on the Sentinel port of its headless Service.
    const redis = find(objects, 'StatefulSet', 'svc-redis-ha-server');
    const set = workload(redis);
    expect(set.replicas).to.equal(3);
    expect(set.template.spec.containers.map((c) => c.name).sort()).to.deep.equal(['redis', 'sentinel']);
    const headless = find(objects, 'Service', set.serviceName ?? '');
    expect((headless.spec as { clusterIP?: string }).clusterIP).to.equal('None');
    const sentinelPort = service(headless).ports.find((p) => p.name === 'sentinel')?.port;
    const pods = [0, 1, 2].map((i) => `${redis.metadata.name}-${i}.${headless.metadata.name}:${String(sentinelPort)}`);
    const container = svcContainer(objects);
    expect(envOf(container, 'SVC_REDIS_SENTINELS')?.split(',')).to.deep.equal(pods);
    // The master name svc asks for is the one the Sentinels monitor.
    const start = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('svc-redis-ha-config-'))?.data?.['redis-start.sh'] ?? '';
    const monitored = /MASTER=\$\{MASTER_NAME:-(\S+)\}/.exec(start)?.[1];
    expect(envOf(container, 'SVC_REDIS_SENTINEL_MASTER')).to.equal(monitored);
    // Passwords from the Secret generated from the operator's file, the same one Redis is started with.
    const generated = objects.find((o) => o.kind === 'Secret' && o.metadata.name.startsWith('svc-redis-ha-'))?.metadata.name;
    expect(generated, 'the generated Redis Secret').to.be.a('string');
    for (const name of ['SVC_REDIS_PASSWORD', 'SVC_REDIS_SENTINEL_PASSWORD']) {
      expect(container.env?.find((e) => e.name === name)?.valueFrom?.secretKeyRef, name).to.deep.equal({ name: generated, key: 'password' });
    }
    expect(set.template.spec.containers[0]?.env?.[0]?.valueFrom?.secretKeyRef).to.deep.equal({ name: generated, key: 'password' });

    // Workers, CPU and memory: one core per worker, and memory by the rule below.
    const workers = Number(envOf(container, 'SVC_WORKERS'));
    expect(workers).to.be.at.least(2);
    expect(Number(container.resources?.limits?.cpu)).to.equal(workers);
    checkMemory(container, workers);
    expect(objects.some((o) => o.kind === 'PodDisruptionBudget' && o.metadata.name === 'svc-redis-ha')).to.equal(true);
  });

  it('the ServiceMonitor example scrapes the metrics Service by its labels and port name', () => {
    const monitor = YAML.parse(readFileSync(join(deployDir, 'monitoring/servicemonitor.yaml'), 'utf8')) as { spec: { selector: { matchLabels: Record<string, string> }; endpoints: { port: string; path: string }[] } };
    const metrics = find(render('.'), 'Service', 'svc-metrics');
    expect(selects(monitor.spec.selector.matchLabels, metrics.metadata.labels ?? {})).to.equal(true);
    expect(monitor.spec.endpoints.map((e) => [e.port, e.path])).to.deep.equal([[service(metrics).ports[0]?.name, '/metrics']]);
  });
});
