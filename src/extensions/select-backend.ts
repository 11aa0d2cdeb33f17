/**
 * Which backend serves a request (SPEC "Extension configuration entry" rules 1–2, DESIGN §6).
 * One service without clusterName serves every cluster. Otherwise the application's destination
 * cluster, by name or by server looked up in the cluster secrets, picks the service whose
 * clusterName equals that cluster's name; a single service that names a cluster serves only it.
 */
import { destinationCluster, type AppCatalog, type Application } from '../apps/catalog.js';
import { InvalidRequest, NoBackend } from '../errors.js';
import type { BackendService, ExtensionConfig } from './config.js';

/** The service that serves all clusters, when the extension has one. */
export function sharedBackend(extension: ExtensionConfig): BackendService | undefined {
  const [only, ...more] = extension.services;
  return only !== undefined && more.length === 0 && only.clusterName === undefined ? only : undefined;
}

export function selectBackend(extension: ExtensionConfig, application: Application | undefined, catalog: AppCatalog): BackendService {
  const shared = sharedBackend(extension);
  if (shared !== undefined) return shared;
  if (application === undefined) {
    throw new InvalidRequest(`extension '${extension.name}' has a backend per cluster: send the header Svc-Application-Name: <namespace>/<application-name>`);
  }
  const appName = `${application.namespace}/${application.name}`;
  const cluster = destinationCluster(application, catalog);
  if (cluster === undefined) {
    const { name, server } = application.destination;
    const where = name !== undefined ? `name '${name}'` : server !== undefined ? `server '${server}'` : 'nothing';
    throw new NoBackend(`application '${appName}' deploys to ${where}, which matches no cluster secret, so no backend of extension '${extension.name}' serves it`);
  }
  const service = extension.services.find((s) => s.clusterName === cluster.name);
  if (service === undefined) throw new NoBackend(`extension '${extension.name}' has no backend for cluster '${cluster.name}' (application '${appName}')`);
  return service;
}
