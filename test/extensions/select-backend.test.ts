/** selectBackend: which service serves which application, as a table (SPEC rules 1-2, DESIGN §6). */
import { expect } from 'chai';
import type { AppCatalog, Application } from '../../src/apps/catalog.js';
import { InvalidRequest, NoBackend } from '../../src/errors.js';
import type { BackendService, ExtensionConfig } from '../../src/extensions/config.js';
import { selectBackend } from '../../src/extensions/select-backend.js';

const shared: BackendService = { url: 'http://shared' };
const inCluster: BackendService = { url: 'http://in', clusterName: 'in-cluster' };
const prod: BackendService = { url: 'http://prod', clusterName: 'prod' };
const extension = (...services: BackendService[]): ExtensionConfig => ({ name: 'ext', enabled: true, idleConnTimeoutMs: 60_000, contentSecurityPolicy: undefined, services });
const app = (destination: Application['destination']): Application => ({ namespace: 'ns', name: 'app', project: 'p', destination });
const catalog: AppCatalog = {
  applications: new Map(),
  clusters: [
    { name: 'in-cluster', server: 'https://kubernetes.default.svc' },
    { name: 'prod', server: 'https://prod.example.com' },
  ],
};

type Expected = BackendService | typeof InvalidRequest | typeof NoBackend;

const TABLE: readonly (readonly [string, ExtensionConfig, Application | undefined, Expected])[] = [
  ['one service without a cluster serves an application', extension(shared), app({ name: 'prod' }), shared],
  ['one service without a cluster serves no application at all', extension(shared), undefined, shared],
  ['one service without a cluster serves an unknown cluster too', extension(shared), app({ name: 'nowhere' }), shared],
  ['per cluster, by destination name', extension(inCluster, prod), app({ name: 'prod' }), prod],
  ['per cluster, by destination server through the cluster secret', extension(inCluster, prod), app({ server: 'https://prod.example.com/' }), prod],
  ['per cluster, the other one', extension(inCluster, prod), app({ name: 'in-cluster' }), inCluster],
  ['per cluster without an application: 400', extension(inCluster, prod), undefined, InvalidRequest],
  ['a single service naming a cluster serves only that cluster', extension(prod), app({ name: 'in-cluster' }), NoBackend],
  ['a single service naming a cluster serves it', extension(prod), app({ name: 'prod' }), prod],
  ['a destination that matches no cluster secret: no_backend', extension(inCluster, prod), app({ name: 'nowhere' }), NoBackend],
  ['a server that matches no cluster secret: no_backend', extension(inCluster, prod), app({ server: 'https://other.example.com' }), NoBackend],
  ['a cluster without a service of this extension: no_backend', extension(inCluster), app({ name: 'prod' }), NoBackend],
];

describe('extensions/select-backend', () => {
  for (const [what, ext, application, expected] of TABLE) {
    it(what, () => {
      const run = () => selectBackend(ext, application, catalog);
      if (typeof expected === 'function') expect(run).to.throw(expected);
      else expect(run()).to.equal(expected);
    });
  }
});
