import { expect } from 'chai';
import type { SecretObject, StoreSnapshot } from '../../src/config/manifests.js';
import { ProblemSink, formatProblem } from '../../src/config/problems.js';
import { destinationCluster, readCatalog } from '../../src/apps/catalog.js';

function clusterSecret(name: string, data: Record<string, string>): SecretObject {
  return { name, file: 'c.yaml', labels: { 'svc.io/secret-type': 'cluster' }, data };
}

const snapshot: StoreSnapshot = {
  configMaps: new Map(),
  secrets: new Map([
    ['prod-cluster', clusterSecret('prod-cluster', { name: 'prod', server: 'https://prod.example.com:6443/' })],
    ['broken', clusterSecret('broken', { name: 'half' })],
    ['plain', { name: 'plain', file: 'p.yaml', labels: {}, data: { name: 'not-a-cluster', server: 'https://x' } }],
  ]),
  applications: [
    { name: 'web', namespace: 'team-a', file: 'a.yaml', project: 'team-a', destination: { server: 'https://prod.example.com:6443' } },
    { name: 'api', namespace: 'team-b', file: 'a.yaml', project: 'team-b', destination: { name: 'in-cluster' } },
    { name: 'lost', namespace: 'team-c', file: 'a.yaml', project: 'team-c', destination: { server: 'https://unknown:6443' } },
  ],
};

describe('apps/catalog', () => {
  const sink = new ProblemSink();
  const catalog = readCatalog(snapshot, sink);

  it('keys applications by namespace/name and reads only labelled cluster secrets', () => {
    expect([...catalog.applications.keys()]).to.deep.equal(['team-a/web', 'team-b/api', 'team-c/lost']);
    expect(catalog.clusters).to.deep.equal([{ name: 'prod', server: 'https://prod.example.com:6443/' }]);
    expect(sink.problems.map(formatProblem)).to.deep.equal(['Secret/broken: data: a cluster secret needs the keys name and server']);
  });

  it('reports a cluster secret that repeats the name or server of another, and ignores it', () => {
    const duplicates: StoreSnapshot = {
      ...snapshot,
      secrets: new Map([
        ['prod-a', clusterSecret('prod-a', { name: 'prod', server: 'https://prod.example.com:6443' })],
        ['prod-b', clusterSecret('prod-b', { name: 'prod', server: 'https://other.example.com' })],
        ['staging', clusterSecret('staging', { name: 'staging', server: 'https://prod.example.com:6443/' })],
        ['shouting', clusterSecret('shouting', { name: 'shouting', server: 'HTTPS://PROD.example.com:6443//' })],
        ['k8s', clusterSecret('k8s', { name: 'k8s', server: 'https://k8s.example.com' })],
        ['k8s-443', clusterSecret('k8s-443', { name: 'k8s-443', server: 'https://k8s.example.com:443/' })],
      ]),
    };
    const problems = new ProblemSink();
    const read = readCatalog(duplicates, problems);
    expect(read.clusters.map((c) => c.name)).to.deep.equal(['prod', 'k8s']);
    expect(problems.problems.map(formatProblem)).to.deep.equal([
      "Secret/prod-b: data: name: 'prod' is already the name of Secret/prod-a; this secret is ignored",
      "Secret/staging: data: server: 'https://prod.example.com:6443/' is already the server of Secret/prod-a; this secret is ignored",
      "Secret/shouting: data: server: 'HTTPS://PROD.example.com:6443//' is already the server of Secret/prod-a; this secret is ignored",
      "Secret/k8s-443: data: server: 'https://k8s.example.com:443/' is already the server of Secret/k8s; this secret is ignored",
    ]);
  });

  it('finds the destination cluster by server (however it is spelt) or by name', () => {
    expect(destinationCluster(catalog.applications.get('team-a/web')!, catalog)?.name).to.equal('prod');
    for (const server of ['https://PROD.example.com:6443', 'https://prod.example.com:6443///', 'HTTPS://prod.example.com:6443/']) {
      expect(destinationCluster({ name: 'x', namespace: 'n', project: 'p', destination: { server } }, catalog)?.name, server).to.equal('prod');
    }
    expect(destinationCluster(catalog.applications.get('team-b/api')!, catalog)?.name).to.equal('in-cluster');
    expect(destinationCluster(catalog.applications.get('team-c/lost')!, catalog)).to.equal(undefined);
  });
});
